"""Fixtures of the MCP tests: the MCP server on this test's account of the test service,
and an MCP SDK client talking to it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp.client import Client
from mcp_helpers import Connect

from framework_support import ada
from humanwire import AsyncHumanWire
from humanwire.mcp import ConfiguredSource, McpSettings, build_server

__all__ = ["ada"]

ENV = (
    "HUMANWIRE_SMS_TO",
    "HUMANWIRE_WHATSAPP_TO",
    "HUMANWIRE_SLACK_TO",
    "HUMANWIRE_PERSON",
    "HUMANWIRE_BASE_URL",
    "HUMANWIRE_API_KEY",
    "HUMANWIRE_MCP_CLIENT_TIMEOUT",
    "HUMANWIRE_MCP_WAIT_TIME",
    "HUMANWIRE_MCP_FORM",
    "HUMANWIRE_MCP_CHANNEL_IDS",
    "HUMANWIRE_MCP_EXPOSE_RECIPIENTS",
    "HUMANWIRE_MCP_STATE_KEY",
    "HUMANWIRE_MCP_FALLBACK_AFTER",
)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Recipients and service come from the fixtures, never from the developer's shell."""
    for variable in ENV:
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture
async def connect(async_humanwire_client: AsyncHumanWire) -> AsyncIterator[Connect]:
    """``async with connect(**settings) as client``: an MCP SDK client, in process over
    memory streams (JSON-RPC, the legacy initialize handshake as stdio clients do), on a
    server for this test's account built with ``McpSettings(**settings)``."""
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def open_client(**settings: Any) -> AsyncIterator[Client]:
        chosen = McpSettings(**settings)
        source = ConfiguredSource(chosen, async_humanwire_client)
        server = build_server(chosen, source, source.channels)
        async with Client(server, mode="legacy") as client:
            yield client

    yield open_client
