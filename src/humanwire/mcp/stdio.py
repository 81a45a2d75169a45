"""``humanwire mcp``: the MCP server over stdio, for Claude Desktop, Cursor and any
client that starts a command. Standard output carries the protocol only: everything
else (the embedded service's address, errors) goes to standard error."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import anyio

from .server import ConfiguredSource, build_server
from .settings import McpSettings, SettingsError

__all__ = ["run_stdio", "serve_stdio"]


async def serve_stdio(settings: McpSettings, source: ConfiguredSource | None = None) -> None:
    """Serves the tools of ``settings`` on stdin/stdout until the client closes them."""
    source = source or ConfiguredSource(settings)
    server = build_server(settings, source, source.channels)
    try:
        await server.run_stdio_async()
    finally:
        await source.aclose()


def run_stdio(flags: Mapping[str, Any], env: Mapping[str, str] | None = None) -> int:
    """The command: settings from ``flags`` and the environment; 2 when they are wrong."""
    try:
        settings = McpSettings.from_env(env, **flags)
        source = ConfiguredSource(settings)
        source.channels  # noqa: B018 (fails now, naming the variable, when none is set)
    except SettingsError as exc:
        print(f"humanwire mcp: {exc}", file=sys.stderr)
        return 2
    anyio.run(serve_stdio, settings, source)
    return 0
