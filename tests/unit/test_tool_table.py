"""The tool table (``humanwire._tool_kinds.TOOL_TABLE``): a row per tool, and the adapters
of the dev environment derive their tools from it (tests/strands and tests/crewai hold
theirs in their own environments)."""

from __future__ import annotations

import importlib

import pytest

from framework_support import check_tools_follow_the_table
from humanwire._tool_kinds import TOOL_CLASS_NAMES, TOOL_TABLE
from humanwire._tooling import CHANNEL_NAMES


def test_a_row_per_tool_an_ask_and_a_notify_per_channel() -> None:
    names = [row.name for row in TOOL_TABLE]
    assert len(set(names)) == len(names) == len(TOOL_CLASS_NAMES)
    for channel in CHANNEL_NAMES:
        assert {f"ask_human_{channel}", f"notify_human_{channel}"} <= set(names)
    for row in TOOL_TABLE:
        assert row.kind.__name__ == row.class_name and row.kind.__doc__


@pytest.mark.parametrize(
    "adapter",
    [
        "openai_agents",
        "pydantic_ai",
        "google_adk",
        "agno",
        "langchain",
        "agent_framework",
        "claude_agent_sdk",
    ],
)
def test_every_adapter_derives_its_tools_from_the_table(adapter: str) -> None:
    check_tools_follow_the_table(importlib.import_module(f"humanwire.{adapter}"))
