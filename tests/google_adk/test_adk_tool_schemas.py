"""The tools read alike in every framework: each Google ADK tool has the name, description
and argument schema of the LangChain tool built with the same options (and of the OpenAI
Agents tool), declared as a JSON schema ADK passes on unconverted."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.tools.base_tool import BaseTool
from google.genai import types

from framework_support import LANGCHAIN_CASES, PHONE, assert_checked_when_built
from humanwire import google_adk as adk
from humanwire._tooling import plain_json_schema
from humanwire.langchain import tools as lc


@pytest.mark.parametrize(("name", "options"), LANGCHAIN_CASES)
def test_name_description_and_schema_match_langchain(name: str, options: dict[str, Any]) -> None:
    ours = getattr(adk, name)(**options)
    theirs = getattr(lc, name)(**options)
    assert isinstance(ours, BaseTool)
    declaration = ours._get_declaration()
    assert isinstance(declaration, types.FunctionDeclaration)
    assert ours.name == declaration.name == theirs.name
    assert ours.description == declaration.description == theirs.description
    assert declaration.parameters_json_schema == plain_json_schema(theirs.args_schema)
    assert declaration.parameters is None  # not converted to Gemini's Schema subset


@pytest.mark.parametrize(("name", "options"), LANGCHAIN_CASES)
def test_the_same_tool_as_the_openai_agents_one(name: str, options: dict[str, Any]) -> None:
    oa = pytest.importorskip("humanwire.openai_agents")
    ours, theirs = getattr(adk, name)(**options), getattr(oa, name)(**options)
    assert (ours.name, ours.description) == (theirs.name, theirs.description)
    assert ours._get_declaration().parameters_json_schema == theirs.params_json_schema


def test_each_declaration_is_a_fresh_copy() -> None:
    # Model adapters rewrite the schema they are given; the tool's own must not change.
    tool = adk.HumanForm(to=PHONE)
    first = tool._get_declaration()
    assert first.parameters_json_schema is not None
    first.parameters_json_schema["properties"].clear()
    assert tool._get_declaration().parameters_json_schema["properties"]


def test_windows_and_recipients_are_checked_when_built() -> None:
    assert_checked_when_built(adk)


def test_options_reach_adk_base_tool() -> None:
    tool = adk.NotifyHumanSMS(to=PHONE, custom_metadata={"team": "ops"}, name="tell_ops")
    assert tool.custom_metadata == {"team": "ops"}
    assert tool.name == "tell_ops"
    assert isinstance(tool, adk.AskHumanSMS)  # a notify tool is an ask tool that does not wait
    assert tool.wait_time is None
