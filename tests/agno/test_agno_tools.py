"""The tools in an Agno agent run (a scripted ``Model``), against the real service over
loopback with the scripted human: answered, timed out, sent without waiting; the sync
and async entrypoints; arguments the model got wrong and service errors as Agno's own
failed tool result, the run going on."""

from __future__ import annotations

from pathlib import Path

import pytest
from agno_helpers import agent, once

import humanwire.agno as adapter
from framework_support import (
    PHONE,
    assert_checked_when_built,
    check_tools_follow_the_table,
)
from humanwire import AsyncHumanWire, HumanWire
from humanwire.agno import (
    AskHumanEmail,
    AskHumanPerson,
    AskHumanSlack,
    AskHumanSMS,
    AskHumanWhatsApp,
    CheckHumanInteraction,
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


@pytest.mark.parametrize("channel", list(ASK))
async def test_the_human_replies(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, channel: str
) -> None:
    human.reply("Blue, please", channel=channel)
    model = once(f"ask_human_{channel}", {"message": "Which colour?"})
    tool = ASK[channel](client=async_humanwire_client, wait_time=5)
    result = await agent(model, [tool]).arun("Pick a colour")
    assert result.content == "FINAL: Human response: Blue, please"
    assert model.results == ["Human response: Blue, please"]


def test_the_sync_run_asks_on_a_sync_client(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    human.reply("Tuesday")
    model = once("ask_human_sms", {"message": "Which day?"})
    result = agent(model, [AskHumanSMS(client=humanwire_client, wait_time=5)]).run("Ask")
    assert result.content == "FINAL: Human response: Tuesday"


def test_the_sync_run_leaves_a_given_async_client_to_its_loop(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    # agent.run on a tool given an AsyncHumanWire: the call goes out on a sync twin of it,
    # and the async client still works on its own loop (its fixture closes it there).
    human.reply("Thursday")
    model = once("ask_human_sms", {"message": "Which day?"})
    tool = AskHumanSMS(client=async_humanwire_client, wait_time=5)
    result = agent(model, [tool]).run("Ask")
    assert result.content == "FINAL: Human response: Thursday"


def test_the_sync_run_asks_on_an_async_loop_of_its_own(
    service_environment: RunningService, human: ScriptedHuman
) -> None:
    human.reply("Wednesday")
    model = once("ask_human_sms", {"message": "Which day?"})
    result = agent(model, [AskHumanSMS(wait_time=5)]).run("Ask")
    assert result.content == "FINAL: Human response: Wednesday"


async def test_a_person_is_asked_wherever_they_are(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, ada: str
) -> None:
    replied = human.reply("Blue, please")  # Ada's first confirmed address: the sms number
    model = once("ask_human_person", {"message": "Which colour?"})
    tool = AskHumanPerson(client=async_humanwire_client, person=ada, wait_time=5)
    result = await agent(model, [tool]).arun("Pick a colour")
    assert result.content == "FINAL: Human response: Blue, please"
    assert (await replied.async_wait(5)).text == "Which colour?"


async def test_a_person_who_does_not_answer_is_the_no_response_text(
    async_humanwire_client: AsyncHumanWire, ada: str
) -> None:
    model = once("ask_human_person", {"message": "Anyone there?"})
    tool = AskHumanPerson(client=async_humanwire_client, person=ada, wait_time=1)
    result = await agent(model, [tool]).arun("Ask")
    assert result.content == f"FINAL: {DEFAULT_NO_RESPONSE_TEMPLATE}"


def test_a_person_is_notified_from_the_sync_run(
    humanwire_client: HumanWire, human: ScriptedHuman, ada: str
) -> None:
    model = once("notify_human_person", {"message": "Deploy done."})
    agent(model, [NotifyHumanPerson(client=humanwire_client, person=ada)]).run("Tell")
    [sent] = [d for d in human.deliveries() if d.text == "Deploy done."]
    assert sent.to == human.phone
    assert model.results == [
        f"Message sent to the person (interaction {sent.interaction_id}); no reply is awaited."
    ]


@pytest.mark.parametrize("channel", list(ASK))
async def test_a_timeout_is_the_no_response_text(
    async_humanwire_client: AsyncHumanWire, channel: str
) -> None:
    model = once(f"ask_human_{channel}", {"message": "Anyone there?"})
    tool = ASK[channel](client=async_humanwire_client, wait_time=1)
    result = await agent(model, [tool]).arun("Ask")
    assert result.content == f"FINAL: {DEFAULT_NO_RESPONSE_TEMPLATE}"


async def test_a_notification_is_sent_without_waiting(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    model = once("notify_human_sms", {"message": "Deploy done"})
    result = await agent(model, [NotifyHumanSMS(client=async_humanwire_client)]).arun("Tell")
    assert str(result.content).startswith("FINAL: Message sent by sms")
    (delivery,) = human.deliveries()
    assert delivery.to == PHONE and "Deploy done" in delivery.text


async def test_bad_arguments_are_a_failed_call_the_run_survives(
    async_humanwire_client: AsyncHumanWire,
) -> None:
    model = once("ask_human_sms", {"message": ""})
    result = await agent(model, [AskHumanSMS(client=async_humanwire_client)]).arun("Ask")
    assert str(result.content).startswith("FINAL: humanwire: invalid arguments: message")


async def test_a_bad_key_is_a_failed_call(humanwire_service: RunningService) -> None:
    client = AsyncHumanWire(api_key="hw_not_a_key", base_url=humanwire_service.base_url)
    try:
        model = once("check_human_interaction", {"interaction_id": "int_x"})
        result = await agent(model, [CheckHumanInteraction(client=client)]).arun("Check")
    finally:
        await client.aclose()
    assert str(result.content).startswith("FINAL: humanwire: ")
    assert "key" in str(result.content).lower()


async def test_a_stopped_service_is_a_failed_call(tmp_path: Path) -> None:
    service = start_test_service(tmp_path / "stopped.db")
    key = service.create_account()
    service.stop()
    client = AsyncHumanWire(api_key=key, base_url=service.base_url)
    try:
        model = once("ask_human_sms", {"message": "Anyone?"})
        tool = AskHumanSMS(client=client, to=PHONE, wait_time=5)
        result = await agent(model, [tool]).arun("Ask")
    finally:
        await client.aclose()
    assert str(result.content).startswith("FINAL: humanwire: ")
