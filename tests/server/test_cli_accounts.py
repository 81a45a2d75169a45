"""``humanwire accounts list | suspend | reinstate | rotate-key | delete`` against a service
running on the same database (SQLite in WAL mode, then PostgreSQL): what the command
changes holds from the service's next request, over real HTTP."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from humanwire import HumanWire
from humanwire.cli import main
from humanwire.cli.key_files import key_file_of, read_key, write_key
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.server.store import Store, open_store
from humanwire.testing.service import fast_config
from pg_support import stored_bytes

T = TypeVar("T")

HUMAN = "+12025550100"


@pytest.fixture
def service(database: str) -> Iterator[ServiceRunner]:
    config = replace(fast_config(Path("unused.db")), db_path=database, spam_recipients=3)
    with ServiceRunner(config, "127.0.0.1", 0) as runner:
        yield runner


def http(runner: ServiceRunner, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=runner.base_url,
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
        trust_env=False,
    )


def send(runner: ServiceRunner, key: str, text: str = "Deploy?", to: str = HUMAN) -> httpx.Response:
    with http(runner, key) as client:
        return client.post("/messages/sms", json={"message": text, "to": to})


def account_id(runner: ServiceRunner, key: str) -> str:
    account = runner.call(runner.engine.accounts.authenticate, key)
    assert account is not None
    return str(account.id)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["accounts", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_list_shows_accounts_and_what_they_hold_never_keys(
    service: ServiceRunner, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    alpha_key = service.create_account("alpha")
    beta_key = service.create_account("beta <ops>\x1b[31m")
    alpha, beta = account_id(service, alpha_key), account_id(service, beta_key)
    assert send(service, alpha_key).status_code == 200
    with HumanWire(api_key=alpha_key, base_url=service.base_url) as client:
        client.messages.sms(to=HUMAN, message="Still there?", follow_up_time=60)
        client.webhooks.create(url="http://127.0.0.1:9/hook", event_types=["message.received"])

    code, out, err = run(capsys, "list", "--db", database)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == [
        "ID",
        "NAME",
        "CREATED",
        "STATE",
        "INTERACTIONS",
        "OPEN",
        "NUMBERS",
        "WEBHOOKS",
    ]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == {alpha, beta}
    assert rows[alpha].split()[1:] == [
        "alpha",
        rows[alpha].split()[2],
        "active",
        "2",
        "1",
        "0",
        "1",
    ]
    assert "beta <ops>?[31m" in rows[beta]  # no control character reaches the terminal
    for secret in (alpha_key, beta_key, _hash(alpha_key), _hash(beta_key)):
        assert secret not in out

    service.call(service.engine.accounts.suspend, beta)
    code, out, _err = run(capsys, "list", "--json", "--db", database)
    assert code == 0
    listed = {entry["id"]: entry for entry in json.loads(out)}
    assert listed[alpha] == {
        "id": alpha,
        "name": "alpha",
        "createdAt": listed[alpha]["createdAt"],
        "suspended": False,
        "interactions": 2,
        "openInteractions": 1,
        "numbers": 0,
        "webhooks": 1,
        "channels": 0,
        "lastInteractionAt": listed[alpha]["lastInteractionAt"],
    }
    assert listed[alpha]["createdAt"].endswith("Z") and listed[alpha]["lastInteractionAt"]
    assert listed[beta]["suspended"] is True and listed[beta]["interactions"] == 0
    assert listed[beta]["name"] == "beta <ops>\x1b[31m"  # JSON escapes it
    assert alpha_key not in out and _hash(alpha_key) not in out


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def test_rotate_key_refuses_the_old_key_at_once_and_the_new_one_works(
    service: ServiceRunner, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    key = service.create_account("rotating")
    other = service.create_account("other")
    ident = account_id(service, key)
    sent = send(service, key)
    assert sent.status_code == 200
    # A browser logged into the inbox with the old key.
    browser = httpx.Client(base_url=service.base_url, trust_env=False)
    assert browser.get(f"/inbox?key={key}").status_code == 303
    assert browser.get("/inbox").status_code == 200

    code, out, err = run(capsys, "rotate-key", ident, "--db", database)
    assert code == 0, err
    new_key = out.strip()
    assert new_key.startswith("hw_") and new_key != key and out.count("\n") == 1
    assert "old one is refused" in err

    with http(service, key) as client:
        refused = client.get("/numbers")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "unauthorized"
    assert browser.get("/inbox").status_code == 303  # back to the login page
    with http(service, new_key) as client:
        assert client.get("/numbers").status_code == 200
        # Its data is the same account's.
        status = client.get(f"/interactions/{sent.json()['interactionId']}/status")
        assert status.status_code == 200
    assert send(service, other).status_code == 200  # other accounts untouched
    browser.close()


def test_rotate_key_replaces_the_key_serve_recorded(
    service: ServiceRunner, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    key = service.create_account("default")
    key_file = key_file_of(database)
    assert key_file is not None
    write_key(key_file, key)
    try:
        code, out, err = run(capsys, "rotate-key", account_id(service, key), "--db", database)
        assert code == 0
        new_key = out.strip()
        assert read_key(key_file) == new_key  # serve's next start uses it, no new account
        assert str(key_file) in err
        assert new_key not in err  # printed once, on stdout only
        code, _out, err = run(
            capsys, "delete", account_id(service, new_key), "--yes", "--db", database
        )
        assert code == 0
        assert not key_file.exists()  # a deleted account's key does not come back
    finally:
        key_file.unlink(missing_ok=True)


def test_suspend_refuses_every_request_and_the_inbox_shows_it_until_reinstated(
    service: ServiceRunner, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    key = service.create_account("Ops & <Co>")
    other = service.create_account("other")
    ident = account_id(service, key)
    sent = send(service, key)
    assert sent.status_code == 200

    code, out, _err = run(capsys, "suspend", ident, "--db", database)
    assert code == 0 and out.startswith(f"suspended: {ident}")
    refused = send(service, key)
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "account_suspended"
    assert "operator can reinstate" in refused.json()["error"]["message"]
    with http(service, key) as client:
        # Reads too: "403 from then on" (docs/design.md).
        status = client.get(f"/interactions/{sent.json()['interactionId']}/status")
        assert status.status_code == 403
        assert client.get("/numbers").status_code == 403
        page = client.get("/inbox")
    assert page.status_code == 403
    assert "text/html" in page.headers["content-type"]
    assert "data-suspended" in page.text and "Account suspended" in page.text
    assert "Ops &amp; &lt;Co&gt;" in page.text and "<Co>" not in page.text
    assert f"humanwire accounts reinstate {ident}" in page.text
    assert send(service, other).status_code == 200
    code, out, _err = run(capsys, "suspend", ident, "--db", database)
    assert code == 0 and "suspended already" in out

    code, out, _err = run(capsys, "reinstate", ident, "--db", database)
    assert code == 0 and out.startswith(f"reinstated: {ident}")
    assert send(service, key).status_code == 200
    with http(service, key) as client:
        page = client.get("/inbox")
    assert page.status_code == 200 and "data-suspended" not in page.text
    code, out, _err = run(capsys, "reinstate", ident, "--db", database)
    assert code == 0 and "was not suspended" in out


def test_reinstate_after_the_spam_guard_starts_its_counts_afresh(
    service: ServiceRunner, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    key = service.create_account("bulk")
    assert [send(service, key, "Buy now!", f"+1202555{i:04d}").status_code for i in range(3)] == [
        200,
        200,
        403,
    ]
    _code, out, _err = run(capsys, "list", "--json", "--db", database)
    assert json.loads(out)[0]["suspended"] is True
    assert run(capsys, "reinstate", account_id(service, key), "--db", database)[0] == 0
    # The two recipients counted before the suspension are forgotten.
    assert send(service, key, "Buy now!", "+12025559998").status_code == 200
    assert send(service, key, "Buy now!", "+12025559999").status_code == 200


def test_delete_removes_the_account_and_its_data(
    service: ServiceRunner, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    key = service.create_account("doomed")
    other = service.create_account("kept")
    ident, kept = account_id(service, key), account_id(service, other)
    for k in (key, other):
        with HumanWire(api_key=k, base_url=service.base_url) as client:
            free = client.numbers.available(country="US")
            client.numbers.reserve(free[0].phone_number)
            client.webhooks.create(url="http://127.0.0.1:9/hook", event_types=["message.received"])
            client.channels.create(type="sms", to=HUMAN, wait_time=60)
            sent = client.messages.sms(to=HUMAN, message=f"Hello from {k[-6:]}", follow_up_time=60)
            client.sandbox.reply(
                channel="sms",
                from_=HUMAN,
                to=free[0].phone_number,
                body=f"reply to {k[-6:]}",
                interaction_id=sent.interaction_id,
            )
            client.interactions.wait(sent.interaction_id, timeout=10)
    doomed_number = _numbers(service, key)[0]

    # Not without confirmation: refused when nobody can answer, or a wrong answer.
    code, _out, err = _delete(capsys, database, ident, stdin=io.StringIO(""))
    assert code == 1 and "without confirmation" in err and "--yes" in err
    code, _out, err = _delete(capsys, database, ident, stdin=_Terminal("nope\n"))
    assert code == 1 and "not deleted" in err
    assert send(service, key).status_code == 200

    code, out, err = _delete(capsys, database, ident, stdin=_Terminal(f"{ident}\n"))
    assert code == 0, err
    assert out.startswith(f"deleted: {ident} (doomed)")
    assert f"released numbers: {doomed_number}" in out

    with http(service, key) as client:
        assert client.get("/numbers").status_code == 401
    with http(service, other) as client:
        assert client.get("/numbers").status_code == 200
        assert len(client.get("/sandbox/messages").json()) == 1
    code, out, _err = run(capsys, "list", "--json", "--db", database)
    assert [entry["id"] for entry in json.loads(out)] == [kept]
    # Nothing of it is stored any more (its replies, texts and ids), the other's is.
    stored = stored_bytes(database)
    assert ident.encode() not in stored and key[-6:].encode() not in stored
    assert kept.encode() in stored and other[-6:].encode() in stored
    # Its number is free for another account.
    assert on_store(database, lambda store: store.number_by_phone(doomed_number)) is None


def on_store(database: str, work: Callable[[Store], Awaitable[T]]) -> T:
    """``work`` on the database's store, opened and closed on a loop of its own (these
    tests run the CLI, which runs its own)."""

    async def run_work() -> T:
        store = open_store(database)
        try:
            return await work(store)
        finally:
            await store.close()

    return asyncio.run(run_work())


def _numbers(runner: ServiceRunner, key: str) -> list[str]:
    with http(runner, key) as client:
        return [n["phoneNumber"] for n in client.get("/numbers").json()]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _delete(
    capsys: pytest.CaptureFixture[str], database: str, ident: str, *, stdin: io.StringIO
) -> tuple[int, str, str]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdin", stdin)
        return run(capsys, "delete", ident, "--db", database)


def test_a_held_send_of_a_deleted_account_ends_401_when_its_window_closes(
    service: ServiceRunner, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    key = service.create_account("held")
    result: dict[str, Any] = {}

    def held() -> None:
        with http(service, key) as client:
            result["response"] = client.post(
                "/messages/sms", json={"message": "Wait for me", "to": HUMAN, "waitTime": 2}
            )

    thread = threading.Thread(target=held)
    thread.start()
    try:
        deadline = 50
        while service.engine.held_waits == 0 and deadline:
            deadline -= 1
            threading.Event().wait(0.05)
        assert service.engine.held_waits == 1
        assert run(capsys, "delete", account_id(service, key), "--yes", "--db", database)[0] == 0
    finally:
        thread.join(15)
    response = result["response"]
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
    assert "deleted" in response.json()["error"]["message"]
    assert service.engine.held_waits == 0


@pytest.mark.parametrize("action", ["suspend", "reinstate", "rotate-key", "delete"])
def test_an_unknown_account_is_said_plainly(
    service: ServiceRunner, database: str, capsys: pytest.CaptureFixture[str], action: str
) -> None:
    key = service.create_account("present")
    extra = ["--yes"] if action == "delete" else []
    code, out, err = run(capsys, action, "no-such-account", *extra, "--db", database)
    assert code == 1 and out == ""
    assert "no account no-such-account" in err and "accounts list" in err
    assert send(service, key).status_code == 200  # nothing else changed


def test_a_missing_database_is_said_plainly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.db"
    code, _out, err = run(capsys, "list", "--db", str(missing))
    assert code == 1 and "no database at" in err
    assert not missing.exists()  # not created by looking


def test_a_number_bought_for_a_deleted_account_is_queued_for_release(
    service: ServiceRunner, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    key = service.create_account("bought")
    with HumanWire(api_key=key, base_url=service.base_url) as client:
        number = client.numbers.reserve(client.numbers.available(country="US")[0].phone_number)
    # What the Twilio number source keeps about a number it bought for the account.
    on_store(
        database,
        lambda store: store.put_provider_state(
            "reserved-number", number.phone_number, {"sid": "PN0123", "bought": True}, 1.0
        ),
    )
    code, out, _err = run(capsys, "delete", account_id(service, key), "--yes", "--db", database)
    assert code == 0
    assert f"bought at Twilio for it: {number.phone_number}" in out
    # The job Twilio's job runner picks up at the service's next start.
    job = on_store(
        database, lambda store: store.get_provider_state("twilio-jobs", "release_number:PN0123")
    )
    assert job == {"kind": "release_number", "sid": "PN0123", "attempts": 0}
    kept = on_store(
        database, lambda store: store.get_provider_state("reserved-number", number.phone_number)
    )
    assert kept is None
