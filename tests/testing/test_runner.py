"""ServiceRunner: the service under uvicorn in a background thread. What the service does
under it runs on both stores (the ``database`` fixture); the port, URL and missing-file
checks are the runner's own (SQLite, ``:memory:`` where no file is needed)."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest

from humanwire.server.config import ServiceConfig
from humanwire.server.engine import Engine
from humanwire.server.http.startup import StartupAccount
from humanwire.server.net import is_loopback
from humanwire.server.runtime.runner import ServiceRunner, bind_listener, format_base_url
from humanwire.server.store.records import WINDOW_STEP


def test_start_serves_on_a_free_port_and_stop_releases_it(database: str) -> None:
    config = ServiceConfig(db_path=database)
    runner = ServiceRunner(config).start()
    try:
        assert runner.running
        assert runner.base_url == f"http://127.0.0.1:{runner.port}"
        # Form links are built from public_url: it must be the real address, set on the
        # runner's own copy of the config (the caller's is left as it was).
        assert runner.config.public_url == runner.base_url
        assert config.public_url != runner.base_url
        health = httpx.get(f"{runner.base_url}/healthz", trust_env=False)
        assert (health.status_code, health.json()) == (200, {"status": "ok"})
        key = runner.create_account("me")
        assert runner.authenticate(key) and not runner.authenticate("hw_wrong")
        numbers = httpx.get(
            f"{runner.base_url}/numbers",
            headers={"Authorization": f"Bearer {key}"},
            trust_env=False,
        )
        assert (numbers.status_code, numbers.json()) == (200, [])
        port = runner.port
    finally:
        runner.stop()
    assert not runner.running
    # The port is free again and the database is closed (it can be reopened at once).
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))
    with ServiceRunner(ServiceConfig(db_path=database)) as again:
        assert again.authenticate(key)


def test_a_given_api_key_is_kept(database: str) -> None:
    with ServiceRunner(ServiceConfig(db_path=database)) as runner:
        assert runner.create_account(api_key="hw_chosen_key_0123456789abcdefghijk") == (
            "hw_chosen_key_0123456789abcdefghijk"
        )
        assert runner.authenticate("hw_chosen_key_0123456789abcdefghijk")


def test_a_busy_port_is_an_oserror(tmp_path: Path) -> None:
    with ServiceRunner(ServiceConfig(db_path=":memory:")) as first:
        second = ServiceRunner(ServiceConfig(db_path=str(tmp_path / "b.db")), port=first.port)
        with pytest.raises(OSError):
            second.start()
        assert not second.running


def test_public_url_is_kept_when_given() -> None:
    config = ServiceConfig(db_path=":memory:")
    with ServiceRunner(config, public_url="https://hw.example.com/") as runner:
        assert runner.config.public_url == "https://hw.example.com"
        assert runner.base_url == "https://hw.example.com"
        assert runner.bound_url == f"http://127.0.0.1:{runner.port}"


def test_two_runners_on_one_config_each_keep_their_own_address() -> None:
    config = ServiceConfig(db_path=":memory:")
    with ServiceRunner(config) as first, ServiceRunner(config) as second:
        assert first.port != second.port
        assert first.base_url == f"http://127.0.0.1:{first.port}"
        assert second.base_url == f"http://127.0.0.1:{second.port}"
        # Each serves its own address in the links it builds (the OpenAPI servers list).
        for runner in (first, second):
            served = httpx.get(f"{runner.base_url}/openapi.json", trust_env=False).json()
            assert served["servers"] == [{"url": runner.base_url}]


def test_calls_need_a_running_service() -> None:
    runner = ServiceRunner(ServiceConfig(db_path=":memory:"))
    with pytest.raises(RuntimeError):
        runner.create_account()
    with pytest.raises(RuntimeError):
        _ = runner.base_url
    runner.stop()  # stopping a runner that never started is harmless


def test_url_helpers() -> None:
    assert format_base_url("0.0.0.0", 80) == "http://127.0.0.1:80"
    assert format_base_url("::1", 8765) == "http://[::1]:8765"
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1")


def test_a_failing_app_start_is_a_runtime_error_and_frees_the_port(tmp_path: Path) -> None:
    # A database in a directory that does not exist cannot be opened.
    config = ServiceConfig(db_path=str(tmp_path / "missing" / "dir" / "x.db"))
    runner = ServiceRunner(config)
    with pytest.raises(RuntimeError, match="failed to start"):
        runner.start()
    assert not runner.running


def test_startup_steps_run_before_anything_is_answered(database: str) -> None:
    account = StartupAccount("at start", "hw_startup_key_0123456789abcdefghij")
    probed: list[str] = []
    runner: ServiceRunner

    def probe_healthz() -> str:
        try:
            answer = httpx.get(f"{runner.base_url}/healthz", timeout=1.0, trust_env=False)
        except httpx.TimeoutException:
            return "no answer"
        return str(answer.status_code)

    async def probe_then_create(engine: Engine) -> None:
        probed.append(await asyncio.to_thread(probe_healthz))
        await account(engine)

    runner = ServiceRunner(ServiceConfig(db_path=database), before_serving=[probe_then_create])
    with runner:
        assert probed == ["no answer"]  # the probe waited in the listener's queue
        numbers = httpx.get(
            f"{runner.base_url}/numbers",
            headers={"Authorization": f"Bearer {account.key}"},
            trust_env=False,
        )
        assert numbers.status_code == 200
    # Started again, the account is found, not made twice.
    with ServiceRunner(ServiceConfig(db_path=database), before_serving=[account]) as again:
        assert again.call(again.engine.store.count_accounts) == 1


def test_a_failing_startup_step_fails_the_start_with_its_error(tmp_path: Path) -> None:
    async def refuse(engine: Engine) -> None:
        raise ValueError("this service may not start")

    runner = ServiceRunner(ServiceConfig(db_path=str(tmp_path / "x.db")), before_serving=[refuse])
    with pytest.raises(RuntimeError, match="failed to start: ValueError") as failed:
        runner.start()
    assert isinstance(failed.value.__cause__, ValueError)
    assert not runner.running


UNAVAILABLE = {
    "error": {
        "code": "unavailable",
        "message": "the service is restarting; retry",
        "field": None,
    }
}


def test_stop_answers_held_requests_503_and_keeps_their_windows(database: str) -> None:
    import threading
    import time

    db_path = database
    runner = ServiceRunner(ServiceConfig(db_path=db_path)).start()
    key = runner.create_account()
    headers = {"Authorization": f"Bearer {key}"}
    answers: dict[str, httpx.Response | BaseException] = {}

    def hold(name: str, method: str, path: str, **kwargs: Any) -> threading.Thread:
        def run() -> None:
            try:
                answers[name] = httpx.request(
                    method, f"{runner.base_url}{path}", timeout=40, trust_env=False, **kwargs
                )
            except httpx.HTTPError as exc:
                answers[name] = exc

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    threads = [
        hold(
            "send",
            "POST",
            "/messages/sms",
            json={"message": "Deploy?", "to": "+12025550100", "waitTime": 30},
            headers={**headers, "Idempotency-Key": "held-at-stop"},
        ),
        hold(
            "poll", "GET", "/sandbox/messages", params={"wait": "30", "to": "+1"}, headers=headers
        ),
    ]
    deadline = time.monotonic() + 10
    while runner.call(lambda: runner.engine.held_waits) < 1:
        assert time.monotonic() < deadline, "the send was never held"
        time.sleep(0.02)
    time.sleep(0.1)  # the long poll is held too
    started = time.monotonic()
    runner.stop()
    stopped_in = time.monotonic() - started
    for thread in threads:
        thread.join(10)
    # Answered at once, not after uvicorn's grace period (and not its plain-text 500).
    assert stopped_in < 2.0, stopped_in
    for name in ("send", "poll"):
        answer = answers[name]
        assert isinstance(answer, httpx.Response), (name, answer)
        assert answer.status_code == 503, (name, answer.text)
        assert answer.json() == UNAVAILABLE
        assert int(answer.headers["retry-after"]) >= 1
        assert answer.headers["connection"] == "close"

    # The interaction was not ended: its window is still open in the database.
    with ServiceRunner(ServiceConfig(db_path=db_path)) as again:
        [record] = again.call(lambda: again.engine.store.open_interactions())
        assert record.status == "pending" and record.wait_deadline is not None
        # Its window is a step of the schedule, still armed (a row, not a timer: it is
        # not due within the schedule's horizon).
        step = again.call(lambda: again.engine.store.get_step(WINDOW_STEP, record.id))
        assert step is not None and step.due_at == record.close_deadline


def test_a_request_arriving_while_stopping_is_refused_503(database: str) -> None:
    runner = ServiceRunner(ServiceConfig(db_path=database)).start()
    try:
        key = runner.create_account()
        runner.call(lambda: runner.engine.drain())
        late = httpx.post(
            f"{runner.base_url}/messages/sms",
            json={"message": "Too late?", "to": "+12025550100"},
            headers={"Authorization": f"Bearer {key}"},
            trust_env=False,
        )
        assert (late.status_code, late.json()) == (503, UNAVAILABLE)
        health = httpx.get(f"{runner.base_url}/healthz", trust_env=False)
        assert health.status_code == 503  # not ready: embedded mode must not reuse it

        async def deliveries() -> list[Any]:
            account = await runner.engine.accounts.authenticate(key)
            assert account is not None
            return await runner.engine.list_sandbox_deliveries(account)

        assert runner.call(deliveries) == []
    finally:
        runner.stop()


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_accepted_connections_send_without_nagle(host: str) -> None:
    # uvicorn writes a response's head and body in two writes: with Nagle on, the body
    # waited for the client's delayed ACK, 40 ms on every request of a blocking client.
    try:
        listener = bind_listener(host, 0)
    except OSError:
        pytest.skip(f"no {host} on this machine")
    with listener, socket.create_connection(listener.getsockname()[:2], timeout=5):
        listener.setblocking(True)
        accepted, _ = listener.accept()
        with accepted:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
