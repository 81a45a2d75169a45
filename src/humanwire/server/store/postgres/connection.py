"""The PostgreSQL store's executor: a pool of autocommit connections, pipelines, and the
round trips it counts.

Every method is one statement in its own transaction, committed before it returns (no
group commit per event-loop turn: a write is durable when the method returns). Grouped
statements (``_tx``) go as one pipeline ending in one Sync: one round trip, one implicit
transaction. ``round_trips`` / ``transactions`` / ``statements`` count what the store asked
of the server: tests pin them per send and per answer, the benchmark reports them.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import errors, sql
from psycopg_pool import ConnectionPool

from ..base import Duplicate
from ..commits import COMMITTED, PendingCommit, StoreUnavailable
from ..sql import SQLStore
from .migrations import MIGRATIONS, migrate
from .statements import PostgresStatements

__all__ = ["PostgresConnection"]


def _first_line(exc: BaseException) -> str:
    """What failed, in a line (drivers do not echo passwords)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


class _Transaction:
    """``Transaction`` on a pooled connection: in a pipeline (``_tx``) or a transaction
    (``_transaction``)."""

    __slots__ = ("_conn",)

    def __init__(self, conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        self._conn = conn

    def execute(self, query: str, params: Sequence[Any] = (), /) -> None:
        self._conn.execute(query.encode(), params)

    def executemany(self, query: str, params: Iterable[Sequence[Any]], /) -> None:
        with self._conn.cursor() as cursor:
            cursor.executemany(query.encode(), params)

    def one(self, query: str, params: Sequence[Any] = (), /) -> tuple[Any, ...] | None:
        return self._conn.execute(query.encode(), params).fetchone()

    def run(self, query: str, params: Sequence[Any] = (), /) -> int:
        return self._conn.execute(query.encode(), params).rowcount


class PostgresConnection(SQLStore):
    """``SQLStore`` on a PostgreSQL server: the executor, the migrations at start, the
    notice channel. ``url``: where the server is (``postgresql://...``); ``schema``: the
    PostgreSQL schema to keep the tables in (default: the server's ``search_path``,
    usually ``public``)."""

    q = PostgresStatements()

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 4,
        connect_timeout: float = 10.0,
    ) -> None:
        self.url = url
        self.schema = schema
        self._closed = False
        self._write_failure: str | None = None
        self._notice_channel: str | None = None
        # What this store asked of the server (the migrations left out): tests pin the
        # round trips of a send, the benchmark reports them.
        self.transactions = 0
        self.round_trips = 0
        self.statements = 0
        migrate(url, schema, connect_timeout)
        self._pool: ConnectionPool[psycopg.Connection[tuple[Any, ...]]] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            # Autocommit: a lone statement is its own transaction, one round trip (not
            # three, with BEGIN and COMMIT); ``_tx`` groups statements explicitly.
            kwargs={"connect_timeout": max(1, int(connect_timeout)), "autocommit": True},
            configure=self._configure,
            open=True,
            timeout=connect_timeout,
            name="humanwire-store",
        )

    # -- connections and migrations -------------------------------------------------------
    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        """Every pooled connection plans each statement for its own parameters and runs
        with ``schema`` (if given) as its ``search_path``.

        Custom plans: psycopg prepares a statement after a few runs, and PostgreSQL then
        keeps one generic plan for it, made for the table as it was. One made while
        ``interactions`` held a few rows (the first sends of a fresh database, no ANALYZE
        yet) answered ``WHERE id = $1 AND status = 'pending'`` through the ``status``
        index: 9 ms at 30,000 open waits, reading every one of them, instead of 0.5 ms
        by the primary key. Planning a statement afresh costs tens of microseconds."""
        conn.execute(b"SET plan_cache_mode = force_custom_plan")
        if self.schema is not None:
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema)))

    def pending_migrations(self) -> list[int]:
        """The versions of ``MIGRATIONS`` missing from ``schema_migrations``."""
        try:
            found = self._all("SELECT version FROM schema_migrations")
        except errors.UndefinedTable:
            found = []
        applied = {int(row[0]) for row in found}
        return [version for version, _script in MIGRATIONS if version not in applied]

    def schema_version(self) -> int:
        """The newest migration applied."""
        row = self._one("SELECT MAX(version) FROM schema_migrations")
        return int(row[0]) if row and row[0] is not None else 0

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """A pooled connection (autocommit: each statement outside ``_tx`` commits on
        its own); a unique violation becomes ``Duplicate``."""
        if self._closed:
            raise RuntimeError("the store is closed")
        try:
            with self._pool.connection() as conn:
                yield conn
        except errors.UniqueViolation as exc:
            raise Duplicate(str(exc)) from None
        except psycopg.OperationalError as exc:
            # The server gone (or the connection lost mid-commit: it may have failed),
            # its disk full, no connection to be had: not done, retry later.
            reason = _first_line(exc)
            self._write_failure = reason
            raise StoreUnavailable(reason) from exc

    @contextmanager
    def _tx(self, statements: int) -> Iterator[_Transaction]:
        """``statements`` statements in one transaction and one round trip: sent as one
        pipeline ending in a single Sync, which the server runs as one implicit
        transaction (committed at the Sync; an error rolls back all of it and raises
        here). Nothing in the block may read a result: psycopg fetches it with a Flush
        and a round trip of its own before the Sync's. A statement's cursor is read
        after the block (its results arrived with the Sync)."""
        with self._connection() as conn, conn.pipeline():
            self.transactions += 1
            self.round_trips += 1
            self.statements += statements
            yield _Transaction(conn)

    @contextmanager
    def _transaction(self) -> Iterator[_Transaction]:
        """A transaction whose statements may read results on the way (BEGIN … COMMIT:
        a round trip each); for rare work such as deleting an account, where ``_tx``'s
        single pipeline cannot serve."""
        with self._connection() as conn, conn.transaction():
            self.transactions += 1
            yield _Transaction(conn)

    def _one(self, query: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        with self._connection() as conn:
            self._count()
            return conn.execute(query.encode(), params).fetchone()

    def _all(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._connection() as conn:
            self._count()
            return conn.execute(query.encode(), params).fetchall()

    def _run(self, query: str, params: Sequence[Any] = ()) -> int:
        with self._connection() as conn:
            self._count()
            return conn.execute(query.encode(), params).rowcount

    def _insert_id(self, query: str, params: Sequence[Any]) -> int:
        row = self._one(query, params)  # INSERT ... RETURNING the key
        assert row is not None
        return int(row[0])

    def _count(self) -> None:
        """One statement in its own transaction: one round trip."""
        self.transactions += 1
        self.round_trips += 1
        self.statements += 1

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._pool.close()

    def commit(self) -> None:
        """Nothing to do: every method commits before it returns."""

    def committed(self) -> PendingCommit:
        return COMMITTED

    @property
    def write_failure(self) -> str | None:
        return self._write_failure

    async def check_writable(self) -> None:
        """A one-row update in a worker thread (it waits on the network)."""
        if self._write_failure is not None:
            await asyncio.to_thread(self._probe_write)

    def _probe_write(self) -> None:
        # A new row version of the newest migration's: a real write, a tiny table.
        self._run(
            "UPDATE schema_migrations SET applied_at = applied_at "
            "WHERE version = (SELECT MAX(version) FROM schema_migrations)"
        )
        self._write_failure = None

    @property
    def channel(self) -> str:
        """The LISTEN/NOTIFY channel of this database's schema (channels are
        database-wide; the schema's hash keeps services on other schemas apart)."""
        if self._notice_channel is None:
            row = self._one("SELECT current_schema()")
            schema = str(row[0]) if row and row[0] is not None else ""
            digest = hashlib.sha256(schema.encode()).hexdigest()[:16]
            self._notice_channel = "humanwire_" + digest
        return self._notice_channel
