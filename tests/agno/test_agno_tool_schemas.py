"""What a model reads is the same in every framework: each Agno tool's function has the
LangChain tool's name, description and (plain) argument schema, as Agno hands it to the
model (after its own per-run processing)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.tools import BaseTool
from pydantic import BaseModel

import humanwire.agno as ag
from framework_support import LANGCHAIN_CASES, assert_default_human_on_loopback, remote_client
from humanwire import langchain as lc
from humanwire._tooling import plain_json_schema


def lc_schema(tool: BaseTool) -> dict[str, Any]:
    schema = tool.args_schema
    assert isinstance(schema, type) and issubclass(schema, BaseModel)
    return plain_json_schema(schema)


@pytest.mark.parametrize(("name", "options"), LANGCHAIN_CASES)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_each_tool_reads_as_the_langchain_one(
    name: str, options: dict[str, Any], mode: str
) -> None:
    client = remote_client()
    tool = getattr(ag, name)(client=client, **options)
    reference = getattr(lc, name)(client=client, **options)
    functions = tool.get_functions() if mode == "sync" else tool.get_async_functions()
    (function,) = functions.values()
    per_run = function._per_run_copy()
    per_run.process_entrypoint()  # what Agno does before a run
    sent = per_run.to_dict()
    assert sent["name"] == reference.name == tool.name
    assert sent["description"] == reference.description
    assert sent["parameters"] == lc_schema(reference)


def test_the_embedded_service_default_human_applies_on_loopback() -> None:
    assert_default_human_on_loopback(ag)
