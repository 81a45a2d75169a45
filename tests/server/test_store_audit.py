"""The accounts' audit logs in both stores: appended as a hash chain, read back in order,
one account's never another's, appends of one account serialized across replicas, and an
edit or a removal made in the database itself found by ``verify``."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from humanwire.server.approvals.audit import GENESIS, verify
from humanwire.server.store import SQLiteStore, Store
from humanwire.server.store.postgres import PostgresStore
from humanwire.server.store.records import AuditDraft
from pg_support import drop_schema, new_schema

APPROVER = {"channel": "sms", "to": "+12025550100"}


@pytest.fixture(params=["sqlite", "postgres"])
async def store_and_url(
    request: pytest.FixtureRequest, tmp_path: Any
) -> AsyncIterator[tuple[Store, str]]:
    if request.param == "sqlite":
        path = str(tmp_path / "audit.db")
        lite = SQLiteStore(path)
        try:
            yield lite, path
        finally:
            await lite.close()
        return
    schema, url = new_schema("hw_audit")
    pg = PostgresStore(url, connect_timeout=5)
    try:
        yield pg, url
    finally:
        await pg.close()
        drop_schema(schema)


def draft(n: int, kind: str = "approval.decision") -> AuditDraft:
    return AuditDraft(
        at=1_764_072_000.0 + n / 8,
        type=kind,
        interaction_id=f"int_{n % 3}",
        actor=APPROVER,
        data={"decision": "approve", "comment": f"ok {n} — é"},
    )


async def execute(store: Store, url: str, statement: str) -> None:
    """A statement run on the database behind the store's back (an operator, an attacker),
    once the store's writes are committed."""
    if isinstance(store, SQLiteStore):
        await store.committed()
    if url.startswith("postgresql://"):
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(statement.encode())
    else:
        with sqlite3.connect(url) as db:
            db.execute(statement)


async def test_entries_chain_across_appends_and_read_back_in_order(
    store_and_url: tuple[Store, str],
) -> None:
    store, _ = store_and_url
    first = await store.append_audit("acct_1", [draft(1, "approval.requested"), draft(2)])
    assert [r.sequence for r in first] == [1, 2]
    assert first[0].prev == GENESIS and first[1].prev == first[0].hash
    later = await store.append_audit("acct_1", [draft(3, "approval.decided")])
    assert later[0].sequence == 3 and later[0].prev == first[1].hash
    await store.append_audit("acct_2", [draft(9)])  # another account: a chain of its own

    entries = await store.audit_after("acct_1", 0, 100)
    wire = [e.wire() for e in entries]
    assert [w["sequence"] for w in wire] == [1, 2, 3]
    assert wire[0]["type"] == "approval.requested" and wire[0]["at"] == "2025-11-25T12:00:00.125Z"
    assert wire[1]["data"] == {"decision": "approve", "comment": "ok 2 — é"}
    assert wire[1]["actor"] == APPROVER and wire[1]["interactionId"] == "int_2"
    head = await store.audit_head("acct_1")
    assert head == (3, wire[-1]["hash"])
    assert verify(wire, head=head) == []
    assert [e.sequence for e in await store.audit_after("acct_1", 1, 1)] == [2]
    other = [e.wire() for e in await store.audit_after("acct_2", 0, 100)]
    assert [w["sequence"] for w in other] == [1] and other[0]["prev"] == GENESIS
    assert await store.audit_heads() == {"acct_1": head, "acct_2": (1, other[0]["hash"])}


async def test_an_edit_in_the_database_is_found(store_and_url: tuple[Store, str]) -> None:
    store, url = store_and_url
    await store.append_audit("acct_1", [draft(n) for n in range(1, 6)])
    await execute(
        store,
        url,
        "UPDATE audit SET entry = replace(entry, 'approve', 'reject') WHERE sequence = 3",
    )
    wire = [e.wire() for e in await store.audit_after("acct_1", 0, 100)]
    breaks = verify(wire, head=await store.audit_head("acct_1"))
    assert [(b.sequence, "edited" in b.problem) for b in breaks] == [(3, True)]


async def test_a_removal_in_the_database_is_found(store_and_url: tuple[Store, str]) -> None:
    store, url = store_and_url
    await store.append_audit("acct_1", [draft(n) for n in range(1, 6)])
    await execute(store, url, "DELETE FROM audit WHERE sequence = 2")
    wire = [e.wire() for e in await store.audit_after("acct_1", 0, 100)]
    assert any("missing" in b.problem for b in verify(wire))
    await execute(
        store, url, "DELETE FROM audit WHERE sequence = 5"
    )  # the last: only the head shows it
    wire = [e.wire() for e in await store.audit_after("acct_1", 0, 100) if e.sequence > 2]
    head = await store.audit_head("acct_1")
    assert any("removed from its end" in b.problem for b in verify(wire, head=head))


async def test_appends_of_one_account_from_several_replicas_make_one_chain() -> None:
    schema, url = new_schema("hw_audit")
    stores = [PostgresStore(url, max_size=4) for _ in range(3)]
    try:
        await asyncio.gather(
            *(stores[n % 3].append_audit("acct_1", [draft(n), draft(n + 100)]) for n in range(60))
        )
        wire = [e.wire() for e in await stores[0].audit_after("acct_1", 0, 1000)]
        assert [w["sequence"] for w in wire] == list(range(1, 121))
        assert verify(wire, head=await stores[0].audit_head("acct_1")) == []
    finally:
        for store in stores:
            await store.close()
        drop_schema(schema)
