"""End-to-end tests: the real service over loopback HTTP, driven by the core client.

Most tests use the testing kit's fixtures (``humanwire_client``,
``async_humanwire_client``, ``human``, ``webhook_receiver``: one session service, one
account per test). That service runs on each store in turn (``humanwire_config`` is
parametrized: SQLite, then PostgreSQL on a fresh schema), so every test on it runs on
both. Tests that need other limits start their own service with the kit's
``start_test_service`` through ``start_service`` below, on both stores too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from e2e_support import StartService

from humanwire.testing import RunningService, fast_config, start_test_service
from pg_support import STORES, humanwire_config, store_database

__all__ = ["humanwire_config"]


@pytest.fixture(params=STORES)
def start_service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StartService]:
    """``start_service(**config_changes)``: a service of its own on a free loopback port
    (the kit's fast timings plus the changes), on each store in turn (a SQLite file, then
    a fresh PostgreSQL schema per service); stopped after the test."""
    started: list[RunningService] = []
    with ExitStack() as databases:

        def start(db_name: str = "own.db", **changes: Any) -> RunningService:
            db_path = tmp_path / db_name
            db = databases.enter_context(store_database(request.param, db_path, "hw_own"))
            service = start_test_service(db, replace(fast_config(db_path), db_path=db, **changes))
            started.append(service)
            return service

        yield start
        for service in started:
            service.stop()
