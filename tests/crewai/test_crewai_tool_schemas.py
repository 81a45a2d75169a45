"""The tools read alike in every framework: each CrewAI tool has the name, description and
argument schema the other adapters build from the same options (the shared sources in
``humanwire._tooling`` / ``humanwire._tool_schemas``; LangChain is not installed beside
CrewAI), and the schema CrewAI renders for a model is that plain schema with only CrewAI's
own strict-mode additions."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from crewai.tools import BaseTool
from crewai.tools.structured_tool import format_description_for_llm
from crewai.utilities.agent_utils import convert_tools_to_openai_schema
from pydantic import BaseModel

from framework_support import FORM_FIELDS, PHONE, SLACK, assert_checked_when_built
from humanwire import HumanWire
from humanwire import crewai as cw
from humanwire._tool_schemas import (
    CallInput,
    CallWithRecipientInput,
    CheckInteractionInput,
    MessageInput,
    form_input_schema,
    message_input_schema,
)
from humanwire._tooling import (
    ASK_CHANNEL_DESCRIPTION,
    CHECK_DESCRIPTION,
    ask_description,
    call_description,
    form_description,
    notify_description,
    plain_json_schema,
)

FIELDS = FORM_FIELDS

Expected = tuple[str, str, type[BaseModel]]

CASES: list[tuple[str, dict[str, Any], Expected]] = [
    (
        "AskHumanSMS",
        {"to": PHONE},
        ("ask_human_sms", ask_description("sms", 300), MessageInput),
    ),
    (
        "AskHumanSMS",
        {"to": PHONE, "expose_recipient": True, "wait_time": 60},
        (
            "ask_human_sms",
            ask_description("sms", 60),
            message_input_schema(note=False, channel="sms", expose_recipient=True),
        ),
    ),
    (
        "AskHumanWhatsApp",
        {"to": PHONE},
        ("ask_human_whatsapp", ask_description("whatsapp", 300), MessageInput),
    ),
    (
        "AskHumanSlack",
        {"to": SLACK, "expose_recipient": True},
        (
            "ask_human_slack",
            ask_description("slack", 300),
            message_input_schema(note=False, channel="slack", expose_recipient=True),
        ),
    ),
    (
        "NotifyHumanSMS",
        {"to": PHONE},
        (
            "notify_human_sms",
            notify_description("sms"),
            message_input_schema(note=True, channel="sms", expose_recipient=False),
        ),
    ),
    (
        "NotifyHumanWhatsApp",
        {"to": PHONE},
        (
            "notify_human_whatsapp",
            notify_description("whatsapp"),
            message_input_schema(note=True, channel="whatsapp", expose_recipient=False),
        ),
    ),
    (
        "NotifyHumanSlack",
        {"to": SLACK},
        (
            "notify_human_slack",
            notify_description("slack"),
            message_input_schema(note=True, channel="slack", expose_recipient=False),
        ),
    ),
    (
        "AskHumanChannel",
        {"channel_id": "ch_1"},
        ("ask_human_channel", ASK_CHANNEL_DESCRIPTION, MessageInput),
    ),
    (
        "HumanForm",
        {"to": PHONE},
        (
            "human_form",
            form_description("sms", 300),
            form_input_schema(dynamic=True, channel="sms", expose_recipient=False),
        ),
    ),
    (
        "HumanForm",
        {"to": PHONE, "channel": "whatsapp", "expose_recipient": True},
        (
            "human_form",
            form_description("whatsapp", 300),
            form_input_schema(dynamic=True, channel="whatsapp", expose_recipient=True),
        ),
    ),
    (
        "HumanForm",
        {"to": PHONE, "title": "Order", "fields": FIELDS, "wait_time": None, "follow_up_time": 600},
        (
            "human_form",
            form_description("sms", None, title="Order", labels=["Size"]),
            form_input_schema(dynamic=False, channel="sms", expose_recipient=False),
        ),
    ),
    ("CallHuman", {"to": PHONE}, ("call_human", call_description(True), CallInput)),
    (
        "CallHuman",
        {"to": PHONE, "expose_recipient": True, "wait_for_call_end": False},
        ("call_human", call_description(False), CallWithRecipientInput),
    ),
    (
        "CheckHumanInteraction",
        {},
        ("check_human_interaction", CHECK_DESCRIPTION, CheckInteractionInput),
    ),
]


def strict(schema: Any) -> Any:
    """What CrewAI adds to every tool schema it renders (OpenAI's strict mode): each
    object lists all its properties as required and allows no others."""
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    made = {key: strict(value) for key, value in schema.items()}
    if made.get("type") == "object":
        made["additionalProperties"] = False
        made["required"] = list(made.get("properties", {}))
    return made


@pytest.mark.parametrize(("name", "options", "expected"), CASES)
def test_name_description_and_schema_are_the_shared_ones(
    name: str, options: dict[str, Any], expected: Expected
) -> None:
    tool_name, description, schema = expected
    tool = getattr(cw, name)(**options)

    assert isinstance(tool, BaseTool)
    assert (tool.name, tool.description) == (tool_name, description)
    assert issubclass(tool.args_schema, schema)
    plain = plain_json_schema(schema)
    assert tool.args_schema.model_json_schema() == plain

    # What a model is sent: natively, and in the text protocol's prompt.
    [rendered], _, _ = convert_tools_to_openai_schema([tool])
    assert rendered["function"]["name"] == tool_name
    assert rendered["function"]["description"] == description
    assert rendered["function"]["parameters"] == strict(plain)
    prompt = format_description_for_llm(tool.name, tool.args_schema, tool.description)
    arguments = prompt.split("Tool Arguments: ", 1)[1].split("\nTool Description: ", 1)[0]
    assert json.loads(arguments) == strict(plain)


def test_the_result_cache_is_off_and_the_tool_serializes_without_its_client() -> None:
    tool = cw.AskHumanSMS(to=PHONE, client=HumanWire(api_key="hw_x", base_url="http://x"))
    assert tool.cache_function({"message": "same"}, "answer") is False
    dumped = tool.model_dump(mode="json")
    assert "client" not in dumped
    assert dumped["cache_function"] == "humanwire.crewai.tools.never_cache"
    assert copy.deepcopy(tool.args_schema) is tool.args_schema  # a class, shared


def test_an_own_args_schema_is_kept() -> None:
    class Narrow(BaseModel):
        message: str

    tool = cw.AskHumanSMS(to=PHONE, args_schema=Narrow)
    assert tool.args_schema is Narrow


def test_windows_and_recipients_are_checked_when_built() -> None:
    assert_checked_when_built(cw)
    with pytest.raises(ValueError, match="channel_id"):
        cw.AskHumanChannel()  # by keyword, as any CrewAI tool option: left out
