"""The PostgreSQL store's executor: a pool of async autocommit connections, pipelines,
and the round trips it counts.

Every call awaits its round trip (psycopg's ``AsyncConnection`` from an
``AsyncConnectionPool``): the event loop serves other requests while the server answers.

Every method is one statement in its own transaction, committed before it returns (no
group commit per event-loop turn: a write is durable when the method returns). Grouped
statements (``_tx``) go as one pipeline ending in one Sync: one round trip, one implicit
transaction. ``round_trips`` / ``transactions`` / ``statements`` count what the store asked
of the server: tests pin them per send and per answer, the benchmark reports them.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import errors, sql
from psycopg_pool import AsyncConnectionPool

from ..commits import COMMITTED, PendingCommit, StoreUnavailable
from ..migrations import pending
from ..protocol import Duplicate
from ..sql import SQLStore
from .migrations import migrate
from .statements import PostgresStatements

__all__ = ["PostgresConnection"]


def _first_line(exc: BaseException) -> str:
    """What failed, in a line (drivers do not echo passwords)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


class _Transaction:
    """``Transaction`` on a pooled connection: in a pipeline (``_tx``) or a transaction
    (``_transaction``)."""

    __slots__ = ("_conn",)

    def __init__(self, conn: psycopg.AsyncConnection[tuple[Any, ...]]) -> None:
        self._conn = conn

    async def execute(self, query: str, params: Sequence[Any] = (), /) -> None:
        await self._conn.execute(query.encode(), params)

    async def executemany(self, query: str, params: Iterable[Sequence[Any]], /) -> None:
        async with self._conn.cursor() as cursor:
            await cursor.executemany(query.encode(), params)

    async def one(self, query: str, params: Sequence[Any] = (), /) -> tuple[Any, ...] | None:
        return await (await self._conn.execute(query.encode(), params)).fetchone()

    async def run(self, query: str, params: Sequence[Any] = (), /) -> int:
        return (await self._conn.execute(query.encode(), params)).rowcount


class PostgresConnection(SQLStore):
    """``SQLStore`` on a PostgreSQL server: the executor, the migrations at start, the
    notice channel. ``url``: where the server is (``postgresql://...``); ``schema``: the
    PostgreSQL schema to keep the tables in (default: the server's ``search_path``,
    usually ``public``).

    The migrations run in the constructor (a blocking connection, once, at start); the
    pool opens on the first call, on the event loop that will use it (an
    ``AsyncConnectionPool`` belongs to one loop)."""

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
        self._opened = False
        self._write_failure: str | None = None
        # What this store asked of the server (the migrations left out): tests pin the
        # round trips of a send, the benchmark reports them.
        self.transactions = 0
        self.round_trips = 0
        self.statements = 0
        current_schema = migrate(url, schema, connect_timeout)
        # The LISTEN/NOTIFY channel of this database's schema (channels are database-wide;
        # the schema's hash keeps services on other schemas apart).
        digest = hashlib.sha256(current_schema.encode()).hexdigest()[:16]
        self.channel = "humanwire_" + digest
        self._pool: AsyncConnectionPool[psycopg.AsyncConnection[tuple[Any, ...]]] = (
            AsyncConnectionPool(
                url,
                min_size=min_size,
                max_size=max_size,
                # Autocommit: a lone statement is its own transaction, one round trip (not
                # three, with BEGIN and COMMIT); ``_tx`` groups statements explicitly.
                kwargs={"connect_timeout": max(1, int(connect_timeout)), "autocommit": True},
                configure=self._configure,
                open=False,
                timeout=connect_timeout,
                name="humanwire-store",
            )
        )

    # -- connections and migrations -------------------------------------------------------
    async def _configure(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Every pooled connection plans each statement for its own parameters and runs
        with ``schema`` (if given) as its ``search_path``.

        Custom plans: psycopg prepares a statement after a few runs, and PostgreSQL then
        keeps one generic plan for it, made for the table as it was. One made while
        ``interactions`` held a few rows (the first sends of a fresh database, no ANALYZE
        yet) answered ``WHERE id = $1 AND status = 'pending'`` through the ``status``
        index: 9 ms at 30,000 open waits, reading every one of them, instead of 0.5 ms
        by the primary key. Planning a statement afresh costs tens of microseconds."""
        await conn.execute(b"SET plan_cache_mode = force_custom_plan")
        if self.schema is not None:
            await conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema)))

    async def pending_migrations(self) -> list[int]:
        """The versions of the migration series missing from ``schema_migrations``."""
        try:
            found = await self._all("SELECT version FROM schema_migrations")
        except errors.UndefinedTable:
            found = []
        applied = {int(row[0]) for row in found}
        return pending(applied)

    async def schema_version(self) -> int:
        """The newest migration applied."""
        row = await self._one("SELECT MAX(version) FROM schema_migrations")
        return int(row[0]) if row and row[0] is not None else 0

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[psycopg.AsyncConnection[tuple[Any, ...]]]:
        """A pooled connection (autocommit: each statement outside ``_tx`` commits on
        its own); a unique violation becomes ``Duplicate``."""
        if self._closed:  # a stopping service: not done, as on SQLite (503, retry)
            raise StoreUnavailable("the store is closed")
        if not self._opened:
            # Starts filling the pool in the background; the first caller waits for a
            # connection as any other does. Opening twice is harmless.
            await self._pool.open()
            self._opened = True
        try:
            async with self._pool.connection() as conn:
                yield conn
        except errors.UniqueViolation as exc:
            raise Duplicate(str(exc)) from None
        except psycopg.OperationalError as exc:
            # The server gone (or the connection lost mid-commit: it may have failed),
            # its disk full, no connection to be had: not done, retry later.
            reason = _first_line(exc)
            self._write_failure = reason
            raise StoreUnavailable(reason) from exc

    @asynccontextmanager
    async def _tx(self, statements: int) -> AsyncIterator[_Transaction]:
        """``statements`` statements in one transaction and one round trip: sent as one
        pipeline ending in a single Sync, which the server runs as one implicit
        transaction (committed at the Sync; an error rolls back all of it and raises
        here). Nothing in the block may read a result: psycopg fetches it with a Flush
        and a round trip of its own before the Sync's. A statement's cursor is read
        after the block (its results arrived with the Sync)."""
        async with self._connection() as conn, conn.pipeline():
            self.transactions += 1
            self.round_trips += 1
            self.statements += statements
            yield _Transaction(conn)

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[_Transaction]:
        """A transaction whose statements may read results on the way (BEGIN … COMMIT:
        a round trip each); for rare work such as deleting an account, where ``_tx``'s
        single pipeline cannot serve."""
        async with self._connection() as conn, conn.transaction():
            self.transactions += 1
            yield _Transaction(conn)

    async def _one(self, query: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        async with self._connection() as conn:
            self._count()
            return await (await conn.execute(query.encode(), params)).fetchone()

    async def _all(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        async with self._connection() as conn:
            self._count()
            return await (await conn.execute(query.encode(), params)).fetchall()

    async def _run(self, query: str, params: Sequence[Any] = ()) -> int:
        async with self._connection() as conn:
            self._count()
            return (await conn.execute(query.encode(), params)).rowcount

    async def _insert_id(self, query: str, params: Sequence[Any]) -> int:
        row = await self._one(query, params)  # INSERT ... RETURNING the key
        assert row is not None
        return int(row[0])

    def _count(self) -> None:
        """One statement in its own transaction: one round trip."""
        self.transactions += 1
        self.round_trips += 1
        self.statements += 1

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._opened:
            await self._pool.close()

    def commit(self) -> None:
        """Nothing to do: every method commits before it returns."""

    def committed(self) -> PendingCommit:
        return COMMITTED

    @property
    def write_failure(self) -> str | None:
        return self._write_failure

    async def check_writable(self) -> None:
        """A one-row update (awaited: it waits on the network, not the loop)."""
        if self._write_failure is None:
            return
        # A new row version of the newest migration's: a real write, a tiny table.
        await self._run(
            "UPDATE schema_migrations SET applied_at = applied_at "
            "WHERE version = (SELECT MAX(version) FROM schema_migrations)"
        )
        self._write_failure = None
