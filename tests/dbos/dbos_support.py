"""DBOS's system database for tests/dbos: a SQLite file, or a fresh schema of the test
PostgreSQL database (``dbos_system_schema``)."""

from __future__ import annotations

from typing import Any


class SystemDatabase:
    """Where DBOS keeps its workflows: the URL and the schema to pass to DBOS."""

    def __init__(self, kind: str, url: str, schema: str) -> None:
        self.kind = kind
        self.url = url
        self.schema = schema

    def config(self, name: str, **extra: Any) -> dict[str, Any]:
        return {
            "name": name,
            "system_database_url": self.url,
            "dbos_system_schema": self.schema,
            "log_level": "WARNING",
            # Pinned, as the guide says to (humanwire warns at each wait otherwise).
            "application_version": "humanwire-test",
            **extra,
        }
