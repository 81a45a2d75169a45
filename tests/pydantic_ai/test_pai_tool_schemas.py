"""What a model reads is the same in every framework: each Pydantic AI tool has the
LangChain tool's name, description and (plain) argument schema, and the MCP server's;
recipients and windows are checked at construction."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from framework_support import assert_checked_when_built, assert_default_human_on_loopback
from humanwire import HumanWire
from humanwire import langchain as lc
from humanwire import pydantic_ai as pai
from humanwire._tooling import plain_json_schema
from humanwire.mcp.settings import McpSettings
from humanwire.mcp.tools import build_tools
from humanwire.types import FormField

REMOTE = HumanWire(api_key="k", base_url="https://humanwire.example")
"""A remote base URL: nothing is sent, no embedded service starts, no default human."""
TO = {"to": "+14155550123"}
SLACK_TO = {"to": "U0TEAM0001"}
EMAIL_TO = {"to": "ada@example.com"}
FIELDS = [FormField(id="venue", label="Venue", type="text", required=True)]

PAIRS: list[tuple[str, Any, Any, dict[str, Any]]] = [
    ("ask sms", pai.AskHumanSMS, lc.AskHumanSMS, {**TO, "wait_time": 120}),
    ("ask whatsapp", pai.AskHumanWhatsApp, lc.AskHumanWhatsApp, TO),
    ("ask slack", pai.AskHumanSlack, lc.AskHumanSlack, SLACK_TO),
    ("ask exposed", pai.AskHumanSMS, lc.AskHumanSMS, {**TO, "expose_recipient": True}),
    ("slack exposed", pai.AskHumanSlack, lc.AskHumanSlack, {**SLACK_TO, "expose_recipient": True}),
    ("notify sms", pai.NotifyHumanSMS, lc.NotifyHumanSMS, TO),
    ("notify whatsapp", pai.NotifyHumanWhatsApp, lc.NotifyHumanWhatsApp, TO),
    ("notify slack", pai.NotifyHumanSlack, lc.NotifyHumanSlack, SLACK_TO),
    ("email exposed", pai.AskHumanEmail, lc.AskHumanEmail, {**EMAIL_TO, "expose_recipient": True}),
    ("notify email", pai.NotifyHumanEmail, lc.NotifyHumanEmail, EMAIL_TO),
    ("dynamic form", pai.HumanForm, lc.HumanForm, TO),
    ("whatsapp form", pai.HumanForm, lc.HumanForm, {**TO, "channel": "whatsapp"}),
    (
        "slack form exposed",
        pai.HumanForm,
        lc.HumanForm,
        {**SLACK_TO, "channel": "slack", "expose_recipient": True},
    ),
    ("fixed form", pai.HumanForm, lc.HumanForm, {**TO, "title": "Offsite", "fields": FIELDS}),
    ("form no wait", pai.HumanForm, lc.HumanForm, {**TO, "wait_time": None, "follow_up_time": 60}),
    ("call", pai.CallHuman, lc.CallHuman, TO),
    ("call exposed", pai.CallHuman, lc.CallHuman, {**TO, "expose_recipient": True}),
    ("call no wait", pai.CallHuman, lc.CallHuman, {**TO, "wait_for_call_end": False}),
    ("check", pai.CheckHumanInteraction, lc.CheckHumanInteraction, {}),
]

MCP_APPROVAL_TOOLS = {"request_approval", "consume_approval"}


def lc_schema(tool: BaseTool) -> dict[str, Any]:
    schema = tool.args_schema
    assert isinstance(schema, type) and issubclass(schema, BaseModel)
    return plain_json_schema(schema)


@pytest.mark.parametrize(("case", "ours", "theirs", "options"), PAIRS, ids=[p[0] for p in PAIRS])
def test_each_tool_reads_as_the_langchain_one(
    case: str, ours: Any, theirs: Any, options: dict[str, Any]
) -> None:
    tool = ours(client=REMOTE, **options)
    reference = theirs(client=REMOTE, **options)
    definition = tool.tool_def
    assert definition.name == reference.name
    assert definition.description == reference.description
    assert definition.parameters_json_schema == lc_schema(reference)
    assert definition.kind == "function"


def test_the_channel_card_tool_reads_as_the_langchain_one() -> None:
    tool = pai.AskHumanChannel("ch_1", client=REMOTE)
    reference = lc.AskHumanChannel(channel_id="ch_1", client=REMOTE)
    assert (tool.name, tool.description) == (reference.name, reference.description)
    assert tool.tool_def.parameters_json_schema == lc_schema(reference)


def test_the_toolset_offers_what_the_toolkit_and_the_mcp_server_offer() -> None:
    options: dict[str, Any] = {
        "sms_to": "+14155550123",
        "whatsapp_to": "+14155550123",
        "slack_to": "U0TEAM0001",
        "email_to": "ada@example.com",
        "telegram_to": "123456789",
        "teams_to": "29:1a2b3c",
        "discord_to": "80351110224678912",
        "channels": ["sms", "whatsapp", "slack", "email", "telegram", "teams", "discord"],
        "notify": True,
        "call": True,
        "channel_ids": ["ch_1"],
    }
    toolset = pai.HumanWireToolset(client=REMOTE, **options)
    toolkit = lc.HumanWireToolkit(client=REMOTE, **options)
    ours = {tool.name: tool.tool_def for tool in toolset.tools.values()}
    theirs = {tool.name: tool for tool in toolkit.get_tools()}
    assert set(ours) == set(theirs)
    for name, definition in ours.items():
        assert definition.description == theirs[name].description, name
        assert definition.parameters_json_schema == lc_schema(theirs[name]), name

    settings = McpSettings(
        sms_to="+14155550123",
        whatsapp_to="+14155550123",
        slack_to="U0TEAM0001",
        email_to="ada@example.com",
        telegram_to="123456789",
        teams_to="29:1a2b3c",
        discord_to="80351110224678912",
        channel_ids=("ch_1",),
        client_timeout=None,  # no client limit: the MCP texts say nothing about handing back
    )
    built = build_tools(
        settings, ("sms", "whatsapp", "slack", "email", "telegram", "teams", "discord")
    )
    names = {tool.name for tool in built}
    assert {"ask_human_telegram", "notify_human_telegram"} <= names
    assert {"ask_human_teams", "notify_human_teams"} <= names
    assert {"ask_human_discord", "notify_human_discord"} <= names
    # The MCP server alone offers the approval tools (other frameworks gate on their seams).
    mcp = {tool.name: tool for tool in built if tool.name not in MCP_APPROVAL_TOOLS}
    assert {tool.name for tool in built} - set(mcp) == MCP_APPROVAL_TOOLS
    assert set(mcp) == set(ours)
    for name, tool in mcp.items():
        assert ours[name].description == tool.description, name
        assert ours[name].parameters_json_schema == plain_json_schema(tool.schema), name


def test_recipients_and_windows_are_checked_when_the_tool_is_built() -> None:
    assert_checked_when_built(pai)
    with pytest.raises(ValueError, match="channels"):
        pai.HumanWireToolset(client=REMOTE, channels=[])


def test_the_embedded_service_default_human_applies_on_loopback() -> None:
    assert_default_human_on_loopback(pai)
