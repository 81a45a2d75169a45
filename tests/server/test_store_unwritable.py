"""A write the database cannot commit is never answered as done, nor delivered.

With the SQLite file's disk "full" (``PRAGMA max_page_count`` on the service's own
connection: SQLite then fails a write needing a new page with SQLITE_FULL, "database or
disk is full", as on a full disk), or with its commits failing (the issue's log: "commit
of the store failed"), sends answer 503 ``unavailable`` with ``Retry-After``, the sandbox
inbox shows nothing of them, ``/readyz`` reports the store unwritable; once space is
back, the same sends retried under the same ``Idempotency-Key`` succeed, ``/readyz`` is
ready again, without a restart. On PostgreSQL, a connection lost mid-statement answers
503 too, never 200 nor a 500. Everything over real loopback HTTP."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from humanwire import HumanWire
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.server.store.sqlite import SQLiteStore
from humanwire.testing.service import fast_config
from pg_support import store_database

HUMAN = "+12025550100"
SENDS = 60


@pytest.fixture
def sqlite_runner(tmp_path: Path) -> Iterator[ServiceRunner]:
    service = ServiceRunner(fast_config(tmp_path / "hw.db"), "127.0.0.1", 0)
    service.start()
    try:
        yield service
    finally:
        service.stop()


def on_connection(runner: ServiceRunner, *statements: str) -> Any:
    """Runs ``statements`` on the service's own SQLite connection, on its loop (as a
    full disk or a fault would act on that connection; ``max_page_count`` is per
    connection); returns the last one's first value."""
    store = runner.engine.store
    assert isinstance(store, SQLiteStore)

    def run() -> Any:
        with store._lock:
            row = None
            for statement in statements:
                row = store._db.execute(statement).fetchone()
            return row[0] if row else None

    return runner.call(run)


def fill_disk(runner: ServiceRunner) -> None:
    """No page more for the database: what a full disk does to its writes."""
    pages = on_connection(runner, "PRAGMA page_count")
    on_connection(runner, f"PRAGMA max_page_count = {pages}")


def free_disk(runner: ServiceRunner) -> None:
    on_connection(runner, "PRAGMA max_page_count = 1073741823")


def fail_commits(runner: ServiceRunner, tables: tuple[str, ...] = ("interactions", "meta")) -> None:
    """Every COMMIT of a batch that inserted into ``tables`` (by default an interaction,
    or the readiness probe's write) fails after its statements succeeded, as a full disk
    fails the WAL append: a deferred foreign key left dangling by a temporary trigger."""
    on_connection(
        runner,
        "PRAGMA foreign_keys = ON",
        "CREATE TEMP TABLE fault_parent (id INTEGER PRIMARY KEY)",
        "CREATE TEMP TABLE fault_child (parent INTEGER "
        "REFERENCES fault_parent (id) DEFERRABLE INITIALLY DEFERRED)",
        *(
            f"CREATE TEMP TRIGGER fault_{table} AFTER INSERT ON main.{table} "
            "BEGIN INSERT INTO fault_child VALUES (1); END"
            for table in tables
        ),
    )


def heal_commits(runner: ServiceRunner, tables: tuple[str, ...] = ("interactions", "meta")) -> None:
    on_connection(
        runner,
        *(f"DROP TRIGGER temp.fault_{table}" for table in tables),
        "DROP TABLE temp.fault_child",
        "DROP TABLE temp.fault_parent",
    )


async def send_all(
    base_url: str, api_key: str, keys: list[str], **fields: Any
) -> list[httpx.Response]:
    """One SMS per key, all at once (one loop turn of the service takes many)."""
    async with httpx.AsyncClient(
        base_url=base_url,
        headers={"Authorization": f"Bearer {api_key}"},
        trust_env=False,
        timeout=30,
    ) as client:
        return await asyncio.gather(
            *(
                client.post(
                    "/messages/sms",
                    json={"to": HUMAN, "message": f"Reading {key}", **fields},
                    headers={"Idempotency-Key": key},
                )
                for key in keys
            )
        )


def get(runner: ServiceRunner, api_key: str, path: str) -> httpx.Response:
    return httpx.get(
        f"{runner.base_url}{path}",
        headers={"Authorization": f"Bearer {api_key}"},
        trust_env=False,
        timeout=20,
    )


def delivered(runner: ServiceRunner, api_key: str) -> list[str]:
    """The interactions the sandbox inbox shows a message of."""
    response = get(runner, api_key, "/sandbox/messages")
    assert response.status_code == 200, response.text
    return [str(message["interactionId"]) for message in response.json()]


def stored(db_path: Path) -> set[str]:
    """The interactions another process sees, but those that ended ``failed``: a send
    whose interaction was stored and whose delivery then could not be (the sandbox's
    delivery is a row too), answered 503 with nothing delivered; its retry makes a new
    one, as after a provider's refusal."""
    with sqlite3.connect(db_path) as other:
        rows = other.execute("SELECT id, outcome FROM interactions").fetchall()
    return {row[0] for row in rows if row[1] != "failed"}


def assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, (response.status_code, response.text)
    assert response.json()["error"]["code"] == "unavailable", response.text
    assert int(response.headers["retry-after"]) >= 1


def assert_not_ready(runner: ServiceRunner) -> None:
    response = httpx.get(f"{runner.base_url}/readyz", trust_env=False, timeout=20)
    assert response.status_code == 503, response.text
    database = response.json()["checks"]["database"]
    assert not database["ok"] and "cannot store writes" in database["detail"], database


def assert_ready(runner: ServiceRunner) -> None:
    response = httpx.get(f"{runner.base_url}/readyz", trust_env=False, timeout=20)
    assert response.status_code == 200, response.text


def unwritable_then_retried(
    runner: ServiceRunner,
    db_path: Path,
    break_store: Callable[[ServiceRunner], None],
    mend_store: Callable[[ServiceRunner], None],
    *,
    commits_fail: bool,
) -> None:
    api_key = runner.create_account("full-disk")
    # Something stored first, so the tables' pages are in use.
    warm = asyncio.run(send_all(runner.base_url, api_key, [str(uuid.uuid4())]))
    assert warm[0].status_code == 200, warm[0].text
    before = set(delivered(runner, api_key))

    break_store(runner)
    keys = [str(uuid.uuid4()) for _ in range(SENDS)]
    answers = asyncio.run(send_all(runner.base_url, api_key, keys))
    by_key = dict(zip(keys, answers, strict=True))
    ok = {
        key: str(answer.json()["interactionId"])
        for key, answer in by_key.items()
        if answer.status_code == 200
    }
    failed = [key for key, answer in by_key.items() if answer.status_code != 200]
    for key in failed:
        assert_unavailable(by_key[key])
    # The pages in use take a few more rows at most: most sends found no room.
    assert len(failed) >= SENDS // 2, [answer.status_code for answer in answers]
    # What was answered 200 is stored (another connection sees it) and delivered.
    shown = set(delivered(runner, api_key)) - before
    assert set(ok.values()) <= shown & stored(db_path)
    if commits_fail:
        # The interactions' own batches failed: nothing of the 503s reached the inbox.
        assert shown == set(ok.values())
    # Else a send may also answer 503 after its message went out, when what followed
    # (its delivery status, its stored result) was rolled back: its retry re-attaches
    # and answers 200 with that interaction, never sending twice (checked below).
    assert_not_ready(runner)

    mend_store(runner)  # space is back; no restart
    assert_ready(runner)
    retried = asyncio.run(send_all(runner.base_url, api_key, failed))
    assert [answer.status_code for answer in retried] == [200] * len(failed)
    ids = {str(answer.json()["interactionId"]) for answer in retried} | set(ok.values())
    assert len(ids) == SENDS
    # Each send delivered exactly once; no interaction of a failed try appeared.
    now_shown = delivered(runner, api_key)
    assert sorted(set(now_shown) - before) == sorted(ids)
    assert len(now_shown) == len(before) + SENDS
    assert stored(db_path) == ids | before
    for interaction_id in ids:
        assert get(runner, api_key, f"/interactions/{interaction_id}/status").status_code == 200


def test_a_full_disk_answers_503_never_sends_twice_and_recovers(
    sqlite_runner: ServiceRunner, tmp_path: Path
) -> None:
    unwritable_then_retried(
        sqlite_runner, tmp_path / "hw.db", fill_disk, free_disk, commits_fail=False
    )


def test_a_failed_commit_answers_503_not_200(sqlite_runner: ServiceRunner, tmp_path: Path) -> None:
    """The issue's case: every statement succeeds, the batch's COMMIT fails."""
    unwritable_then_retried(
        sqlite_runner, tmp_path / "hw.db", fail_commits, heal_commits, commits_fail=True
    )


def test_the_client_retries_the_503_and_succeeds_once_space_is_back(
    sqlite_runner: ServiceRunner,
) -> None:
    """``HumanWire`` retries a 503 under its Idempotency-Key: the store mended as the
    first 503 arrives, its retry is one delivered message."""
    api_key = sqlite_runner.create_account("client")
    fail_commits(sqlite_runner)
    answered: list[int] = []

    def on_response(response: httpx.Response) -> None:
        answered.append(response.status_code)
        if response.status_code == 503:
            heal_commits(sqlite_runner)

    http = httpx.Client(event_hooks={"response": [on_response]}, trust_env=False)
    with HumanWire(
        api_key=api_key, base_url=sqlite_runner.base_url, http_client=http, max_retries=2
    ) as client:
        sent = client.messages.sms(to=HUMAN, message="Are you there?")
    assert answered == [503, 200]
    assert delivered(sqlite_runner, api_key) == [sent.interaction_id]


def test_a_held_send_that_was_not_stored_leaves_no_wait_or_timer(
    sqlite_runner: ServiceRunner,
) -> None:
    """Sends with a waitTime whose interaction was rolled back: 503 at once, not held,
    and no wait or window timer of theirs is left in the engine."""
    api_key = sqlite_runner.create_account("held")
    fail_commits(sqlite_runner)
    keys = [str(uuid.uuid4()) for _ in range(5)]
    answers = asyncio.run(send_all(sqlite_runner.base_url, api_key, keys, waitTime=60))
    for answer in answers:
        assert_unavailable(answer)
    engine = sqlite_runner.engine
    assert sqlite_runner.call(lambda: (engine.held_waits, engine.open_windows)) == (0, 0)


def test_a_window_whose_end_was_rolled_back_ends_once_writes_work(
    sqlite_runner: ServiceRunner,
) -> None:
    """A window's end (and its outcome event) lost with its batch is tried again: the
    interaction ends once the database takes writes, without a restart."""
    api_key = sqlite_runner.create_account("window")
    fail_commits(sqlite_runner, ("outcomes",))
    [answer] = asyncio.run(
        send_all(sqlite_runner.base_url, api_key, [str(uuid.uuid4())], waitTime=1)
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["responded"] is False  # the human did not answer: still true
    status = f"/interactions/{answer.json()['interactionId']}/status"
    assert get(sqlite_runner, api_key, status).json()["status"] == "pending"  # not stored
    heal_commits(sqlite_runner, ("outcomes",))
    deadline = time.monotonic() + 10
    while get(sqlite_runner, api_key, status).json()["status"] == "pending":
        assert time.monotonic() < deadline, "the window's end was never stored"
        time.sleep(0.1)


def test_a_write_whose_commit_fails_as_its_response_starts_answers_503(
    sqlite_runner: ServiceRunner,
) -> None:
    """Not only sends: a card created in a batch whose commit (as its 201 starts) fails
    is answered 503 in place of the 201, and is not there after."""
    api_key = sqlite_runner.create_account("cards")
    card = {"type": "call", "to": HUMAN}
    fail_commits(sqlite_runner, ("channels",))
    with httpx.Client(
        base_url=sqlite_runner.base_url,
        headers={"Authorization": f"Bearer {api_key}"},
        trust_env=False,
        timeout=20,
    ) as client:
        assert_unavailable(client.post("/channels", json=card))
        assert client.get("/channels").json() == []
        heal_commits(sqlite_runner, ("channels",))
        created = client.post("/channels", json=card)
        assert created.status_code == 201, created.text
        assert [c["id"] for c in client.get("/channels").json()] == [created.json()["id"]]


def test_a_batch_answers_each_unstored_send_503_and_the_batch_200(
    sqlite_runner: ServiceRunner,
) -> None:
    """In ``POST /batch`` each item answers for its own writes: the items whose
    interaction was rolled back are 503 with Retry-After, nothing of them delivered."""
    api_key = sqlite_runner.create_account("batch")
    fail_commits(sqlite_runner)
    items = [
        {
            "path": "/messages/sms",
            "idempotencyKey": f"b-{n}",
            "body": {"to": HUMAN, "message": f"m{n}"},
        }
        for n in range(3)
    ]
    with httpx.Client(
        base_url=sqlite_runner.base_url,
        headers={"Authorization": f"Bearer {api_key}"},
        trust_env=False,
        timeout=20,
    ) as client:
        answer = client.post("/batch", json={"requests": items})
        assert answer.status_code == 200, answer.text
        for item in answer.json()["responses"]:
            assert item["status"] == 503, item
            assert item["body"]["error"]["code"] == "unavailable"
            assert int(item["headers"]["retry-after"]) >= 1
    assert delivered(sqlite_runner, api_key) == []


# -- PostgreSQL: the connection lost mid-statement --------------------------------------


@pytest.fixture
def pg_runner(tmp_path: Path) -> Iterator[tuple[ServiceRunner, str]]:
    with store_database("postgres", tmp_path / "unused.db", "hw_lost") as database:
        service = ServiceRunner(fast_config(database), "127.0.0.1", 0)
        service.start()
        try:
            yield service, database
        finally:
            service.stop()


def test_a_connection_lost_mid_insert_answers_503_on_postgres(
    pg_runner: tuple[ServiceRunner, str],
) -> None:
    """The insert of the send's interaction is slowed by a trigger, and its backend is
    terminated while it runs (``pg_terminate_backend``): the send may or may not have
    been stored as far as the service can tell. 503, nothing delivered; the retry
    under the same key succeeds with one message."""
    import psycopg

    runner, database = pg_runner
    api_key = runner.create_account("lost")
    with psycopg.connect(database, autocommit=True) as admin:
        admin.execute(
            "CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN PERFORM pg_sleep(5); RETURN NEW; END $$"
        )
        admin.execute(
            "CREATE TRIGGER slow BEFORE INSERT ON interactions "
            "FOR EACH ROW EXECUTE FUNCTION slow_insert()"
        )
        key = str(uuid.uuid4())
        answers: list[httpx.Response] = []
        sender = threading.Thread(
            target=lambda: answers.extend(asyncio.run(send_all(runner.base_url, api_key, [key])))
        )
        sender.start()
        deadline = time.monotonic() + 20
        killed = False
        while not killed and time.monotonic() < deadline:
            killed = bool(
                admin.execute(
                    # Only the insert asleep in this test's trigger: other tests on the
                    # same server insert interactions too.
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE query LIKE '%%INSERT INTO interactions%%' AND state = 'active' "
                    "AND wait_event = 'PgSleep' AND pid <> pg_backend_pid()"
                ).fetchall()
            )
            time.sleep(0.02)
        assert killed
        sender.join(20)
        assert_unavailable(answers[0])
        assert delivered(runner, api_key) == []
        admin.execute("DROP TRIGGER slow ON interactions")
    # The lost connection was noted; /readyz's test write finds writes working again.
    assert runner.engine.store.write_failure is not None
    assert_ready(runner)
    assert runner.engine.store.write_failure is None
    retried = asyncio.run(send_all(runner.base_url, api_key, [key]))
    assert retried[0].status_code == 200, retried[0].text
    assert delivered(runner, api_key) == [retried[0].json()["interactionId"]]
