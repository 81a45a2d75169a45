"""PostgreSQL for tests: a fresh schema on the test database, and a URL that selects it
(libpq's ``options=-csearch_path=…``, as an operator might). The server comes from
``HUMANWIRE_TEST_DATABASE_URL`` (default ``postgresql://127.0.0.1:5432/test``); when it
cannot be reached the test fails (never skips) saying how to get one."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest

if TYPE_CHECKING:
    from humanwire.server.config import ServiceConfig
    from humanwire.server.store.postgres import PostgresStore

__all__ = [
    "DATABASE_URL",
    "STORES",
    "WireTrips",
    "drop_schema",
    "humanwire_config",
    "new_schema",
    "store_database",
    "stored_bytes",
    "wire_round_trips",
]

DATABASE_URL = os.environ.get("HUMANWIRE_TEST_DATABASE_URL", "postgresql://127.0.0.1:5432/test")


def new_schema(prefix: str = "hw_test") -> tuple[str, str]:
    """``(schema, url)``: a fresh schema and the database URL that uses it."""
    import psycopg
    from psycopg import sql

    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(DATABASE_URL, connect_timeout=5, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"PostgreSQL is not reachable at {DATABASE_URL} ({exc}): install Debian's "
            "postgresql (README.md, Development) or set HUMANWIRE_TEST_DATABASE_URL"
        )
    separator = "&" if "?" in DATABASE_URL else "?"
    return schema, f"{DATABASE_URL}{separator}options={quote(f'-csearch_path={schema}')}"


def drop_schema(schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(DATABASE_URL, connect_timeout=5, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def stored_bytes(database: str) -> bytes:
    """Everything ``database`` holds, to search for what must not be stored: a SQLite
    file with its journal files, or every row of every table of a PostgreSQL URL's
    schema, as text."""
    if not database.startswith(("postgresql://", "postgres://")):
        path = Path(database)
        return b"".join(file.read_bytes() for file in path.parent.glob(f"{path.name}*"))
    import psycopg
    from psycopg import sql

    with psycopg.connect(database, connect_timeout=5, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema() AND table_type = 'BASE TABLE'"
        ).fetchall()
        assert tables, "the schema has no tables"
        rows = [
            str(row[0])
            for (table,) in tables
            for row in conn.execute(
                sql.SQL("SELECT t::text FROM {} t").format(sql.Identifier(table))
            ).fetchall()
        ]
    return "\n".join(rows).encode()


STORES = ["sqlite", "postgres"]
"""Fixture params: the stores a parametrized fixture runs a test on."""


@contextmanager
def store_database(store: str, sqlite_file: Path, prefix: str = "hw_test") -> Iterator[str]:
    """A database for ``store``: the SQLite file, or a PostgreSQL URL on a fresh schema
    dropped when the block ends."""
    if store == "sqlite":
        yield str(sqlite_file)
        return
    schema, url = new_schema(prefix)
    try:
        yield url
    finally:
        drop_schema(schema)


@pytest.fixture(scope="session", params=STORES)
def humanwire_config(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceConfig]:
    """The testing kit's session service on each store in turn (it overrides the plugin's
    ``humanwire_config`` where a ``conftest.py`` imports it): every test on
    ``humanwire_service``, ``humanwire_client``, ``human``… runs on SQLite, then on
    PostgreSQL (a fresh schema for the session, dropped afterwards)."""
    from dataclasses import replace

    from humanwire.testing import fast_config

    db_path = tmp_path_factory.mktemp("humanwire") / "service.db"
    with store_database(request.param, db_path, "hw_e2e") as db:
        yield replace(fast_config(db_path), db_path=db)


class WireTrips:
    """What ``wire_round_trips`` counted: ``trips``, set as its block ends."""

    trips: int = -1


@contextmanager
def wire_round_trips(store: PostgresStore) -> Iterator[WireTrips]:
    """Counts the round trips ``store`` really makes inside the block, from libpq's trace
    of the protocol on each connection it takes from its pool: one each time the client,
    having sent, goes on to read the server's answer. (``PostgresStore.round_trips`` is
    the store's own count, which the round-trip tests and the benchmark report; this
    checks it.) One thread at a time."""
    import itertools
    import tempfile

    import psycopg

    traces: list[Any] = []
    pool = store._pool
    take = pool.connection

    @asynccontextmanager
    async def traced(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        async with take(*args, **kwargs) as conn:
            trace = tempfile.TemporaryFile()  # noqa: SIM115 (read and closed at the end)
            traces.append(trace)
            conn.pgconn.trace(trace.fileno())
            conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
            try:
                yield conn
            finally:
                conn.pgconn.untrace()

    counted = WireTrips()
    pool.connection = traced  # type: ignore[method-assign]
    try:
        yield counted
    finally:
        pool.connection = take  # type: ignore[method-assign]
        counted.trips = 0
        for trace in traces:
            trace.seek(0)
            sides = [line[:1] for line in trace.read().split(b"\n") if line[:1] in (b"F", b"B")]
            counted.trips += sum(1 for pair in itertools.pairwise(sides) if pair == (b"F", b"B"))
            trace.close()
