"""The one migration series (``store/migrations``) run on PostgreSQL: at construction, in
one transaction under a transaction-level advisory lock, so two processes starting
together neither race nor apply a migration twice; each version recorded in
``schema_migrations (version, applied_at)``.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg
from psycopg import sql

from ..migrations import Migration, run_migrations

__all__ = ["migrate"]

_LOCK = "humanwire.store.migrate"
"""Hashed (with the schema) into the key of the advisory lock the migrations run under."""


class _PostgresLedger:
    """``MigrationLedger`` on a connection inside the migrations' transaction."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def applied(self) -> set[int]:
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
        )
        rows = self._conn.execute("SELECT version FROM schema_migrations").fetchall()
        return {int(row[0]) for row in rows}

    def apply(self, migration: Migration, script: str) -> None:
        if script.strip():
            # One script per call (no parameters: the simple protocol takes several
            # statements, and function bodies keep their own semicolons).
            self._conn.execute(script.encode())
        self._conn.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (%s, %s)",
            (migration.version, time.time()),
        )


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
        run_migrations("postgres", _PostgresLedger(conn))
        row = conn.execute("SELECT current_schema()").fetchone()
        return str(row[0]) if row and row[0] is not None else ""
