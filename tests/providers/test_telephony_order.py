"""Twilio and Telnyx configured together: ``[telephony] order`` picks who carries the
shared sends, a ``from`` or a reserved number goes out through the carrier that owns it,
the numbers come from both pools, and ``humanwire serve`` says at start where each goes.
Both contract fakes on loopback, on each store."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from telnyx_support import (
    HUMAN,
    OTHER_HUMAN,
    TELNYX_FROM,
    TELNYX_POOL,
    start_telnyx,
    telnyx_config,
    twilio_config,
)
from twilio_support import POOL, SMS_FROM, in_background

from humanwire import HumanWire, InvalidRequestError
from humanwire.server.config import ServiceConfig, channel_routes, startup_lines
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.telnyx import FakeTelnyx, TelnyxFakeServer
from humanwire.testing.twilio import FakeTwilio, TwilioFakeServer

Both = tuple[ServiceRunner, HumanWire, FakeTwilio, FakeTelnyx]


def _both(
    database: str,
    fake_telnyx: TelnyxFakeServer,
    fake_twilio: TwilioFakeServer,
    order: tuple[str, ...],
) -> Iterator[Both]:
    runner, key = start_telnyx(
        database, fake_telnyx, twilio=twilio_config(fake_twilio), telephony_order=order
    )
    number = fake_twilio.fake.number(SMS_FROM)
    assert number is not None
    number.sms_url = f"{runner.base_url}/providers/twilio/messages"
    client = HumanWire(api_key=key, base_url=runner.base_url, max_retries=0)
    try:
        yield runner, client, fake_twilio.fake, fake_telnyx.fake
        assert fake_twilio.fake.violations == [] and fake_telnyx.fake.violations == []
    finally:
        client.close()
        runner.stop()


@pytest.fixture
def twilio_first(
    database: str, fake_telnyx: TelnyxFakeServer, fake_twilio: TwilioFakeServer
) -> Iterator[Both]:
    yield from _both(database, fake_telnyx, fake_twilio, ("twilio", "telnyx"))


@pytest.fixture
def telnyx_first(
    database: str, fake_telnyx: TelnyxFakeServer, fake_twilio: TwilioFakeServer
) -> Iterator[Both]:
    yield from _both(database, fake_telnyx, fake_twilio, ("telnyx", "twilio"))


def test_the_first_carrier_of_the_order_carries_the_shared_sends(twilio_first: Both) -> None:
    _runner, client, twilio, telnyx = twilio_first
    client.messages.sms(to=HUMAN, message="Via the first", follow_up_time=60)
    assert [m.from_ for m in twilio.sent_to(HUMAN)] == [SMS_FROM]
    assert telnyx.sent_to(HUMAN) == []


def test_the_order_reversed_puts_telnyx_first(telnyx_first: Both) -> None:
    _runner, client, twilio, telnyx = telnyx_first
    client.messages.sms(to=HUMAN, message="Via Telnyx", follow_up_time=60)
    assert [m.from_ for m in telnyx.sent_to(HUMAN)] == [TELNYX_FROM]
    assert twilio.sent_to(HUMAN) == []


def test_a_from_the_second_carrier_owns_goes_out_through_it_and_the_reply_returns(
    twilio_first: Both,
) -> None:
    _runner, client, twilio, telnyx = twilio_first

    def reply() -> None:
        telnyx.wait_for(lambda: telnyx.sent_to(HUMAN), timeout=10)
        telnyx.send_inbound(HUMAN, TELNYX_FROM, "Yes via Telnyx")

    replied = in_background(reply)
    answer = client.messages.sms(to=HUMAN, message="Which?", from_=TELNYX_FROM, wait_time=10)
    replied()
    assert answer.reply == "Yes via Telnyx"
    assert [m.from_ for m in telnyx.sent_to(HUMAN)] == [TELNYX_FROM]
    assert twilio.sent_to(HUMAN) == []
    with pytest.raises(InvalidRequestError) as refused:  # nobody's number
        client.messages.sms(to=HUMAN, message="x", from_="+13125550999")
    assert refused.value.field == "from"


def test_a_reserved_number_goes_out_through_the_carrier_whose_pool_it_came_from(
    twilio_first: Both,
) -> None:
    runner, client, twilio, telnyx = twilio_first
    offered = {n.phone_number for n in client.numbers.available()}
    assert offered == {*POOL, *TELNYX_POOL}
    client.numbers.reserve(TELNYX_POOL[0])
    client.messages.sms(to=HUMAN, message="From my Telnyx number", follow_up_time=60)
    assert [m.from_ for m in telnyx.sent_to(HUMAN)] == [TELNYX_POOL[0]]
    reserved = telnyx.number(TELNYX_POOL[0])
    assert reserved is not None and reserved.connection_id == telnyx.connection_id
    assert reserved.messaging_profile_id == telnyx.messaging_profile_id
    # Another account reserves one of Twilio's: its texts go through Twilio.
    other = HumanWire(api_key=runner.create_account("other"), base_url=runner.base_url)
    try:
        other.numbers.reserve(POOL[0])
        other.messages.sms(to=OTHER_HUMAN, message="From my Twilio number", follow_up_time=60)
    finally:
        other.close()
    assert [m.from_ for m in twilio.sent_to(OTHER_HUMAN)] == [POOL[0]]
    assert telnyx.sent_to(OTHER_HUMAN) == []


def test_a_number_bought_from_telnyx_stays_telnyxs(
    database: str, fake_telnyx: TelnyxFakeServer, fake_twilio: TwilioFakeServer
) -> None:
    """Twilio first but only Telnyx may buy: the bought number is Telnyx's, its texts go
    through Telnyx, and deleting it releases it at Telnyx."""
    for_sale = "+13125550188"
    fake_telnyx.fake.add_available(for_sale)
    runner, key = start_telnyx(
        database,
        fake_telnyx,
        telnyx={"buy_numbers": True},
        twilio=twilio_config(fake_twilio),
    )
    client = HumanWire(api_key=key, base_url=runner.base_url, max_retries=0)
    try:
        offered = [n.phone_number for n in client.numbers.available(country="US", area_code="312")]
        assert offered == [*TELNYX_POOL, for_sale]
        reserved = client.numbers.reserve(for_sale)
        bought = fake_telnyx.fake.number(for_sale)
        assert bought is not None and bought.bought
        client.messages.sms(to=HUMAN, message="From the bought one", follow_up_time=60)
        assert [m.from_ for m in fake_telnyx.fake.sent_to(HUMAN)] == [for_sale]
        client.numbers.delete(reserved.id)
        fake_telnyx.fake.wait_for(lambda: bought.released)
        assert fake_telnyx.fake.violations == [] and fake_twilio.fake.violations == []
    finally:
        client.close()
        runner.stop()


def test_serve_says_at_start_which_channel_goes_where(
    fake_telnyx: TelnyxFakeServer, fake_twilio: TwilioFakeServer
) -> None:
    config = ServiceConfig(
        twilio=twilio_config(fake_twilio),
        telnyx=telnyx_config(fake_telnyx),
        voice_model="openai:gpt-4o-mini",
    )
    assert channel_routes(config) == {
        "sms": "twilio",
        "whatsapp": "sandbox",
        "slack": "sandbox",
        "call": "twilio",
        "email": "sandbox",
    }
    lines = [" ".join(line.split()) for line in startup_lines(config)]
    assert any(line.startswith(f"sms → Twilio (from {SMS_FROM}") for line in lines), lines
    assert f"sms → Telnyx for its own numbers ({TELNYX_FROM})" in lines
    assert f"call → Telnyx for its own numbers ({TELNYX_FROM})" in lines
    assert "numbers Telnyx (pool of 2; buying off)" in lines
    reversed_ = replace(config, telephony_order=("telnyx", "twilio"))
    assert channel_routes(reversed_)["sms"] == channel_routes(reversed_)["call"] == "telnyx"
    lines = [" ".join(line.split()) for line in startup_lines(reversed_)]
    assert any(line.startswith(f"sms → Telnyx (from {TELNYX_FROM}") for line in lines), lines
    assert f"sms → Twilio for its own numbers ({SMS_FROM})" in lines
    assert fake_telnyx.fake.api_key not in "\n".join(lines)


def test_the_carriers_are_given_the_inbound_port_never_the_engine(twilio_first: Both) -> None:
    # The wiring registers the router on sms (the providers do not register themselves),
    # and each carrier and its calls hold the port only.
    from humanwire.server.delivery.telephony import TelephonyRouter
    from humanwire.server.engine.human import EngineProviderPort

    runner, _client, _twilio, _telnyx = twilio_first
    router = runner.engine.providers["sms"]
    assert isinstance(router, TelephonyRouter)
    assert [carrier.name for carrier in router.carriers] == ["twilio", "telnyx"]
    for carrier in router.carriers:
        held: Any = carrier
        assert isinstance(held.inbound, EngineProviderPort)
        assert isinstance(held.voice.inbound, EngineProviderPort)
        assert not hasattr(held, "engine") and not hasattr(held.voice, "engine")
