"""Every tool of ``HumanWireToolSpec`` against the real service, sync and async:
answered, timed out (a normal output), and failed (an error output)."""

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from llama_index.core.tools import FunctionTool, ToolOutput

from humanwire import AsyncHumanWire, HumanWire
from humanwire.errors import InvalidRequestError, InvalidToNumberError, NotFoundError
from humanwire.llama_index import HumanWireToolSpec
from humanwire.testing import ScriptedHuman

NO_RESPONSE = "Human did not respond. Continue where you left off."
WAIT = 1.5

COLOUR_FIELD = {"id": "colour", "label": "Favourite colour", "type": "text", "required": True}


@dataclass
class Case:
    """One tool call: how the human behaves, what the tool is given, what comes back."""

    tool: str
    kwargs: dict[str, Any]
    script: Callable[[ScriptedHuman], Any]
    expect: Callable[[str], bool]
    spec_kwargs: dict[str, Any] = field(default_factory=dict)


def _tools(spec: HumanWireToolSpec) -> dict[str, FunctionTool]:
    return {tool.metadata.get_name(): tool for tool in spec.to_tool_list()}


ANSWERED = [
    Case(
        "ask_human_sms",
        {"message": "Which colour should the logo be?"},
        lambda h: h.reply("teal"),
        lambda text: text == "Human response: teal",
    ),
    Case(
        "ask_human_whatsapp",
        {"message": "Can I book the 9:40 train?"},
        lambda h: h.reply("yes please", channel="whatsapp"),
        lambda text: text == "Human response: yes please",
    ),
    Case(
        "ask_human_slack",
        {"message": "Merge the release branch?"},
        lambda h: h.reply("go ahead", channel="slack"),
        lambda text: text == "Human response: go ahead",
    ),
    Case(
        "ask_human_form",
        {"title": "Logo colour", "fields": [COLOUR_FIELD], "message": "Quick question"},
        lambda h: h.fill_form({"colour": "teal"}),
        lambda text: text == "The human submitted the form:\nFavourite colour: teal",
    ),
    Case(
        "ask_human_form",
        {},
        lambda h: h.fill_form({"colour": "amber"}, channel="slack"),
        lambda text: text == "The human submitted the form:\nFavourite colour: amber",
        {"form_title": "Logo colour", "form_fields": [COLOUR_FIELD], "form_channel": "slack"},
    ),
    Case(
        "call_human",
        {"prompt": "You call for Acme. Ask whether Friday's delivery can come at 9."},
        lambda h: h.answer_call("The customer agreed to a 9am delivery on Friday."),
        lambda text: (
            text == "Call completed. Summary: The customer agreed to a 9am delivery on Friday."
        ),
    ),
]

TIMED_OUT = [
    Case(
        "ask_human_sms",
        {"message": "Still there?"},
        lambda h: h.stay_silent(channel="sms"),
        lambda text: text == NO_RESPONSE,
    ),
    Case(
        "ask_human_whatsapp",
        {"message": "Still there?"},
        lambda h: h.stay_silent(channel="whatsapp"),
        lambda text: text == NO_RESPONSE,
    ),
    Case(
        "ask_human_slack",
        {"message": "Still there?"},
        lambda h: h.stay_silent(channel="slack"),
        lambda text: text == NO_RESPONSE,
    ),
    Case(
        "ask_human_form",
        {"title": "Logo colour", "fields": [COLOUR_FIELD]},
        lambda h: h.stay_silent(),
        # A form stays open after the wait (90 s by default): the id to check it later.
        lambda text: text.startswith(f"{NO_RESPONSE} (They can still answer later: interaction "),
    ),
    Case(
        "call_human",
        {"prompt": "You call for Acme about Friday's delivery."},
        lambda h: h.miss_call(),
        lambda text: text == "The human did not answer the call (human did not respond).",
    ),
]

FAILED = [
    # Refused by the client's own check (the service would answer the same 400).
    Case(
        "ask_human_sms",
        {"message": "Hello?", "to": "+15555550100"},
        lambda h: None,
        lambda text: "invalid to number" in text,
        {"expose_recipients": True},
    ),
    # The recipient is fixed: a model that invents one is told so.
    Case(
        "ask_human_sms",
        {"message": "Hello?", "to": "+14155550123"},
        lambda h: None,
        lambda text: (
            text == "Error from humanwire: 400 invalid_request: unknown property 'to' (field to)"
        ),
    ),
    Case(
        "ask_human_form",
        {
            "title": "Bad",
            "fields": [
                {"id": "a", "label": "A", "type": "text", "pattern": "(unclosed"},
            ],
        },
        lambda h: None,
        lambda text: "regular expression" in text,
    ),
    Case(
        "ask_human_form",
        {"title": "No fields", "fields": []},
        lambda h: None,
        lambda text: "at least 1 item" in text and "(field fields)" in text,
    ),
    # A model that leaves out a required argument is told which.
    Case(
        "call_human",
        {},
        lambda h: None,
        lambda text: "prompt is required" in text,
    ),
    # Refused by the service itself: 404s.
    Case(
        "check_human_interaction",
        {"interaction_id": str(uuid.uuid4())},
        lambda h: None,
        lambda text: "404 not_found" in text,
    ),
    Case(
        "ask_human_channel",
        {"message": "Hello?"},
        lambda h: None,
        lambda text: "404 not_found" in text,
        {"channel_id": "ch_" + "x" * 24},
    ),
]


def _ids(cases: list[Case]) -> list[str]:
    return [f"{c.tool}-{i}" for i, c in enumerate(cases)]


def _check_output(output: ToolOutput, case: Case, *, error: bool) -> None:
    assert output.is_error is error, output.content
    assert case.expect(output.content), output.content
    assert output.tool_name == case.tool


@pytest.mark.parametrize("case", ANSWERED, ids=_ids(ANSWERED))
def test_answered_sync(case: Case, humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    spec = HumanWireToolSpec(humanwire_client, wait_time=10, **case.spec_kwargs)
    case.script(human)
    _check_output(_tools(spec)[case.tool].call(**case.kwargs), case, error=False)


@pytest.mark.parametrize("case", ANSWERED, ids=_ids(ANSWERED))
async def test_answered_async(
    case: Case, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    spec = HumanWireToolSpec(async_client=async_humanwire_client, wait_time=10, **case.spec_kwargs)
    case.script(human)
    _check_output(await _tools(spec)[case.tool].acall(**case.kwargs), case, error=False)


@pytest.mark.parametrize("case", TIMED_OUT, ids=_ids(TIMED_OUT))
def test_timed_out_sync(case: Case, humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    spec = HumanWireToolSpec(humanwire_client, wait_time=WAIT, **case.spec_kwargs)
    action = case.script(human)
    _check_output(_tools(spec)[case.tool].call(**case.kwargs), case, error=False)
    action.wait(5)  # the silence was real: the human did receive it


@pytest.mark.parametrize("case", TIMED_OUT, ids=_ids(TIMED_OUT))
async def test_timed_out_async(
    case: Case, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    spec = HumanWireToolSpec(
        async_client=async_humanwire_client, wait_time=WAIT, **case.spec_kwargs
    )
    action = case.script(human)
    _check_output(await _tools(spec)[case.tool].acall(**case.kwargs), case, error=False)
    await action.async_wait(5)


@pytest.mark.parametrize("case", FAILED, ids=_ids(FAILED))
def test_failed_sync(case: Case, humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    spec = HumanWireToolSpec(humanwire_client, wait_time=WAIT, **case.spec_kwargs)
    output = _tools(spec)[case.tool].call(**case.kwargs)
    _check_output(output, case, error=True)
    # Nothing reached the human on a refused request.
    assert human.deliveries() == []


@pytest.mark.parametrize("case", FAILED, ids=_ids(FAILED))
async def test_failed_async(
    case: Case, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    spec = HumanWireToolSpec(
        async_client=async_humanwire_client, wait_time=WAIT, **case.spec_kwargs
    )
    output = await _tools(spec)[case.tool].acall(**case.kwargs)
    _check_output(output, case, error=True)
    assert human.deliveries() == []


def test_direct_method_raises_the_typed_error(humanwire_client: HumanWire) -> None:
    spec = HumanWireToolSpec(humanwire_client, expose_recipients=True)
    with pytest.raises(InvalidToNumberError):
        spec.ask_human_sms("Hello?", to="+15555550100")
    with pytest.raises(NotFoundError):
        spec.check_human_interaction(str(uuid.uuid4()))


def test_channel_card_answered_and_timed_out(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    card = humanwire_client.channels.create(
        type="sms",
        to="+12025550100",
        wait_time=WAIT,
        response_template="Ops said: {{message}}",
        no_response_template="Nobody from ops answered.",
    )
    tool = _tools(HumanWireToolSpec(humanwire_client, channel_id=card.id))["ask_human_channel"]
    human.reply("restart it")
    answered = tool.call(message="Service X is down. Restart it?")
    assert (answered.is_error, answered.content) == (False, "Ops said: restart it")
    human.stay_silent(channel="sms")
    silent = tool.call(message="And service Y?")
    assert (silent.is_error, silent.content) == (False, "Nobody from ops answered.")


async def test_channel_card_async(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    card = await async_humanwire_client.channels.create(type="sms", to="+12025550100", wait_time=5)
    spec = HumanWireToolSpec(async_client=async_humanwire_client, channel_id=card.id)
    human.reply("all good")
    output = await _tools(spec)["ask_human_channel"].acall(message="Status?")
    assert (output.is_error, output.content) == (False, "Human response: all good")


def test_notify_sends_without_waiting(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    tools = _tools(HumanWireToolSpec(humanwire_client))
    output = tools["notify_human"].call(message="The nightly build passed.", channel="slack")
    assert not output.is_error
    assert "Message sent by slack (interaction" in output.content
    delivered = human.deliveries(channel="slack")
    assert [d.text for d in delivered] == ["The nightly build passed."]
    assert str(delivered[0].interaction_id) in output.content


def test_notify_by_email_sends_without_waiting(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    tools = _tools(HumanWireToolSpec(humanwire_client, email_to="ada@example.com"))
    output = tools["notify_human"].call(message="The invoice is paid.", channel="email")
    assert not output.is_error
    assert "Message sent by email (interaction" in output.content
    [delivered] = human.deliveries(channel="email")
    assert (delivered.to, delivered.text) == ("ada@example.com", "The invoice is paid.")
    assert str(delivered.interaction_id) in output.content
    status = humanwire_client.interactions.status(delivered.interaction_id)
    assert (status.channel, status.status) == ("email", "ended")


async def test_notify_async_and_bad_channel(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    tools = _tools(HumanWireToolSpec(async_client=async_humanwire_client))
    output = await tools["notify_human"].acall(message="Deploy finished.")
    assert not output.is_error and "Message sent by sms" in output.content
    assert [d.text for d in human.deliveries(channel="sms")] == ["Deploy finished."]
    bad = await tools["notify_human"].acall(message="x", channel="fax")
    assert bad.is_error and "channel" in bad.content


def test_check_interaction_pending_then_answered(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    sent = humanwire_client.messages.sms(
        message="Reply when the parcel arrives", to="+12025550100", follow_up_time=30
    )
    tool = _tools(HumanWireToolSpec(humanwire_client))["check_human_interaction"]
    pending = tool.call(interaction_id=sent.interaction_id)
    assert "still pending" in pending.content
    human.reply("it arrived", interaction_id=sent.interaction_id).wait(5)
    answered = tool.call(interaction_id=sent.interaction_id)
    assert answered.content.endswith("was answered. Human response: it arrived")


async def test_check_interaction_async_form_result(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    spec = HumanWireToolSpec(async_client=async_humanwire_client, wait_time=5)
    human.fill_form({"colour": "red"})
    await spec.aask_human_form(title="Colour", fields=[COLOUR_FIELD])
    form = human.deliveries()[-1]
    assert form.interaction_id is not None
    text = await spec.acheck_human_interaction(form.interaction_id)
    assert "the human submitted the form" in text and "colour: red" in text


def test_exposed_recipient_reaches_that_person(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    other = "+442079460123"
    spec = HumanWireToolSpec(humanwire_client, expose_recipients=True, wait_time=10)
    human.reply("yes from London", to=other)
    output = _tools(spec)["ask_human_sms"].call(message="Are you in?", to=other)
    assert output.content == "Human response: yes from London"
    assert [d.to for d in human.deliveries(channel="sms")] == [other]


def test_fixed_form_refuses_a_redesign(humanwire_client: HumanWire) -> None:
    spec = HumanWireToolSpec(
        humanwire_client, form_title="Colour", form_fields=[COLOUR_FIELD], wait_time=WAIT
    )
    with pytest.raises(InvalidRequestError, match="unknown property 'title'"):
        spec.ask_human_form(title="Other", fields=[COLOUR_FIELD])


async def test_sync_client_alone_serves_the_async_path_on_the_same_account(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    # An agent calls acall even when the spec got only a sync client: the async twin must
    # reach the same service and account, not one from the environment.
    spec = HumanWireToolSpec(humanwire_client, wait_time=10)
    human.reply("same account")
    output = await _tools(spec)["ask_human_sms"].acall(message="Who is this?")
    assert output.content == "Human response: same account"
    assert spec.async_client.base_url == humanwire_client.base_url
    await spec.async_client.aclose()


async def test_designed_form_with_plain_options_and_no_ids(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    # What a small model writes: labels, a type, options as strings; ids derived.
    spec = HumanWireToolSpec(async_client=async_humanwire_client, wait_time=10)
    [form] = spec.to_tool_list(spec_functions=["ask_human_form"])
    human.fill_form({"size": "Large", "gift_wrap": True})
    fields = [
        {"label": "Size", "type": "select", "options": ["Small", "Large"], "required": True},
        {"label": "Gift wrap", "type": "checkbox"},
    ]
    output = await form.acall(title="Your order", fields=fields)
    assert (output.is_error, output.content) == (
        False,
        "The human submitted the form:\nSize: Large\nGift wrap: Yes",
    )
    select = await form.acall(title="Pick", fields=[{"label": "Colour", "type": "select"}])
    assert select.is_error and "give it options" in select.content


def test_timed_out_answer_names_the_interaction_to_check_later(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    spec = HumanWireToolSpec(humanwire_client, wait_time=1, follow_up_time=30)
    tools = _tools(spec)
    human.stay_silent()
    output = tools["ask_human_sms"].call(message="Can you approve the invoice?")
    assert not output.is_error
    prefix = f"{NO_RESPONSE} (They can still answer later: interaction "
    assert output.content.startswith(prefix)
    interaction_id = output.content[len(prefix) : -2]
    human.reply("approved", interaction_id=interaction_id).wait(5)
    later = tools["check_human_interaction"].call(interaction_id=interaction_id)
    assert later.content.endswith("was answered. Human response: approved")


def test_the_specs_metadata_goes_with_every_send(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    spec = HumanWireToolSpec(humanwire_client, wait_time=5, metadata={"run": "li-1"})
    action = human.reply("fine")
    assert spec.ask_human_sms("All good?") == "Human response: fine"
    asked = action.wait().interaction_id
    assert asked is not None
    assert humanwire_client.interactions.status(asked).metadata == {"run": "li-1"}
    with pytest.raises(ValueError, match="metadata"):
        HumanWireToolSpec(humanwire_client, metadata={"k" * 41: "v"})
