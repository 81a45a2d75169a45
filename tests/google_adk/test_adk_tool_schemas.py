"""The tools read alike in every framework: each Google ADK tool has the name, description
and argument schema of the LangChain tool built with the same options (and of the OpenAI
Agents tool), declared as a JSON schema ADK passes on unconverted."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.tools.base_tool import BaseTool
from google.genai import types

from humanwire import google_adk as adk
from humanwire._tooling import plain_json_schema
from humanwire.langchain import tools as lc

PHONE = "+12025550100"
FIELDS = [
    {
        "id": "size",
        "label": "Size",
        "type": "select",
        "options": [{"label": "S", "value": "s"}, {"label": "L", "value": "l"}],
    }
]

PAIRS: list[tuple[str, dict[str, Any]]] = [
    ("AskHumanSMS", {"to": PHONE}),
    ("AskHumanSMS", {"to": PHONE, "expose_recipient": True, "wait_time": 60}),
    ("AskHumanWhatsApp", {"to": PHONE}),
    ("AskHumanSlack", {"to": "U0HUMAN0001", "expose_recipient": True}),
    ("NotifyHumanSMS", {"to": PHONE}),
    ("NotifyHumanWhatsApp", {"to": PHONE}),
    ("NotifyHumanSlack", {"to": "U0HUMAN0001"}),
    ("AskHumanChannel", {"channel_id": "ch_1"}),
    ("HumanForm", {"to": PHONE}),
    ("HumanForm", {"to": PHONE, "channel": "whatsapp", "expose_recipient": True}),
    (
        "HumanForm",
        {"to": PHONE, "title": "Order", "fields": FIELDS, "wait_time": None, "follow_up_time": 600},
    ),
    ("CallHuman", {"to": PHONE}),
    ("CallHuman", {"to": PHONE, "expose_recipient": True, "wait_for_call_end": False}),
    ("CheckHumanInteraction", {}),
]


@pytest.mark.parametrize(("name", "options"), PAIRS)
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


@pytest.mark.parametrize(("name", "options"), PAIRS)
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
    with pytest.raises(ValueError, match="wait_time must be from 1 to 600"):
        adk.AskHumanSMS(to=PHONE, wait_time=900)
    with pytest.raises(ValueError, match="HUMANWIRE_SMS_TO"):
        adk.AskHumanSMS(client=_remote_client())
    with pytest.raises(ValueError, match="both title and fields"):
        adk.HumanForm(to=PHONE, title="Only a title")
    with pytest.raises(ValueError, match="from_"):
        adk.AskHumanWhatsApp(to=PHONE, from_="+14155550100")


def test_options_reach_adk_base_tool() -> None:
    tool = adk.NotifyHumanSMS(to=PHONE, custom_metadata={"team": "ops"}, name="tell_ops")
    assert tool.custom_metadata == {"team": "ops"}
    assert tool.name == "tell_ops"
    assert isinstance(tool, adk.AskHumanSMS)  # a notify tool is an ask tool that does not wait
    assert tool.wait_time is None


def _remote_client() -> Any:
    from humanwire import HumanWire

    return HumanWire(api_key="hw_test", base_url="https://humanwire.example.com")
