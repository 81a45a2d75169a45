"""Message tools against the real service: answered, timed out, late answer to the
webhook receiver, service error as an error ToolMessage, recipient not exposed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from lc_helpers import OTHER_PHONE, PHONE, SLACK, Mode, model_schema, properties, run_tool, text

from humanwire import HumanWire
from humanwire.langchain import (
    AskHumanChannel,
    AskHumanEmail,
    AskHumanSlack,
    AskHumanSMS,
    AskHumanWhatsApp,
    CheckHumanInteraction,
    NotifyHumanEmail,
    NotifyHumanSlack,
    NotifyHumanSMS,
    NotifyHumanWhatsApp,
)
from humanwire.testing import ScriptedHuman
from humanwire.testing.receiver import WebhookReceiver
from humanwire.types import DEFAULT_NO_RESPONSE_TEMPLATE, MessageResponse

ASK = {
    "sms": AskHumanSMS,
    "whatsapp": AskHumanWhatsApp,
    "slack": AskHumanSlack,
    "email": AskHumanEmail,
}
NOTIFY = {
    "sms": NotifyHumanSMS,
    "whatsapp": NotifyHumanWhatsApp,
    "slack": NotifyHumanSlack,
    "email": NotifyHumanEmail,
}
MODES = ["sync", "async"]
CHANNELS = ["sms", "whatsapp", "slack", "email"]
EMAIL = "human@example.com"


def recipient(channel: str) -> str:
    return {"slack": SLACK, "email": EMAIL}.get(channel, PHONE)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("channel", CHANNELS)
async def test_answered(
    make: Callable[..., Any], human: ScriptedHuman, channel: str, mode: Mode
) -> None:
    human.reply("Blue, please", channel=channel)
    tool = make(ASK[channel], wait_time=5)
    message = await run_tool(tool, {"message": "Which colour?"}, mode)
    assert message.status == "success"
    assert message.content == "Human response: Blue, please"
    assert isinstance(message.artifact, MessageResponse)
    assert message.artifact.responded is True
    assert message.artifact.reply == "Blue, please"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("channel", CHANNELS)
async def test_timeout_is_a_normal_result(
    make: Callable[..., Any], channel: str, mode: Mode
) -> None:
    tool = make(ASK[channel], wait_time=1)
    message = await run_tool(tool, {"message": "Anyone there?"}, mode)
    assert message.status == "success"
    assert message.content == DEFAULT_NO_RESPONSE_TEMPLATE
    assert isinstance(message.artifact, MessageResponse)
    assert message.artifact.responded is False


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("channel", CHANNELS)
async def test_late_answer_reaches_webhook_and_check_tool(
    make: Callable[..., Any],
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
    channel: str,
    mode: Mode,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["message.received"])
    human.reply_late("Sorry, I was out: yes", after=1.5, channel=channel)
    tool = make(ASK[channel], wait_time=1, follow_up_time=30)
    message = await run_tool(tool, {"message": "Go ahead?"}, mode)
    interaction_id = message.artifact.interaction_id
    # The window is still open: the model reads the id it can check later.
    assert message.status == "success"
    assert message.content == (
        f"{DEFAULT_NO_RESPONSE_TEMPLATE} (They can still answer later: interaction "
        f"{interaction_id}.)"
    )

    (event,) = webhook_receiver.wait_for("message.received", timeout=10)
    assert event.payload.interaction_id == interaction_id
    assert event.payload.body == "Sorry, I was out: yes"

    check = make(CheckHumanInteraction)
    status = await run_tool(check, {"interaction_id": interaction_id}, mode)
    assert status.status == "success"
    assert "Human response: Sorry, I was out: yes" in status.content
    assert status.artifact.result is not None


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("channel", CHANNELS)
async def test_recipient_is_not_exposed(
    make: Callable[..., Any], humanwire_client: HumanWire, channel: str, mode: Mode
) -> None:
    tool = make(ASK[channel], wait_time=1)
    assert properties(tool) == {"message"}
    # A model that invents a recipient anyway does not get to use it.
    message = await run_tool(tool, {"message": "Hello", "to": OTHER_PHONE}, mode)
    (delivery,) = humanwire_client.sandbox.deliveries(
        interaction_id=message.artifact.interaction_id
    )
    assert delivery.to == recipient(channel)


@pytest.mark.parametrize("mode", MODES)
async def test_exposed_recipient_is_used(
    make: Callable[..., Any], humanwire_client: HumanWire, human: ScriptedHuman, mode: Mode
) -> None:
    human.reply("here", to=OTHER_PHONE)
    tool = make(AskHumanSMS, wait_time=5, expose_recipient=True)
    assert "to" in model_schema(tool)["properties"]
    message = await run_tool(tool, {"message": "Hello", "to": OTHER_PHONE}, mode)
    assert message.content == "Human response: here"
    (delivery,) = humanwire_client.sandbox.deliveries(
        interaction_id=message.artifact.interaction_id
    )
    assert delivery.to == OTHER_PHONE


@pytest.mark.parametrize("mode", MODES)
async def test_service_error_is_an_error_tool_message(
    make: Callable[..., Any], humanwire_client: HumanWire, mode: Mode
) -> None:
    tool = make(AskHumanSMS, wait_time=1, expose_recipient=True)
    message = await run_tool(tool, {"message": "Hi", "to": "+15555550100"}, mode)
    assert message.status == "error"
    assert "invalid to number" in message.content
    assert humanwire_client.sandbox.deliveries() == []


@pytest.mark.parametrize("mode", MODES)
async def test_unknown_interaction_is_an_error_tool_message(
    make: Callable[..., Any], mode: Mode
) -> None:
    check = make(CheckHumanInteraction)
    message = await run_tool(
        check, {"interaction_id": "00000000-0000-4000-8000-000000000000"}, mode
    )
    assert message.status == "error"
    assert "not_found" in message.content or "not found" in message.content


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("channel", CHANNELS)
async def test_notify_sends_without_waiting(
    make: Callable[..., Any], humanwire_client: HumanWire, channel: str, mode: Mode
) -> None:
    tool = make(NOTIFY[channel])
    assert tool.wait_time is None
    message = await run_tool(tool, {"message": "The build is green."}, mode)
    assert message.status == "success"
    interaction_id = message.artifact.interaction_id
    assert interaction_id in message.content and "no reply is awaited" in message.content
    assert message.artifact.responded is None
    (delivery,) = humanwire_client.sandbox.deliveries(interaction_id=interaction_id)
    assert delivery.to == recipient(channel)
    assert "The build is green." in delivery.text


@pytest.mark.parametrize("mode", MODES)
async def test_notify_late_reply_reaches_webhook(
    make: Callable[..., Any],
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
    mode: Mode,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["message.received"])
    human.reply("thanks!")
    tool = make(NotifyHumanSMS, follow_up_time=30)
    message = await run_tool(tool, {"message": "Deployed."}, mode)
    (event,) = webhook_receiver.wait_for("message.received", timeout=10)
    assert event.payload.interaction_id == message.artifact.interaction_id
    assert event.payload.body == "thanks!"


@pytest.mark.parametrize("mode", MODES)
async def test_channel_card_answered_and_timed_out(
    make: Callable[..., Any], humanwire_client: HumanWire, human: ScriptedHuman, mode: Mode
) -> None:
    def card(wait_time: float) -> Any:
        return humanwire_client.channels.create(
            type="sms",
            to=PHONE,
            wait_time=wait_time,
            response_template="The operator said: {{message}}",
            no_response_template="The operator is away; carry on.",
        )

    tool = make(AskHumanChannel, channel_id=card(1).id)
    silent = await run_tool(tool, {"message": "Status?"}, mode)
    assert silent.status == "success"
    assert silent.content == "The operator is away; carry on."

    # A wait the scripted human answers well within, however loaded the machine.
    human.reply("all good")
    tool = make(AskHumanChannel, channel_id=card(30).id)
    answered = await run_tool(tool, {"message": "Status now?"}, mode)
    assert answered.content == "The operator said: all good"
    assert answered.artifact.responded is True


@pytest.mark.parametrize("mode", MODES)
async def test_unknown_channel_card_is_an_error_tool_message(
    make: Callable[..., Any], mode: Mode
) -> None:
    tool = make(AskHumanChannel, channel_id="ch_" + "x" * 24)
    message = await run_tool(tool, {"message": "Hello"}, mode)
    assert message.status == "error"
    assert "not" in text(message).lower()


@pytest.mark.parametrize("mode", MODES)
async def test_the_tools_metadata_goes_with_every_send(
    make: Callable[..., Any], human: ScriptedHuman, humanwire_client: HumanWire, mode: Mode
) -> None:
    human.reply("yes")
    tool = make(AskHumanSMS, wait_time=5, metadata={"run": "r-7", "agent": "planner"})
    message = await run_tool(tool, {"message": "Proceed?"}, mode)
    assert message.artifact.metadata == {"run": "r-7", "agent": "planner"}
    status = humanwire_client.interactions.status(message.artifact.interaction_id)
    assert status.metadata == {"run": "r-7", "agent": "planner"}
    # Outside the service's limits: an error the agent reads, naming metadata.
    bad = make(NotifyHumanSMS, metadata={"run": 7})
    refused = await run_tool(bad, {"message": "hi"}, mode)
    assert refused.status == "error" and "metadata" in str(refused.content)


async def test_the_toolkit_emails_and_reads_the_reply(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    from humanwire.langchain import HumanWireToolkit

    human.reply("Friday works", channel="email")
    toolkit = HumanWireToolkit(
        client=humanwire_client, channels=["email"], email_to=EMAIL, notify=True, wait_time=5
    )
    tools = {tool.name: tool for tool in toolkit.get_tools()}
    assert list(tools) == [
        "ask_human_email",
        "notify_human_email",
        "human_form",
        "check_human_interaction",
    ]
    message = await run_tool(tools["ask_human_email"], {"message": "Which day?"}, "async")
    assert message.content == "Human response: Friday works"
    assert isinstance(message.artifact, MessageResponse)
    status = humanwire_client.interactions.status(message.artifact.interaction_id)
    assert status.channel == "email"
