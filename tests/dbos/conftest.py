"""DBOS's system database on each store in turn: a SQLite file, or a fresh schema of the
test PostgreSQL database (``dbos_system_schema``), dropped afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from dbos_support import SystemDatabase

from pg_support import DATABASE_URL


@pytest.fixture(params=["sqlite", "postgres"])
def system_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SystemDatabase]:
    if request.param == "sqlite":
        yield SystemDatabase("sqlite", f"sqlite:///{tmp_path / 'dbos.sqlite'}", "dbos")
        return
    import psycopg
    from psycopg import sql

    schema = f"dbos_{uuid.uuid4().hex[:12]}"
    yield SystemDatabase("postgres", DATABASE_URL, schema)
    with psycopg.connect(DATABASE_URL, connect_timeout=5, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
