"""The tools read alike in every framework: each OpenAI Agents tool has the name,
description and argument schema of the LangChain tool built with the same options, and
is a plain ``FunctionTool`` the SDK can copy."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from agents import FunctionTool

from humanwire import openai_agents as oa
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
    with pytest.raises(ValueError, match="wait_time must be from 1 to 600"):
        oa.AskHumanSMS(to=PHONE, wait_time=900)
    with pytest.raises(ValueError, match="HUMANWIRE_SMS_TO"):
        oa.AskHumanSMS(client=_remote_client())
    with pytest.raises(ValueError, match="both title and fields"):
        oa.HumanForm(to=PHONE, title="Only a title")
    with pytest.raises(ValueError, match="from_"):
        oa.AskHumanWhatsApp(to=PHONE, from_="+14155550100")


def _remote_client() -> Any:
    from humanwire import HumanWire

    return HumanWire(api_key="hw_test", base_url="https://humanwire.example.com")
