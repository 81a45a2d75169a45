"""Pydantic AI's MCP toolset (``MCPToolset``, ``MCPServerStdio`` before Pydantic AI 2)
reaching ``humanwire mcp`` over stdio: the ``pydantic-ai`` extra installs the ``fastmcp``
it is built on. An agent asks a person through the MCP server's tool and reads the
answer."""

from __future__ import annotations

import os
import sys

from pai_helpers import once
from pydantic_ai import Agent

from humanwire.testing import RunningService, ScriptedHuman


async def test_an_agent_asks_through_humanwire_mcp_over_stdio(
    humanwire_service: RunningService, humanwire_api_key: str, human: ScriptedHuman
) -> None:
    from fastmcp.client.transports import StdioTransport  # the extra installs fastmcp
    from pydantic_ai.mcp import MCPToolset

    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("HUMANWIRE_SMS", "HUMANWIRE_WHATSAPP", "HUMANWIRE_SLACK"))
    }
    env.update(HUMANWIRE_BASE_URL=humanwire_service.base_url, HUMANWIRE_API_KEY=humanwire_api_key)
    server = MCPToolset(
        StdioTransport(sys.executable, ["-m", "humanwire.cli", "mcp", "--wait-time", "20"], env=env)
    )
    human.reply("Friday works", channel="slack")
    model = once("ask_human_slack", {"message": "Is Friday ok?"})
    agent = Agent(model.model, toolsets=[server])
    async with agent:
        result = await agent.run("Ask whether Friday is ok")
    assert "ask_human_slack" in model.tools
    assert result.output == "FINAL: Human response: Friday works"
