"""The MCP tools against the real service, through the MCP SDK's own client in process
(JSON-RPC over memory streams), with the scripted human answering."""

from __future__ import annotations

from typing import Any

import pytest
from mcp_helpers import EMAIL, OTHER_PHONE, PHONE, Connect, text

from humanwire import HumanWire
from humanwire._tooling import plain_json_schema
from humanwire.langchain import (
    AskHumanChannel,
    AskHumanDiscord,
    AskHumanEmail,
    AskHumanSlack,
    AskHumanSMS,
    AskHumanTeams,
    AskHumanTelegram,
    AskHumanWhatsApp,
    CallHuman,
    CheckHumanInteraction,
    HumanForm,
    NotifyHumanDiscord,
    NotifyHumanEmail,
    NotifyHumanSlack,
    NotifyHumanSMS,
    NotifyHumanTeams,
    NotifyHumanTelegram,
    NotifyHumanWhatsApp,
)
from humanwire.mcp import FixedForm
from humanwire.testing import ScriptedHuman
from humanwire.types import DEFAULT_NO_RESPONSE_TEMPLATE, FormField

CHANNELS = ["sms", "whatsapp", "slack", "email", "telegram", "teams", "discord"]
NO_LIMIT: dict[str, Any] = {"client_timeout": None}
"""A client with no known request limit: the tools hold the whole wait."""


async def test_tools_mirror_the_langchain_tools(humanwire_client: HumanWire) -> None:
    lc_tools = [
        AskHumanSMS(client=humanwire_client),
        AskHumanWhatsApp(client=humanwire_client),
        AskHumanSlack(client=humanwire_client),
        AskHumanEmail(client=humanwire_client),
        AskHumanTelegram(client=humanwire_client),
        AskHumanTeams(client=humanwire_client),
        AskHumanDiscord(client=humanwire_client),
        NotifyHumanSMS(client=humanwire_client),
        NotifyHumanWhatsApp(client=humanwire_client),
        NotifyHumanSlack(client=humanwire_client),
        NotifyHumanEmail(client=humanwire_client),
        NotifyHumanTelegram(client=humanwire_client),
        NotifyHumanTeams(client=humanwire_client),
        NotifyHumanDiscord(client=humanwire_client),
        HumanForm(client=humanwire_client),
        CallHuman(client=humanwire_client),
        CheckHumanInteraction(client=humanwire_client),
    ]
    from humanwire.mcp import ConfiguredSource, McpSettings, build_server

    settings = McpSettings(**NO_LIMIT)
    server = build_server(settings, ConfiguredSource(settings, None))
    tools = {tool.name: tool for tool in await server.list_tools()}
    # The approval tools are the MCP server's own (tests/mcp/test_approval_tools.py).
    assert set(tools) - {"request_approval", "consume_approval"} == {t.name for t in lc_tools}
    for lc_tool in lc_tools:
        tool = tools[lc_tool.name]
        assert tool.description == lc_tool.description, lc_tool.name
        assert lc_tool.args_schema is not None
        assert tool.input_schema == plain_json_schema(lc_tool.args_schema), lc_tool.name  # type: ignore[arg-type]


@pytest.mark.parametrize("channel", CHANNELS)
async def test_answered(connect: Connect, human: ScriptedHuman, channel: str) -> None:
    human.reply("Blue, please", channel=channel)
    async with connect(wait_time=10, **NO_LIMIT) as client:
        result = await client.call_tool(f"ask_human_{channel}", {"message": "Which colour?"})
    assert result.is_error is False
    assert text(result) == "Human response: Blue, please"


async def test_no_answer_is_a_normal_result(connect: Connect, human: ScriptedHuman) -> None:
    silent = human.stay_silent()
    async with connect(wait_time=1, **NO_LIMIT) as client:
        result = await client.call_tool("ask_human_sms", {"message": "Anyone there?"})
    assert result.is_error is False
    assert text(result) == DEFAULT_NO_RESPONSE_TEMPLATE
    assert (await silent.async_wait()).text == "Anyone there?"


@pytest.mark.parametrize(
    ("channel", "to"),
    [
        ("whatsapp", PHONE),
        ("email", EMAIL),
        ("telegram", "100000001"),
        ("teams", "29:humanwire-inbox-human"),
        ("discord", "1100000000000000100"),
    ],
)
async def test_notify(
    connect: Connect, human: ScriptedHuman, humanwire_client: HumanWire, channel: str, to: str
) -> None:
    silent = human.stay_silent(channel=channel)
    async with connect() as client:
        result = await client.call_tool(f"notify_human_{channel}", {"message": "Deployed."})
    delivery = await silent.async_wait()
    assert (delivery.channel, delivery.to) == (channel, to)
    assert "Deployed." in delivery.text
    assert result.is_error is False
    assert text(result).startswith(
        f"Message sent by {channel} (interaction {delivery.interaction_id}); no reply is awaited."
    )
    assert humanwire_client.interactions.status(delivery.interaction_id).status == "ended"


async def test_designed_form(connect: Connect, human: ScriptedHuman) -> None:
    human.fill_form({"size": "Large", "email": "ada@example.com"})
    fields = [
        {"label": "Size", "type": "select", "options": ["Small", "Large"], "required": True},
        {"label": "Email", "type": "email"},
    ]
    async with connect(wait_time=10, **NO_LIMIT) as client:
        result = await client.call_tool(
            "human_form", {"title": "Your order", "fields": fields, "message": "Please confirm"}
        )
    assert result.is_error is False
    assert text(result) == "The human submitted the form:\nSize: Large\nEmail: ada@example.com"


async def test_fixed_form(connect: Connect, human: ScriptedHuman) -> None:
    form = FixedForm(
        title="Approve the refund",
        fields=[FormField(id="ok", label="Approve", type="checkbox")],
    )
    filled = human.fill_form({"ok": True})
    async with connect(wait_time=10, form=form, **NO_LIMIT) as client:
        [tool] = [t for t in (await client.list_tools()).tools if t.name == "human_form"]
        assert set(tool.input_schema["properties"]) == {"message"}
        assert "'Approve the refund' (Approve)" in str(tool.description)
        result = await client.call_tool("human_form", {})
    assert (await filled.async_wait()).form_url
    assert text(result) == "The human submitted the form:\nApprove: Yes"


async def test_call_waits_for_its_end(connect: Connect, human: ScriptedHuman) -> None:
    human.answer_call("They confirmed Tuesday.")
    async with connect(**NO_LIMIT) as client:
        result = await client.call_tool("call_human", {"prompt": "Confirm the date."})
    assert text(result) == "Call completed. Summary: They confirmed Tuesday."


async def test_call_under_a_client_limit_follows_the_status(
    connect: Connect, human: ScriptedHuman
) -> None:
    human.answer_call("They confirmed Tuesday.", delay=1.0)
    async with connect(client_timeout=30) as client:
        result = await client.call_tool("call_human", {"prompt": "Confirm the date."})
    assert result.is_error is False
    assert text(result).endswith("the call ended. Summary: They confirmed Tuesday.")


async def test_check_tool_reads_an_answer(
    connect: Connect, human: ScriptedHuman, humanwire_client: HumanWire
) -> None:
    sent = humanwire_client.messages.sms(to="+12025550100", message="Ok?", follow_up_time=60)
    human.reply("Yes", interaction_id=sent.interaction_id).wait()
    async with connect() as client:
        result = await client.call_tool(
            "check_human_interaction", {"interaction_id": sent.interaction_id}
        )
    assert text(result) == (
        f"Interaction {sent.interaction_id} (message by sms) was answered. Human response: Yes"
    )


# --- recipients -------------------------------------------------------------------------


async def test_the_model_cannot_choose_the_recipient_by_default(connect: Connect) -> None:
    async with connect() as client:
        tools = (await client.list_tools()).tools
    for tool in tools:
        assert "to" not in tool.input_schema.get("properties", {}), tool.name


async def test_configured_recipient(connect: Connect, human: ScriptedHuman) -> None:
    human.reply("from the configured number", to=OTHER_PHONE)
    async with connect(sms_to=OTHER_PHONE, wait_time=10, **NO_LIMIT) as client:
        result = await client.call_tool("ask_human_sms", {"message": "Who is this?"})
    assert text(result) == "Human response: from the configured number"


async def test_exposed_recipient(connect: Connect, human: ScriptedHuman) -> None:
    human.reply("it reached me", to=OTHER_PHONE)
    async with connect(expose_recipients=True, wait_time=10, **NO_LIMIT) as client:
        [tool] = [t for t in (await client.list_tools()).tools if t.name == "ask_human_sms"]
        assert "E.164" in tool.input_schema["properties"]["to"]["description"]
        result = await client.call_tool("ask_human_sms", {"message": "Hi?", "to": OTHER_PHONE})
    assert text(result) == "Human response: it reached me"


def test_a_remote_service_needs_a_configured_recipient() -> None:
    from humanwire.mcp import ConfiguredSource, McpSettings, SettingsError

    remote = HumanWire(api_key="k", base_url="https://humanwire.example")
    source = ConfiguredSource(McpSettings(), remote.to_async())
    with pytest.raises(SettingsError, match="HUMANWIRE_SMS_TO"):
        _ = source.channels
    only_slack = ConfiguredSource(McpSettings(slack_to="U0TEAM0001"), remote.to_async())
    assert only_slack.channels == ("slack",)


# --- errors the model can act on ----------------------------------------------------------


async def test_bad_arguments_are_tool_errors_naming_the_field(connect: Connect) -> None:
    async with connect() as client:
        empty = await client.call_tool("ask_human_sms", {"message": ""})
        missing = await client.call_tool("check_human_interaction", {})
        no_options = await client.call_tool(
            "human_form", {"title": "T", "fields": [{"label": "Size", "type": "select"}]}
        )
        bad_type = await client.call_tool(
            "human_form", {"title": "T", "fields": [{"label": "Size", "type": "colour"}]}
        )
    assert empty.is_error is True
    assert text(empty).startswith("humanwire: invalid arguments: message: ")
    assert missing.is_error is True
    assert text(missing) == "humanwire: invalid arguments: interaction_id: Field required"
    assert no_options.is_error is True
    assert "fields[0].options" in text(no_options)
    assert bad_type.is_error is True
    assert "fields.0.type" in text(bad_type)


async def test_service_errors_are_tool_errors(connect: Connect) -> None:
    async with connect() as client:
        result = await client.call_tool("check_human_interaction", {"interaction_id": "nope"})
    assert result.is_error is True
    assert text(result).startswith("humanwire: ")
    assert "nope" in text(result) or "not found" in text(result).lower()


async def test_channel_card(
    connect: Connect, human: ScriptedHuman, humanwire_client: HumanWire
) -> None:
    card = humanwire_client.channels.create(
        type="sms",
        to="+12025550100",
        wait_time=5,
        response_template="The operator said: {{message}}",
        no_response_template="The operator is away; carry on.",
    )
    human.reply("all good")
    async with connect(channel_ids=(card.id,)) as client:
        [tool] = [t for t in (await client.list_tools()).tools if t.name == f"ask_human_{card.id}"]
        assert tool.description == AskHumanChannel(channel_id=card.id).description
        result = await client.call_tool(f"ask_human_{card.id}", {"message": "Status?"})
    assert text(result) == "The operator said: all good"
