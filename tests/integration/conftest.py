"""End-to-end tests: the real service over loopback HTTP, driven by the core client.

Most tests use the testing kit's fixtures (``humanwire_client``,
``async_humanwire_client``, ``human``, ``webhook_receiver``: one session service, one
account per test). That service runs on each store in turn (``humanwire_config`` is
parametrized: SQLite, then PostgreSQL on a fresh schema), so every test on it runs on
both. Tests that need other limits start their own service with the kit's
``start_test_service`` through ``start_service`` below (SQLite).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from e2e_support import StartService

from humanwire.server.config import ServiceConfig
from humanwire.testing import RunningService, fast_config, start_test_service
from pg_support import STORES, store_database


@pytest.fixture(scope="session", params=STORES)
def humanwire_config(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceConfig]:
    """The session service's configuration, once per store."""
    db_path = tmp_path_factory.mktemp("humanwire") / "service.db"
    with store_database(request.param, db_path, "hw_e2e") as db:
        yield replace(fast_config(db_path), db_path=db)


@pytest.fixture
def start_service(tmp_path: Path) -> Iterator[StartService]:
    """``start_service(**config_changes)``: a service of its own on a free loopback port
    (the kit's fast timings plus the changes); stopped after the test."""
    started: list[RunningService] = []

    def start(db_name: str = "own.db", **changes: Any) -> RunningService:
        db_path = tmp_path / db_name
        service = start_test_service(db_path, replace(fast_config(db_path), **changes))
        started.append(service)
        return service

    yield start
    for service in started:
        service.stop()
