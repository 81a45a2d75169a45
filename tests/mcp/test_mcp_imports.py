"""``import humanwire`` never loads the MCP SDK; without it the service has no ``/mcp``
and ``humanwire mcp`` says which extra to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_import_humanwire_does_not_import_mcp() -> None:
    done = run_python(
        """
        import sys
        import humanwire
        from humanwire.server.http.app import create_app  # noqa: F401
        assert not any(name == "mcp" or name.startswith("mcp.") for name in sys.modules)
        """
    )
    assert done.returncode == 0, done.stderr


def test_without_mcp_no_endpoint_and_the_command_names_the_extra() -> None:
    done = run_python(
        """
        import sys
        from humanwire.server.http.app import create_app
        from humanwire.server.config import ServiceConfig

        def paths():
            app = create_app(ServiceConfig(db_path=":memory:"))
            return {getattr(route, "path", None) for route in app.routes}

        sys.modules["mcp"] = None  # as if not installed
        assert "/mcp" not in paths()
        assert "/messages/sms" in paths()
        from humanwire.cli import main
        assert main(["mcp"]) == 1
        """
    )
    assert done.returncode == 0, done.stderr
    assert 'pip install "humanwire[mcp]"' in done.stderr


def test_building_the_server_leaves_the_root_logger_alone() -> None:
    import logging

    from humanwire.mcp.server import build_server
    from humanwire.mcp.settings import McpSettings

    # As in a program that never configured logging (pytest's own handlers set aside:
    # basicConfig only acts on a root logger without handlers).
    root = logging.getLogger()
    saved, level = root.handlers[:], root.level
    root.handlers.clear()
    try:
        build_server(McpSettings(), None)  # type: ignore[arg-type]
        assert root.handlers == []
        assert root.level == level
    finally:
        root.handlers[:] = saved
        root.setLevel(level)
