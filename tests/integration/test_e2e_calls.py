"""Voice calls and the agent-skill call endpoint, end to end."""

from __future__ import annotations

import httpx
import pytest
from e2e_support import HUMAN, StartService

from humanwire import AsyncHumanWire, HumanWire
from humanwire.errors import CallTimeoutError, ConflictError, InvalidToNumberError
from humanwire.testing import RunningService, ScriptedHuman, WebhookReceiver
from humanwire.types import CallConversationEndedEvent


def test_call_answered_and_waited_for(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    action = human.answer_call("They will pay on Friday.")
    result = humanwire_client.calls.create(
        to=HUMAN, prompt="Ask when the invoice will be paid.", wait_for_call_end=True
    )
    assert (result.status, result.outcome) == ("ended", "completed")
    assert result.summary == "They will pay on Friday."
    assert result.to == HUMAN
    assert result.error is None
    delivery = action.wait()
    assert (delivery.kind, delivery.channel) == ("call", "call")
    assert delivery.text == "Ask when the invoice will be paid."


async def test_call_outcomes_async(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    human.miss_call()
    missed = await async_humanwire_client.calls.create(
        to=HUMAN, prompt="Remind about the meeting.", wait_for_call_end=True
    )
    assert (missed.outcome, missed.error) == ("no_answer", "human did not respond")
    human.transfer_call("Wanted a person.")
    transferred = await async_humanwire_client.calls.create(
        to=HUMAN,
        prompt="Offer the upgrade.",
        transfer_to="+12025550123",
        voice="male",
        language="fr-FR",
        wait_for_call_end=True,
    )
    assert transferred.outcome == "transferred"


def test_call_without_waiting_is_polled_to_its_end(
    humanwire_client: HumanWire, human: ScriptedHuman, webhook_receiver: WebhookReceiver
) -> None:
    webhook_receiver.register(humanwire_client, ["call.conversation.ended"])
    started = humanwire_client.calls.create(to=HUMAN, prompt="Confirm the delivery address.")
    assert started.status == "pending"
    assert humanwire_client.interactions.status(started.interaction_id).status == "pending"
    ended = humanwire_client.sandbox.end_call(
        started.interaction_id, outcome="completed", summary="Address confirmed."
    )
    assert (ended.status, ended.outcome) == ("ended", "completed")
    with pytest.raises(ConflictError):
        humanwire_client.sandbox.end_call(started.interaction_id, outcome="completed")
    status = humanwire_client.interactions.wait(started.interaction_id, timeout=5)
    assert isinstance(status.result, CallConversationEndedEvent)
    assert status.result.payload.summary == "Address confirmed."
    [event] = webhook_receiver.wait_for("call.conversation.ended")
    assert event.payload.interaction_id == started.interaction_id


def test_phone_call_answered_and_not_answered(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    human.answer_call("Booked for 3 pm.")
    answered = humanwire_client.phone.call(to=HUMAN, message="Book a table for two.")
    assert (answered.outcome, answered.summary) == ("completed", "Booked for 3 pm.")
    human.miss_call()
    missed = humanwire_client.phone.call(to=HUMAN, message="Book a table for two.")
    assert missed.outcome == "no_answer"
    assert missed.error == "human did not respond"
    assert missed.text == "human did not respond"


def test_phone_call_invalid_to_number(
    humanwire_client: HumanWire, humanwire_service: RunningService, humanwire_api_key: str
) -> None:
    with pytest.raises(InvalidToNumberError):
        humanwire_client.phone.call(to="+1555", message="hello")
    response = httpx.post(
        f"{humanwire_service.base_url}/phone/call",
        json={"to": "+15555550100", "message": "hello"},
        headers={"Authorization": f"Bearer {humanwire_api_key}"},
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "invalid to number"
    assert humanwire_client.sandbox.deliveries() == []


def test_phone_call_over_the_limit_is_a_timeout_never_retried(
    start_service: StartService,
) -> None:
    service = start_service(phone_call_limit=1.0)
    key = service.create_account("timeout")
    with HumanWire(api_key=key, base_url=service.base_url) as client:
        with pytest.raises(CallTimeoutError) as raised:
            client.phone.call(to=HUMAN, message="Nobody will end this call.")
        assert (raised.value.status_code, raised.value.code) == (504, "timeout")
        assert raised.value.message == "timeout"
        calls = client.sandbox.deliveries(channel="call")
        assert len(calls) == 1  # placed once, not retried
        assert calls[0].interaction_id is not None
        status = client.interactions.status(calls[0].interaction_id)
        assert status.status == "ended"
