"""The plans PostgreSQL runs the store's statements with, read back as the server ran them.

psycopg prepares a statement after a few runs, and PostgreSQL may then keep one generic
plan for it, made for the table as it was. A plan made while ``interactions`` held a
handful of rows (a fresh database: no ANALYZE yet) once answered "this interaction, if
still pending" through the ``status`` index, reading every open interaction: 9 ms at
30,000 held waits on the benchmark's replicas instead of 0.5 ms. The store has every
connection plan each statement for its parameters (``plan_cache_mode``); this test
runs the statements of a send and of an answer often enough to be prepared on a small
table, grows the table, and reads the plans of the next runs from the server itself
(``auto_explain``, reported to the client as notices: loading it needs a superuser, as
the test database's default user is): each reads its one interaction, not the others.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from humanwire.server.store.postgres import PostgresStore
from humanwire.server.store.records import AccountRecord, InteractionRecord
from pg_support import drop_schema, new_schema

REPLICA = "replica-a"
ROWS_READ = re.compile(r"Rows Removed by (?:Filter|Index Recheck): (\d+)")


@pytest.fixture
async def store() -> Iterator[PostgresStore]:
    schema, url = new_schema("hw_plans")
    # One pooled connection, so every statement below runs on the one that reports.
    store = PostgresStore(url, min_size=1, max_size=1)
    try:
        yield store
    finally:
        await store.close()
        drop_schema(schema)


def pending(account_id: str) -> InteractionRecord:
    now = time.time()
    return InteractionRecord(
        id=str(uuid.uuid4()),
        account_id=account_id,
        kind="message",
        channel="slack",
        to_addr="U0HUMAN0001",
        from_addr="W0SHARED",
        request={"message": "ok?"},
        created_at=now,
        status="pending",
        wait_deadline=now + 600,
        owner=REPLICA,
        held_by=REPLICA,
    )


async def send_and_answer(store: PostgresStore, record: InteractionRecord) -> None:
    """What a held send and its answer ask of the store for one interaction."""
    await store.insert_interaction(record)
    await store.set_delivery(record.id, "delivered", "1700000000.000100")
    assert await store.get_interaction(record.id) is not None
    assert await store.take_interaction(record.id, REPLICA, hold=True)
    ended, holder = await store.end_held_interaction(
        record.id, time.time(), result={"eventType": "x"}
    )
    assert ended and holder == REPLICA
    assert await store.release_hold(record.id, REPLICA, ended_only=True) is not None


async def test_an_interaction_is_read_by_its_id_however_many_are_open(store: PostgresStore) -> None:
    await store.insert_account(
        AccountRecord(id="acct", name="a", key_hash="h", suspended=False, created_at=time.time())
    )
    for _ in range(12):  # past psycopg's prepare threshold (5) and PostgreSQL's (5)
        await send_and_answer(store, pending("acct"))
    for _ in range(1500):  # open waits the next statements must not read
        await store.insert_interaction(pending("acct"))

    plans: list[str] = []
    async with store._connection() as conn:
        await conn.execute("LOAD 'auto_explain'")
        await conn.execute("SET auto_explain.log_min_duration = 0")
        await conn.execute("SET auto_explain.log_analyze = on")
        await conn.execute("SET auto_explain.log_timing = off")
        await conn.execute("SET auto_explain.log_level = notice")
        await conn.execute("SET client_min_messages = notice")

        def heard(notice: psycopg.errors.Diagnostic) -> None:
            plans.append(notice.message_primary or "")

        conn.add_notice_handler(heard)
    try:
        for _ in range(3):
            await send_and_answer(store, pending("acct"))
    finally:
        async with store._connection() as conn:
            conn.remove_notice_handler(heard)
            await conn.execute("SET auto_explain.log_min_duration = -1")

    by_id = [plan for plan in plans if "interactions" in plan and "id = $" in plan]
    statements = {plan.split("Query Text: ", 1)[-1].split("\n", 1)[0][:40] for plan in by_id}
    # get, take, set_delivery, end and release: each seen in its three runs.
    assert len(by_id) >= 15 and len(statements) >= 5, plans
    for plan in by_id:
        read = sum(int(n) for n in ROWS_READ.findall(plan))
        assert read <= 10, f"a statement for one interaction read {read} others:\n{plan}"
