"""A row added to the tool table is an MCP tool with no MCP code: its name, description
and argument schema the kind's, its call the kind's, on the real service."""

from __future__ import annotations

import pytest
from mcp_helpers import PHONE, Connect, text

from framework_support import pinging_kind, table_with
from humanwire._tooling import plain_json_schema
from humanwire.testing import ScriptedHuman


async def test_a_row_added_to_the_table_is_listed_and_called(
    connect: Connect, human: ScriptedHuman, monkeypatch: pytest.MonkeyPatch
) -> None:
    kind = pinging_kind()
    monkeypatch.setattr("humanwire.mcp.tools.TOOL_TABLE", table_with(kind, "ping_human", "sms"))
    silent = human.stay_silent(channel="sms")
    async with connect() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        result = await client.call_tool("ping_human", {"message": "hello"})
    listed = tools["ping_human"]
    assert listed.description == "Ping a person by SMS. Nothing is awaited."
    assert listed.input_schema == plain_json_schema(kind.args_model)
    delivery = await silent.async_wait()
    assert (delivery.channel, delivery.to, delivery.text) == ("sms", PHONE, "ping: hello")
    assert result.is_error is False
    assert text(result) == f"pinged ({delivery.interaction_id})"
