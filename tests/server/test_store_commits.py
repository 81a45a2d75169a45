"""``PendingCommit``, what a send awaits before it delivers: every awaiter learns the
outcome of the batch's commit, a cancelled one leaves the others waiting, and a
rolled-back batch calls what must be done again. On the SQLite store itself: writes on
the loop join one batch, committed by ``commit`` or on the loop's next turn."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from humanwire.server.store.commits import COMMITTED, PendingCommit, StoreUnavailable
from humanwire.server.store.records import AccountRecord
from humanwire.server.store.sqlite import SQLiteStore


async def test_awaiters_learn_the_commit_and_a_cancelled_one_leaves_the_rest() -> None:
    commit = PendingCommit()
    first = asyncio.ensure_future(_wait(commit))
    second = asyncio.ensure_future(_wait(commit))
    await asyncio.sleep(0)
    first.cancel()
    commit.settle(None)
    assert await second == "committed"
    assert first.cancelled()


async def test_a_rollback_fails_every_awaiter_and_calls_back_once() -> None:
    commit = PendingCommit()
    called: list[str] = []
    commit.on_rollback(lambda: called.append("early"))
    waiters = [asyncio.ensure_future(_wait(commit)) for _ in range(3)]
    await asyncio.sleep(0)
    commit.settle(StoreUnavailable("database or disk is full"))
    commit.settle(None)  # settled once
    assert [await waiter for waiter in waiters] == ["database or disk is full"] * 3
    commit.on_rollback(lambda: called.append("late"))
    COMMITTED.on_rollback(lambda: called.append("never"))
    assert called == ["early", "late"]


async def test_sqlite_writes_on_the_loop_commit_together(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "hw.db"))
    try:
        assert store.committed() is COMMITTED
        for n in range(3):
            await store.insert_account(AccountRecord(f"a{n}", f"n{n}", f"h{n}", False, 0.0))
        batch = store.committed()
        assert not batch.settled
        await batch  # the loop's next turn commits it
        assert batch.settled and batch.error is None
        assert store.committed() is COMMITTED
    finally:
        await store.close()


async def test_a_sqlite_batch_whose_commit_fails_is_rolled_back(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "hw.db"))
    try:
        # A deferred foreign key left dangling: the COMMIT fails after its statements.
        for statement in (
            "PRAGMA foreign_keys = ON",
            "CREATE TEMP TABLE parent (id INTEGER PRIMARY KEY)",
            "CREATE TEMP TABLE child (parent INTEGER REFERENCES parent (id) "
            "DEFERRABLE INITIALLY DEFERRED)",
            "CREATE TEMP TRIGGER fault AFTER INSERT ON main.accounts "
            "BEGIN INSERT INTO child VALUES (1); END",
        ):
            store._db.execute(statement)
        await store.insert_account(AccountRecord("a", "n", "h", False, 0.0))
        batch = store.committed()
        with pytest.raises(StoreUnavailable):
            store.commit()
        with pytest.raises(StoreUnavailable):
            await batch
        assert store.write_failure is not None
        assert await store.get_account("a") is None  # rolled back
        store._db.execute("DROP TRIGGER temp.fault")
        await store.check_writable()  # a test write works: writable again
        assert store.write_failure is None
    finally:
        await store.close()


async def _wait(commit: PendingCommit) -> str:
    try:
        await commit
    except StoreUnavailable as exc:
        return exc.reason
    return "committed"
