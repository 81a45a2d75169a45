"""The tools in an agent run (Pydantic AI's ``FunctionModel``), against the real service
over loopback with the scripted human: answered, timed out, sent without waiting, forms,
calls, checks; arguments the model got wrong as a retry prompt; service errors as
Pydantic AI's terminal tool failure."""

from __future__ import annotations

import asyncio
import json

import pytest
from pai_helpers import once, scripted
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

from framework_support import EMAIL, OTHER_PHONE, PHONE, SLACK
from humanwire import AsyncHumanWire, HumanWire
from humanwire.pydantic_ai import (
    AskHumanChannel,
    AskHumanEmail,
    AskHumanPerson,
    AskHumanSlack,
    AskHumanSMS,
    AskHumanWhatsApp,
    CallHuman,
    CheckHumanInteraction,
    HumanForm,
    HumanWireToolset,
    NotifyHumanEmail,
    NotifyHumanPerson,
    NotifyHumanSlack,
    NotifyHumanSMS,
    NotifyHumanWhatsApp,
)
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.testing.receiver import WebhookReceiver
from humanwire.types import (
    DEFAULT_NO_RESPONSE_TEMPLATE,
    CallResponse,
    FormField,
    FormResponse,
    InteractionStatus,
    MessageResponse,
)

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


# --- messages -----------------------------------------------------------------------------


@pytest.mark.parametrize("channel", CHANNELS)
async def test_the_human_replies(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, channel: str
) -> None:
    human.reply("Blue, please", channel=channel)
    model = once(f"ask_human_{channel}", {"message": "Which colour?"})
    tool = ASK[channel](client=async_humanwire_client, wait_time=5)
    result = await Agent(model.model, tools=[tool]).run("Pick a colour")
    assert result.output == "FINAL: Human response: Blue, please"
    (returned,) = model.returns()
    assert returned.outcome == "success"
    assert isinstance(returned.metadata, MessageResponse)  # the typed response, kept aside
    assert returned.metadata.reply == "Blue, please"


@pytest.mark.parametrize("channel", CHANNELS)
async def test_a_timeout_is_the_no_response_text(
    async_humanwire_client: AsyncHumanWire, channel: str
) -> None:
    model = once(f"ask_human_{channel}", {"message": "Anyone there?"})
    tool = ASK[channel](client=async_humanwire_client, wait_time=1)
    result = await Agent(model.model, tools=[tool]).run("Ask")
    (returned,) = model.returns()
    assert returned.outcome == "success"  # a normal result, never an error
    assert returned.content == DEFAULT_NO_RESPONSE_TEMPLATE
    assert result.output == f"FINAL: {DEFAULT_NO_RESPONSE_TEMPLATE}"


async def test_a_person_is_asked_wherever_they_are(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, ada: str
) -> None:
    replied = human.reply("Blue, please")  # Ada's first confirmed address: the sms number
    model = once("ask_human_person", {"message": "Which colour?"})
    tool = AskHumanPerson(client=async_humanwire_client, person=ada, wait_time=5)
    result = await Agent(model.model, tools=[tool]).run("Pick a colour")
    assert result.output == "FINAL: Human response: Blue, please"
    (returned,) = model.returns()
    assert isinstance(returned.metadata, MessageResponse)
    assert (await replied.async_wait(5)).text == "Which colour?"


async def test_a_person_who_does_not_answer_is_the_no_response_text(
    async_humanwire_client: AsyncHumanWire, ada: str
) -> None:
    model = once("ask_human_person", {"message": "Anyone there?"})
    tool = AskHumanPerson(client=async_humanwire_client, person=ada, wait_time=1)
    result = await Agent(model.model, tools=[tool]).run("Ask")
    (returned,) = model.returns()
    assert returned.outcome == "success"  # a normal result, never an error
    assert result.output == f"FINAL: {DEFAULT_NO_RESPONSE_TEMPLATE}"


async def test_a_person_is_notified(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, ada: str
) -> None:
    model = once("notify_human_person", {"message": "Deploy done."})
    tool = NotifyHumanPerson(client=async_humanwire_client, person=ada)
    await Agent(model.model, tools=[tool]).run("Tell")
    [sent] = [d for d in human.deliveries() if d.text == "Deploy done."]
    assert sent.to == human.phone
    (returned,) = model.returns()
    assert returned.content == (
        f"Message sent to the person (interaction {sent.interaction_id}); no reply is awaited."
    )


async def test_the_toolset_adds_the_person_tools(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, ada: str
) -> None:
    toolset = HumanWireToolset(client=async_humanwire_client, person=ada, notify=True, wait_time=5)
    names = list(toolset.tools)
    assert names[:3] == ["ask_human_sms", "ask_human_person", "notify_human_person"]
    assert "ask_human_person" not in HumanWireToolset(client=async_humanwire_client).tools
    human.reply("yes")
    model = once("ask_human_person", {"message": "Ready?"})
    result = await Agent(model.model, toolsets=[toolset]).run("Ask")
    assert result.output == "FINAL: Human response: yes"


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
    await Agent(model.model, tools=[ask]).run("Ask")
    (returned,) = model.returns()
    interaction_id = returned.metadata.interaction_id
    assert returned.content == (
        f"{DEFAULT_NO_RESPONSE_TEMPLATE} (They can still answer later: interaction "
        f"{interaction_id}.)"
    )
    await asyncio.to_thread(webhook_receiver.wait_for, "message.received", timeout=10)

    check = CheckHumanInteraction(client=async_humanwire_client)
    checker = once("check_human_interaction", {"interaction_id": interaction_id})
    await Agent(checker.model, tools=[check]).run("Check")
    (status,) = checker.returns()
    assert "Human response: Sorry, I was out: yes" in status.content
    assert isinstance(status.metadata, InteractionStatus)


@pytest.mark.parametrize("channel", CHANNELS)
async def test_notify_sends_without_waiting(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire, channel: str
) -> None:
    model = once(f"notify_human_{channel}", {"message": "The build is green."})
    tool = NOTIFY[channel](client=async_humanwire_client)
    await Agent(model.model, tools=[tool]).run("Tell them")
    (returned,) = model.returns()
    interaction_id = returned.metadata.interaction_id
    assert interaction_id in returned.content and "no reply is awaited" in returned.content
    (delivery,) = humanwire_client.sandbox.deliveries(interaction_id=interaction_id)
    assert delivery.to == recipient(channel)
    assert "The build is green." in delivery.text


async def test_the_recipient_is_fixed_unless_exposed(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    hidden = AskHumanSMS(client=async_humanwire_client, wait_time=1)
    assert set(hidden.tool_def.parameters_json_schema["properties"]) == {"message"}
    # A model that invents a recipient anyway does not get to use it.
    model = once("ask_human_sms", {"message": "Hello", "to": OTHER_PHONE})
    await Agent(model.model, tools=[hidden]).run("Ask")
    (returned,) = model.returns()
    (delivery,) = humanwire_client.sandbox.deliveries(
        interaction_id=returned.metadata.interaction_id
    )
    assert delivery.to == PHONE

    human.reply("here", to=OTHER_PHONE)
    exposed = AskHumanSMS(client=async_humanwire_client, wait_time=5, expose_recipient=True)
    model = once("ask_human_sms", {"message": "Hello", "to": OTHER_PHONE})
    result = await Agent(model.model, tools=[exposed]).run("Ask")
    assert result.output == "FINAL: Human response: here"


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
    assert (await Agent(silent.model, tools=[tool]).run("go")).output == (
        "FINAL: The operator is away; carry on."
    )
    human.reply("all good")
    answered = once("ask_human_channel", {"message": "Status now?"})
    result = await Agent(answered.model, tools=[tool]).run("go")
    assert result.output == "FINAL: The operator said: all good"


async def test_the_metadata_goes_with_every_send(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    human.reply("yes")
    tool = AskHumanSMS(client=async_humanwire_client, wait_time=5, metadata={"run": "r-7"})
    model = once("ask_human_sms", {"message": "Proceed?"})
    await Agent(model.model, tools=[tool]).run("go")
    (returned,) = model.returns()
    status = humanwire_client.interactions.status(returned.metadata.interaction_id)
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
    assert set(tool.tool_def.parameters_json_schema["properties"]) == {"message"}
    model = once("human_form", {"message": "Where shall we go?"})
    await Agent(model.model, tools=[tool]).run("Plan")
    (returned,) = model.returns()
    assert returned.content == "The human submitted the form:\nVenue: Lisbon\nDate: May 3"
    assert isinstance(returned.metadata, FormResponse)
    assert returned.metadata.values == {"venue": "Lisbon", "date": "May 3"}


async def test_a_form_the_model_designs_and_fixes(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    human.fill_form({"size": "Large"})
    select_without_options = {"label": "Size", "type": "select", "id": "size"}
    fixed = {**select_without_options, "options": ["Small", "Large"]}
    model = scripted(
        [("human_form", {"title": "T-shirt", "fields": [select_without_options]})],
        [("human_form", {"title": "T-shirt", "fields": [fixed]})],
    )
    tool = HumanForm(client=async_humanwire_client, wait_time=10)
    await Agent(model.model, tools=[tool]).run("Ask their size")
    # The design the service cannot send comes back as a retry prompt naming the fix.
    (retry,) = model.retries()
    assert "give it options" in str(retry.content)
    (returned,) = model.returns()
    assert returned.content == "The human submitted the form:\nSize: Large"


async def test_the_human_answers_the_call_or_misses_it(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    tool = CallHuman(client=async_humanwire_client)
    human.answer_call("They confirmed Friday.")
    answered = once("call_human", {"prompt": "Confirm the delivery day."})
    await Agent(answered.model, tools=[tool]).run("Call")
    (returned,) = answered.returns()
    assert returned.content == "Call completed. Summary: They confirmed Friday."
    assert isinstance(returned.metadata, CallResponse)

    human.miss_call()
    missed = once("call_human", {"prompt": "Confirm the delivery day."})
    await Agent(missed.model, tools=[tool]).run("Call")
    (returned,) = missed.returns()
    assert returned.outcome == "success"  # a missed call is a normal result
    assert returned.content.startswith("The human did not answer the call")


# --- what the model got wrong, what the service refused -----------------------------------


async def test_arguments_that_do_not_fit_are_a_retry_prompt(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    human.reply("ok")
    model = scripted(
        [("ask_human_sms", {"message": ""})], [("ask_human_sms", {"message": "Ready?"})]
    )
    tool = AskHumanSMS(client=async_humanwire_client, wait_time=5)
    result = await Agent(model.model, tools=[tool]).run("Ask")
    (retry,) = model.retries()
    assert "humanwire: invalid arguments: message: String should have at least 1" in str(
        retry.content
    )
    assert result.output == "FINAL: Human response: ok"
    assert len(humanwire_client.sandbox.deliveries()) == 1  # the bad call sent nothing


async def test_a_service_error_is_a_tool_failure_the_run_survives(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire
) -> None:
    tool = AskHumanSMS(client=async_humanwire_client, wait_time=1, expose_recipient=True)
    model = once("ask_human_sms", {"message": "Hi", "to": "+15555550100"})
    result = await Agent(model.model, tools=[tool]).run("Ask")
    (returned,) = model.returns()
    assert returned.outcome == "failed"  # ToolFailed: no retry prompt, the run goes on
    assert returned.content.startswith("humanwire: ") and "invalid to number" in returned.content
    assert result.output.startswith("FINAL: humanwire: ")
    assert model.retries() == []
    assert humanwire_client.sandbox.deliveries() == []


async def test_a_bad_key_is_a_tool_failure_not_a_retry(humanwire_service: RunningService) -> None:
    client = AsyncHumanWire(api_key="hw_not_a_key", base_url=humanwire_service.base_url)
    try:
        tool = AskHumanSMS(client=client, to=PHONE, wait_time=1)
        model = once("ask_human_sms", {"message": "Hi"})
        await Agent(model.model, tools=[tool]).run("Ask")
    finally:
        await client.aclose()
    (returned,) = model.returns()
    assert returned.outcome == "failed"
    assert returned.content.startswith("humanwire: ")
    assert "unauthorized" in returned.content.lower() or "401" in returned.content


async def test_an_unknown_interaction_is_a_tool_failure(
    async_humanwire_client: AsyncHumanWire,
) -> None:
    check = CheckHumanInteraction(client=async_humanwire_client)
    model = once(
        "check_human_interaction", {"interaction_id": "00000000-0000-4000-8000-000000000000"}
    )
    await Agent(model.model, tools=[check]).run("Check")
    (returned,) = model.returns()
    assert returned.outcome == "failed"
    assert "not found" in returned.content.lower() or "not_found" in returned.content


# --- the toolset and the clients ------------------------------------------------------------


async def test_the_toolset_in_an_agent(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    human.reply("Tuesday", channel="slack")
    toolset = HumanWireToolset(
        client=async_humanwire_client, channels=["sms", "slack"], wait_time=5, notify=True
    )
    model = once("ask_human_slack", {"message": "Which day?"})
    result = await Agent(model.model, toolsets=[toolset]).run("Ask")
    assert result.output == "FINAL: Human response: Tuesday"
    assert set(model.tools) == {
        "ask_human_sms",
        "ask_human_slack",
        "notify_human_sms",
        "notify_human_slack",
        "human_form",
        "check_human_interaction",
    }


async def test_the_toolset_emails_and_reads_the_reply(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    human.reply("Friday works", channel="email")
    toolset = HumanWireToolset(
        client=async_humanwire_client,
        channels=["email"],
        email_to="human@example.com",
        wait_time=5,
        notify=True,
    )
    model = once("ask_human_email", {"message": "Which day?"})
    result = await Agent(model.model, toolsets=[toolset]).run("Ask")
    assert result.output == "FINAL: Human response: Friday works"
    assert set(model.tools) == {
        "ask_human_email",
        "notify_human_email",
        "human_form",
        "check_human_interaction",
    }


def test_a_sync_client_serves_runs_on_several_event_loops(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    # Two asyncio.run calls make two event loops: each gets its own async client, made on
    # the sync client's service and account (an async client is tied to its loop).
    tool = AskHumanSMS(client=humanwire_client, wait_time=5)
    for answer in ("one", "two"):
        human.reply(answer)
        model = once("ask_human_sms", {"message": "Count?"})
        result = asyncio.run(Agent(model.model, tools=[tool]).run("Ask"))
        assert result.output == f"FINAL: Human response: {answer}"


async def test_pydantic_ais_test_model_calls_every_tool_from_its_schema(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    # TestModel makes each call's arguments from the tool's JSON schema: the plain schemas
    # are ones Pydantic AI's own argument generator fills validly.
    human.reply("yes")
    human.fill_form({"a": "filled"})
    toolset = HumanWireToolset(client=async_humanwire_client, wait_time=5)
    result = await Agent(TestModel(), toolsets=[toolset]).run("go")
    assert json.loads(result.output) == {
        "ask_human_sms": "Human response: yes",
        "human_form": "The human submitted the form:\na: filled",
        # TestModel's made-up interaction id: the service's 404, as a tool failure
        "check_human_interaction": "humanwire: 404 not_found: no interaction 'a' "
        "(field interactionId)",
    }
