"""The tools in a Strands agent run (a scripted ``Model``), against the real service over
loopback with the scripted human: answered, timed out, sent without waiting, forms,
calls, checks; arguments the model got wrong and service errors as Strands' own failed
tool result (``status: "error"``), the run going on."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from strands.hooks import AfterToolCallEvent
from strands_helpers import agent, final, once, scripted

from framework_support import EMAIL, OTHER_PHONE, PHONE, SLACK
from humanwire import AsyncHumanWire, HumanWire
from humanwire.errors import HumanWireError
from humanwire.strands import (
    AskHumanChannel,
    AskHumanEmail,
    AskHumanPerson,
    AskHumanSlack,
    AskHumanSMS,
    AskHumanWhatsApp,
    CallHuman,
    CheckHumanInteraction,
    HumanForm,
    NotifyHumanEmail,
    NotifyHumanPerson,
    NotifyHumanSlack,
    NotifyHumanSMS,
    NotifyHumanWhatsApp,
)
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.testing.receiver import WebhookReceiver
from humanwire.types import DEFAULT_NO_RESPONSE_TEMPLATE, FormField

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
CHANNELS = ["sms", "whatsapp", "slack", "email"]


def recipient(channel: str) -> str:
    return {"slack": SLACK, "email": EMAIL}.get(channel, PHONE)


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


# --- messages -----------------------------------------------------------------------------


@pytest.mark.parametrize("channel", CHANNELS)
async def test_the_human_replies(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, channel: str
) -> None:
    human.reply("Blue, please", channel=channel)
    model = once(f"ask_human_{channel}", {"message": "Which colour?"})
    tool = ASK[channel](client=async_humanwire_client, wait_time=5)
    result = await agent(model, [tool]).invoke_async("Pick a colour")
    assert final(result) == "FINAL: success: Human response: Blue, please"
    (returned,) = model.results
    assert returned["toolUseId"] == "call_0_0"


@pytest.mark.parametrize("channel", CHANNELS)
async def test_a_timeout_is_the_no_response_text(
    async_humanwire_client: AsyncHumanWire, channel: str
) -> None:
    model = once(f"ask_human_{channel}", {"message": "Anyone there?"})
    tool = ASK[channel](client=async_humanwire_client, wait_time=1)
    result = await agent(model, [tool]).invoke_async("Ask")
    (returned,) = model.results
    assert returned["status"] == "success"  # a normal result, never an error
    assert text(returned) == DEFAULT_NO_RESPONSE_TEMPLATE
    assert final(result) == f"FINAL: success: {DEFAULT_NO_RESPONSE_TEMPLATE}"


async def test_a_person_is_asked_wherever_they_are(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, ada: str
) -> None:
    replied = human.reply("Blue, please")  # Ada's first confirmed address: the sms number
    model = once("ask_human_person", {"message": "Which colour?"})
    tool = AskHumanPerson(client=async_humanwire_client, person=ada, wait_time=5)
    result = await agent(model, [tool]).invoke_async("Pick a colour")
    assert final(result) == "FINAL: success: Human response: Blue, please"
    assert (await replied.async_wait(5)).text == "Which colour?"


async def test_a_person_who_does_not_answer_is_the_no_response_text(
    async_humanwire_client: AsyncHumanWire, ada: str
) -> None:
    model = once("ask_human_person", {"message": "Anyone there?"})
    tool = AskHumanPerson(client=async_humanwire_client, person=ada, wait_time=1)
    result = await agent(model, [tool]).invoke_async("Ask")
    (returned,) = model.results
    assert returned["status"] == "success"  # a normal result, never an error
    assert final(result) == f"FINAL: success: {DEFAULT_NO_RESPONSE_TEMPLATE}"


async def test_a_person_is_notified(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, ada: str
) -> None:
    model = once("notify_human_person", {"message": "Deploy done."})
    tool = NotifyHumanPerson(client=async_humanwire_client, person=ada)
    await agent(model, [tool]).invoke_async("Tell")
    [sent] = [d for d in human.deliveries() if d.text == "Deploy done."]
    assert sent.to == human.phone
    (returned,) = model.results
    assert text(returned) == (
        f"Message sent to the person (interaction {sent.interaction_id}); no reply is awaited."
    )


async def test_a_late_reply_reaches_the_webhook_and_the_check_tool(
    async_humanwire_client: AsyncHumanWire,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["message.received"])
    human.reply_late("Sorry, I was out: yes", after=1.5)
    ask = AskHumanSMS(client=async_humanwire_client, wait_time=1, follow_up_time=30)
    model = once("ask_human_sms", {"message": "Go ahead?"})
    await agent(model, [ask]).invoke_async("Ask")
    (returned,) = model.results
    (delivery,) = humanwire_client.sandbox.deliveries()
    interaction_id = delivery.interaction_id
    assert text(returned) == (
        f"{DEFAULT_NO_RESPONSE_TEMPLATE} (They can still answer later: interaction "
        f"{interaction_id}.)"
    )
    await asyncio.to_thread(webhook_receiver.wait_for, "message.received", timeout=10)

    check = CheckHumanInteraction(client=async_humanwire_client)
    checker = once("check_human_interaction", {"interaction_id": interaction_id})
    await agent(checker, [check]).invoke_async("Check")
    (status,) = checker.results
    assert status["status"] == "success"
    assert "Human response: Sorry, I was out: yes" in text(status)


@pytest.mark.parametrize("channel", CHANNELS)
async def test_notify_sends_without_waiting(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire, channel: str
) -> None:
    model = once(f"notify_human_{channel}", {"message": "The build is green."})
    tool = NOTIFY[channel](client=async_humanwire_client)
    await agent(model, [tool]).invoke_async("Tell them")
    (returned,) = model.results
    (delivery,) = humanwire_client.sandbox.deliveries()
    assert delivery.interaction_id in text(returned)
    assert "no reply is awaited" in text(returned)
    assert delivery.to == recipient(channel)
    assert "The build is green." in delivery.text


async def test_the_recipient_is_fixed_unless_exposed(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    hidden = AskHumanSMS(client=async_humanwire_client, wait_time=1)
    assert set(hidden.tool_spec["inputSchema"]["json"]["properties"]) == {"message"}
    # A model that invents a recipient anyway does not get to use it.
    model = once("ask_human_sms", {"message": "Hello", "to": OTHER_PHONE})
    await agent(model, [hidden]).invoke_async("Ask")
    (delivery,) = humanwire_client.sandbox.deliveries()
    assert delivery.to == PHONE

    human.reply("here", to=OTHER_PHONE)
    exposed = AskHumanSMS(client=async_humanwire_client, wait_time=5, expose_recipient=True)
    model = once("ask_human_sms", {"message": "Hello", "to": OTHER_PHONE})
    result = await agent(model, [exposed]).invoke_async("Ask")
    assert final(result) == "FINAL: success: Human response: here"


async def test_a_channel_card_answers_with_its_own_texts(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    card = humanwire_client.channels.create(
        type="sms",
        to=PHONE,
        wait_time=1,
        response_template="The operator said: {{message}}",
        no_response_template="The operator is away; carry on.",
    )
    tool = AskHumanChannel(card.id, client=async_humanwire_client)
    silent = once("ask_human_channel", {"message": "Status?"})
    assert final(await agent(silent, [tool]).invoke_async("go")) == (
        "FINAL: success: The operator is away; carry on."
    )
    human.reply("all good")
    answered = once("ask_human_channel", {"message": "Status now?"})
    result = await agent(answered, [tool]).invoke_async("go")
    assert final(result) == "FINAL: success: The operator said: all good"


async def test_the_metadata_goes_with_every_send(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    human.reply("yes")
    tool = AskHumanSMS(client=async_humanwire_client, wait_time=5, metadata={"run": "r-7"})
    await agent(once("ask_human_sms", {"message": "Proceed?"}), [tool]).invoke_async("go")
    (delivery,) = humanwire_client.sandbox.deliveries()
    status = humanwire_client.interactions.status(delivery.interaction_id)
    assert status.metadata == {"run": "r-7"}


# --- forms and calls ------------------------------------------------------------------------

FIELDS = [
    FormField(id="venue", label="Venue", type="text", required=True),
    FormField(id="date", label="Date", type="text"),
]


async def test_the_human_fills_a_fixed_form(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    human.fill_form({"venue": "Lisbon", "date": "May 3"})
    tool = HumanForm(client=async_humanwire_client, title="Offsite", fields=FIELDS, wait_time=10)
    assert set(tool.tool_spec["inputSchema"]["json"]["properties"]) == {"message"}
    model = once("human_form", {"message": "Where shall we go?"})
    await agent(model, [tool]).invoke_async("Plan")
    (returned,) = model.results
    assert returned["status"] == "success"
    assert text(returned) == "The human submitted the form:\nVenue: Lisbon\nDate: May 3"


async def test_a_form_the_model_designs_and_fixes(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    human.fill_form({"size": "Large"})
    select_without_options = {"label": "Size", "type": "select", "id": "size"}
    fixed = {**select_without_options, "options": ["Small", "Large"]}
    model = scripted(
        [("human_form", {"title": "T-shirt", "fields": [select_without_options]})],
        [("human_form", {"title": "T-shirt", "fields": [fixed]})],
    )
    tool = HumanForm(client=async_humanwire_client, wait_time=10)
    await agent(model, [tool]).invoke_async("Ask their size")
    # The design the service cannot send is a failed result naming the fix; nothing sent.
    refused, answered = model.results
    assert refused["status"] == "error"
    assert text(refused).startswith("humanwire: ") and "give it options" in text(refused)
    assert answered["status"] == "success"
    assert text(answered) == "The human submitted the form:\nSize: Large"
    assert len(humanwire_client.sandbox.deliveries()) == 1


async def test_the_human_answers_the_call_or_misses_it(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    tool = CallHuman(client=async_humanwire_client)
    human.answer_call("They confirmed Friday.")
    answered = once("call_human", {"prompt": "Confirm the delivery day."})
    await agent(answered, [tool]).invoke_async("Call")
    (returned,) = answered.results
    assert text(returned) == "Call completed. Summary: They confirmed Friday."

    human.miss_call()
    missed = once("call_human", {"prompt": "Confirm the delivery day."})
    await agent(missed, [tool]).invoke_async("Call")
    (returned,) = missed.results
    assert returned["status"] == "success"  # a missed call is a normal result
    assert text(returned).startswith("The human did not answer the call")


# --- what the model got wrong, what the service refused -----------------------------------


class FailureWatch:
    """An ``AfterToolCallEvent`` hook keeping the exception behind each failed result."""

    def __init__(self) -> None:
        self.exceptions: list[Exception | None] = []

    def __call__(self, event: AfterToolCallEvent) -> None:
        self.exceptions.append(event.exception)


async def test_arguments_that_do_not_fit_are_a_failed_result(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    human.reply("ok")
    model = scripted(
        [("ask_human_sms", {"message": ""})], [("ask_human_sms", {"message": "Ready?"})]
    )
    tool = AskHumanSMS(client=async_humanwire_client, wait_time=5)
    result = await agent(model, [tool]).invoke_async("Ask")
    refused, answered = model.results
    assert refused["status"] == "error"
    assert text(refused).startswith(
        "humanwire: invalid arguments: message: String should have at least 1"
    )
    assert answered["status"] == "success"
    assert final(result) == "FINAL: success: Human response: ok"
    assert len(humanwire_client.sandbox.deliveries()) == 1  # the bad call sent nothing


async def test_a_service_error_is_a_failed_result_the_run_survives(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire
) -> None:
    watch = FailureWatch()
    tool = AskHumanSMS(client=async_humanwire_client, wait_time=1, expose_recipient=True)
    model = once("ask_human_sms", {"message": "Hi", "to": "+15555550100"})
    strands_agent = agent(model, [tool])
    strands_agent.hooks.add_callback(AfterToolCallEvent, watch)
    result = await strands_agent.invoke_async("Ask")
    (returned,) = model.results
    assert returned["status"] == "error"
    assert text(returned).startswith("humanwire: ") and "invalid to number" in text(returned)
    assert final(result).startswith("FINAL: error: humanwire: ")
    (exception,) = watch.exceptions
    assert isinstance(exception, HumanWireError)  # the hooks see what went wrong
    assert humanwire_client.sandbox.deliveries() == []


async def test_a_bad_key_is_a_failed_result(humanwire_service: RunningService) -> None:
    client = AsyncHumanWire(api_key="hw_not_a_key", base_url=humanwire_service.base_url)
    try:
        tool = AskHumanSMS(client=client, to=PHONE, wait_time=1)
        model = once("ask_human_sms", {"message": "Hi"})
        await agent(model, [tool]).invoke_async("Ask")
    finally:
        await client.aclose()
    (returned,) = model.results
    assert returned["status"] == "error"
    assert text(returned).startswith("humanwire: ")
    assert "unauthorized" in text(returned).lower() or "401" in text(returned)


async def test_an_unknown_interaction_is_a_failed_result(
    async_humanwire_client: AsyncHumanWire,
) -> None:
    check = CheckHumanInteraction(client=async_humanwire_client)
    model = once(
        "check_human_interaction", {"interaction_id": "00000000-0000-4000-8000-000000000000"}
    )
    await agent(model, [check]).invoke_async("Check")
    (returned,) = model.results
    assert returned["status"] == "error"
    assert text(returned).startswith("humanwire: 404 not_found: ")


# --- the clients ----------------------------------------------------------------------------


def test_a_sync_client_serves_sync_calls_on_several_event_loops(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    # Strands' sync agent(...) runs each call on an event loop of its own: each gets its
    # own async client, made on the sync client's service and account.
    tool = AskHumanSMS(client=humanwire_client, wait_time=5)
    for answer in ("one", "two"):
        human.reply(answer)
        result = agent(once("ask_human_sms", {"message": "Count?"}), [tool])("Ask")
        assert final(result) == f"FINAL: success: Human response: {answer}"


def test_the_tools_follow_the_tool_table() -> None:
    import humanwire.strands
    from framework_support import check_tools_follow_the_table

    check_tools_follow_the_table(humanwire.strands)
