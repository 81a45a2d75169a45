"""``humanwire mcp``: the MCP server over stdio, for Claude Desktop, Cursor and any
client that starts a command. Standard output carries the protocol only: everything
else (the embedded service's address, errors) goes to standard error."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio

from .gate import GatedTool
from .server import ConfiguredSource, build_server
from .settings import McpSettings, SettingsError

__all__ = ["run_stdio", "serve_stdio"]


async def serve_stdio(
    settings: McpSettings,
    source: ConfiguredSource | None = None,
    gated: Sequence[GatedTool | Callable[..., Any]] = (),
) -> None:
    """Serves the tools of ``settings`` (and the ``gated`` tools of your own, each run
    only once approved: ``humanwire.mcp.gate``) on stdin/stdout until the client closes
    them."""
    source = source or ConfiguredSource(settings)
    server = build_server(settings, source, source.channels, gated=gated)
    try:
        await server.run_stdio_async()
    finally:
        await source.aclose()


def run_stdio(flags: Mapping[str, Any], env: Mapping[str, str] | None = None) -> int:
    """The command: settings from ``flags`` and the environment; 2 when they are wrong."""
    flags = dict(flags)
    env = os.environ if env is None else env
    listed = [g.strip() for g in env.get("HUMANWIRE_MCP_GATE", "").split(",") if g.strip()]
    gate = flags.pop("gate", None) or listed
    try:
        settings = McpSettings.from_env(env, **flags)
        source = ConfiguredSource(settings)
        source.channels  # noqa: B018 (fails now, naming the variable, when none is set)
        gated = [gated_function(spec) for spec in gate]
    except SettingsError as exc:
        print(f"humanwire mcp: {exc}", file=sys.stderr)
        return 2
    anyio.run(serve_stdio, settings, source, gated)
    return 0


def gated_function(spec: str) -> Callable[..., Any]:
    """The function ``module:name`` names (``--gate``, ``HUMANWIRE_MCP_GATE``), imported;
    a ``SettingsError`` naming the flag when it cannot be."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise SettingsError(f"--gate: {spec!r} is not module:function")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # whatever importing the user's module raised
        raise SettingsError(f"--gate {spec}: cannot import {module_name} ({exc})") from None
    found: Any = module
    for part in attribute.split("."):
        found = getattr(found, part, None)
    if not callable(found):
        raise SettingsError(f"--gate {spec}: {module_name} has no function {attribute}")
    function: Callable[..., Any] = found
    return function
