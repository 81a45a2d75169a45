"""What a model reads is the same in every framework: each Claude Agent SDK tool has the
LangChain tool's name, description and (plain) argument schema: the ``SdkMcpTool``
fields the in-process MCP server lists to the CLI as they are."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.tools import BaseTool
from pydantic import BaseModel

import humanwire.claude_agent_sdk as cs
from framework_support import LANGCHAIN_CASES, assert_default_human_on_loopback, remote_client
from humanwire import langchain as lc
from humanwire._tooling import plain_json_schema


def lc_schema(tool: BaseTool) -> dict[str, Any]:
    schema = tool.args_schema
    assert isinstance(schema, type) and issubclass(schema, BaseModel)
    return plain_json_schema(schema)


@pytest.mark.parametrize(("name", "options"), LANGCHAIN_CASES)
def test_each_tool_reads_as_the_langchain_one(name: str, options: dict[str, Any]) -> None:
    client = remote_client()
    tool = getattr(cs, name)(client=client, **options)
    reference = getattr(lc, name)(client=client, **options)
    assert tool.name == reference.name
    assert tool.description == reference.description
    assert tool.input_schema == lc_schema(reference)


def test_the_embedded_service_default_human_applies_on_loopback() -> None:
    assert_default_human_on_loopback(cs)
