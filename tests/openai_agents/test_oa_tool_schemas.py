"""The tools read alike in every framework: each OpenAI Agents tool has the name,
description and argument schema of the LangChain tool built with the same options, and
is a plain ``FunctionTool`` the SDK can copy."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from agents import FunctionTool

from framework_support import LANGCHAIN_CASES, PHONE, assert_checked_when_built
from humanwire import openai_agents as oa
from humanwire._tooling import plain_json_schema
from humanwire.langchain import tools as lc


@pytest.mark.parametrize(("name", "options"), LANGCHAIN_CASES)
def test_name_description_and_schema_match_langchain(name: str, options: dict[str, Any]) -> None:
    ours = getattr(oa, name)(**options)
    theirs = getattr(lc, name)(**options)
    assert isinstance(ours, FunctionTool)
    assert ours.name == theirs.name
    assert ours.description == theirs.description
    assert ours.params_json_schema == plain_json_schema(theirs.args_schema)
    assert ours.strict_json_schema is False


def test_a_copy_calls_its_own_configuration() -> None:
    # The SDK copies tools (namespaces); the copy must invoke itself, not the original.
    tool = oa.AskHumanSMS(to=PHONE)
    copied = copy.copy(tool)
    assert copied.on_invoke_tool.__self__ is copied  # type: ignore[attr-defined]
    assert copied.to == PHONE


def test_windows_and_recipients_are_checked_when_built() -> None:
    assert_checked_when_built(oa)
