"""humanwire over the Model Context Protocol (``pip install 'humanwire[mcp]'``).

The humanwire tools for any MCP client (Claude Desktop, Cursor, IDE agents, the OpenAI
Agents SDK): ``humanwire mcp`` serves them over stdio, and the service mounts the same
server at ``/mcp`` (streamable HTTP, the account's bearer key) when ``mcp`` is installed.

The tools are the LangChain ones, snake_case: ``ask_human_sms``, ``ask_human_whatsapp``,
``ask_human_slack``, ``notify_human_<channel>``, ``human_form`` (fixed or model-designed),
``ask_human_<channel_id>`` (channel cards), ``call_human`` and ``check_human_interaction``,
with the same descriptions, argument schemas and result texts (``humanwire._tooling``).

In code::

    from humanwire.mcp import ConfiguredSource, McpSettings, build_server

    settings = McpSettings(sms_to="+14155550123")
    source = ConfiguredSource(settings)
    server = build_server(settings, source, source.channels)   # an mcp MCPServer
"""

from __future__ import annotations

from humanwire._extras import Extra

Extra("humanwire.mcp", "mcp", "the MCP SDK (mcp)", ("mcp",)).require()

from .gate import GatedTool  # noqa: E402
from .server import ConfiguredSource, ToolSource, build_server  # noqa: E402
from .settings import FixedForm, McpSettings, SettingsError  # noqa: E402
from .stdio import run_stdio, serve_stdio  # noqa: E402

__all__ = [
    "ConfiguredSource",
    "FixedForm",
    "GatedTool",
    "McpSettings",
    "SettingsError",
    "ToolSource",
    "build_server",
    "run_stdio",
    "serve_stdio",
]
