"""Reserved numbers on Twilio, checked against the contract fake: the operator's pool,
reserving (webhooks pointed at the service), deleting, and buying only when allowed."""

from __future__ import annotations

import pytest
from twilio_support import POOL, SMS_FROM, Live, start_live

from humanwire import ConflictError, HumanWire, InvalidRequestError, ProviderError
from humanwire.testing.twilio import TwilioFakeServer

FOR_SALE = "+14155550177"


def test_the_pool_is_the_operators_numbers_nobody_holds(live: Live) -> None:
    offered = [n.phone_number for n in live.client.numbers.available()]
    assert offered == list(POOL)
    assert [n.area_code for n in live.client.numbers.available(country="US")] == ["415", "415"]
    assert live.client.numbers.available(country="GB") == []
    reserved = live.client.numbers.reserve(POOL[1])
    assert [n.phone_number for n in live.client.numbers.available()] == [POOL[0]]
    other = live.account("other")
    with pytest.raises(ConflictError):
        other.numbers.reserve(POOL[1])
    number = live.fake.number(POOL[1])
    assert number is not None and number.voice_url == f"{live.base_url}/providers/twilio/voice"
    assert number.status_callback == f"{live.base_url}/providers/twilio/call-status"
    live.client.numbers.delete(reserved.id)
    assert [n.phone_number for n in live.client.numbers.available()] == list(POOL)
    assert live.fake.number(POOL[1]) is not None  # a pool number stays the operator's
    assert live.fake.violations == []


def test_a_number_outside_the_pool_is_refused_without_buying(live: Live) -> None:
    live.fake.add_available(FOR_SALE)
    with pytest.raises(InvalidRequestError) as caught:
        live.client.numbers.reserve(FOR_SALE)
    assert caught.value.field == "phoneNumber"
    assert live.fake.number(FOR_SALE) is None
    assert not any(
        m == "POST" and p.endswith("/IncomingPhoneNumbers.json") for m, p, _ in live.fake.requests
    )


def test_a_pool_number_missing_from_the_twilio_account_is_a_provider_error(
    database: str, fake_twilio: TwilioFakeServer
) -> None:
    runner, key = start_live(database, fake_twilio, twilio={"numbers": ("+14155550188",)})
    try:
        client = HumanWire(api_key=key, base_url=runner.base_url, max_retries=0)
        with pytest.raises(ProviderError):
            client.numbers.reserve("+14155550188")
        assert client.numbers.list() == []  # nothing reserved
    finally:
        runner.stop()


def test_with_buy_numbers_a_number_is_bought_and_released_on_delete(
    database: str, fake_twilio: TwilioFakeServer
) -> None:
    fake = fake_twilio.fake
    fake.add_available(FOR_SALE)
    runner, key = start_live(database, fake_twilio, twilio={"buy_numbers": True})
    try:
        client = HumanWire(api_key=key, base_url=runner.base_url, max_retries=0)
        offered = [n.phone_number for n in client.numbers.available(country="US", area_code="415")]
        assert offered == [*POOL, FOR_SALE]
        reserved = client.numbers.reserve(FOR_SALE)
        bought = fake.number(FOR_SALE)
        assert bought is not None and bought.bought
        assert bought.sms_url == f"{runner.base_url}/providers/twilio/messages"
        client.numbers.delete(reserved.id)
        fake.wait_for(lambda: bought.released)
        assert fake.violations == []
    finally:
        runner.stop()


def test_a_shared_sender_listed_in_the_pool_is_never_one_accounts(
    database: str, fake_twilio: TwilioFakeServer
) -> None:
    runner, key = start_live(database, fake_twilio, twilio={"numbers": (*POOL, SMS_FROM)})
    try:
        client = HumanWire(api_key=key, base_url=runner.base_url, max_retries=0)
        assert [n.phone_number for n in client.numbers.available()] == list(POOL)
        with pytest.raises(InvalidRequestError):
            client.numbers.reserve(SMS_FROM)
    finally:
        runner.stop()


def test_releasing_a_bought_number_outlives_a_twilio_outage_and_a_restart(
    database: str, fake_twilio: TwilioFakeServer
) -> None:
    fake = fake_twilio.fake
    fake.add_available(FOR_SALE)
    runner, key = start_live(database, fake_twilio, twilio={"buy_numbers": True})
    client = HumanWire(api_key=key, base_url=runner.base_url, max_retries=0)
    reserved = client.numbers.reserve(FOR_SALE)
    bought = fake.number(FOR_SALE)
    assert bought is not None

    def deletes() -> int:
        return sum(1 for m, p, _ in fake.requests if m == "DELETE" and bought.sid in p)

    fake.fail_next(503, times=3)  # the first try (and its two quick retries) fail
    client.numbers.delete(reserved.id)  # answered at once: the release is a stored job
    fake.wait_for(lambda: deletes() == 3)
    runner.stop()  # before the job's next try
    assert not bought.released

    restarted, _key = start_live(database, fake_twilio, twilio={"buy_numbers": True})
    try:
        fake.wait_for(lambda: bought.released, timeout=10)
        assert deletes() == 4
    finally:
        restarted.stop()
