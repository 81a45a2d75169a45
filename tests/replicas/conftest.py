"""The replicas' database: a fresh PostgreSQL schema per test (replicas share only
PostgreSQL, so these tests never run on SQLite)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pg_support import drop_schema, new_schema


@pytest.fixture
def database() -> Iterator[str]:
    schema, url = new_schema("hw_replicas")
    try:
        yield url
    finally:
        drop_schema(schema)
