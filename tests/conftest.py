"""Top-level test configuration. The service fixtures come from humanwire's own pytest
plugin (``humanwire.testing``), registered by its entry point."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pg_support import STORES, store_database

pytest_plugins = ["pytester"]

ISOLATED = ("strands", "crewai", "temporal_openai_agents")
"""Framework test folders run in environments of their own (``scripts/test-isolated``):
their requirements clash with the dev environment's. The run of one of them
(``HUMANWIRE_ISOLATED``) collects that folder; every other run leaves them all out."""
collect_ignore = [name for name in ISOLATED if os.environ.get("HUMANWIRE_ISOLATED") != name]


def pytest_report_header() -> str:
    return (
        f"{', '.join(f'tests/{name}' for name in collect_ignore)} run apart: "
        f"scripts/test-isolated {' '.join(collect_ignore)}"
    )


# No test may touch ~/.humanwire or the default port 8765 (several test runs share a
# machine): embedded mode gets a private home and a free port unless told otherwise.
os.environ.setdefault("HUMANWIRE_HOME", tempfile.mkdtemp(prefix="humanwire-home-"))
os.environ.setdefault("HUMANWIRE_EMBEDDED_PORT", "0")


@pytest.fixture(params=STORES)
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database on each store in turn, for a test that builds its own engine or service
    (and may restart it on the same data): a SQLite file in ``tmp_path``, then a PostgreSQL
    URL on a fresh schema (dropped afterwards)."""
    with store_database(request.param, tmp_path / "service.db", "hw_db") as db:
        yield db
