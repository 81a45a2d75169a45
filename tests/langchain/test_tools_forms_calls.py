"""Form and call tools against the real service."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from lc_helpers import PHONE, SLACK, Mode, properties, run_tool, text

from humanwire import HumanWire
from humanwire.langchain import AskHumanSMS, CallHuman, CheckHumanInteraction, HumanForm
from humanwire.testing import ScriptedHuman
from humanwire.testing.receiver import WebhookReceiver
from humanwire.types import DEFAULT_NO_RESPONSE_TEMPLATE, CallResponse, FormResponse

MODES = ["sync", "async"]
FIXED_FIELDS = [
    {"id": "size", "label": "T-shirt size", "type": "select", "required": True,
     "options": [{"label": "Small", "value": "s"}, {"label": "Large", "value": "l"}]},
    {"id": "email", "label": "Email", "type": "email"},
]  # fmt: skip
DYNAMIC_ARGS = {
    "title": "Lunch order",
    "description": "For Friday",
    "fields": [
        {"label": "Main course", "type": "select", "options": ["Pasta", "Salad"], "required": True},
        {"label": "Vegetarian", "type": "checkbox"},
        {"label": "Notes", "type": "textarea", "options": []},
    ],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("channel", ["sms", "whatsapp", "slack"])
async def test_fixed_form_answered(
    make: Callable[..., Any], human: ScriptedHuman, channel: str, mode: Mode
) -> None:
    human.fill_form({"size": "l", "email": "ann@example.com"}, channel=channel)
    tool = make(HumanForm, channel=channel, title="Swag", fields=FIXED_FIELDS, wait_time=5)
    expected = {"message"} if channel != "whatsapp" else set()
    assert properties(tool) == expected
    message = await run_tool(tool, {}, mode)
    assert message.status == "success"
    assert message.content == (
        "The human submitted the form:\nT-shirt size: Large\nEmail: ann@example.com"
    )
    assert isinstance(message.artifact, FormResponse)
    assert message.artifact.values == {"size": "l", "email": "ann@example.com"}


@pytest.mark.parametrize("mode", MODES)
async def test_fixed_form_link_message(
    make: Callable[..., Any], humanwire_client: HumanWire, mode: Mode
) -> None:
    tool = make(HumanForm, title="Swag", fields=FIXED_FIELDS, wait_time=1)
    message = await run_tool(tool, {"message": "Pick your size"}, mode)
    (delivery,) = humanwire_client.sandbox.deliveries(
        interaction_id=message.artifact.interaction_id
    )
    assert delivery.to == PHONE
    assert delivery.text == f"Pick your size {message.artifact.form_url}"


@pytest.mark.parametrize("mode", MODES)
async def test_dynamic_form_designed_by_the_model(
    make: Callable[..., Any], human: ScriptedHuman, mode: Mode
) -> None:
    human.fill_form({"main_course": "Salad", "vegetarian": True, "notes": "no nuts"})
    tool = make(HumanForm, wait_time=5)
    assert properties(tool) == {
        "title",
        "fields",
        "description",
        "message",
    }
    message = await run_tool(tool, DYNAMIC_ARGS, mode)
    assert message.status == "success"
    assert message.artifact.values == {
        "main_course": "Salad",
        "vegetarian": "true",
        "notes": "no nuts",
    }
    assert "Main course: Salad" in message.content
    assert "Vegetarian: Yes" in message.content


@pytest.mark.parametrize("mode", MODES)
async def test_dynamic_select_without_options_is_an_error_the_model_sees(
    make: Callable[..., Any], humanwire_client: HumanWire, mode: Mode
) -> None:
    tool = make(HumanForm, wait_time=1)
    args = {"title": "T", "fields": [{"label": "Pick one", "type": "select"}]}
    message = await run_tool(tool, args, mode)
    assert message.status == "error"
    assert "give it options" in message.content
    assert humanwire_client.sandbox.deliveries() == []


@pytest.mark.parametrize("mode", MODES)
async def test_form_timeout_then_late_submission_reaches_webhook(
    make: Callable[..., Any],
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
    mode: Mode,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["form.received"])
    human.fill_form({"size": "s"}, delay=1.5)
    tool = make(HumanForm, title="Swag", fields=FIXED_FIELDS, wait_time=1, follow_up_time=30)
    message = await run_tool(tool, {}, mode)
    assert message.status == "success"
    # The no-response text, and the id a model needs to check for the late submission.
    interaction_id = message.artifact.interaction_id
    assert message.content == (
        f"{DEFAULT_NO_RESPONSE_TEMPLATE} (They can still answer later: interaction "
        f"{interaction_id}.)"
    )
    assert message.artifact.responded is False
    (event,) = webhook_receiver.wait_for("form.received", timeout=10)
    assert event.payload.interaction_id == message.artifact.interaction_id
    assert event.payload.values == {"size": "s"}

    status = await run_tool(
        make(CheckHumanInteraction), {"interaction_id": event.payload.interaction_id}, mode
    )
    assert "submitted the form" in status.content and "size: s" in status.content


@pytest.mark.parametrize("mode", MODES)
async def test_form_with_exposed_slack_recipient(
    make: Callable[..., Any], humanwire_client: HumanWire, mode: Mode
) -> None:
    tool = make(HumanForm, channel="slack", wait_time=1, expose_recipient=True)
    args = {"title": "T", "fields": [{"label": "Name"}], "to": "C0TEAM0001"}
    message = await run_tool(tool, args, mode)
    (delivery,) = humanwire_client.sandbox.deliveries(
        interaction_id=message.artifact.interaction_id
    )
    assert delivery.to == "C0TEAM0001"
    default = make(HumanForm, channel="slack", wait_time=1)
    assert default.to == SLACK


@pytest.mark.parametrize("mode", MODES)
async def test_call_completed(make: Callable[..., Any], human: ScriptedHuman, mode: Mode) -> None:
    human.answer_call("Confirmed the delivery for 3 pm.")
    tool = make(CallHuman, language="en-GB", voice="male")
    message = await run_tool(tool, {"prompt": "You are Acme's assistant. Confirm 3 pm."}, mode)
    assert message.status == "success"
    assert message.content == "Call completed. Summary: Confirmed the delivery for 3 pm."
    assert isinstance(message.artifact, CallResponse)
    assert message.artifact.outcome == "completed"


@pytest.mark.parametrize("mode", MODES)
async def test_missed_call_is_a_normal_result(
    make: Callable[..., Any], human: ScriptedHuman, mode: Mode
) -> None:
    human.miss_call()
    message = await run_tool(make(CallHuman), {"prompt": "Call about the invoice."}, mode)
    assert message.status == "success"
    assert message.content == "The human did not answer the call (human did not respond)."
    assert message.artifact.outcome == "no_answer"


@pytest.mark.parametrize("mode", MODES)
async def test_transferred_call(make: Callable[..., Any], human: ScriptedHuman, mode: Mode) -> None:
    human.transfer_call("Asked for a person.")
    tool = make(CallHuman, transfer_to="+442079460999")
    message = await run_tool(tool, {"prompt": "Call about the invoice."}, mode)
    assert text(message).startswith("The call was transferred to a human.")
    assert message.artifact.outcome == "transferred"


@pytest.mark.parametrize("mode", MODES)
async def test_call_without_waiting_then_check(
    make: Callable[..., Any], human: ScriptedHuman, mode: Mode
) -> None:
    tool = make(CallHuman, wait_for_call_end=False)
    message = await run_tool(tool, {"prompt": "Call about the invoice."}, mode)
    interaction_id = message.artifact.interaction_id
    assert message.artifact.status == "pending"
    assert interaction_id in message.content
    human.answer_call("Invoice paid.", interaction_id=interaction_id).wait(10)
    check = make(CheckHumanInteraction, wait=5)
    status = await run_tool(check, {"interaction_id": interaction_id}, mode)
    assert "Summary: Invoice paid." in status.content


@pytest.mark.parametrize("mode", MODES)
async def test_call_to_bad_exposed_number_is_an_error(make: Callable[..., Any], mode: Mode) -> None:
    tool = make(CallHuman, expose_recipient=True)
    message = await run_tool(tool, {"prompt": "Hi", "to": "12345"}, mode)
    assert message.status == "error"
    assert "invalid to number" in message.content


@pytest.mark.parametrize("mode", MODES)
async def test_call_end_reaches_webhook_when_not_waited_for(
    make: Callable[..., Any],
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
    mode: Mode,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["call.conversation.ended"])
    human.answer_call("Agreed to reschedule.", delay=1)
    tool = make(CallHuman, wait_for_call_end=False)
    message = await run_tool(tool, {"prompt": "Reschedule the meeting."}, mode)
    assert message.artifact.status == "pending"
    (event,) = webhook_receiver.wait_for("call.conversation.ended", timeout=10)
    assert event.payload.interaction_id == message.artifact.interaction_id
    assert event.payload.summary == "Agreed to reschedule."


@pytest.mark.parametrize("mode", MODES)
async def test_form_to_bad_exposed_number_is_an_error(
    make: Callable[..., Any], humanwire_client: HumanWire, mode: Mode
) -> None:
    tool = make(HumanForm, title="Swag", fields=FIXED_FIELDS, wait_time=1, expose_recipient=True)
    message = await run_tool(tool, {"to": "+15555550100"}, mode)
    assert message.status == "error"
    assert "invalid to number" in text(message)
    assert humanwire_client.sandbox.deliveries() == []


@pytest.mark.parametrize("mode", MODES)
async def test_arguments_a_model_got_wrong_come_back_as_an_error_message(
    make: Callable[..., Any], humanwire_client: HumanWire, mode: Mode
) -> None:
    # Not an exception that ends the agent run: the model reads what to fix.
    form = make(HumanForm, wait_time=1)
    args = {"title": "T", "fields": [{"label": "Age", "type": "number"}]}
    message = await run_tool(form, args, mode)
    assert message.status == "error"
    assert "invalid arguments: fields.0.type" in text(message)
    ask = make(AskHumanSMS, wait_time=1)
    empty = await run_tool(ask, {"message": ""}, mode)
    assert empty.status == "error" and "message" in text(empty)
    assert humanwire_client.sandbox.deliveries() == []


@pytest.mark.parametrize("mode", MODES)
async def test_dynamic_form_with_a_pattern_and_wire_style_options(
    make: Callable[..., Any], humanwire_client: HumanWire, human: ScriptedHuman, mode: Mode
) -> None:
    human.fill_form({"zip": "12345", "size": "l"})
    tool = make(HumanForm, wait_time=5)
    args = {
        "title": "Shipping",
        "fields": [
            {"label": "Zip code", "id": "zip", "pattern": "^[0-9]{5}$",
             "pattern_hint": "Five digits", "required": True},
            {"label": "Size", "id": "size", "type": "select",
             "options": [{"label": "Large", "value": "l"}, {"label": "Small", "value": "s"}]},
        ],
    }  # fmt: skip
    message = await run_tool(tool, args, mode)
    assert message.status == "success"
    assert message.artifact.values == {"zip": "12345", "size": "l"}
    assert "Size: Large" in text(message)
    # Nobody fills the next one: its page shows the rule the model wrote.
    unanswered = await run_tool(make(HumanForm, wait_time=1), args, mode)
    page = httpx.get(unanswered.artifact.form_url or "", timeout=5).text
    assert "Five digits" in page and "^[0-9]{5}$" in page

    bad = {"title": "T", "fields": [{"label": "Code", "pattern": "(unclosed"}]}
    refused = await run_tool(make(HumanForm, wait_time=1), bad, mode)
    assert refused.status == "error"
    assert "fields[0]" in text(refused) and "regular expression" in text(refused)
