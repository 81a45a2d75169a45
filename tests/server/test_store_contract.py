"""The ``Store`` contract, run against every store: ``SQLiteStore`` on a file and
``PostgresStore`` on a fresh PostgreSQL schema (dropped after the test).

PostgreSQL comes from ``HUMANWIRE_TEST_DATABASE_URL`` (default
``postgresql://127.0.0.1:5432/test``). Without a server the PostgreSQL cases fail: install
one (Debian: ``apt-get install postgresql``) or point the variable at one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from typing import Any

import psycopg
import pytest
from psycopg import sql

from humanwire.server.approvals.checkpoints import Checkpoint
from humanwire.server.literals import UnknownValue
from humanwire.server.store import SQLiteStore, Store
from humanwire.server.store.migrations import LATEST, SERIES
from humanwire.server.store.postgres import PostgresStore
from humanwire.server.store.protocol import Duplicate, shared_store
from humanwire.server.store.records import (
    WINDOW_STEP,
    AccountRecord,
    AccountUsage,
    ApprovalQuery,
    ApprovalRecord,
    ApproverRecord,
    AuditDraft,
    ChannelRecord,
    ClaimRecord,
    ConsoleCodeRecord,
    ConsoleSessionRecord,
    DelegationRecord,
    EndReport,
    EventRecord,
    GrantRecord,
    IdempotencyLinkRecord,
    IdempotencyRecord,
    InboundRecord,
    InboxSessionRecord,
    InteractionRecord,
    NumberRecord,
    OutboxRecord,
    PersonAddressRecord,
    PersonRecord,
    Reassignment,
    StepRecord,
    WaitEndedAnswer,
    WebhookRecord,
)
from pg_support import wire_round_trips

DATABASE_URL = os.environ.get("HUMANWIRE_TEST_DATABASE_URL", "postgresql://127.0.0.1:5432/test")

# Both stores raise Duplicate for any unique value taken (SQLite once let
# sqlite3.IntegrityError through where it did not promise it).
REFUSED = Duplicate


def _no_postgres(exc: BaseException) -> None:
    pytest.fail(
        f"PostgreSQL is not reachable at {DATABASE_URL} ({exc}). These tests need a server: "
        "install one (Debian: `apt-get install postgresql`, then start it, e.g. "
        "`pg_ctlcluster 15 main start`) or set HUMANWIRE_TEST_DATABASE_URL to a "
        "postgresql:// URL of a database you may create schemas in.",
        pytrace=False,
    )


def _drop_schema(schema: str) -> None:
    with psycopg.connect(DATABASE_URL, connect_timeout=5) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture
def pg_schema() -> Iterator[str]:
    """A fresh schema name, dropped after the test."""
    schema = f"hw_contract_{uuid.uuid4().hex[:12]}"
    try:
        psycopg.connect(DATABASE_URL, connect_timeout=5).close()
    except psycopg.OperationalError as exc:
        _no_postgres(exc)
    try:
        yield schema
    finally:
        _drop_schema(schema)


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[Store]:
    if request.param == "sqlite":
        lite = SQLiteStore(str(tmp_path / "contract.db"))
        try:
            yield lite
        finally:
            await lite.close()
        return
    schema = request.getfixturevalue("pg_schema")
    pg = PostgresStore(DATABASE_URL, schema=schema, connect_timeout=5)
    try:
        yield pg
    finally:
        await pg.close()


# -- records ----------------------------------------------------------------------------
def account(n: int, **changes: Any) -> AccountRecord:
    fields: dict[str, Any] = {
        "id": f"acct_{n}",
        "name": f"Account {n} — é",
        "key_hash": f"hash_{n}",
        "suspended": False,
        "created_at": 1000.5 + n,
    }
    fields.update(changes)
    return AccountRecord(**fields)


def interaction(id: str, **changes: Any) -> InteractionRecord:
    fields: dict[str, Any] = {
        "id": id,
        "account_id": "acct_1",
        "kind": "message",
        "channel": "sms",
        "to_addr": "+15550000001",
        "from_addr": "+15559990000",
        "request": {"to": "+15550000001", "text": "hi ☎", "waitTime": 30, "_": {"x": 1.5}},
        "created_at": 2000.25,
        "status": "pending",
    }
    fields.update(changes)
    return InteractionRecord(**fields)


def full_interaction(id: str) -> InteractionRecord:
    """Every field set (an ended interaction as a restart would read it)."""
    return interaction(
        id,
        kind="form",
        channel="whatsapp",
        status="ended",
        wait_deadline=2030.5,
        follow_up_deadline=2090.75,
        result={"eventType": "form.response", "payload": {"answers": {"a": [1, 2]}}},
        outcome="completed",
        form_token=f"ft_{id}",
        reply_token=f"rt_{id}",
        card_id="card_9",
        ended_at=2040.125,
        delivery_status="delivered",
        provider_ref=f"SM_{id}",
    )


def outbox(id: str, event_id: str, **changes: Any) -> OutboxRecord:
    fields: dict[str, Any] = {
        "id": id,
        "event_id": event_id,
        "webhook_id": "wh_1",
        "account_id": "acct_1",
        "status": "pending",
        "attempts": 0,
        "next_attempt_at": 100.0,
        "last_error": None,
        "created_at": 50.0,
        "updated_at": 50.0,
    }
    fields.update(changes)
    return OutboxRecord(**fields)


async def delivery(store: Store, id: str, **changes: Any) -> Any:
    fields: dict[str, Any] = {
        "id": id,
        "account_id": "acct_1",
        "interaction_id": "int_1",
        "channel": "sms",
        "kind": "message",
        "from_addr": "+15559990000",
        "to_addr": "+15550000001",
        "text": f"text of {id}",
        "form_url": None,
        "created_at": 10.0,
    }
    fields.update(changes)
    return await store.insert_delivery(**fields)


# -- accounts ---------------------------------------------------------------------------
async def test_accounts_round_trip_suspend_and_count(store: Store) -> None:
    assert await store.count_accounts() == 0
    assert await store.get_account("acct_1") is None
    assert await store.account_by_key_hash("hash_1") is None
    first, second = account(1), account(2, suspended=True)
    await store.insert_account(first)
    await store.insert_account(second)
    assert await store.count_accounts() == 2
    assert await store.get_account("acct_1") == first
    assert await store.account_by_key_hash("hash_2") == second
    await store.set_account_suspended("acct_1", True)
    await store.set_account_suspended("acct_2", False)
    got = await store.get_account("acct_1")
    assert got is not None and got.suspended is True
    got = await store.account_by_key_hash("hash_2")
    assert got is not None and got.suspended is False


async def test_accounts_duplicate_id_or_key_hash(store: Store) -> None:
    await store.insert_account(account(1))
    with pytest.raises(Duplicate):
        await store.insert_account(account(1, key_hash="other"))
    with pytest.raises(Duplicate):
        await store.insert_account(account(2, key_hash="hash_1"))
    assert await store.count_accounts() == 1
    await store.insert_account(account(2))
    assert await store.count_accounts() == 2


# -- account administration (humanwire accounts) -------------------------------------------
async def test_accounts_listed_oldest_first_with_their_usage(store: Store) -> None:
    assert await store.list_accounts() == [] and await store.account_usage() == {}
    first, second, third = account(1), account(2, created_at=900.0), account(3)
    for record in (first, second, third):
        await store.insert_account(record)
    assert await store.list_accounts() == [second, first, third]
    await store.insert_interaction(interaction("int_1", created_at=50.0))
    await store.insert_interaction(interaction("int_2", status="ended", created_at=70.0))
    await store.insert_interaction(interaction("int_3", account_id="acct_2"))
    await store.insert_number(NumberRecord("num_1", "acct_1", "+15550000001", 1.0, 1.0))
    await store.insert_webhook(
        WebhookRecord("wh_1", "acct_2", "https://h.example", [], {}, "s", 1.0)
    )
    usage = await store.account_usage()
    assert usage["acct_1"] == AccountUsage(
        interactions=2, open_interactions=1, numbers=1, last_interaction_at=70.0
    )
    assert usage["acct_2"] == AccountUsage(
        interactions=1, open_interactions=1, webhooks=1, last_interaction_at=2000.25
    )
    assert "acct_3" not in usage  # holds nothing


async def test_account_key_rotation(store: Store) -> None:
    await store.insert_account(account(1))
    await store.insert_account(account(2))
    assert await store.set_account_key_hash("acct_1", "hash_new") is True
    assert await store.account_by_key_hash("hash_1") is None  # the old key opens nothing
    got = await store.account_by_key_hash("hash_new")
    assert got is not None and got.id == "acct_1" and got.name == account(1).name
    assert await store.set_account_key_hash("acct_9", "hash_9") is False
    with pytest.raises(REFUSED):  # another account's key
        await store.set_account_key_hash("acct_1", "hash_2")
    assert await store.account_by_key_hash("hash_new") is not None


# -- the inbox's sessions ----------------------------------------------------------------
def session(id_hash: str, **changes: Any) -> InboxSessionRecord:
    fields: dict[str, Any] = {
        "id_hash": id_hash,
        "account_id": "acct_1",
        "key_hash": "hash_1",
        "created_at": 100.0,
        "expires_at": 200.0,
        "seen_at": 100.0,
    }
    fields.update(changes)
    return InboxSessionRecord(**fields)


async def test_inbox_session_create_look_up_and_log_out(store: Store) -> None:
    await store.insert_account(account(1))
    await store.insert_account(account(2, suspended=True))
    assert await store.inbox_session("sess_a", 150.0, 0.0) is None
    await store.insert_inbox_session(session("sess_a"))
    await store.insert_inbox_session(session("sess_b", account_id="acct_2", key_hash="hash_2"))
    found = await store.inbox_session("sess_a", 150.0, 0.0)
    assert found == (session("sess_a"), account(1))
    found = await store.inbox_session("sess_b", 150.0, 0.0)
    assert found is not None and found[1] == account(2, suspended=True)
    with pytest.raises(REFUSED):  # a token's hash is one session's
        await store.insert_inbox_session(session("sess_a", account_id="acct_2"))
    assert await store.delete_inbox_session("sess_a") is True
    assert await store.inbox_session("sess_a", 150.0, 0.0) is None
    assert await store.delete_inbox_session("sess_a") is False
    assert await store.inbox_session("sess_b", 150.0, 0.0) is not None  # the other stays


async def test_inbox_session_expires_at_its_end_and_when_idle(store: Store) -> None:
    await store.insert_account(account(1))
    await store.insert_inbox_session(session("sess_a", expires_at=200.0, seen_at=100.0))
    # Absolute: valid up to (not at) expires_at, whatever its last use.
    assert await store.inbox_session("sess_a", 199.5, 0.0) is not None
    assert await store.inbox_session("sess_a", 200.0, 0.0) is None
    # Idle: valid while seen after the cutoff; a use moves it on, never back.
    assert await store.inbox_session("sess_a", 150.0, 100.0) is None
    await store.touch_inbox_session("sess_a", 140.0)
    found = await store.inbox_session("sess_a", 150.0, 100.0)
    assert found is not None and found[0].seen_at == 140.0
    await store.touch_inbox_session("sess_a", 120.0)
    found = await store.inbox_session("sess_a", 150.0, 130.0)
    assert found is not None and found[0].seen_at == 140.0


async def test_inbox_sessions_end_when_the_key_rotates(store: Store) -> None:
    await store.insert_account(account(1))
    await store.insert_account(account(2))
    await store.insert_inbox_session(session("sess_a"))
    await store.insert_inbox_session(session("sess_b", account_id="acct_2", key_hash="hash_2"))
    assert await store.set_account_key_hash("acct_1", "hash_new") is True
    assert await store.inbox_session("sess_a", 150.0, 0.0) is None  # opened with the old key
    assert await store.inbox_session("sess_b", 150.0, 0.0) is not None
    # One opened with the new key works; rotating back does not revive the old one's
    # successor (each session is tied to the key it was opened with).
    await store.insert_inbox_session(session("sess_c", key_hash="hash_new"))
    assert await store.inbox_session("sess_c", 150.0, 0.0) is not None
    await store.set_account_key_hash("acct_1", "hash_1")
    assert await store.inbox_session("sess_c", 150.0, 0.0) is None


async def test_prune_inbox_sessions_drops_only_the_ended(store: Store) -> None:
    await store.insert_account(account(1))
    await store.insert_account(account(2))
    await store.insert_inbox_session(session("live", seen_at=130.0))
    await store.insert_inbox_session(session("expired", expires_at=150.0, seen_at=130.0))
    await store.insert_inbox_session(session("idle", seen_at=110.0))
    await store.insert_inbox_session(session("old_key", account_id="acct_2", key_hash="hash_old"))
    await store.insert_inbox_session(session("no_account", account_id="acct_9", key_hash="hash_9"))
    assert await store.prune_inbox_sessions(160.0, 120.0) == 4
    assert await store.inbox_session("live", 160.0, 120.0) is not None
    assert await store.prune_inbox_sessions(160.0, 120.0) == 0
    assert await store.delete_inbox_session("expired") is False  # gone, not just hidden


async def test_a_sqlite_file_of_schema_5_gains_the_inbox_sessions(tmp_path: Any) -> None:
    path = str(tmp_path / "v5.db")
    old = SQLiteStore(path)
    await old.insert_account(account(1))
    async with old._tx() as db:  # what a file written by schema version 5 looks like
        await db.execute("DROP TABLE inbox_sessions")
        await db.execute("DROP TABLE schema_migrations")
        await db.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    await old.close()
    upgraded = SQLiteStore(path)
    try:
        assert await upgraded.pending_migrations() == []
        assert await upgraded.get_account("acct_1") == account(1)  # nothing lost
        await upgraded.insert_inbox_session(session("sess_a"))
        assert await upgraded.inbox_session("sess_a", 150.0, 0.0) is not None
    finally:
        await upgraded.close()


async def _fill(store: Store, n: int) -> None:
    """Account ``acct_<n>`` with a row in every table that holds account data."""
    a, i = f"acct_{n}", f"int_{n}"
    phone = f"+1555000000{n}"
    await store.insert_account(account(n))
    await store.insert_interaction(
        replace(full_interaction(i), account_id=a),
        IdempotencyLinkRecord(a, "k", "fp", i, 10.0),
    )
    await store.put_idempotency(IdempotencyRecord(a, "k", "fp", 200, b"{}", 10.0))
    await delivery(store, f"dl_{n}", account_id=a, interaction_id=i)
    await store.insert_inbound(
        InboundRecord(f"in_{n}", a, "sms", phone, "+15559990000", "yes", [], i, 1.0, f"SMin{n}")
    )
    await store.insert_number(NumberRecord(f"num_{n}", a, phone, 1.0, 1.0))
    await store.insert_webhook(WebhookRecord(f"wh_{n}", a, "https://h.example", [], {}, "s", 1.0))
    await store.insert_channel(
        ChannelRecord(f"ch_{n}", a, "sms", phone, None, None, None, "r", "n", False, 1.0)
    )
    await store.insert_event(
        replace(event(f"ev_{n}", 1.0, a), interaction_id=i),
        [outbox(f"ob_{n}", f"ev_{n}", account_id=a, webhook_id=f"wh_{n}")],
    )
    await store.append_outcome(a, i, {"interactionId": i}, 1.0)
    await store.insert_inbox_session(session(f"s{n}", account_id=a, key_hash=f"hash_{n}"))
    await store.put_console_code(ConsoleCodeRecord(f"ak{n}", a, f"per_{n}", "h", 9.0, 0, 1.0, 1))
    await store.insert_console_session(ConsoleSessionRecord(f"cs{n}", a, f"per_{n}", 1.0, 9.0, 1.0))
    await store.insert_grant(GrantRecord(f"grt_{n}", a, "deploy", {"s": 1}, f"per_{n}", 1.0, 9.0))
    await store.put_steps([StepRecord("window", i, 5.0, account_id=a)], None, None)
    await store.append_audit(a, [AuditDraft(1.0, "approval.requested", i)])
    await store.insert_audit_checkpoint(Checkpoint(a, 1, "sha256:x", "at", "key", "signature"))
    approver = ApproverRecord(i, 0, a, 0, "sms", f"+1202555010{n}", f"tok_{n}", "1234")
    await store.insert_approval(ApprovalRecord(i, a), [approver])
    await store.claim_approval(ClaimRecord(i, a, f"per_{n}", 1.0))
    await store.insert_delegation(
        DelegationRecord(f"dlg_{n}", a, f"per_{n}", f"per_b{n}", 1.0, 9.0, 1.0)
    )
    await store.insert_person(
        PersonRecord(f"per_{n}", a, "Ada", (PersonAddressRecord("sms", phone),), 1.0, 1.0)
    )
    # Provider state about the account: a Slack install and an OAuth state (naming the
    # account), a decision (keyed by its interaction), a call (naming its interaction),
    # its reserved number's provider data (keyed by the number).
    await store.put_provider_state("slack-install", f"T{n}", {"account": a, "token": "x"}, 1.0)
    await store.put_provider_state("slack-oauth-state", f"st{n}", {"account": a}, 1.0)
    await store.put_provider_state("slack-decision", i, {"user": "U1", "decision": "approve"}, 1.0)
    await store.put_provider_state("twilio-call", f"CA{n}", {"interactionId": i}, 1.0)
    await store.put_provider_state("reserved-number", phone, {"sid": f"PN{n}"}, 1.0)
    shared = shared_store(store)
    if shared is not None:
        await shared.rate_hit(a, 1.0, 100, 60.0)
        await shared.spam_hit(a, "fp", phone, 1.0, 60.0)


def _rows(store: Store) -> dict[str, list[str]]:
    """Every row of every table of the store, as text, by table."""
    store.commit()  # read from another connection: SQLite's batch of this loop turn first
    if isinstance(store, SQLiteStore):
        with sqlite3.connect(store.path) as db:
            tables = [
                row[0]
                for row in db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite_%'"
                )
            ]
            return {t: [repr(r) for r in db.execute(f"SELECT * FROM {t}")] for t in tables}
    assert isinstance(store, PostgresStore) and store.schema is not None
    with psycopg.connect(DATABASE_URL, connect_timeout=5) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(store.schema)))
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
            )
        ]
        return {
            t: [
                str(row[0])
                for row in conn.execute(
                    sql.SQL("SELECT t::text FROM {} t").format(sql.Identifier(t))
                )
            ]
            for t in tables
        }


def _account_columns(store: Store) -> set[str]:
    """The tables with an ``account_id`` column: deletion must cover every one."""
    if isinstance(store, SQLiteStore):
        with sqlite3.connect(store.path) as db:
            names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            return {
                t
                for t in names
                if any(c[1] == "account_id" for c in db.execute(f"PRAGMA table_info({t})"))
            }
    assert isinstance(store, PostgresStore)
    with psycopg.connect(DATABASE_URL, connect_timeout=5) as conn:
        return {
            row[0]
            for row in conn.execute(
                "SELECT table_name FROM information_schema.columns "
                "WHERE table_schema = %s AND column_name = 'account_id'",
                (store.schema,),
            )
        }


async def test_delete_account_leaves_no_row_of_it_in_any_table(store: Store) -> None:
    await _fill(store, 1)
    await _fill(store, 2)

    def of_first(row: str) -> bool:
        # Its id, its interaction's id, its number's provider data.
        return any(marker in row for marker in ("acct_1", "int_1", "PN1"))

    before = _rows(store)
    holding = {t for t, rows in before.items() if any(of_first(row) for row in rows)}
    # Every table with an account_id column held a row of it (so the check below covers
    # them all), and so did the provider state.
    assert _account_columns(store) | {"accounts", "provider_state"} <= holding
    theirs = {t: [row for row in rows if not of_first(row)] for t, rows in before.items()}

    removed = await store.delete_account("acct_1")
    assert removed is not None and removed["accounts"] == 1
    assert removed["interactions"] == 1 and removed["provider_state"] == 5
    after = _rows(store)
    left = {t: [row for row in rows if of_first(row)] for t, rows in after.items()}
    assert all(not rows for rows in left.values()), left
    # Nothing else was touched: every other row is still there.
    for table, rows in theirs.items():
        if table in ("meta", "schema_migrations", "sqlite_sequence"):
            continue
        assert sorted(after[table]) == sorted(rows), table
    assert await store.get_account("acct_2") is not None
    assert await store.number_by_phone("+15550000001") is None  # released
    assert await store.get_provider_state("twilio-call", "CA2") == {"interactionId": "int_2"}
    assert await store.delete_account("acct_1") is None
    assert await store.delete_account("acct_9") is None


# -- standing approvals ---------------------------------------------------------------------
async def test_grants_live_until_expired_or_revoked_and_only_for_their_account(
    store: Store,
) -> None:
    def made(grant_id: str, account_id: str = "acct_1", action: str = "deploy") -> GrantRecord:
        match = {"service": {"oneOf": ["payments-api", 1]}, "env": {"prefix": "prod-"}}
        return GrantRecord(grant_id, account_id, action, match, "per_1", 10.0, 100.0)

    await store.insert_grant(made("grt_a"))
    await store.insert_grant(replace(made("grt_b"), created_at=11.0))
    await store.insert_grant(made("grt_other_action", action="wire"))
    await store.insert_grant(made("grt_theirs", account_id="acct_2"))
    assert await store.live_grants("acct_1", 50.0, "deploy") == [
        made("grt_a"),
        replace(made("grt_b"), created_at=11.0),
    ]
    assert [g.id for g in await store.live_grants("acct_1", 50.0)] == [
        "grt_a",
        "grt_other_action",
        "grt_b",
    ]  # the oldest first
    assert await store.live_grants("acct_1", 100.0, "deploy") == []  # expired at its end
    assert await store.get_grant("acct_2", "grt_a") is None  # another account's
    assert await store.revoke_grant("acct_2", "grt_a", 50.0) is False
    assert await store.revoke_grant("acct_1", "grt_a", 50.0) is True
    assert await store.revoke_grant("acct_1", "grt_a", 51.0) is False  # revoked before
    assert await store.revoke_grant("acct_1", "grt_b", 100.0) is False  # expired
    assert await store.get_grant("acct_1", "grt_a") == replace(made("grt_a"), revoked_at=50.0)
    assert [g.id for g in await store.live_grants("acct_1", 50.0, "deploy")] == ["grt_b"]
    assert [g.id for g in await store.live_grants("acct_2", 50.0)] == ["grt_theirs"]


# -- the console's sign-in codes and sessions ---------------------------------------------
async def _person(store: Store, n: int, *addresses: tuple[str, str, float | None]) -> None:
    await store.insert_person(
        PersonRecord(
            f"per_{n}",
            f"acct_{n}",
            f"P{n}",
            tuple(PersonAddressRecord(c, t, at) for c, t, at in addresses),
            float(n),
            float(n),
        )
    )


async def test_confirmed_people_are_found_by_address_across_accounts(store: Store) -> None:
    await store.insert_account(account(1))
    await store.insert_account(account(2))
    await _person(store, 1, ("email", "Ada@Example.com", 5.0), ("sms", "+12025550100", None))
    await _person(store, 2, ("email", "ada@example.com", 5.0), ("sms", "+12025550100", 5.0))
    found = await store.confirmed_people_at("email", "ada@example.com")
    assert found == [("acct_1", "per_1"), ("acct_2", "per_2")]  # without case, oldest first
    assert await store.confirmed_people_at("sms", "+12025550100") == [("acct_2", "per_2")]
    assert await store.confirmed_people_at("whatsapp", "+12025550100") == []


async def test_a_console_code_is_spent_once_and_void_after_misses(store: Store) -> None:
    code = ConsoleCodeRecord("ak", "acct_1", "per_1", "h1", 200.0, 0, 100.0, 1)
    assert await store.console_code("ak") is None
    await store.put_console_code(code)
    assert await store.console_code("ak") == code
    assert await store.spend_console_code("ak", "other", 150.0) is False
    assert await store.spend_console_code("ak", "h1", 200.0) is False  # expired at 200
    assert await store.spend_console_code("ak", "h1", 150.0) is True
    assert await store.spend_console_code("ak", "h1", 150.0) is False  # once
    spent = await store.console_code("ak")
    assert spent is not None and spent.code_hash is None and spent.sent == 1  # count kept
    await store.put_console_code(replace(code, code_hash="h2", sent=2))
    for _ in range(2):
        await store.miss_console_code("ak", "h2", 3)
    missed = await store.console_code("ak")
    assert missed is not None and missed.misses == 2 and missed.code_hash == "h2"
    await store.miss_console_code("ak", "h2", 3)
    void = await store.console_code("ak")
    assert void is not None and void.code_hash is None
    # Pruned once its window began long ago and no live code is pending.
    await store.put_console_code(ConsoleCodeRecord("live", None, None, "h", 500.0, 0, 10.0, 1))
    assert await store.prune_console_codes(150.0, 300.0) == 1
    assert await store.console_code("ak") is None and await store.console_code("live")


async def test_a_console_session_ends_expired_idle_signed_out_revoked_or_deleted(
    store: Store,
) -> None:
    await store.insert_account(account(1))
    await _person(store, 1, ("sms", "+12025550100", 5.0))
    await _person(store, 11, ("sms", "+12025550111", 5.0))  # acct_11: no account row needed

    def made(id_hash: str, person_id: str = "per_1", account_id: str = "acct_1") -> Any:
        return ConsoleSessionRecord(id_hash, account_id, person_id, 100.0, 200.0, 100.0)

    for id_hash in ("a", "b", "c"):
        await store.insert_console_session(made(id_hash))
    await store.insert_console_session(made("other", "per_11", "acct_11"))
    assert await store.console_session("a", 150.0, 0.0) == made("a")
    assert await store.console_session("a", 200.0, 0.0) is None  # expired
    assert await store.console_session("a", 150.0, 100.0) is None  # idle
    await store.touch_console_session("a", 140.0)
    found = await store.console_session("a", 150.0, 100.0)
    assert found is not None and found.seen_at == 140.0
    assert await store.delete_console_session("a") is True
    assert await store.console_session("a", 150.0, 0.0) is None
    assert await store.delete_console_sessions_of("acct_1", "per_1") == 2
    assert await store.console_session("b", 150.0, 0.0) is None
    assert await store.console_session("other", 150.0, 0.0) is not None
    assert await store.delete_person("acct_11", "per_11")
    assert await store.console_session("other", 150.0, 0.0) is None  # the person deleted
    await store.insert_console_session(made("late"))
    assert await store.prune_console_sessions(250.0, 0.0) >= 1
    assert await store.console_session("late", 150.0, 0.0) is None


# -- interactions -----------------------------------------------------------------------
async def test_interaction_round_trip_all_fields_and_lookups(store: Store) -> None:
    plain = interaction("int_plain")
    full = full_interaction("int_full")
    await store.insert_interaction(plain)
    await store.insert_interaction(full)
    assert await store.get_interaction("int_plain") == plain
    assert await store.get_interaction("int_full") == full
    assert await store.get_interaction("nope") is None
    assert await store.interaction_by_form_token("ft_int_full") == full
    assert await store.interaction_by_reply_token("rt_int_full") == full
    assert await store.interaction_by_provider_ref("SM_int_full") == full
    assert await store.interaction_by_form_token("ft_nope") is None
    assert await store.interaction_by_reply_token("rt_nope") is None
    assert await store.interaction_by_provider_ref("SM_nope") is None
    got = await store.get_interaction("int_plain")
    assert got is not None and isinstance(got.request["waitTime"], int)


async def test_interaction_with_link_one_transaction(store: Store) -> None:
    link = IdempotencyLinkRecord("acct_1", "key-1", "fp-1", "int_1", 500.0)
    await store.insert_interaction(interaction("int_1"), link)
    assert await store.get_idempotency_link("acct_1", "key-1") == link
    assert await store.get_idempotency_link("acct_1", "key-2") is None
    assert await store.get_idempotency_link("acct_2", "key-1") is None
    # a live link is not replaced: another request with the key got there first
    rival = IdempotencyLinkRecord("acct_1", "key-1", "fp-2", "int_2", 600.0)
    with pytest.raises(Duplicate):
        await store.insert_interaction(interaction("int_2"), rival, link_stale_before=400.0)
    assert await store.get_interaction("int_2") is None  # nothing of it stored
    assert await store.get_idempotency_link("acct_1", "key-1") == link
    # one older than the key's lifetime is
    await store.insert_interaction(interaction("int_2"), rival, link_stale_before=550.0)
    assert await store.get_idempotency_link("acct_1", "key-1") == rival
    # and so is one whose interaction failed to deliver
    await store.end_interaction("int_2", 601.0, outcome="failed")
    retry = IdempotencyLinkRecord("acct_1", "key-1", "fp-2", "int_3", 602.0)
    await store.insert_interaction(interaction("int_3"), retry, link_stale_before=0.0)
    assert await store.get_idempotency_link("acct_1", "key-1") == retry
    # a failed insert stores no link either
    with pytest.raises(REFUSED):
        await store.insert_interaction(
            interaction("int_1"), IdempotencyLinkRecord("acct_1", "key-3", "fp", "int_1", 1.0)
        )
    assert await store.get_idempotency_link("acct_1", "key-3") is None
    assert await store.get_interaction("int_1") == interaction("int_1")


async def test_an_interaction_arms_its_window_step_and_its_end_drops_it(store: Store) -> None:
    """The window step is written with the interaction (with or without an idempotency
    link, claimed or not) and goes with its end, however it ends."""
    soon = StepRecord(WINDOW_STEP, "int_1", 2030.0, "acct_1")
    await store.insert_interaction(
        interaction("int_1", wait_deadline=2030.0),
        step=soon,
        claimed_by="r1",
        claimed_until=2060.0,
    )
    later = StepRecord(WINDOW_STEP, "int_2", 9000.0, "acct_1")
    link = IdempotencyLinkRecord("acct_1", "key-1", "fp", "int_2", 2000.0)
    await store.insert_interaction(interaction("int_2"), link, step=later)
    assert await store.get_step(WINDOW_STEP, "int_1") == soon
    assert await store.get_step(WINDOW_STEP, "int_2") == later
    # Claimed as written: a tick finds int_1 held (until 2060) and int_2 not yet due.
    assert await store.claim_steps("r2", due_before=9999.0, now=2031.0, lease=30, limit=9) == [
        later
    ]
    # A link refused: neither the interaction nor its step is stored.
    with pytest.raises(REFUSED):
        await store.insert_interaction(
            interaction("int_3"),
            IdempotencyLinkRecord("acct_1", "key-1", "fp", "int_3", 2000.0),
            step=StepRecord(WINDOW_STEP, "int_3", 9000.0, "acct_1"),
        )
    assert await store.get_step(WINDOW_STEP, "int_3") is None
    assert await store.end_interaction("int_1", 2040.0) is True
    assert await store.get_step(WINDOW_STEP, "int_1") is None
    assert await store.get_step(WINDOW_STEP, "int_2") == later
    pg = shared_store(store)
    if pg is not None:  # the replicas' ends drop it too
        assert await pg.end_held_interaction("int_2", 2041.0, {"x": 1}) == (True, None)
        assert await store.count_steps() == 0
        await store.insert_interaction(interaction("int_4"), step=replace(later, key="int_4"))
        report = {"eventType": "interaction.ended"}
        ended = await pg.end_and_report("int_4", "acct_1", 2042.0, {"y": 1}, None, report, "r1")
        assert ended.done is True and await store.count_steps() == 0


async def test_end_interaction_happens_once(store: Store) -> None:
    await store.insert_interaction(interaction("int_1", wait_deadline=99.0))
    await store.insert_interaction(interaction("int_2"))
    assert {i.id for i in await store.open_interactions()} == {"int_1", "int_2"}
    result = {"eventType": "message.response", "payload": {"text": "yes"}}
    assert await store.end_interaction("int_1", 3000.5, result, "completed") is True
    assert await store.end_interaction("int_1", 4000.0, {"other": 1}, "timeout") is False
    assert await store.end_interaction("missing", 1.0) is False
    got = await store.get_interaction("int_1")
    assert got is not None
    assert (got.status, got.ended_at, got.result, got.outcome) == (
        "ended",
        3000.5,
        result,
        "completed",
    )
    assert got.wait_deadline == 99.0
    assert await store.end_interaction("int_2", 3001.0) is True
    got = await store.get_interaction("int_2")
    assert got is not None and got.result is None and got.outcome is None
    assert await store.open_interactions() == []


async def test_latest_open_message(store: Store) -> None:
    args = ("sms", "+15550000001", "+15559990000")
    assert await store.latest_open_message("acct_1", *args) is None
    await store.insert_interaction(interaction("old", created_at=10.0))
    await store.insert_interaction(interaction("tie_a", created_at=20.0))
    await store.insert_interaction(interaction("tie_b", created_at=20.0))
    await store.insert_interaction(interaction("form", kind="form", created_at=30.0))
    await store.insert_interaction(
        interaction("other_from", from_addr="+15551112222", created_at=31.0)
    )
    await store.insert_interaction(interaction("other_chan", channel="whatsapp", created_at=32.0))
    await store.insert_interaction(interaction("acct2", account_id="acct_2", created_at=25.0))
    found = await store.latest_open_message("acct_1", *args)
    assert found is not None and found.id == "tie_b"  # same time: the later insert
    found = await store.latest_open_message(None, *args)
    assert found is not None and found.id == "acct2"
    found = await store.latest_open_message("acct_2", *args)
    assert found is not None and found.id == "acct2"
    assert await store.end_interaction("tie_b", 40.0)
    assert await store.end_interaction("acct2", 40.0)
    found = await store.latest_open_message(None, *args)
    assert found is not None and found.id == "tie_a"
    assert await store.latest_open_message("acct_2", *args) is None
    assert await store.latest_open_message("acct_1", "sms", "+15550000001", "+10000000000") is None


async def test_set_delivery(store: Store) -> None:
    await store.insert_interaction(interaction("int_1"))
    await store.set_delivery("int_1", "queued", "SM123")
    got = await store.get_interaction("int_1")
    assert got is not None and (got.delivery_status, got.provider_ref) == ("queued", "SM123")
    await store.set_delivery("int_1", "delivered")  # keeps the provider's id
    got = await store.interaction_by_provider_ref("SM123")
    assert got is not None and got.id == "int_1"
    assert (got.delivery_status, got.provider_ref) == ("delivered", "SM123")
    await store.set_delivery("int_1", "read", "SM456")
    assert await store.interaction_by_provider_ref("SM123") is None
    got = await store.interaction_by_provider_ref("SM456")
    assert got is not None and got.delivery_status == "read"


async def test_set_delivery_only_moves_forward(store: Store) -> None:
    """A lower status written after a higher one (two callbacks racing) changes nothing;
    the provider's id is stored all the same."""
    await store.insert_interaction(interaction("int_1"))
    await store.set_delivery("int_1", "undelivered")
    await store.set_delivery("int_1", "sent", "SM789")
    got = await store.get_interaction("int_1")
    assert got is not None and (got.delivery_status, got.provider_ref) == ("undelivered", "SM789")
    await store.set_delivery("int_1", "failed")  # the same rank: kept as it is
    got = await store.get_interaction("int_1")
    assert got is not None and got.delivery_status == "undelivered"


async def test_list_interactions_order_limit_and_account(store: Store) -> None:
    for id, at in (("a", 10.0), ("b", 30.0), ("c", 20.0), ("d", 30.0)):
        await store.insert_interaction(interaction(id, created_at=at))
    await store.insert_interaction(interaction("x", account_id="acct_2", created_at=99.0))
    assert [i.id for i in await store.list_interactions("acct_1", 10)] == ["d", "b", "c", "a"]
    assert [i.id for i in await store.list_interactions("acct_1", 2)] == ["d", "b"]
    assert [i.id for i in await store.list_interactions("acct_2", 10)] == ["x"]
    assert await store.list_interactions("acct_3", 10) == []
    assert {i.id for i in await store.open_interactions()} == {"a", "b", "c", "d", "x"}


# -- deliveries and inbound ---------------------------------------------------------------
async def test_deliveries(store: Store) -> None:
    assert await store.max_delivery_seq("acct_1") == 0
    first = await delivery(store, "d1", form_url="https://forms.example/f/1", from_addr=None)
    second = await delivery(store, "d2", to_addr="+15550000002", channel="whatsapp")
    third = await delivery(store, "d3", interaction_id=None, kind="form")
    other = await delivery(store, "d4", account_id="acct_2")
    assert first.seq < second.seq < third.seq < other.seq
    assert first.form_url == "https://forms.example/f/1" and first.from_addr is None
    assert await store.list_deliveries("acct_1") == [third, second, first]
    assert await store.list_deliveries("acct_1", limit=2) == [third, second]
    assert await store.list_deliveries("acct_1", to_addr="+15550000002") == [second]
    assert await store.list_deliveries("acct_1", channel="sms") == [third, first]
    assert await store.list_deliveries("acct_1", interaction_id="int_1") == [second, first]
    assert await store.list_deliveries("acct_1", to_addr="+15550000001", channel="sms") == [
        third,
        first,
    ]
    assert await store.list_deliveries("acct_2") == [other]
    assert await store.delivery_seq("acct_1", "d2") == second.seq
    assert await store.delivery_seq("acct_2", "d2") is None
    assert await store.delivery_seq("acct_1", "nope") is None
    assert await store.max_delivery_seq("acct_1") == third.seq
    assert await store.max_delivery_seq("acct_2") == other.seq
    with pytest.raises(REFUSED):
        await delivery(store, "d1")


async def test_inbound(store: Store) -> None:
    first = InboundRecord(
        id="in_1",
        account_id="acct_1",
        channel="sms",
        from_addr="+15550000001",
        to_addr="+15559990000",
        body="yes ✓",
        media_urls=["https://media.example/1.jpg", "https://media.example/2.jpg"],
        interaction_id="int_1",
        created_at=100.5,
        ref="SM_in_1",
    )
    second = InboundRecord(
        id="in_2",
        account_id="acct_1",
        channel="whatsapp",
        from_addr="+15550000002",
        to_addr="+15559990000",
        body="",
        media_urls=[],
        interaction_id=None,
        created_at=100.5,
    )
    third = InboundRecord(
        id="in_3",
        account_id="acct_1",
        channel="sms",
        from_addr="+15550000003",
        to_addr="+15559990000",
        body="later",
        media_urls=[],
        interaction_id=None,
        created_at=200.0,
    )
    for record in (first, second, third):
        await store.insert_inbound(record)
    assert await store.inbound_by_ref("SM_in_1") == first
    assert await store.inbound_by_ref("SM_nope") is None
    assert await store.list_inbound("acct_1", 10) == [third, second, first]
    assert await store.list_inbound("acct_1", 2) == [third, second]
    assert await store.list_inbound("acct_2", 10) == []
    # the carrier's id is taken once
    with pytest.raises(REFUSED):
        await store.insert_inbound(InboundRecord(**{**first.__dict__, "id": "in_4"}))
    assert len(await store.list_inbound("acct_1", 10)) == 3


# -- numbers ----------------------------------------------------------------------------
async def test_numbers(store: Store) -> None:
    mine = NumberRecord("num_1", "acct_1", "+15550000001", 20.0, 21.0)
    theirs = NumberRecord("num_3", "acct_2", "+15550000003", 5.0, 5.5)
    for record in (mine, theirs):
        await store.insert_number(record)
    with pytest.raises(Duplicate):  # taken by another account
        await store.insert_number(NumberRecord("num_4", "acct_3", "+15550000001", 30.0, 30.0))
    with pytest.raises(Duplicate):  # one number per account
        await store.insert_number(NumberRecord("num_2", "acct_1", "+15550000002", 10.0, 11.0))
    assert await store.number_by_phone("+15550000001") == mine
    assert await store.number_by_phone("+15550000002") is None
    assert await store.numbers_of("acct_1") == [mine]
    assert await store.numbers_of("acct_2") == [theirs]
    assert await store.numbers_of("acct_3") == []
    assert await store.reserved_phone_numbers() == {"+15550000001", "+15550000003"}
    assert await store.delete_number("acct_2", "num_1") is False
    assert await store.delete_number("acct_1", "num_1") is True
    assert await store.delete_number("acct_1", "num_1") is False
    assert await store.number_by_phone("+15550000001") is None
    assert await store.reserved_phone_numbers() == {"+15550000003"}
    # a released number can be taken again, and the account can reserve another
    await store.insert_number(NumberRecord("num_5", "acct_3", "+15550000001", 40.0, 40.0))
    await store.insert_number(NumberRecord("num_6", "acct_1", "+15550000002", 41.0, 41.0))
    assert [n.id for n in await store.numbers_of("acct_3")] == ["num_5"]
    assert [n.id for n in await store.numbers_of("acct_1")] == ["num_6"]


# -- webhooks ---------------------------------------------------------------------------
async def test_webhooks(store: Store) -> None:
    first = WebhookRecord(
        "wh_1",
        "acct_1",
        "https://hooks.example/a",
        ["message.received", "call.conversation.ended"],
        {"X-Token": "t ✓", "X-Other": "2"},
        "sec_1",
        10.0,
    )
    second = WebhookRecord("wh_2", "acct_1", "https://hooks.example/b", [], {}, "sec_2", 10.0)
    third = WebhookRecord(
        "wh_3", "acct_1", "https://hooks.example/c", ["approval.decided"], {}, "s", 5.0
    )
    for record in (first, second, third):
        await store.insert_webhook(record)
    assert await store.get_webhook("wh_1") == first
    assert await store.get_webhook("wh_9") is None
    assert await store.webhooks_of("acct_1") == [third, first, second]
    assert await store.webhooks_of("acct_2") == []
    assert await store.delete_webhook("acct_2", "wh_1") is False
    assert await store.delete_webhook("acct_1", "wh_1") is True
    assert await store.delete_webhook("acct_1", "wh_1") is False
    assert await store.webhooks_of("acct_1") == [third, second]


# -- channel cards ----------------------------------------------------------------------
async def test_channels(store: Store) -> None:
    first = ChannelRecord(
        id="ch_1",
        account_id="acct_1",
        type="sms",
        to_addr="+15550000001",
        wait_time=30,
        follow_up_time=2.5,
        message_template="Hello {name}",
        response_template="Got: {response}",
        no_response_template="No answer",
        reply_link=True,
        created_at=10.0,
        metadata={"team": "ops", "note": "é"},
    )
    second = ChannelRecord(
        id="ch_2",
        account_id="acct_1",
        type="slack",
        to_addr="C123",
        wait_time=None,
        follow_up_time=None,
        message_template=None,
        response_template="r",
        no_response_template="n",
        reply_link=False,
        created_at=10.0,
    )
    await store.insert_channel(first)
    await store.insert_channel(second)
    got = await store.get_channel("acct_1", "ch_1")
    assert got == first
    assert got is not None and isinstance(got.wait_time, int) and got.reply_link is True
    assert await store.get_channel("acct_1", "ch_2") == second
    assert await store.get_channel("acct_2", "ch_1") is None
    assert await store.channels_of("acct_1") == [first, second]
    assert await store.channels_of("acct_2") == []
    assert await store.delete_channel("acct_2", "ch_1") is False
    assert await store.delete_channel("acct_1", "ch_1") is True
    assert await store.delete_channel("acct_1", "ch_1") is False
    assert await store.channels_of("acct_1") == [second]


def _write(store: Store, statement: str) -> None:
    """Runs ``statement`` on the store's database from another connection."""
    store.commit()
    if isinstance(store, SQLiteStore):
        with contextlib.closing(sqlite3.connect(store.path)) as db, db:
            db.execute(statement)
        return
    assert isinstance(store, PostgresStore) and store.schema is not None
    with psycopg.connect(DATABASE_URL, connect_timeout=5) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(store.schema)))
        conn.execute(statement)


async def test_a_value_none_of_its_literals_is_refused_as_the_row_is_read(store: Store) -> None:
    # A kind, a channel, a status becomes the wire's Literal where its row becomes a
    # record: a value that is none of the Literal's (written by hand, or by a newer
    # version) raises there, naming it, rather than reaching the engine as a str.
    card = ChannelRecord("ch_1", "acct_1", "sms", "+1555", None, None, None, "r", "n", False, 1.0)
    await store.insert_channel(card)
    await store.insert_webhook(
        WebhookRecord("wh_1", "acct_1", "https://hooks.example/a", ["form.received"], {}, "s", 1.0)
    )
    _write(store, "UPDATE channels SET type = 'pager' WHERE id = 'ch_1'")
    _write(store, """UPDATE webhooks SET event_types = '["form.sent"]' WHERE id = 'wh_1'""")
    with pytest.raises(UnknownValue, match="unknown channel card type 'pager'"):
        await store.get_channel("acct_1", "ch_1")
    with pytest.raises(UnknownValue, match=r"unknown event type 'form\.sent'"):
        await store.get_webhook("wh_1")


# -- events and the outbox ----------------------------------------------------------------
def event(id: str, created_at: float, account_id: str = "acct_1") -> EventRecord:
    return EventRecord(
        id=id,
        account_id=account_id,
        event_type="message.received",
        interaction_id="int_1",
        body={"eventType": "message.received", "payload": {"text": "ok", "n": 1}},
        created_at=created_at,
    )


async def test_events_round_trip_order_and_atomicity(store: Store) -> None:
    await store.insert_event(event("ev_1", 10.0), [])
    await store.insert_event(event("ev_2", 30.0), [outbox("ob_1", "ev_2")])
    await store.insert_event(event("ev_3", 20.0), [])
    await store.insert_event(event("ev_4", 30.0), [])
    await store.insert_event(event("ev_5", 1.0, "acct_2"), [])
    await store.insert_event(EventRecord("ev_6", "acct_3", "form.received", None, {}, 2.0), [])
    assert await store.get_event("ev_2") == event("ev_2", 30.0)
    assert await store.get_event("ev_6") == EventRecord(
        "ev_6", "acct_3", "form.received", None, {}, 2.0
    )
    assert await store.get_event("ev_9") is None
    assert [e.id for e in await store.list_events("acct_1", 10)] == ["ev_4", "ev_2", "ev_3", "ev_1"]
    assert [e.id for e in await store.list_events("acct_1", 1)] == ["ev_4"]
    assert [e.id for e in await store.list_events("acct_2", 10)] == ["ev_5"]
    # the event and its deliveries are one unit: a refused delivery stores no event
    with pytest.raises(REFUSED):
        await store.insert_event(
            event("ev_7", 40.0), [outbox("ob_2", "ev_7"), outbox("ob_1", "ev_7")]
        )
    assert await store.get_event("ev_7") is None
    assert [o.id for o in await store.list_outbox("acct_1", 10)] == ["ob_1"]


async def test_outbox_claim_update_cancel(store: Store) -> None:
    assert await store.next_outbox_due() is None
    assert await store.claim_outbox(1e12, 10, 2e12) == []
    rows = [
        outbox("ob_a", "ev_1", next_attempt_at=300.0, created_at=1.0),
        outbox("ob_b", "ev_1", next_attempt_at=100.0, created_at=1.0, webhook_id="wh_2"),
        outbox("ob_c", "ev_1", next_attempt_at=200.0, created_at=2.0),
        outbox("ob_d", "ev_1", next_attempt_at=100.0, created_at=3.0, account_id="acct_2"),
    ]
    await store.insert_event(event("ev_1", 1.0), rows)
    assert await store.list_outbox("acct_1", 10) == [rows[2], rows[1], rows[0]]
    assert await store.list_outbox("acct_1", 1) == [rows[2]]
    assert await store.list_outbox("acct_2", 10) == [rows[3]]
    assert await store.next_outbox_due() == 100.0
    assert await store.claim_outbox(99.0, 10, 500.0) == []  # nothing due yet
    # the most overdue first (a batch: in no particular order), at most ``limit``; each
    # claimed row is leased until ``until`` (its next attempt), so the next claim passes it
    claimed = await store.claim_outbox(250.0, 2, 500.0)
    assert sorted(o.id for o in claimed) == ["ob_b", "ob_d"]
    assert [o.next_attempt_at for o in claimed] == [500.0, 500.0]
    assert [o.id for o in await store.claim_outbox(250.0, 10, 260.0)] == ["ob_c"]
    assert await store.claim_outbox(250.0, 10, 900.0) == []
    assert await store.next_outbox_due() == 260.0
    # a lease that ran out (the claimer died) makes the row due again
    assert [o.id for o in await store.claim_outbox(270.0, 10, 280.0)] == ["ob_c"]

    await store.update_outbox(
        "ob_d",
        status="delivered",
        attempts=1,
        next_attempt_at=150.0,
        last_error=None,
        last_status_code=204,
        delivered_at=151.5,
        updated_at=151.5,
    )
    await store.update_outbox(
        "ob_c",
        status="pending",
        attempts=2,
        next_attempt_at=260.0,
        last_error="HTTP 500",
        last_status_code=500,
        delivered_at=None,
        updated_at=201.0,
    )
    (done,) = await store.list_outbox("acct_2", 10)
    assert done == outbox(
        "ob_d",
        "ev_1",
        account_id="acct_2",
        status="delivered",
        attempts=1,
        next_attempt_at=150.0,
        last_status_code=204,
        delivered_at=151.5,
        created_at=3.0,
        updated_at=151.5,
    )
    retried = {o.id: o for o in await store.list_outbox("acct_1", 10)}["ob_c"]
    assert (retried.attempts, retried.last_error, retried.last_status_code) == (2, "HTTP 500", 500)
    assert retried.next_attempt_at == 260.0 and retried.updated_at == 201.0
    # only pending rows are claimed (and leased)
    assert sorted(o.id for o in await store.claim_outbox(1e12, 10, 999.0)) == [
        "ob_a",
        "ob_b",
        "ob_c",
    ]
    (done,) = await store.list_outbox("acct_2", 10)
    assert done.next_attempt_at == 150.0

    await store.cancel_outbox_for_webhook("wh_1", 300.0)
    by_id = {o.id: o for o in await store.list_outbox("acct_1", 10)}
    assert by_id["ob_a"].status == "cancelled" and by_id["ob_a"].updated_at == 300.0
    assert by_id["ob_c"].status == "cancelled"
    assert by_id["ob_b"].status == "pending"  # another webhook's row
    (done,) = await store.list_outbox("acct_2", 10)
    assert done.status == "delivered"  # only pending rows are cancelled
    # a delivery that finishes after the cancel leaves it cancelled
    await store.update_outbox(
        "ob_a",
        status="delivered",
        attempts=1,
        next_attempt_at=300.0,
        last_error=None,
        last_status_code=200,
        delivered_at=301.0,
        updated_at=301.0,
    )
    by_id = {o.id: o for o in await store.list_outbox("acct_1", 10)}
    assert by_id["ob_a"].status == "cancelled" and by_id["ob_a"].delivered_at is None
    assert await store.next_outbox_due() == 999.0  # ob_b's lease, the one pending row left
    assert [o.id for o in await store.claim_outbox(1e12, 10, 2e12)] == ["ob_b"]


# -- provider state -----------------------------------------------------------------------
async def test_provider_state(store: Store) -> None:
    assert await store.get_provider_state("call", "CA1") is None
    assert await store.provider_states("call") == []
    await store.put_provider_state(
        "call", "CA1", {"turns": [{"role": "agent", "text": "hi"}]}, 10.0
    )
    await store.put_provider_state("call", "CA2", {"n": 2}, 5.0)
    await store.put_provider_state("chat", "CA1", {"other": True}, 1.0)
    assert await store.get_provider_state("call", "CA1") == {
        "turns": [{"role": "agent", "text": "hi"}]
    }
    assert await store.provider_states("call") == [
        ("CA2", {"n": 2}),
        ("CA1", {"turns": [{"role": "agent", "text": "hi"}]}),
    ]
    # put replaces the value and its time
    await store.put_provider_state("call", "CA2", {"n": 3}, 20.0)
    assert await store.get_provider_state("call", "CA2") == {"n": 3}
    assert [key for key, _ in await store.provider_states("call")] == ["CA1", "CA2"]
    await store.delete_provider_state("call", "CA1")
    assert await store.get_provider_state("call", "CA1") is None
    assert await store.get_provider_state("chat", "CA1") == {"other": True}
    await store.put_provider_state("call", "CA3", {}, 15.0)
    await store.delete_provider_state_before("call", 16.0)
    assert await store.provider_states("call") == [("CA2", {"n": 3})]
    assert await store.provider_states("chat") == [("CA1", {"other": True})]


async def test_a_provider_state_is_claimed_once(store: Store) -> None:
    """The replay guards and the relay's one socket per call rest on it: of claims of
    one key, only the first stores anything, concurrent ones too."""
    assert await store.claim_provider_state("seen", "sig", {"at": 1.0}, 1.0)
    assert not await store.claim_provider_state("seen", "sig", {"at": 2.0}, 2.0)
    assert await store.get_provider_state("seen", "sig") == {"at": 1.0}
    assert await store.claim_provider_state("other", "sig", {"at": 3.0}, 3.0)
    won = await asyncio.gather(
        *(store.claim_provider_state("seen", "race", {"n": n}, 4.0) for n in range(8))
    )
    assert won.count(True) == 1
    await store.delete_provider_state("seen", "sig")
    assert await store.claim_provider_state("seen", "sig", {"at": 5.0}, 5.0)


# -- the outcome stream -------------------------------------------------------------------
async def test_outcomes(store: Store) -> None:
    assert await store.last_outcome_id() == 0
    assert await store.outcomes_after("acct_1", 0, 10) == []
    appended = [
        await store.append_outcome(
            "acct_1" if n % 2 == 0 else "acct_2", f"int_{n}", {"n": n, "t": "é"}, 10.0 + n
        )
        for n in range(6)
    ]
    ids = [added for added, _after in appended]
    assert ids == sorted(ids) and len(set(ids)) == 6 and ids[0] >= 1
    # Each names the account's outcome just before it (0: its first).
    assert [after for _added, after in appended] == [0, 0, ids[0], ids[1], ids[2], ids[3]]
    assert await store.last_outcome_id() == ids[-1]
    mine = await store.outcomes_after("acct_1", 0, 10)
    assert mine == [
        (ids[0], {"n": 0, "t": "é"}),
        (ids[2], {"n": 2, "t": "é"}),
        (ids[4], {"n": 4, "t": "é"}),
    ]
    page = await store.outcomes_after("acct_1", 0, 2)
    assert [i for i, _ in page] == [ids[0], ids[2]]
    assert [i for i, _ in await store.outcomes_after("acct_1", page[-1][0], 2)] == [ids[4]]
    assert await store.outcomes_after("acct_1", ids[4], 2) == []
    assert [b["n"] for _, b in await store.outcomes_after("acct_2", ids[1], 10)] == [3, 5]
    await store.delete_outcomes_before(13.0)
    assert [b["n"] for _, b in await store.outcomes_after("acct_1", 0, 10)] == [4]
    await store.delete_outcomes_before(100.0)
    assert await store.last_outcome_id() == 0
    # ids are never reused: a cursor a client holds stays behind new outcomes
    later, after = await store.append_outcome("acct_1", "int_9", {}, 200.0)
    assert later > ids[-1] and after == 0  # the account's earlier outcomes are gone
    assert await store.outcomes_after("acct_1", ids[-1], 10) == [(later, {})]


async def test_outcome_with_the_result_of_its_send(store: Store) -> None:
    result = IdempotencyRecord("acct_1", "k1", "fp-1", 200, b'{"responded":true}', 10.0)
    seq, _ = await store.append_outcome(
        "acct_1", "int_1", {"eventType": "wait.ended"}, 10.0, idempotency=result
    )
    assert await store.outcomes_after("acct_1", 0, 10) == [(seq, {"eventType": "wait.ended"})]
    assert await store.get_idempotency("acct_1", "k1") == result
    # A stored result is replaced, as put_idempotency replaces it.
    again = replace(result, status_code=201, created_at=11.0)
    later, after = await store.append_outcome("acct_1", "int_1", {}, 11.0, idempotency=again)
    assert later > seq and after == seq and await store.get_idempotency("acct_1", "k1") == again


def _listener(pg: PostgresStore, heard: list[tuple[str, str, str, Any]]) -> Any:
    """A replica's notice handling (``Replicas``), recording what it hears in ``heard``."""
    from humanwire.server.background.replicas import Replicas

    return Replicas(
        pg,
        lease=30.0,
        on_notice=lambda *notice: heard.append(notice),
        on_swept=lambda _: None,
        on_tick=lambda: None,
        on_resync=lambda: None,
    )


async def test_published_outcome_notifies_the_replicas_as_it_commits(pg_schema: str) -> None:
    from humanwire.server.store.protocol import OUTCOME_NOTICE_BODY

    pg = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    heard: list[tuple[str, str, str, Any]] = []
    listener = _listener(pg, heard)
    big = {"text": "é" * OUTCOME_NOTICE_BODY}
    try:
        with psycopg.connect(DATABASE_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(pg.channel)))
            first, _ = await pg.append_outcome("acct_1", "int_0", {"n": 0}, 9.0)
            result = IdempotencyRecord("acct_1", "k1", "fp-1", 200, b"{}", 10.0)
            seq, after = await pg.append_published_outcome(
                "acct_1", "int_1", {"n": 1, "t": "é"}, 10.0, "replica-b", idempotency=result
            )
            large, _ = await pg.append_published_outcome("acct_1", "int_2", big, 11.0, "replica-b")
            payloads = [notice.payload for notice in conn.notifies(timeout=5, stop_after=2)]
        assert after == first and len(payloads) == 2
        for payload in payloads:
            assert len(payload.encode()) < 8000
            listener._received(payload)  # as another replica's listener reads it
        assert heard == [
            ("outcome", "acct_1", str(seq), {"after": first, "body": {"n": 1, "t": "é"}}),
            # Too large to carry: the readers read it.
            ("outcome", "acct_1", str(large), {"after": seq, "body": None}),
        ]
        assert await pg.outcomes_after("acct_1", first, 1) == [(seq, {"n": 1, "t": "é"})]
        assert await pg.get_idempotency("acct_1", "k1") == result
        listener.id = "replica-b"  # its own notices are ignored by the replica that sent them
        listener._received(payloads[0])
        assert len(heard) == 2
    finally:
        await pg.close()


async def test_an_end_reported_with_its_outcome_in_one_transaction(pg_schema: str) -> None:
    pg = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    heard: list[tuple[str, str, str, Any]] = []
    listener = _listener(pg, heard)
    try:
        await pg.insert_interaction(interaction("int_1", owner="a", held_by="a"))
        await pg.set_delivery("int_1", "delivered", None)
        first, _ = await pg.append_outcome("acct_1", "int_0", {"n": 0}, 9.0)
        report = {"interactionId": "int_1", "eventType": "interaction.ended"}
        with psycopg.connect(DATABASE_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(pg.channel)))
            trips = pg.round_trips
            ended = await pg.end_and_report(
                "int_1", "acct_1", 1001.0, {"x": 1}, None, report, "replica-b"
            )
            done, holder, reported = ended.done, ended.holder, ended.reported
            assert pg.round_trips == trips + 1
            # Once only: ended already, nothing appended, nothing published.
            again = await pg.end_and_report("int_1", "acct_1", 1002.0, {"x": 2}, None, report, "b")
            payloads = [notice.payload for notice in conn.notifies(timeout=2, stop_after=2)]
        assert (done, holder) == (True, "a") and reported is not None
        seq, after = reported
        assert after == first and again == EndReport(False)
        assert await pg.outcomes_after("acct_1", first, 10) == [(seq, report)]
        ended = await pg.get_interaction("int_1")
        assert ended is not None and ended.status == "ended" and ended.result == {"x": 1}
        assert len(payloads) == 1
        listener._received(payloads[0])
        # The interaction's entry says how it ended (a holder answers without reading).
        ending = {"endedAt": 1001.0, "outcome": None, "result": {"x": 1}}
        assert heard == [
            (
                "interaction",
                "acct_1",
                "int_1",
                {"ended": ending, "deliveryStatus": "delivered", "waitEnded": False},
            ),
            ("outcome", "acct_1", str(seq), {"after": first, "body": report}),
        ]
    finally:
        await pg.close()


async def test_a_held_sends_wait_ended_is_written_with_the_end(pg_schema: str) -> None:
    # A respond-async send held on replica "a", answered on "replica-b": its wait.ended
    # and its key's result go with the end, its hold is let go, and "a" is told.
    pg = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    heard: list[tuple[str, str, str, Any]] = []
    listener = _listener(pg, heard)
    try:
        await pg.insert_interaction(interaction("int_1", owner="a", held_by="a"))
        await pg.insert_interaction(interaction("int_2", owner="a"))  # not held
        report = {"interactionId": "int_1", "eventType": "interaction.ended"}
        waited = {"interactionId": "int_1", "eventType": "wait.ended", "status": 200}
        stored = IdempotencyRecord("acct_1", "key-1", "POST /x", 200, b'{"a":1}', 1001.0)
        answer = WaitEndedAnswer(waited, stored)
        with psycopg.connect(DATABASE_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(pg.channel)))
            trips = pg.round_trips
            ended = await pg.end_and_report(
                "int_1", "acct_1", 1001.0, {"x": 1}, None, report, "replica-b", wait_ended=answer
            )
            assert pg.round_trips == trips + 1
            other = await pg.end_and_report(
                "int_2", "acct_1", 1002.0, {"x": 2}, None, report, "replica-b", wait_ended=answer
            )
            payloads = [notice.payload for notice in conn.notifies(timeout=2, stop_after=2)]
        assert ended.done and ended.holder == "a" and ended.reported is not None
        seq, _ = ended.reported
        assert ended.waited is not None and ended.waited[1] == seq
        assert await pg.outcomes_after("acct_1", 0, 10) == [
            (seq, report),
            (ended.waited[0], waited),
            (other.reported[0] if other.reported else -1, report),
        ]
        assert other.done and other.holder is None and other.waited is None
        assert await pg.get_idempotency("acct_1", "key-1") == stored
        row = await pg.get_interaction("int_1")
        assert row is not None and row.status == "ended" and row.held_by is None
        listener._received(payloads[0])
        assert [(kind, item) for kind, _, item, _ in heard] == [
            ("interaction", "int_1"),
            ("outcome", str(seq)),
            ("outcome", str(ended.waited[0])),
        ]
        assert heard[0][3]["waitEnded"] is True
        assert heard[2][3] == {"after": seq, "body": waited}
    finally:
        await pg.close()


async def test_the_text_that_ends_an_interaction_is_stored_with_the_end(pg_schema: str) -> None:
    pg = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    heard: list[tuple[str, str, str, Any]] = []
    listener = _listener(pg, heard)

    def text(n: int) -> InboundRecord:
        return InboundRecord(f"in_{n}", "acct_1", "sms", "+1555", "+1999", "yes", [], "int_1", 9.0)

    try:
        await pg.insert_interaction(interaction("int_1"))
        report = {"interactionId": "int_1", "eventType": "interaction.ended"}
        with psycopg.connect(DATABASE_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(pg.channel)))
            trips = pg.round_trips
            ended = await pg.end_and_report(
                "int_1", "acct_1", 10.0, {"x": 1}, None, report, "replica-b", inbound=text(1)
            )
            done, reported = ended.done, ended.reported
            # Ended already: the text is kept, linked to nothing, and not announced.
            again = await pg.end_and_report(
                "int_1", "acct_1", 11.0, {"x": 2}, None, report, "replica-b", inbound=text(2)
            )
            assert pg.round_trips == trips + 2
            payloads = [notice.payload for notice in conn.notifies(timeout=2, stop_after=2)]
        assert done and reported is not None and again == EndReport(False)
        assert [(r.id, r.interaction_id) for r in await pg.list_inbound("acct_1", 10)] == [
            ("in_2", None),
            ("in_1", "int_1"),
        ]
        assert len(payloads) == 1
        listener._received(payloads[0])
        assert [entry[0] for entry in heard] == ["interaction", "outcome", "inbound"]
        assert heard[2] == ("inbound", "acct_1", "in_1", None)
    finally:
        await pg.close()


@pytest.mark.parametrize(
    ("size", "ending_carried", "body_carried"),
    [(3000, True, True), (5000, False, True), (6500, True, False), (9000, False, False)],
)
async def test_an_end_reported_with_a_large_answer_stays_one_notice(
    pg_schema: str, size: int, ending_carried: bool, body_carried: bool
) -> None:
    """The ending and the outcome body are carried while they fit (the ending second):
    the payload stays under NOTIFY's 8,000 bytes, whatever the answer's size."""
    pg = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    heard: list[tuple[str, str, str, Any]] = []
    listener = _listener(pg, heard)
    try:
        await pg.insert_interaction(interaction("int_1", held_by="a"))
        result = {"text": "x" * size}
        report = {"interactionId": "int_1", "eventType": "interaction.ended", "result": result}
        with psycopg.connect(DATABASE_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(pg.channel)))
            ended = await pg.end_and_report(
                "int_1", "acct_1", 5.0, result, "completed", report, "replica-b"
            )
            done, reported = ended.done, ended.reported
            payloads = [notice.payload for notice in conn.notifies(timeout=2, stop_after=1)]
        assert done and reported is not None and len(payloads) == 1
        assert len(payloads[0].encode()) < 8000
        listener._received(payloads[0])
        (_, _, _, entry), (_, _, _, outcome) = heard
        expected = {"endedAt": 5.0, "outcome": "completed", "result": result}
        assert entry == {
            "ended": expected if ending_carried else None,
            "deliveryStatus": None,
            "waitEnded": False,
        }
        assert outcome["body"] == (report if body_carried else None)
    finally:
        await pg.close()


async def test_a_wait_ended_lets_go_of_the_hold_in_its_transaction(pg_schema: str) -> None:
    pg = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    try:
        await pg.insert_interaction(interaction("int_1", held_by="replica-a"))
        await pg.insert_interaction(interaction("int_2", held_by="replica-c"))
        await pg.append_published_outcome("acct_1", "int_0", {"n": 0}, 9.0, "replica-a")
        trips = pg.round_trips
        await pg.append_published_outcome(
            "acct_1", "int_1", {"n": 1}, 10.0, "replica-a", release=True
        )
        # Only the replica's own hold: another replica's stays.
        await pg.append_published_outcome(
            "acct_1", "int_2", {"n": 2}, 11.0, "replica-a", release=True
        )
        await pg.append_published_outcome("acct_1", "int_2", {"n": 3}, 12.0, "replica-c")
        assert pg.round_trips == trips + 3
        first, second = await pg.get_interaction("int_1"), await pg.get_interaction("int_2")
        assert first is not None and first.held_by is None
        assert second is not None and second.held_by == "replica-c"
        assert [body for _, body in await pg.outcomes_after("acct_1", 0, 10)] == [
            {"n": 0},
            {"n": 1},
            {"n": 2},
            {"n": 3},
        ]
    finally:
        await pg.close()


async def test_each_round_trip_the_store_counts_is_one_on_the_wire(pg_schema: str) -> None:
    """``round_trips`` is what the round-trip tests pin and the benchmark reports: each
    method makes exactly the exchanges with the server it counts. (psycopg reads a
    result taken inside a pipeline with a Flush and an exchange of its own before the
    Sync's: the end, an outcome and the counted key lookup each made two while counting
    one.)"""
    pg = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    try:
        await pg.insert_account(account(1))
        await pg.insert_webhook(
            WebhookRecord("wh_1", "acct_1", "https://x.test/h", ["message.received"], {}, "s", 1.0)
        )
        for n in range(1, 5):
            await pg.insert_interaction(interaction(f"int_{n}", held_by="replica-a"))
        assert pg.channel  # read once, then kept
        text = InboundRecord("in_1", "acct_1", "sms", "+1555", "+1999", "yes", [], None, 9.0)
        result = IdempotencyRecord("acct_1", "k1", "fp", 200, b"{}", 10.0)
        link = IdempotencyLinkRecord("acct_1", "k2", "fp", "int_9", 10.0)
        report = {"interactionId": "int_1", "eventType": "interaction.ended"}
        steps: list[tuple[str, Any]] = [
            (
                "account_by_key_hash_counted",
                lambda: pg.account_by_key_hash_counted("hash_1", 10.0, 100, 60.0),
            ),
            (
                "account_by_key_hash_counted with the interaction named",
                lambda: pg.account_by_key_hash_counted("hash_1", 10.0, 100, 60.0, "int_1"),
            ),
            ("rate_hit", lambda: pg.rate_hit("acct_1", 10.0, 100, 60.0)),
            ("spam_hit", lambda: pg.spam_hit("acct_1", "fp", "+1555", 10.0, 60.0)),
            ("get_interaction", lambda: pg.get_interaction("int_1")),
            (
                "insert_interaction with its link",
                lambda: pg.insert_interaction(interaction("int_9"), link),
            ),
            (
                "end_and_report",
                lambda: pg.end_and_report(
                    "int_1", "acct_1", 10.0, {"x": 1}, None, report, "replica-b", inbound=text
                ),
            ),
            ("end_held_interaction", lambda: pg.end_held_interaction("int_2", 10.0, {"x": 1})),
            (
                "append_published_outcome",
                lambda: pg.append_published_outcome(
                    "acct_1", "int_1", {"n": 1}, 11.0, "replica-a", idempotency=result, release=True
                ),
            ),
            ("append_outcome", lambda: pg.append_outcome("acct_1", "int_3", {"n": 3}, 12.0)),
            (
                "insert_event with deliveries",
                lambda: pg.insert_event(
                    event("ev_1", 10.0), [outbox("ob_1", "ev_1"), outbox("ob_2", "ev_1")]
                ),
            ),
            ("release_hold", lambda: pg.release_hold("int_4", "replica-a")),
            ("notify", lambda: pg.notify(["a", "b"])),
            ("delete_idempotency_before", lambda: pg.delete_idempotency_before(5.0)),
            ("prune_limits", lambda: pg.prune_limits(5.0, 5.0)),
        ]
        for name, step in steps:
            before = pg.round_trips
            with wire_round_trips(pg) as wire:
                await step()
            assert (name, wire.trips) == (name, pg.round_trips - before)
            assert wire.trips >= 1
    finally:
        await pg.close()


# -- idempotency --------------------------------------------------------------------------
async def test_idempotency(store: Store) -> None:
    assert await store.get_idempotency("acct_1", "k1") is None
    old = IdempotencyRecord("acct_1", "k1", "fp-1", 201, b'{"id":"int_1"}\x00\xff', 10.0)
    new = IdempotencyRecord("acct_1", "k2", "fp-2", 200, b"", 30.0)
    await store.put_idempotency(old)
    await store.put_idempotency(new)
    got = await store.get_idempotency("acct_1", "k1")
    assert got == old and isinstance(got.body, bytes)
    assert await store.get_idempotency("acct_2", "k1") is None
    replaced = IdempotencyRecord("acct_1", "k2", "fp-3", 409, b"again", 31.0)
    await store.put_idempotency(replaced)
    assert await store.get_idempotency("acct_1", "k2") == replaced

    old_link = IdempotencyLinkRecord("acct_1", "k1", "fp-1", "int_1", 10.0)
    new_link = IdempotencyLinkRecord("acct_1", "k3", "fp-9", "int_2", 30.0)
    await store.insert_interaction(interaction("int_1"), old_link)
    await store.insert_interaction(interaction("int_2"), new_link)
    await store.delete_idempotency_before(20.0)
    assert await store.get_idempotency("acct_1", "k1") is None
    assert await store.get_idempotency_link("acct_1", "k1") is None
    assert await store.get_idempotency("acct_1", "k2") == replaced
    assert await store.get_idempotency_link("acct_1", "k3") == new_link
    # the interactions themselves stay
    assert await store.get_interaction("int_1") is not None


async def test_a_keys_result_and_link_read_together(store: Store) -> None:
    """``get_idempotency_state``: what ``get_idempotency`` and ``get_idempotency_link``
    read, in one statement, either or both missing."""
    assert await store.get_idempotency_state("acct_1", "k1") == (None, None)
    result = IdempotencyRecord("acct_1", "k1", "fp-1", 201, b'{"id":"int_1"}\x00\xff', 10.0)
    await store.put_idempotency(result)
    assert await store.get_idempotency_state("acct_1", "k1") == (result, None)
    link = IdempotencyLinkRecord("acct_1", "k2", "fp-2", "int_2", 11.0)
    await store.insert_interaction(interaction("int_2"), link)
    assert await store.get_idempotency_state("acct_1", "k2") == (None, link)
    both = IdempotencyLinkRecord("acct_1", "k1", "fp-1", "int_1", 12.0)
    await store.insert_interaction(interaction("int_1"), both)
    stored, linked = await store.get_idempotency_state("acct_1", "k1")
    assert (stored, linked) == (result, both) and isinstance(stored.body, bytes)
    # another account's key of the same name is not this one's
    assert await store.get_idempotency_state("acct_2", "k1") == (None, None)


async def test_close_twice(store: Store) -> None:
    await store.insert_account(account(1))
    await store.close()
    await store.close()


# -- PostgreSQL only: the migrations ------------------------------------------------------
def _migrations(schema: str) -> list[int]:
    with psycopg.connect(DATABASE_URL, connect_timeout=5) as conn:
        query = sql.SQL("SELECT version FROM {}.schema_migrations ORDER BY version").format(
            sql.Identifier(schema)
        )
        return [int(row[0]) for row in conn.execute(query)]


async def test_postgres_migrations_recorded_once_and_data_kept(pg_schema: str) -> None:
    first = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    try:
        await first.insert_account(account(1))
        assert await first.schema_version() == LATEST
    finally:
        await first.close()
    again = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    try:
        assert await again.get_account("acct_1") == account(1)
    finally:
        await again.close()
    assert _migrations(pg_schema) == [migration.version for migration in SERIES]


async def test_postgres_concurrent_starts_migrate_once(pg_schema: str) -> None:
    stores: list[PostgresStore] = []
    failures: list[BaseException] = []
    lock = threading.Lock()

    def start() -> None:
        try:
            opened = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
        except BaseException as exc:
            with lock:
                failures.append(exc)
            return
        with lock:
            stores.append(opened)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    try:
        assert failures == []
        assert len(stores) == 4
        await stores[0].insert_account(account(1))
        assert [await s.get_account("acct_1") for s in stores] == [account(1)] * 4
    finally:
        for opened in stores:
            await opened.close()
    assert _migrations(pg_schema) == [migration.version for migration in SERIES]


async def test_postgres_concurrent_claims_never_share_a_row(pg_schema: str) -> None:
    # Two replicas' stores claim the same due rows at once: each row goes to one.
    one = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    two = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    rows = [outbox(f"ob_{i:02d}", "ev_1", next_attempt_at=float(i)) for i in range(60)]
    await one.insert_event(event("ev_1", 1.0), rows)
    taken: dict[str, list[str]] = {"one": [], "two": []}

    async def claim(name: str, store: PostgresStore) -> None:
        # Interleaved on the loop: each claim's round trip lets the other's run.
        while batch := await store.claim_outbox(1000.0, 3, 5000.0):
            taken[name].extend(o.id for o in batch)

    try:
        await asyncio.gather(claim("one", one), claim("two", two))
        assert sorted(taken["one"] + taken["two"]) == [row.id for row in rows]
        assert not set(taken["one"]) & set(taken["two"])
    finally:
        await one.close()
        await two.close()


async def test_postgres_replica_coordination(pg_schema: str) -> None:
    store = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    try:
        await store.heartbeat("alive", 1000.0)
        await store.heartbeat("dead", 900.0)
        for name, owner, held in (
            ("int_mine", "alive", "alive"),
            ("int_orphan", "dead", "dead"),
            ("int_nobody", None, None),
        ):
            await store.insert_interaction(interaction(name, owner=owner, held_by=held))
        await store.insert_interaction(
            interaction("int_call", kind="call", channel="call", owner="dead")
        )
        # ending tells who held the send; only once
        assert await store.end_held_interaction("int_mine", 1001.0, {"x": 1}) == (True, "alive")
        assert await store.end_held_interaction("int_mine", 1002.0, {"x": 2}) == (False, None)
        # the holder letting go gets the ended interaction with the answer left to it
        released = await store.release_hold("int_mine", "alive")
        assert released is not None and released.result == {"x": 1}
        assert await store.release_hold("int_mine", "alive") is None  # let go already
        # a dead replica's holds are let go of by the sweep, once
        assert await store.end_held_interaction("int_orphan", 1003.0, {"y": 1}) == (True, "dead")
        swept = await store.sweep_holds(950.0, 10)
        assert [(r.id, r.result, r.held_by) for r in swept] == [("int_orphan", {"y": 1}, None)]
        assert await store.sweep_holds(950.0, 10) == []
        # a retry taking a pending interaction over; an ended one cannot be taken
        assert await store.take_interaction("int_nobody", "other", hold=True) is True
        taken = await store.get_interaction("int_nobody")
        assert taken is not None and (taken.owner, taken.held_by) == ("other", "other")
        assert await store.take_interaction("int_mine", "other", hold=True) is False
        # retiring leaves its holds to the sweep at once (not after the lease)
        assert await store.end_held_interaction("int_nobody", 1004.0, {"z": 1}) == (True, "other")
        await store.retire_replica("other")
        swept = await store.sweep_holds(950.0, 10)
        assert [(r.id, r.result) for r in swept] == [("int_nobody", {"z": 1})]
    finally:
        await store.close()


async def test_postgres_rate_limit_and_spam_counts(pg_schema: str) -> None:
    store = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    try:
        # 3 requests per 10 s: the 4th waits until the oldest leaves the window
        assert [await store.rate_hit("acct_1", t, 3, 10.0) for t in (100.0, 101.0, 102.0)] == [
            None
        ] * 3
        assert await store.rate_hit("acct_1", 103.0, 3, 10.0) == pytest.approx(7.0)
        assert await store.rate_hit("acct_2", 103.0, 3, 10.0) is None  # accounts apart
        assert await store.rate_hit("acct_1", 110.5, 3, 10.0) is None  # 100.0 left the window
        # distinct recipients of one text inside the window
        assert await store.spam_hit("acct_1", "fp", "+1", 100.0, 60.0) == 1
        assert await store.spam_hit("acct_1", "fp", "+1", 101.0, 60.0) == 1  # same recipient
        assert await store.spam_hit("acct_1", "fp", "+2", 102.0, 60.0) == 2
        assert await store.spam_hit("acct_1", "other", "+3", 102.0, 60.0) == 1
        assert await store.spam_hit("acct_1", "fp", "+3", 161.5, 60.0) == 2  # +1 (101.0) expired
        await store.forget_spam("acct_1")
        assert await store.spam_hit("acct_1", "fp", "+4", 162.0, 60.0) == 1
    finally:
        await store.close()


async def test_postgres_key_lookup_counts_the_request(pg_schema: str) -> None:
    # What every API request asks first, in one round trip: the key's account and, for
    # one not suspended, its rate count (as rate_hit counts it); and the interaction the
    # request names, whoever's it is.
    store = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    try:
        await store.insert_account(account(1))
        await store.insert_account(account(2))
        await store.insert_interaction(interaction("int_1", account_id="acct_2"))
        key = account(1).key_hash
        trips = store.round_trips
        found = [await store.account_by_key_hash_counted(key, t, 2, 10.0) for t in (100.0, 101.0)]
        assert store.round_trips == trips + 2
        assert found == [(account(1), None, None), (account(1), None, None)]
        named = await store.account_by_key_hash_counted(key, 102.0, 2, 10.0, "int_1")
        assert store.round_trips == trips + 3
        assert named.account == account(1) and named.retry_after == pytest.approx(8.0)
        assert named.named == await store.get_interaction("int_1")
        assert named.named is not None and named.named.account_id == "acct_2"
        assert await store.rate_hit("acct_1", 110.5, 2, 10.0) is None  # the same count
        nobody = await store.account_by_key_hash_counted("no such hash", 103.0, 2, 10.0, "int_9")
        assert nobody == (None, None, None)
        # A suspended account is found and not counted.
        await store.set_account_suspended("acct_2", True)
        other = account(2).key_hash
        for t in (100.0, 100.1, 100.2):
            found_2, retry, _ = await store.account_by_key_hash_counted(other, t, 2, 10.0)
            assert found_2 is not None and found_2.suspended and retry is None
        assert await store.rate_hit("acct_2", 100.3, 2, 10.0) is None
    finally:
        await store.close()


async def test_postgres_rate_limit_agrees_with_the_sliding_log(pg_schema: str) -> None:
    # Random requests of two accounts, with prunes between them: the database's count
    # answers exactly as the in-memory sliding log (RateLimiter) does.
    import random

    from humanwire.server.engine.runtime import RateLimiter

    rng = random.Random(13)
    store = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    memory = RateLimiter(5, 10.0)
    now = 1000.0
    try:
        for step in range(400):
            now += rng.choice((0.25, 0.5, 1.0, 3.0, 12.0))
            if step % 37 == 0:
                await store.prune_limits(now - 10.0, now - 60.0)
            account_id = rng.choice(("acct_1", "acct_2"))
            expected = memory.hit(account_id, now)
            got = await store.rate_hit(account_id, now, 5, 10.0)
            if expected is None:
                assert got is None, (step, account_id, now)
            else:
                assert got == pytest.approx(expected), (step, account_id, now)
    finally:
        await store.close()


def _index_reads(conn: psycopg.Connection[Any], schema: str) -> int:
    row = conn.execute(
        "SELECT idx_tup_read FROM pg_stat_user_indexes WHERE schemaname = %s "
        "AND indexrelname = 'rate_hits_account'",
        (schema,),
    ).fetchone()
    assert row is not None
    return int(row[0])


async def test_postgres_rate_hit_costs_the_same_however_many_came_in_the_window(
    pg_schema: str,
) -> None:
    # Issue 13: every request counted all of its account's hits in the window (and
    # walked the rows deleted before them) under the account's lock; at 30,000 waits
    # that was most of the database's CPU. Now a request reads only the hits that left
    # the window since the last one.
    store = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    try:
        with psycopg.connect(DATABASE_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(pg_schema)))
            conn.execute(
                "SELECT count(humanwire_rate_hit('acct_1', 1000 + g * 0.001, 60, 1000000)) "
                "FROM generate_series(1, 3000) AS g"
            )
            conn.execute("SELECT pg_stat_force_next_flush()")
            before = _index_reads(conn, pg_schema)
            for t in (1004.0, 1004.5, 1005.0):  # 3,000 hits in the window
                assert await store.rate_hit("acct_1", t, 1_000_000, 60.0) is None
            conn.execute("SELECT pg_stat_force_next_flush()")
            # The store's connection flushes its counts when it goes idle.
            await store._one("SELECT pg_stat_force_next_flush()")
            await store._one("SELECT 1")
            read = _index_reads(conn, pg_schema) - before
        assert read < 100, f"{read} index entries read by three requests"
    finally:
        await store.close()


async def test_postgres_schemas_are_separate(pg_schema: str) -> None:
    other = f"{pg_schema}_b"
    one = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    second = PostgresStore(DATABASE_URL, schema=other, connect_timeout=5)
    try:
        await one.insert_account(account(1))
        assert await second.count_accounts() == 0
        assert await one.count_accounts() == 1
    finally:
        await one.close()
        await second.close()
        _drop_schema(other)


async def test_engine_on_a_postgresql_url_uses_postgres(pg_schema: str) -> None:
    from urllib.parse import quote

    from humanwire.server.config import ServiceConfig
    from humanwire.server.engine import Engine

    with psycopg.connect(DATABASE_URL, connect_timeout=5) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(pg_schema)))
    separator = "&" if "?" in DATABASE_URL else "?"
    url = f"{DATABASE_URL}{separator}options={quote(f'-csearch_path={pg_schema}')}"
    engine = Engine(ServiceConfig(db_path=url))
    try:
        assert isinstance(engine.store, PostgresStore)
        created, _key = await engine.accounts.create("on postgres")
    finally:
        await engine.close()
    reopened = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    try:
        stored = await reopened.get_account(created.id)
        assert stored is not None and stored.name == "on postgres"
    finally:
        await reopened.close()


# -- claims and reassignment ----------------------------------------------------------------
async def test_one_claim_per_request_the_first_wins_and_only_its_holder_releases(
    store: Store,
) -> None:
    i = await _approval(store, 90)
    first = ClaimRecord(i, "acct_1", "per_ana", 10.0)
    assert await store.get_claim(i) is None
    assert await store.claim_approval(first) == first
    assert await store.claim_approval(ClaimRecord(i, "acct_1", "per_bob", 11.0)) == first
    assert await store.release_claim(i, "per_bob") is False  # not Bob's
    assert await store.get_claim(i) == first
    assert await store.release_claim(i, "per_ana") is True
    assert await store.release_claim(i, "per_ana") is False  # released before
    assert await store.get_claim(i) is None
    second = ClaimRecord(i, "acct_1", "per_bob", 12.0)
    assert await store.claim_approval(second) == second


async def test_an_approver_is_reassigned_only_while_theirs_and_undecided(store: Store) -> None:
    i = f"int_ap_{91}"
    request = {"title": "T", "approvers": [{"channel": "sms", "to": "+12025550100"}]}
    await store.insert_interaction(
        interaction(i, kind="approval", channel="approval", request=request)
    )
    rows = [
        ApproverRecord(
            i, 0, "acct_1", 0, "sms", "+12025550100", "tok_r0", "1111", person_id="per_a"
        ),
        ApproverRecord(
            i, 1, "acct_1", 0, "sms", "+12025550101", "tok_r1", "2222", person_id="per_b"
        ),
    ]
    await store.insert_approval(ApprovalRecord(i, "acct_1"), rows)
    await store.mark_approvers_asked(i, [0, 1], 5.0)
    await store.add_approver_reminder(i, 0)
    change = Reassignment(i, 0, "per_a", "per_c", "email", "c@example.com", "tok_c", None)
    assert await store.reassign_approver(replace(change, from_person="per_b")) is False
    assert await store.reassign_approver(change) is True
    handed, kept = await store.approvers_of(i)
    assert (handed.person_id, handed.channel, handed.to_addr) == ("per_c", "email", "c@example.com")
    assert (handed.token, handed.code, handed.asked_at, handed.reminders) == (
        "tok_c",
        None,
        None,
        0,
    )
    assert (handed.position, handed.tier) == (0, 0)
    assert await store.approver_by_token("tok_r0") is None  # the giver's link opens nothing
    assert kept == replace(rows[1], asked_at=5.0)
    # Decided: no longer handed on.
    assert await store.record_approver_decision(i, 1, "approve", None, "page", 6.0)
    assert await store.reassign_approver(replace(change, position=1, from_person="per_b")) is False


async def test_delegations_live_until_ended_and_only_their_person_ends_one(
    store: Store,
) -> None:
    def made(did: str, person: str = "per_a", account: str = "acct_1") -> DelegationRecord:
        return DelegationRecord(did, account, person, "per_b", 20.0, 100.0, 10.0)

    await store.insert_delegation(made("dlg_a"))
    await store.insert_delegation(replace(made("dlg_c", "per_c"), starts_at=10.0))
    await store.insert_delegation(made("dlg_theirs", account="acct_2"))
    # Those to come count (by their start), those ended do not.
    assert [d.id for d in await store.live_delegations("acct_1", 15.0)] == ["dlg_c", "dlg_a"]
    assert await store.live_delegations("acct_1", 100.0) == []
    assert await store.revoke_delegation("acct_2", "per_a", "dlg_a", 30.0) is False
    assert await store.revoke_delegation("acct_1", "per_b", "dlg_a", 30.0) is False  # not his
    assert await store.revoke_delegation("acct_1", "per_a", "dlg_a", 30.0) is True
    assert await store.revoke_delegation("acct_1", "per_a", "dlg_a", 31.0) is False
    assert [d.id for d in await store.live_delegations("acct_1", 30.0)] == ["dlg_c"]
    assert await store.live_delegations("acct_2", 30.0) == [made("dlg_theirs", account="acct_2")]


async def test_a_delegated_approver_keeps_whom_they_were_asked_for(store: Store) -> None:
    i = "int_ap_92"
    await store.insert_interaction(interaction(i, kind="approval", channel="approval"))
    row = ApproverRecord(i, 0, "acct_1", 0, "sms", "+12025550100", "tok_d0", person_id="per_a")
    await store.insert_approval(ApprovalRecord(i, "acct_1"), [row])
    change = Reassignment(i, 0, "per_a", "per_b", "sms", "+12025550101", "tok_d1", "3333", "per_a")
    assert await store.reassign_approver(change) is True
    [handed] = await store.approvers_of(i)
    assert (handed.person_id, handed.on_behalf_of, handed.code) == ("per_b", "per_a", "3333")


# -- approvals listed ----------------------------------------------------------------------
async def _approval(
    store: Store,
    n: int,
    account_id: str = "acct_1",
    action_name: str | None = "wire",
    **extra: Any,
) -> str:
    i = f"int_ap_{n}"
    request = {"title": f"T{n}", "approvers": [{"channel": "link", "to": "Ada"}], **extra}
    await store.insert_interaction(
        interaction(i, account_id=account_id, kind="approval", channel="approval", request=request)
    )
    approver = ApproverRecord(i, 0, account_id, 0, "link", "Ada", f"tok_ap_{n}_{account_id}")
    await store.insert_approval(ApprovalRecord(i, account_id, action_name=action_name), [approver])
    return i


async def test_approvals_are_listed_per_account_in_order_past_the_cursor(store: Store) -> None:
    await store.insert_account(account(1))
    await store.insert_account(account(2))
    mine = [await _approval(store, n) for n in range(5)]
    theirs = await _approval(store, 9, account_id="acct_2")
    await store.insert_interaction(interaction("int_plain"))  # a message: never listed

    everything = await store.list_approvals(ApprovalQuery("acct_1"))
    assert [found.interaction.id for found in everything] == mine
    assert everything[0].interaction == await store.get_interaction(mine[0])
    seqs = [found.seq for found in everything]
    assert seqs == sorted(seqs) and len(set(seqs)) == 5
    page = await store.list_approvals(ApprovalQuery("acct_1", after=seqs[1], limit=2))
    assert [found.interaction.id for found in page] == mine[2:4]
    assert await store.list_approvals(ApprovalQuery("acct_1", after=seqs[-1])) == []
    other = await store.list_approvals(ApprovalQuery("acct_2"))
    assert [found.interaction.id for found in other] == [theirs]
    assert await store.list_approvals(ApprovalQuery("acct_3")) == []
    assert (await store.get_approval(mine[0])) == ApprovalRecord(
        mine[0], "acct_1", action_name="wire"
    )


async def test_approvals_listed_by_status_decision_action_and_person(store: Store) -> None:
    await store.insert_account(account(1))
    approved = await _approval(store, 1)
    rejected = await _approval(store, 2, action_name="ship")
    waiting = await _approval(store, 3, action_name=None)
    await store.settle_approval(approved, "approved", False, 5.0)
    await store.settle_approval(rejected, "rejected", False, 5.0)
    await store.end_interaction(approved, 6.0, None, None)
    await store.end_interaction(rejected, 6.0, None, None)

    async def ids(**filters: Any) -> list[str]:
        found = await store.list_approvals(ApprovalQuery("acct_1", **filters))
        return [listed.interaction.id for listed in found]

    assert await ids(status="pending") == [waiting]
    assert await ids(status="ended") == [approved, rejected]
    assert await ids(decision="approved") == [approved]
    assert await ids(decision="rejected", status="ended") == [rejected]
    assert await ids(action_name="wire") == [approved]
    assert await ids(action_name="ship", decision="approved") == []
    assert await ids(action_name="' OR '1'='1") == []  # a value, never SQL
    assert await ids(person_id="per_1") == []  # no approver is a person yet
    # Once one is (what people will write): the requests that person is asked.
    assert isinstance(store, SQLiteStore | PostgresStore)
    mark = "UPDATE approval_approvers SET person_id = ? WHERE interaction_id = ?"
    await store._run(store.q.render(mark), ("per_1", rejected))
    assert await ids(person_id="per_1") == [rejected]
    assert await ids(person_id="per_1", status="pending") == []
    assert await ids(person_id="per_2") == []


async def test_approvals_listed_by_metadata(store: Store) -> None:
    """Each ``(key, value)`` must be in the request's ``metadata`` exactly; the key and the
    value are parameters, so a quote, a JSON path or a pattern in either is only text."""
    await store.insert_account(account(1))
    await store.insert_account(account(2))
    hostile = {"k'ey": "v'al", "$.a": "1", "a.b": "%", 'q"': "_", "ünï": "naïve"}
    run_1 = await _approval(store, 1, metadata={"run": "r1", "tenant": "acme", **hostile})
    run_2 = await _approval(store, 2, metadata={"run": "r2", "tenant": "acme"})
    bare = await _approval(store, 3)
    nul = await _approval(store, 4, metadata={"run": "r1"}, description="a\x00b")
    theirs = await _approval(store, 5, account_id="acct_2", metadata={"run": "r1"})

    async def ids(account_id: str = "acct_1", **metadata: str) -> list[str]:
        query = ApprovalQuery(account_id, metadata=tuple(metadata.items()))
        return [listed.interaction.id for listed in await store.list_approvals(query)]

    assert await ids() == [run_1, run_2, bare, nul]
    assert await ids(run="r1") == [run_1]  # a NUL in the request: never matched
    assert await ids(tenant="acme") == [run_1, run_2]
    assert await ids(tenant="acme", run="r2") == [run_2]  # each filter must hold
    assert await ids(tenant="acme", run="r3") == []
    assert await ids(tenant="ACME") == [] and await ids(tenant="acm") == []  # exact
    assert await ids(missing="") == []  # a key not there is not an empty value
    for key, value in hostile.items():
        assert await ids(**{key: value}) == [run_1]
    assert await ids(**{"$.a": "%"}) == [] and await ids(**{"a.b": "x"}) == []
    assert await ids(**{"k'ey": "' OR '1'='1"}) == []
    assert await ids(**{"$": "x"}) == [] and await ids(**{"metadata": "x"}) == []
    assert await ids("acct_2", run="r1") == [theirs]  # each account its own
    assert await ids("acct_2", tenant="acme") == []
    assert await store.get_interaction(bare) is not None  # nothing ran from a value


async def test_postgres_commits_an_accounts_approvals_in_their_list_order(pg_schema: str) -> None:
    """A request is inserted under its account's lock, held to the commit: while another
    transaction holds it (a request of the account being made), the next waits, so its
    later ``seq`` never commits first (a cursor past it would pass over the earlier one)."""
    pg = PostgresStore(DATABASE_URL, schema=pg_schema, connect_timeout=5)
    try:
        await pg.insert_account(account(1))
        await pg.insert_account(account(2))
        first = await _approval(pg, 1)
        lock = pg.q.lock_account_approvals
        async with await psycopg.AsyncConnection.connect(DATABASE_URL) as other:
            async with other.transaction():
                await other.execute(lock.encode(), ("acct_1",))
                waiting = asyncio.create_task(_approval(pg, 2))
                elsewhere = await asyncio.wait_for(_approval(pg, 3, account_id="acct_2"), 5)
                await asyncio.sleep(0.3)
                assert not waiting.done()  # acct_1's insert waits; acct_2's did not
            second = await asyncio.wait_for(waiting, 5)
        listed = await pg.list_approvals(ApprovalQuery("acct_1"))
        assert [found.interaction.id for found in listed] == [first, second]
        assert [f.interaction.id for f in await pg.list_approvals(ApprovalQuery("acct_2"))] == [
            elsewhere
        ]
    finally:
        await pg.close()
