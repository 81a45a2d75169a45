"""Reserved numbers: the pool, one per account, taken numbers, deletion, and sending
from the reserved number."""

from __future__ import annotations

import asyncio

import phonenumbers
import pytest
from engine_support import HUMAN, account, engine, next_delivery, reply, sms

from humanwire.server.config import (
    DEFAULT_HUMAN_PHONE,
    SHARED_SMS_NUMBER,
    SHARED_WHATSAPP_NUMBER,
)
from humanwire.server.engine import Account, Engine
from humanwire.server.errors import Conflict, InvalidRequest, InvalidToNumber, NotFound
from humanwire.server.numbers import pool

__all__ = ["account", "engine"]

NUMBER = "+12125550142"


def test_every_pool_number_is_valid_and_none_is_reserved_by_the_service() -> None:
    numbers = pool()
    assert len(numbers) > 1000
    for entry in numbers:
        assert phonenumbers.is_valid_number(phonenumbers.parse(entry.phone_number, None))
    phones = {entry.phone_number for entry in numbers}
    assert not phones & {DEFAULT_HUMAN_PHONE, SHARED_SMS_NUMBER, SHARED_WHATSAPP_NUMBER}
    assert {entry.country for entry in numbers} == {"US", "GB"}
    assert any(p.startswith("+44207946") for p in phones)
    assert len({entry.area_code for entry in numbers if entry.country == "US"}) >= 5


async def test_available_filters_and_excludes_reserved(engine: Engine, account: Account) -> None:
    gb = await engine.numbers.available(country="GB")
    assert gb and all(n.country == "GB" and n.area_code == "20" for n in gb)
    by_area = await engine.numbers.available(country="US", area_code="212")
    assert by_area and all(n.phone_number.startswith("+1212555") for n in by_area)
    assert await engine.numbers.available(area_code="999") == []
    await engine.numbers.reserve_from_pool(account, NUMBER)
    assert NUMBER not in {n.phone_number for n in await engine.numbers.available(area_code="212")}
    with pytest.raises(InvalidRequest) as caught:
        await engine.numbers.available(country="FR")
    assert caught.value.field == "country"


async def test_one_number_per_account_and_taken_numbers(engine: Engine, account: Account) -> None:
    reserved = await engine.numbers.reserve_from_pool(account, NUMBER)
    assert reserved.phone_number == NUMBER
    assert reserved.created_at == reserved.updated_at
    assert await engine.numbers.of(account) == [reserved]
    with pytest.raises(Conflict):
        await engine.numbers.reserve_from_pool(account, "+12125550143")
    with pytest.raises(Conflict):
        await engine.numbers.reserve_from_pool(account, NUMBER)
    other, _ = await engine.accounts.create("other")
    with pytest.raises(Conflict):
        await engine.numbers.reserve_from_pool(other, NUMBER)
    assert await engine.numbers.of(other) == []


async def test_numbers_outside_the_pool_or_malformed_are_refused(
    engine: Engine, account: Account
) -> None:
    with pytest.raises(InvalidRequest) as outside:
        # valid, but not in the pool
        await engine.numbers.reserve_from_pool(account, "+14155552671")
    assert (outside.value.code, outside.value.field) == ("invalid_request", "phoneNumber")
    with pytest.raises(InvalidRequest):
        await engine.numbers.reserve_from_pool(account, DEFAULT_HUMAN_PHONE)
    with pytest.raises(InvalidToNumber) as malformed:
        await engine.numbers.reserve_from_pool(account, "12345")
    assert malformed.value.field == "phoneNumber"
    assert await engine.numbers.of(account) == []


async def test_delete_frees_the_number_for_others(engine: Engine, account: Account) -> None:
    reserved = await engine.numbers.reserve_from_pool(account, NUMBER)
    other, _ = await engine.accounts.create("other")
    with pytest.raises(NotFound):
        await engine.numbers.delete(other, reserved.id)
    await engine.numbers.delete(account, reserved.id)
    assert await engine.numbers.of(account) == []
    with pytest.raises(NotFound):
        await engine.numbers.delete(account, reserved.id)
    assert (await engine.numbers.reserve_from_pool(other, NUMBER)).phone_number == NUMBER


async def test_texts_go_out_from_the_reserved_number_and_replies_match_it(
    engine: Engine, account: Account
) -> None:
    await engine.numbers.reserve_from_pool(account, NUMBER)
    held = asyncio.create_task(engine.send_message(account, sms(wait_time=5)))
    delivery = await next_delivery(engine, account)
    assert delivery.from_ == NUMBER
    # A reply to the shared number is not a reply to this conversation.
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "wrong line"))
    await asyncio.sleep(0.02)
    assert not held.done()
    await engine.sandbox_reply(account, reply("sms", HUMAN, NUMBER, "right line"))
    assert (await held).reply == "right line"


async def test_sms_from_must_be_the_accounts_number(engine: Engine, account: Account) -> None:
    request = sms().model_copy(update={"from_": NUMBER})
    with pytest.raises(InvalidRequest) as caught:
        await engine.send_message(account, request)
    assert caught.value.field == "from"
    assert await engine.list_sandbox_deliveries(account) == []
    await engine.numbers.reserve_from_pool(account, NUMBER)
    await engine.send_message(account, request)
    assert (await engine.list_sandbox_deliveries(account))[0].from_ == NUMBER
