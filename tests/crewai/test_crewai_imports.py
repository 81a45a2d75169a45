"""Import isolation: ``import humanwire`` loads no CrewAI; without the extra the adapter
names the install command. And the service runs beside CrewAI's older MCP SDK (CrewAI
pins ``mcp<2``; ``humanwire.mcp`` needs 2.3): ``/mcp`` is left off, nothing fails."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import textwrap

import httpx

from humanwire.server.app import mcp_usable
from humanwire.testing import RunningService


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_import_humanwire_loads_no_crewai() -> None:
    result = _run(
        """
        import sys
        import humanwire, humanwire.approval
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("crewai", "crewai_core")))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_missing_extra_gives_install_hint() -> None:
    result = _run(
        """
        import sys
        sys.modules["crewai"] = None  # as if not installed
        try:
            import humanwire.crewai
        except ImportError as exc:
            print("IMPORT-ERROR:", exc)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "IMPORT-ERROR:" in result.stdout
    assert 'pip install "humanwire[crewai]"' in result.stdout


def test_the_service_runs_beside_crewais_mcp(humanwire_service: RunningService) -> None:
    assert importlib.metadata.version("mcp").startswith("1.")
    assert not mcp_usable()
    response = httpx.post(f"{humanwire_service.base_url}/mcp", json={}, timeout=10)
    assert response.status_code == 404
