"""Import isolation: ``import humanwire`` loads no CrewAI; without the extra the adapter
names the install command. And the service runs beside CrewAI's older MCP SDK (CrewAI
pins ``mcp<2``; ``humanwire.mcp`` needs 2.3): ``/mcp`` is left off, nothing fails."""

from __future__ import annotations

import importlib.metadata

import httpx

from framework_support import import_error_without, modules_loaded_by
from humanwire.server.http.extensions import mcp_usable
from humanwire.testing import RunningService


def test_import_humanwire_loads_no_crewai() -> None:
    assert modules_loaded_by("humanwire, humanwire.approval", ["crewai", "crewai_core"]) == []


def test_missing_extra_gives_install_hint() -> None:
    error = import_error_without(["crewai"], "humanwire.crewai")
    assert error
    assert 'pip install "humanwire[crewai]"' in error


def test_the_service_runs_beside_crewais_mcp(humanwire_service: RunningService) -> None:
    assert importlib.metadata.version("mcp").startswith("1.")
    assert not mcp_usable()
    response = httpx.post(f"{humanwire_service.base_url}/mcp", json={}, timeout=10)
    assert response.status_code == 404
