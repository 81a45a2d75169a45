"""Delivery through a provider other than the sandbox: the status it reports, a failure
reported later ending a held wait with the "could not be delivered" text, refusals at
send time mapped to 400 / 502 with nothing recorded as sent. The provider here is a
scripted stand-in for the engine's rules; Twilio's own path is proved against its
contract fake in tests/providers."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest
from engine_support import HUMAN, account, engine, eventually, sms, sms_form

from humanwire.server.delivery import (
    Outbound,
    ProviderFailure,
    RecipientUnreachable,
    Sent,
)
from humanwire.server.engine import Account, Engine
from humanwire.server.errors import InvalidToNumber, ProviderError
from humanwire.types import UNDELIVERED_TEXT

__all__ = ["account", "engine"]

CARRIER_NUMBER = "+14155550000"


class ScriptedCarrier:
    """Answers each delivery with the next scripted outcome: a status, or an exception."""

    name = "scripted"
    senders: Mapping[str, str] = {"sms": CARRIER_NUMBER, "call": CARRIER_NUMBER}

    def __init__(self, *outcomes: str | Exception) -> None:
        self.outcomes = list(outcomes)
        self.items: list[Outbound] = []

    async def deliver(self, item: Outbound) -> Sent:
        self.items.append(item)
        outcome = self.outcomes.pop(0) if self.outcomes else "queued"
        if isinstance(outcome, Exception):
            raise outcome
        return Sent(ref=f"SM{len(self.items)}", status=outcome)  # type: ignore[arg-type]

    def hang_up(self, ref: str) -> None:
        raise AssertionError("no call goes through this carrier")


def carried(engine: Engine, *outcomes: str | Exception) -> ScriptedCarrier:
    carrier = ScriptedCarrier(*outcomes)
    engine.use_provider(carrier, ["sms"])
    return carrier


LONG_WAIT = 3600.0
"""A held wait's ``waitTime`` in the failure tests: one that ends within ``ENDS_WITHIN``
(generous for a loaded machine) was ended by the failure, not by its time."""
ENDS_WITHIN = 60.0


async def _until_held(engine: Engine) -> None:
    """Until the send waits, its delivery stored: a status reported then comes later
    than the provider's answer (one that overtakes it is another path)."""
    await eventually(lambda: engine.held_waits == 1, timeout=ENDS_WITHIN)


async def test_the_shared_sender_is_the_providers(engine: Engine, account: Account) -> None:
    carrier = carried(engine)
    sent = await engine.send_message(account, sms(follow_up_time=5))
    assert carrier.items[0].from_addr == CARRIER_NUMBER
    assert sent.delivery_status == "queued"
    status = await engine.interaction_status(account, sent.interaction_id)
    assert status.delivery_status == "queued"


async def test_statuses_only_move_forward(engine: Engine, account: Account) -> None:
    carried(engine)
    sent = await engine.send_message(account, sms(follow_up_time=5))
    await engine.delivery_status("SM1", "delivered")
    await engine.delivery_status("SM1", "sent")  # late, out of order
    status = await engine.interaction_status(account, sent.interaction_id)
    assert status.delivery_status == "delivered"
    assert status.status == "pending"  # still listening for a reply


async def test_a_failure_reported_later_ends_the_held_wait_at_once(
    engine: Engine, account: Account
) -> None:
    carried(engine)
    held = asyncio.create_task(engine.send_message(account, sms(wait_time=LONG_WAIT)))
    await _until_held(engine)
    await engine.delivery_status("SM1", "undelivered")
    answered = await asyncio.wait_for(held, ENDS_WITHIN)
    assert answered.responded is False
    assert answered.response == UNDELIVERED_TEXT
    assert answered.delivery_status == "failed"
    status = await engine.interaction_status(account, answered.interaction_id)
    assert status.status == "ended" and status.delivery_status == "undelivered"


async def test_a_form_whose_link_was_not_delivered_says_so(
    engine: Engine, account: Account
) -> None:
    carried(engine)
    held = asyncio.create_task(engine.send_form(account, sms_form(wait_time=LONG_WAIT)))
    await _until_held(engine)
    await engine.delivery_status("SM1", "failed")
    answered = await asyncio.wait_for(held, ENDS_WITHIN)
    assert (answered.responded, answered.response) == (False, UNDELIVERED_TEXT)
    assert answered.text == UNDELIVERED_TEXT


async def test_a_status_that_overtakes_the_providers_answer_is_applied(
    engine: Engine, account: Account
) -> None:
    carried(engine)
    assert await engine.delivery_status("SM1", "delivered") is None  # not stored yet
    assert await engine.delivery_status("SM1", "sent") is None  # late and out of order
    sent = await engine.send_message(account, sms(follow_up_time=5))
    status = await engine.interaction_status(account, sent.interaction_id)
    assert status.delivery_status == "delivered"
    assert await engine.store.provider_states("early-delivery-status") == []  # applied, gone


async def test_an_unknown_ref_or_status_changes_nothing(engine: Engine, account: Account) -> None:
    carried(engine)
    sent = await engine.send_message(account, sms(follow_up_time=5))
    assert await engine.delivery_status("SM1", "receiving") is None
    assert await engine.delivery_status("SMunknown", "failed") is None
    status = await engine.interaction_status(account, sent.interaction_id)
    assert (status.status, status.delivery_status) == ("pending", "queued")


async def test_an_unreachable_recipient_is_invalid_to_number_and_nothing_is_sent(
    engine: Engine, account: Account
) -> None:
    carried(engine, RecipientUnreachable("Twilio cannot reach this number (21614)"))
    with pytest.raises(InvalidToNumber) as caught:
        await engine.send_message(account, sms(wait_time=30))
    assert caught.value.field == "to"
    [record] = await engine.store.list_interactions(account.id, 10)
    assert record.status == "ended" and record.outcome == "failed"
    assert engine.held_waits == 0


async def test_a_failing_provider_is_a_provider_error_with_retry_after(
    engine: Engine, account: Account
) -> None:
    carrier = carried(engine, ProviderFailure("Twilio answered 503", retry_after=7))
    with pytest.raises(ProviderError) as caught:
        await engine.send_message(account, sms(wait_time=30))
    assert caught.value.status == 502 and caught.value.retry_after == 7
    # The next send goes through: nothing of the failed one stays open.
    sent = await engine.send_message(account, sms("again?", to=HUMAN, follow_up_time=5))
    assert sent.delivery_status == "queued" and len(carrier.items) == 2
