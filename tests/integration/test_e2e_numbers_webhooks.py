"""Reserved numbers and webhooks, end to end."""

from __future__ import annotations

import time

import pytest
from e2e_support import HUMAN

from humanwire import AsyncHumanWire, HumanWire
from humanwire.errors import ConflictError, InvalidRequestError, NotFoundError
from humanwire.testing import ScriptedHuman, WebhookReceiver
from humanwire.types import MessageReceivedEvent


def test_numbers_rules(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    us = humanwire_client.numbers.available(country="US")
    gb = humanwire_client.numbers.available(country="GB")
    assert us and gb
    assert all(n.country == "US" and n.phone_number.startswith("+1") for n in us)
    assert all(n.country == "GB" and n.phone_number.startswith("+44") for n in gb)
    assert HUMAN not in {n.phone_number for n in us}  # the inbox's human is never offered
    area = us[0].area_code
    assert {n.area_code for n in humanwire_client.numbers.available(area_code=area)} == {area}
    assert humanwire_client.numbers.list() == []
    with pytest.raises(InvalidRequestError):  # only numbers from the available list
        humanwire_client.numbers.reserve("+16502530000")

    reserved = humanwire_client.numbers.reserve(us[0].phone_number)
    assert reserved.phone_number == us[0].phone_number
    assert humanwire_client.numbers.list() == [reserved]
    assert us[0].phone_number not in {
        n.phone_number for n in humanwire_client.numbers.available(country="US")
    }
    with pytest.raises(ConflictError):  # one number per account
        humanwire_client.numbers.reserve(gb[0].phone_number)

    # Texts now come from the reserved number.
    action = human.stay_silent()
    humanwire_client.messages.sms(message="From my own number", to=HUMAN)
    assert action.wait().from_ == reserved.phone_number

    humanwire_client.numbers.delete(reserved.id)
    with pytest.raises(NotFoundError):
        humanwire_client.numbers.delete(reserved.id)
    assert humanwire_client.numbers.list() == []
    again = humanwire_client.numbers.reserve(gb[0].phone_number)
    assert humanwire_client.numbers.list() == [again]


async def test_inbound_call_to_a_reserved_number_reaches_the_webhook(
    async_humanwire_client: AsyncHumanWire, webhook_receiver: WebhookReceiver
) -> None:
    await webhook_receiver.aregister(async_humanwire_client, ["call.conversation.ended"])
    [number, *_] = await async_humanwire_client.numbers.available(country="GB")
    await async_humanwire_client.numbers.reserve(number.phone_number)
    with pytest.raises(NotFoundError):  # not the account's number
        await async_humanwire_client.sandbox.inbound_call(
            from_=HUMAN, to="+12125550199", summary="wrong number"
        )
    await async_humanwire_client.sandbox.inbound_call(
        from_=HUMAN, to=number.phone_number, summary="Please call me back about the order."
    )
    [event] = await webhook_receiver.async_wait_for("call.conversation.ended")
    assert (event.payload.from_, event.payload.to) == (HUMAN, number.phone_number)
    assert event.payload.summary == "Please call me back about the order."


def test_webhook_registration_secret_masking_and_delete(
    humanwire_client: HumanWire, human: ScriptedHuman, webhook_receiver: WebhookReceiver
) -> None:
    webhook = webhook_receiver.register(
        humanwire_client, ["message.received"], headers={"Authorization": "Bearer agent-token"}
    )
    assert webhook.secret
    assert webhook.headers == {"Authorization": "Bearer agent-token"}
    [listed] = humanwire_client.webhooks.list()
    assert listed.id == webhook.id
    assert listed.secret is None
    assert listed.headers["Authorization"] != "Bearer agent-token"  # masked when listed

    human.send_text("ping")
    [event] = webhook_receiver.wait_for("message.received")
    assert isinstance(event, MessageReceivedEvent)
    [delivery] = webhook_receiver.deliveries
    assert delivery.headers["authorization"] == "Bearer agent-token"
    assert delivery.signature_valid is True
    assert delivery.event_id

    humanwire_client.webhooks.delete(webhook.id)
    assert humanwire_client.webhooks.list() == []
    with pytest.raises(NotFoundError):
        humanwire_client.webhooks.delete(webhook.id)
    human.send_text("nobody listens")
    time.sleep(0.5)
    assert len(webhook_receiver.deliveries) == 1


def test_webhook_retries_until_the_receiver_comes_back(
    humanwire_client: HumanWire, human: ScriptedHuman, webhook_receiver: WebhookReceiver
) -> None:
    webhook_receiver.register(humanwire_client, ["message.received"])
    webhook_receiver.set_status(503)
    human.send_text("are you there?")
    deadline = time.monotonic() + 10
    while len(webhook_receiver.deliveries) < 2:
        assert time.monotonic() < deadline, webhook_receiver.deliveries
        time.sleep(0.02)
    webhook_receiver.set_status(200)
    [event] = webhook_receiver.wait_for("message.received")
    assert isinstance(event, MessageReceivedEvent)
    assert event.payload.body == "are you there?"
    attempts = webhook_receiver.deliveries
    assert [d.status for d in attempts[:2]] == [503, 503]
    assert attempts[-1].status == 200
    assert len({d.event_id for d in attempts}) == 1  # the same event, retried
    assert len(webhook_receiver.events) == 1
