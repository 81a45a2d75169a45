"""The SQLite store (stdlib sqlite3): a file in WAL mode, or ``:memory:`` for tests.

One connection, used from the engine's event loop; a lock guards it anyway so a call
from another thread (the runner, a CLI helper) cannot interleave a transaction. Another
process (``humanwire accounts create``) may open the same file while the service runs:
WAL and ``busy_timeout`` make that safe.

Most methods are ``SQLStore``'s (``store/sql``), written once for both stores; this
module holds the executor (group commit per event-loop turn, ``PendingCommit``), the
migrations' ledger (the one series of ``store/migrations``) and the methods SQLite runs
its own way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, contextmanager
from dataclasses import replace
from types import TracebackType
from typing import Any

from .commits import COMMITTED, TOUCHED, PendingCommit, StoreUnavailable
from .migrations import Migration, pending, run_migrations
from .protocol import Duplicate
from .records import (
    IdempotencyLinkRecord,
    IdempotencyRecord,
    InteractionRecord,
    NumberRecord,
    OutboxRecord,
    StepRecord,
)
from .sql import SQLStore, Statements, rows

__all__ = ["LEGACY_SCHEMA_VERSION", "SQLiteStore", "script_statements"]

# Primary result codes of a database that cannot take a write now (its disk full, an I/O
# error, locked past the busy timeout, read-only, out of memory): 503, retry later.
_UNAVAILABLE_CODES = frozenset({5, 6, 7, 8, 10, 13, 14, 15})
_UNAVAILABLE_TEXT = ("disk is full", "disk i/o error", "locked", "readonly", "unable to open")
# Extended result codes of a UNIQUE or PRIMARY KEY constraint failing.
_UNIQUE_CODES = frozenset({1555, 2067})
_PROBE_PAGES = 64
"""At most this many pages are written by a probe (``check_writable``)."""

logger = logging.getLogger("humanwire.store")

LEGACY_SCHEMA_VERSION = 11
"""The last version of SQLite's own series before the one migration series, recorded in
``meta`` (``schema_version``). Still written, so an older humanwire opening a file of this
code finds it current and runs nothing."""
_LEGACY_HOLDS = {5: 3, 6: 4, 7: 5, 8: 6, 9: 7, 10: 8, 11: 9}
"""A file of that old series (``meta``'s version, no ``schema_migrations``): its version →
the last migration of the one series it holds. Below 5, none: 0001 runs again (its
statements are safe to run again), as the old series re-ran every script on such a file."""
_ADD_COLUMN = re.compile(r"\s*ALTER\s+TABLE\s+(\w+)\s+ADD\s+COLUMN\s+(\w+)\s", re.IGNORECASE)


def script_statements(script: str) -> Iterator[str]:
    """Every statement of a migration's SQLite script, in order, without comments."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statement = "\n".join(
                part for part in pending.splitlines() if not part.lstrip().startswith("--")
            ).strip()
            if statement:
                yield statement
            pending = ""
    if pending.strip() and not all(
        part.lstrip().startswith("--") for part in pending.strip().splitlines()
    ):
        raise ValueError("a statement without its closing semicolon")


class _SQLiteLedger:
    """``MigrationLedger`` on the store's connection, inside the migrations' write
    transaction (``BEGIN IMMEDIATE``: a second process starting waits, then finds them
    applied)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def applied(self) -> set[int]:
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)"
        )
        found = {int(row[0]) for row in self._db.execute("SELECT version FROM schema_migrations")}
        if found:
            return found
        holds = _LEGACY_HOLDS.get(self._legacy_version() or 0, 0)
        for version in range(1, holds + 1):
            self._record(version)
        return set(range(1, holds + 1))

    def apply(self, migration: Migration, script: str) -> None:
        for statement in script_statements(script):
            added = _ADD_COLUMN.match(statement)
            if added is not None:
                # SQLite has no ADD COLUMN IF NOT EXISTS: 0001 runs again on a file of the
                # old series' schema 1 to 4, which may have some of its columns.
                table, column = added.groups()
                present = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
                if column in present:
                    continue
            self._db.execute(statement)
        self._record(migration.version)

    def _record(self, version: int) -> None:
        self._db.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
            (version, time.time()),
        )

    def _legacy_version(self) -> int | None:
        """The old series' version of this file, None for a new file."""
        if not self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone():
            return None
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        try:
            return int(row[0]) if row is not None else None
        except ValueError:
            return None


def _unavailable(exc: sqlite3.OperationalError) -> bool:
    """True for an error of the database's state, not of the statement (a bug)."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    if isinstance(code, int):
        return code & 0xFF in _UNAVAILABLE_CODES
    text = str(exc).lower()
    return any(part in text for part in _UNAVAILABLE_TEXT)


def _unique_violation(exc: sqlite3.IntegrityError) -> bool:
    """A unique value taken (not a NOT NULL or CHECK failing)."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    if isinstance(code, int):
        return code in _UNIQUE_CODES
    return str(exc).startswith("UNIQUE constraint failed")


class SQLiteStatements(Statements):
    """``Statements`` in SQLite's words: where it differs, and what only it runs."""

    delete_provider_state_of_account = (
        "DELETE FROM provider_state WHERE "
        "key IN (SELECT id FROM interactions WHERE account_id = ?) "
        "OR key IN (SELECT phone_number FROM numbers WHERE account_id = ?) "
        "OR (CASE WHEN json_valid(value) AND json_type(value) = 'object' THEN "
        "json_extract(value, '$.account') = ? OR json_extract(value, '$.interactionId') "
        "IN (SELECT id FROM interactions WHERE account_id = ?) END)"
    )
    # One number per account (PostgreSQL: a unique index).
    account_has_number = "SELECT 1 FROM numbers WHERE account_id = ?"
    append_outcome = (
        "INSERT INTO outcomes (account_id, interaction_id, body, created_at) VALUES (?, ?, ?, ?)"
    )
    outcome_before = "SELECT MAX(id) FROM outcomes WHERE account_id = ? AND id < ?"
    due_outbox = (
        "SELECT {outbox_columns} FROM outbox WHERE status = 'pending' "
        "AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?"
    )
    lease_outbox = "UPDATE outbox SET next_attempt_at = ? WHERE id = ?"
    due_steps = (
        "SELECT {schedule_columns} FROM schedule WHERE due_at <= ? "
        "AND (claimed_until IS NULL OR claimed_until < ?) ORDER BY due_at LIMIT ?"
    )
    lease_step = (
        "UPDATE schedule SET claimed_by = ?, claimed_until = MAX(due_at, ?) + ? "
        "WHERE kind = ? AND key = ?"
    )


class _Transaction:
    """``Transaction`` on the store's connection (``_tx``): each statement runs at once
    (a coroutine that never suspends, so nothing else on the loop runs in between)."""

    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    async def execute(self, query: str, params: Sequence[Any] = (), /) -> None:
        self._db.execute(query, params)

    async def executemany(self, query: str, params: Iterable[Sequence[Any]], /) -> None:
        self._db.executemany(query, params)

    async def one(self, query: str, params: Sequence[Any] = (), /) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self._db.execute(query, params).fetchone()
        return row

    async def run(self, query: str, params: Sequence[Any] = (), /) -> int:
        return self._db.execute(query, params).rowcount


class _AsyncUnit:
    """A synchronous context manager behind ``async with`` (``_tx``): entered and left
    at once, without the generator and task machinery of ``asynccontextmanager``."""

    __slots__ = ("_unit",)

    def __init__(self, unit: AbstractContextManager[_Transaction]) -> None:
        self._unit = unit

    async def __aenter__(self) -> _Transaction:
        return self._unit.__enter__()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return self._unit.__exit__(kind, exc, tb)


class SQLiteStore(SQLStore):
    """``Store`` on sqlite3. ``path`` is a file name or ``:memory:``.

    Its methods are coroutines (the ``Store`` interface) that run their statements at
    once, on the loop: a statement on a local file takes microseconds, less than handing
    it to a thread would, and the group commit below needs the loop's turns anyway."""

    q = SQLiteStatements()

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._closed = False
        self._batch: PendingCommit | None = None
        self._write_failure: str | None = None
        self._db = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, timeout=10.0
        )
        self._db.execute("PRAGMA busy_timeout = 10000")
        if path != ":memory:":
            self._db.execute("PRAGMA journal_mode = WAL")
            # WAL + NORMAL: a commit survives a crash of the process, fsync on checkpoint.
            self._db.execute("PRAGMA synchronous = NORMAL")
        self._create_schema()

    def _create_schema(self) -> None:
        with self._lock:
            # A file up to date needs no write (another process may hold the lock).
            if not pending(self._recorded_versions()):
                return
            # One transaction: a file is at one version or the next, never in between.
            self._db.execute("BEGIN IMMEDIATE")
            try:
                run_migrations("sqlite", _SQLiteLedger(self._db))
                self._db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                    (str(LEGACY_SCHEMA_VERSION),),
                )
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    def _recorded_versions(self) -> set[int]:
        try:
            rows = self._db.execute("SELECT version FROM schema_migrations").fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
            return set()
        return {int(row[0]) for row in rows}

    async def pending_migrations(self) -> list[int]:
        """The versions of the migration series missing from ``schema_migrations``
        (changed under a running service, or an older humanwire's file)."""
        try:
            rows = await self._all("SELECT version FROM schema_migrations")
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
            rows = []
        return pending({int(row[0]) for row in rows})

    async def schema_version(self) -> int:
        """The newest migration applied."""
        row = await self._one("SELECT MAX(version) FROM schema_migrations")
        return int(row[0]) if row and row[0] is not None else 0

    def _join_batch(self) -> None:
        """Group commit: on the event loop, writes join one transaction that commits on
        the loop's next turn. A commit (a WAL append) costs far more than a statement,
        so ten thousand sends in one burst cost a handful of commits, and a crash loses
        at most the writes of one turn. The service commits the batch before a response
        starts (``create_app``), so none of them was answered to anyone yet, and a send
        awaits its batch's commit (``committed``) before it delivers anything. Without a
        running loop (a CLI, a plain script) every write commits at once."""
        if self._closed:
            return
        if self._db.in_transaction:
            self._touch()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._db.execute("BEGIN IMMEDIATE")
        self._batch = PendingCommit()
        self._touch()
        loop.call_soon(self._commit_soon)

    def _touch(self) -> None:
        """The open batch is part of the current request's answer (``TOUCHED``)."""
        batch = self._batch
        if batch is not None:
            touched = TOUCHED.get()
            if touched is not None:
                touched.add(batch)

    def committed(self) -> PendingCommit:
        batch = self._batch
        return batch if batch is not None else COMMITTED

    @property
    def write_failure(self) -> str | None:
        return self._write_failure

    def commit(self) -> None:
        """Commits the open batch, if any; raises ``StoreUnavailable`` when it was rolled
        back instead (every write of it is gone: its requests answer 503)."""
        with self._lock:
            batch, self._batch = self._batch, None
            if batch is None or self._closed:
                return
            error: str | None = None
            if not self._db.in_transaction:
                # A failed statement made SQLite roll the whole transaction back.
                error = "the batch was rolled back after a failed write"
            else:
                try:
                    self._db.execute("COMMIT")
                except sqlite3.Error as exc:
                    error = str(exc)
                    with contextlib.suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
        if error is None:
            batch.settle(None)
            return
        logger.error("commit of the store failed (%s); its batch of writes was rolled back", error)
        failure = StoreUnavailable(error)
        self._write_failure = error
        batch.settle(failure)
        raise failure

    def _commit_soon(self) -> None:
        # The batch's requests learn of a failure from it (logged by ``commit``).
        with contextlib.suppress(StoreUnavailable):
            self.commit()

    def _write_failed(self, exc: sqlite3.Error) -> StoreUnavailable:
        """A write statement failed for want of the database (its disk full, locked, an
        I/O error): the write is not done. If SQLite rolled back the whole batch with
        it, the batch fails (the other writes in it are gone too)."""
        reason = str(exc)
        self._write_failure = reason
        logger.warning("a write to the store failed: %s", reason)
        failure = StoreUnavailable(reason)
        batch = self._batch
        if batch is not None and not self._db.in_transaction:
            self._batch = None
            logger.error("the store rolled back its batch of writes (%s)", reason)
            batch.settle(failure)
        return failure

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """Statements that write, in the open batch (or committed at once off the loop);
        ``StoreUnavailable`` when the database cannot take them, ``Duplicate`` when a
        unique value is taken."""
        with self._lock:
            try:
                self._join_batch()
                yield self._db
            except sqlite3.OperationalError as exc:
                if not _unavailable(exc):
                    raise
                raise self._write_failed(exc) from exc
            except sqlite3.IntegrityError as exc:
                if not _unique_violation(exc):
                    raise
                raise Duplicate(str(exc)) from None

    def _tx(self, statements: int = 1) -> AbstractAsyncContextManager[_Transaction]:
        return _AsyncUnit(self._unit())

    @contextmanager
    def _unit(self) -> Iterator[_Transaction]:
        """Several statements as one unit: a savepoint inside the batch, else its own
        transaction. They may read on the way (``statements`` is PostgreSQL's concern)."""
        with self._write() as db:
            if db.in_transaction:
                db.execute("SAVEPOINT unit")
                try:
                    yield _Transaction(db)
                except BaseException:
                    if db.in_transaction:  # not rolled back whole by a failed write
                        db.execute("ROLLBACK TO unit")
                        db.execute("RELEASE unit")
                    raise
                db.execute("RELEASE unit")
                return
            db.execute("BEGIN IMMEDIATE")
            try:
                yield _Transaction(db)
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    def _transaction(self) -> AbstractAsyncContextManager[_Transaction]:
        return _AsyncUnit(self._unit())

    async def check_writable(self) -> None:
        """On the loop (a probe is a few statements and a small commit). The test write
        needs a new page: a database that cannot grow fails it, as it fails inserts."""
        if self._write_failure is None:
            return
        with self._lock:
            if self._closed:
                raise StoreUnavailable("the store is closed")
            self.commit()  # the open batch first; its failure is the answer
            try:
                self._db.execute("BEGIN IMMEDIATE")
                page_size = int(self._db.execute("PRAGMA page_size").fetchone()[0])
                free = int(self._db.execute("PRAGMA freelist_count").fetchone()[0])
                self._db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('write_probe', "
                    "randomblob(?))",
                    (page_size * (min(free, _PROBE_PAGES) + 1),),
                )
                self._db.execute("DELETE FROM meta WHERE key = 'write_probe'")
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                self._write_failure = str(exc)
                raise StoreUnavailable(str(exc)) from exc
            self._write_failure = None

    async def _one(self, query: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        with self._lock:
            self._touch()
            row: tuple[Any, ...] | None = self._db.execute(query, params).fetchone()
            return row

    async def _all(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            self._touch()
            return list(self._db.execute(query, params).fetchall())

    async def _run(self, query: str, params: Sequence[Any] = ()) -> int:
        with self._write() as db:
            return db.execute(query, params).rowcount

    async def _insert_id(self, query: str, params: Sequence[Any]) -> int:
        with self._write() as db:
            key = db.execute(query, params).lastrowid
        assert key is not None
        return key

    async def close(self) -> None:
        self.close_now()

    def close_now(self) -> None:
        """``close`` outside an event loop (the store's owner is a plain script)."""
        with self._lock:
            if self._closed:
                return
            with contextlib.suppress(StoreUnavailable):
                self.commit()
            self._closed = True
            self._db.close()

    # -- what SQLite runs its own way ----------------------------------------------------
    async def delete_account(self, account_id: str) -> dict[str, int] | None:
        with self._lock:
            # Deleted content is overwritten, not left in free pages of the file; the
            # write-ahead log is emptied after (when no reader holds it), so the data is
            # gone from disk too, not only from the tables.
            previous = self._db.execute("PRAGMA secure_delete").fetchone()
            self._db.execute("PRAGMA secure_delete = ON")
            try:
                removed = await super().delete_account(account_id)
            finally:
                self._db.execute(f"PRAGMA secure_delete = {int(previous[0]) if previous else 0}")
            if removed is not None and self.path != ":memory:":
                # Committed now, with the loop turn's batch (the log can only be emptied
                # of committed pages), then emptied.
                self.commit()
                if not self._db.in_transaction:
                    self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return removed

    async def insert_interaction(
        self,
        record: InteractionRecord,
        link: IdempotencyLinkRecord | None = None,
        *,
        link_stale_before: float = 0.0,
        step: StepRecord | None = None,
        claimed_by: str | None = None,
        claimed_until: float | None = None,
    ) -> None:
        with self._unit() as tx:
            await tx.execute(self.q.insert_interaction, rows.interaction_values(record))
            if step is not None:
                await tx.execute(self.q.put_step, rows.step_values(step, claimed_by, claimed_until))
            # Replaces a link whose interaction failed to deliver, or one older than
            # ``link_stale_before``; any other is a concurrent request's: ``Duplicate``.
            if link is not None and not await tx.run(
                self.q.upsert_idempotency_link, rows.link_values(link, link_stale_before)
            ):
                raise Duplicate(f"idempotency key {link.key!r} is linked already")

    async def append_outcome(
        self,
        account_id: str,
        interaction_id: str,
        body: dict[str, Any],
        created_at: float,
        *,
        idempotency: IdempotencyRecord | None = None,
    ) -> tuple[int, int]:
        if idempotency is not None:
            await self.put_idempotency(idempotency)  # in this loop turn's batch, as the event
        with self._write() as db:
            cursor = db.execute(
                self.q.append_outcome,
                (account_id, interaction_id, rows.dumps_json(body), created_at),
            )
            added = int(cursor.lastrowid or 0)
            row = db.execute(self.q.outcome_before, (account_id, added)).fetchone()
            return added, int(row[0]) if row and row[0] is not None else 0

    async def insert_number(self, record: NumberRecord) -> None:
        # One number per account (PostgreSQL: a unique index).
        with self._lock:
            if await self._one(self.q.account_has_number, (record.account_id,)):
                raise Duplicate(f"account {record.account_id!r} has a number already")
            await super().insert_number(record)

    async def claim_steps(
        self, owner: str, *, due_before: float, now: float, lease: float, limit: int
    ) -> list[StepRecord]:
        # As claim_outbox: one process, the store's lock; no RETURNING (SQLite 3.35+).
        with self._lock:
            due = await self._all(self.q.due_steps, (due_before, now, limit))
            if due:
                leases = [(owner, now, lease, row[0], row[1]) for row in due]
                async with self._tx(len(leases)) as tx:
                    await tx.executemany(self.q.lease_step, leases)
        return [rows.step(row) for row in due]

    async def claim_outbox(self, now: float, limit: int, until: float) -> list[OutboxRecord]:
        # One process per SQLite file, one thread at a time (the store's lock): nothing
        # can claim between the read and the lease. Nothing due writes nothing.
        with self._lock:
            due = await self._all(self.q.due_outbox, (now, limit))
            if due:
                with self._unit() as tx:
                    await tx.executemany(self.q.lease_outbox, [(until, row[0]) for row in due])
        # As PostgreSQL's RETURNING does: the rows as leased.
        return [replace(rows.outbox(row), next_attempt_at=until) for row in due]
