"""The tools in a Microsoft Agent Framework agent run (a scripted chat client on the
framework's own ``BaseChatClient``), against the real service over loopback with the
scripted human: answered, timed out, sent without waiting; arguments the model got wrong
and service errors as a result the model reads, the run going on."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_framework_helpers import agent, once

import humanwire.agent_framework as adapter
from framework_support import (
    PHONE,
    assert_checked_when_built,
    check_tools_follow_the_table,
)
from humanwire import AsyncHumanWire, HumanWire
from humanwire.agent_framework import (
    AskHumanEmail,
    AskHumanPerson,
    AskHumanSlack,
    AskHumanSMS,
    AskHumanWhatsApp,
    CheckHumanInteraction,
    HumanForm,
    NotifyHumanPerson,
    NotifyHumanSMS,
)
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.testing.service import start_test_service
from humanwire.types import DEFAULT_NO_RESPONSE_TEMPLATE

ASK = {
    "sms": AskHumanSMS,
    "whatsapp": AskHumanWhatsApp,
    "slack": AskHumanSlack,
    "email": AskHumanEmail,
}


def test_the_tools_follow_the_table() -> None:
    check_tools_follow_the_table(adapter)
    assert_checked_when_built(adapter)


def test_the_model_reads_the_shared_schema() -> None:
    from humanwire._tool_schemas import MessageInput
    from humanwire._tooling import plain_json_schema

    tool = AskHumanSMS(to=PHONE)
    assert tool.name == "ask_human_sms"
    assert tool.parameters() == plain_json_schema(MessageInput)
    assert HumanForm(to=PHONE).name == "human_form"


@pytest.mark.parametrize("channel", list(ASK))
async def test_the_human_replies(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, channel: str
) -> None:
    human.reply("Blue, please", channel=channel)
    chat = once(f"ask_human_{channel}", {"message": "Which colour?"})
    tool = ASK[channel](client=async_humanwire_client, wait_time=5)
    result = await agent(chat, [tool]).run("Pick a colour")
    assert result.text == "FINAL: Human response: Blue, please"
    assert chat.results == ["Human response: Blue, please"]


async def test_a_sync_client_is_used_on_the_run(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    human.reply("Tuesday")
    chat = once("ask_human_sms", {"message": "Which day?"})
    result = await agent(chat, [AskHumanSMS(client=humanwire_client, wait_time=5)]).run("Ask")
    assert result.text == "FINAL: Human response: Tuesday"


async def test_the_client_comes_from_the_environment(
    service_environment: RunningService, human: ScriptedHuman
) -> None:
    human.reply("Wednesday")
    chat = once("ask_human_sms", {"message": "Which day?"})
    result = await agent(chat, [AskHumanSMS(wait_time=5)]).run("Ask")
    assert result.text == "FINAL: Human response: Wednesday"


async def test_a_person_is_asked_wherever_they_are(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, ada: str
) -> None:
    replied = human.reply("Blue, please")  # Ada's first confirmed address: the sms number
    chat = once("ask_human_person", {"message": "Which colour?"})
    tool = AskHumanPerson(client=async_humanwire_client, person=ada, wait_time=5)
    result = await agent(chat, [tool]).run("Pick a colour")
    assert result.text == "FINAL: Human response: Blue, please"
    assert (await replied.async_wait(5)).text == "Which colour?"


async def test_a_person_who_does_not_answer_is_the_no_response_text(
    async_humanwire_client: AsyncHumanWire, ada: str
) -> None:
    chat = once("ask_human_person", {"message": "Anyone there?"})
    tool = AskHumanPerson(client=async_humanwire_client, person=ada, wait_time=1)
    result = await agent(chat, [tool]).run("Ask")
    assert result.text == f"FINAL: {DEFAULT_NO_RESPONSE_TEMPLATE}"


async def test_a_person_is_notified(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, ada: str
) -> None:
    chat = once("notify_human_person", {"message": "Deploy done."})
    await agent(chat, [NotifyHumanPerson(client=async_humanwire_client, person=ada)]).run("Tell")
    [sent] = [d for d in human.deliveries() if d.text == "Deploy done."]
    assert sent.to == human.phone
    assert chat.results == [
        f"Message sent to the person (interaction {sent.interaction_id}); no reply is awaited."
    ]


@pytest.mark.parametrize("channel", list(ASK))
async def test_a_timeout_is_the_no_response_text(
    async_humanwire_client: AsyncHumanWire, channel: str
) -> None:
    chat = once(f"ask_human_{channel}", {"message": "Anyone there?"})
    tool = ASK[channel](client=async_humanwire_client, wait_time=1)
    result = await agent(chat, [tool]).run("Ask")
    assert result.text == f"FINAL: {DEFAULT_NO_RESPONSE_TEMPLATE}"


async def test_a_notification_is_sent_without_waiting(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    chat = once("notify_human_sms", {"message": "Deploy done"})
    result = await agent(chat, [NotifyHumanSMS(client=async_humanwire_client)]).run("Tell")
    assert result.text.startswith("FINAL: Message sent by sms")
    (delivery,) = human.deliveries()
    assert delivery.to == PHONE and "Deploy done" in delivery.text


async def test_bad_arguments_are_a_result_the_run_survives(
    async_humanwire_client: AsyncHumanWire,
) -> None:
    chat = once("ask_human_sms", {"message": ""})
    result = await agent(chat, [AskHumanSMS(client=async_humanwire_client)]).run("Ask")
    assert result.text.startswith("FINAL: humanwire: invalid arguments: message")


async def test_a_bad_key_is_a_result_the_model_reads(humanwire_service: RunningService) -> None:
    client = AsyncHumanWire(api_key="hw_not_a_key", base_url=humanwire_service.base_url)
    try:
        chat = once("check_human_interaction", {"interaction_id": "int_x"})
        result = await agent(chat, [CheckHumanInteraction(client=client)]).run("Check")
    finally:
        await client.aclose()
    assert result.text.startswith("FINAL: humanwire: ")
    assert "key" in result.text.lower()


async def test_a_stopped_service_is_a_result_the_model_reads(tmp_path: Path) -> None:
    service = start_test_service(tmp_path / "stopped.db")
    key = service.create_account()
    service.stop()
    client = AsyncHumanWire(api_key=key, base_url=service.base_url)
    try:
        chat = once("ask_human_sms", {"message": "Anyone?"})
        tool = AskHumanSMS(client=client, to=PHONE, wait_time=5)
        result = await agent(chat, [tool]).run("Ask")
    finally:
        await client.aclose()
    assert result.text.startswith("FINAL: humanwire: ")
