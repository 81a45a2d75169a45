"""PostgreSQL's migrations: ``migrations/NNNN_name.sql``, version ``NNNN``, run in order,
each once per database, recorded in ``schema_migrations (version, applied_at)``.

Add a new file for every change (the next number); never edit a released one (a
database that ran it will not run it again: a test pins their text). They run at
construction in one transaction under a transaction-level advisory lock, so two
processes starting together neither race nor apply a migration twice.
"""

from __future__ import annotations

import re
import time

import psycopg
from psycopg import sql

from ..sql.scripts import sql_scripts

__all__ = ["MIGRATIONS", "migrate"]

_NAME = re.compile(r"(\d{4})_\w+\.sql")
_LOCK = "humanwire.store.migrate"
"""Hashed (with the schema) into the key of the advisory lock the migrations run under."""


def _load() -> tuple[tuple[int, str], ...]:
    migrations: list[tuple[int, str]] = []
    for name, script in sql_scripts(__package__ or __name__.rpartition(".")[0], "migrations"):
        matched = _NAME.fullmatch(name)
        if matched is None:
            raise RuntimeError(f"migration {name!r} is not named NNNN_name.sql")
        migrations.append((int(matched.group(1)), script))
    versions = [version for version, _ in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise RuntimeError(f"migration versions {versions} are not 1, 2, 3, ... in order")
    return tuple(migrations)


MIGRATIONS: tuple[tuple[int, str], ...] = _load()
"""``(version, SQL)`` in order; a database records the ones it ran in
``schema_migrations``."""


def migrate(url: str, schema: str | None, connect_timeout: float) -> str:
    """Applies the migrations the database lacks, in one transaction under an advisory
    lock (released at its end), so concurrent starts apply each once. Returns the schema
    the tables are in (``current_schema()``)."""
    with (
        psycopg.connect(url, connect_timeout=max(1, int(connect_timeout))) as conn,
        conn.transaction(),
    ):
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{_LOCK}:{schema or ''}",))
        if schema is not None:
            name = sql.Identifier(schema)
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(name))
            conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(name))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
        )
        applied = {int(row[0]) for row in conn.execute("SELECT version FROM schema_migrations")}
        for version, script in MIGRATIONS:
            if version in applied:
                continue
            # One script per call (no parameters: the simple protocol takes several
            # statements, and function bodies keep their own semicolons).
            conn.execute(script.encode())
            conn.execute(
                "INSERT INTO schema_migrations (version, applied_at) VALUES (%s, %s)",
                (version, time.time()),
            )
        row = conn.execute("SELECT current_schema()").fetchone()
        return str(row[0]) if row and row[0] is not None else ""
