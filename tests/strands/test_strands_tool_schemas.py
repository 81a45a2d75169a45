"""What a model reads is the same in every framework: each Strands tool has the LangChain
tool's name, description and (plain) argument schema, as ``tests/tool_definitions.json``
records them (LangChain cannot share this environment; ``tests/langchain`` keeps the
file true to it), and Strands hands the model that schema unchanged; recipients and
windows are checked at construction."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from strands.tools.registry import ToolRegistry
from strands.types.tools import AgentTool
from strands_helpers import agent, once

from framework_support import assert_checked_when_built, assert_default_human_on_loopback
from humanwire import HumanWire
from humanwire import strands as hw
from humanwire.types import FormField

DEFINITIONS = Path(__file__).resolve().parents[1] / "tool_definitions.json"
CASES: list[dict[str, Any]] = json.loads(DEFINITIONS.read_text(encoding="utf-8"))["cases"]

REMOTE = HumanWire(api_key="k", base_url="https://humanwire.example")
"""A remote base URL: nothing is sent, no embedded service starts, no default human."""
TO = {"to": "+14155550123"}


def build(case: dict[str, Any]) -> AgentTool:
    options = dict(case["options"])
    if "fields" in options:
        options["fields"] = [FormField.model_validate(field) for field in options["fields"]]
    tool: AgentTool = getattr(hw, case["tool"])(client=REMOTE, **options)
    return tool


def test_every_langchain_tool_has_a_strands_counterpart() -> None:
    assert {case["tool"] for case in CASES} <= set(hw.__all__)
    assert len(CASES) >= 18


@pytest.mark.parametrize("case", CASES, ids=[case["case"] for case in CASES])
def test_each_tool_reads_as_the_langchain_one(case: dict[str, Any]) -> None:
    tool = build(case)
    spec = tool.tool_spec
    assert tool.tool_name == spec["name"] == case["name"]
    assert spec["description"] == case["description"]
    assert spec["inputSchema"] == {"json": case["input_schema"]}


@pytest.mark.parametrize("case", CASES, ids=[case["case"] for case in CASES])
def test_strands_hands_the_model_the_same_schema(case: dict[str, Any]) -> None:
    # Strands normalizes every spec before the model sees it; the shared schemas are
    # already in its shape (a type and a description on every property), so nothing
    # changes beyond an empty "required" list where no argument is required.
    registry = ToolRegistry()
    registry.register_tool(build(case))
    (given,) = registry.get_all_tool_specs()
    expected = {"required": [], **case["input_schema"]}
    assert given["inputSchema"] == {"json": expected}
    assert given["description"] == case["description"]


async def test_the_model_is_offered_the_specs() -> None:
    tools = [hw.AskHumanSMS(client=REMOTE, **TO), hw.HumanForm(client=REMOTE, **TO)]
    model = once("ask_human_sms", {"message": ""})  # refused before anything is sent
    await agent(model, tools).invoke_async("go")
    for tool, given in zip(tools, model.specs, strict=True):
        assert given["name"] == tool.tool_name
        assert given["inputSchema"]["json"] == {
            "required": [],
            **tool.tool_spec["inputSchema"]["json"],
        }


def test_recipients_and_windows_are_checked_when_the_tool_is_built() -> None:
    assert_checked_when_built(hw)


def test_the_embedded_service_default_human_applies_on_loopback() -> None:
    assert_default_human_on_loopback(hw)
