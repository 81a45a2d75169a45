"""Reserved numbers on Telnyx alone, over loopback against the contract fake: the pool,
a pool number pointed at the TeXML application and the messaging profile, one missing
from the account, buying and releasing (which outlives a Telnyx outage)."""

from __future__ import annotations

import pytest
from telnyx_support import TELNYX_FROM, TELNYX_POOL, TelnyxLive, start_telnyx

from humanwire import HumanWire, InvalidRequestError, ProviderError
from humanwire.testing.telnyx import TelnyxFakeServer

FOR_SALE = "+13125550188"


def test_the_pool_is_the_operators_telnyx_numbers(telnyx_live: TelnyxLive) -> None:
    live = telnyx_live
    assert [n.phone_number for n in live.client.numbers.available()] == list(TELNYX_POOL)
    live.client.numbers.reserve(TELNYX_POOL[1])
    number = live.fake.number(TELNYX_POOL[1])
    assert number is not None and number.connection_id == live.fake.connection_id
    assert number.messaging_profile_id == live.fake.messaging_profile_id
    assert [n.phone_number for n in live.client.numbers.available()] == [TELNYX_POOL[0]]
    with pytest.raises(InvalidRequestError):  # the shared number is never one account's
        live.client.numbers.reserve(TELNYX_FROM)
    assert live.fake.violations == []


def test_a_pool_number_missing_from_the_account_is_a_provider_error(
    database: str, fake_telnyx: TelnyxFakeServer
) -> None:
    runner, key = start_telnyx(database, fake_telnyx, telnyx={"numbers": ("+13125550199",)})
    client = HumanWire(api_key=key, base_url=runner.base_url, max_retries=0)
    try:
        with pytest.raises(ProviderError) as failed:
            client.numbers.reserve("+13125550199")
        assert "not in the Telnyx account" in str(failed.value)
        assert client.numbers.list() == []
    finally:
        client.close()
        runner.stop()


def test_a_bought_number_is_released_after_a_telnyx_outage_and_a_restart(
    database: str, fake_telnyx: TelnyxFakeServer
) -> None:
    fake = fake_telnyx.fake
    fake.add_available(FOR_SALE)
    runner, key = start_telnyx(database, fake_telnyx, telnyx={"buy_numbers": True})
    client = HumanWire(api_key=key, base_url=runner.base_url, max_retries=0)
    try:
        reserved = client.numbers.reserve(FOR_SALE)
        bought = fake.number(FOR_SALE)
        assert bought is not None and bought.bought
        for _ in range(3):
            fake.fail_next(503)  # the release's first try and its quick retries
        client.numbers.delete(reserved.id)
        fake.wait_for(lambda: not fake._fail_next, timeout=10)
    finally:
        client.close()
        runner.stop()
    assert not bought.released
    runner, _key = start_telnyx(database, fake_telnyx, telnyx={"buy_numbers": True})
    try:
        fake.wait_for(lambda: bought.released, timeout=10)  # the stored job, picked up
    finally:
        runner.stop()
    assert fake.violations == []
