"""Accounts: isolation, idempotent sends, the rate limit and spam suspension, end to end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from e2e_support import HUMAN, StartService

from humanwire import AsyncHumanWire, HumanWire
from humanwire.errors import (
    AccountSuspendedError,
    AuthenticationError,
    ConflictError,
    NotFoundError,
    RateLimitError,
)
from humanwire.server.config import SHARED_SMS_NUMBER
from humanwire.testing import RunningService, WebhookReceiver


@pytest.fixture
def other_client(humanwire_service: RunningService) -> Iterator[HumanWire]:
    key = humanwire_service.create_account("someone else")
    with HumanWire(api_key=key, base_url=humanwire_service.base_url) as client:
        yield client


def test_accounts_never_see_each_other(
    humanwire_client: HumanWire, other_client: HumanWire, webhook_receiver: WebhookReceiver
) -> None:
    mine = humanwire_client
    webhook = webhook_receiver.register(mine, ["message.received"])
    card = mine.channels.create(type="call", to=HUMAN)
    [number, *_] = mine.numbers.available(country="US")
    reserved = mine.numbers.reserve(number.phone_number)
    sent = mine.messages.sms(message="private", to=HUMAN, follow_up_time=60)
    call = mine.calls.create(to=HUMAN, prompt="private call")

    theirs = other_client
    with pytest.raises(NotFoundError):
        theirs.interactions.status(sent.interaction_id)
    with pytest.raises(NotFoundError):
        theirs.channels.get(card.id)
    with pytest.raises(NotFoundError):
        theirs.messages.channel(card.id, message="hijack")
    with pytest.raises(NotFoundError):
        theirs.webhooks.delete(webhook.id)
    with pytest.raises(NotFoundError):
        theirs.numbers.delete(reserved.id)
    with pytest.raises(NotFoundError):
        theirs.channels.delete(card.id)
    with pytest.raises(NotFoundError):
        theirs.sandbox.end_call(call.interaction_id, outcome="completed", summary="fake")
    with pytest.raises(ConflictError):  # a number is one account's at a time
        theirs.numbers.reserve(number.phone_number)
    assert theirs.webhooks.list() == []
    assert theirs.channels.list() == []
    assert theirs.numbers.list() == []
    assert theirs.sandbox.deliveries() == []
    assert theirs.sandbox.deliveries(interaction_id=sent.interaction_id) == []

    # The other account's "human" texting the shared number answers nothing of mine.
    theirs.sandbox.reply(channel="sms", from_=HUMAN, to=SHARED_SMS_NUMBER, body="not yours")
    assert mine.interactions.status(sent.interaction_id).status == "pending"
    assert mine.interactions.status(call.interaction_id).status == "pending"
    assert [c.id for c in mine.channels.list()] == [card.id]
    assert mine.numbers.list() == [reserved]
    assert [w.id for w in mine.webhooks.list()] == [webhook.id]
    assert webhook_receiver.deliveries == []


def test_a_wrong_key_is_refused(humanwire_service: RunningService) -> None:
    with (
        HumanWire(api_key="hw_not-a-key", base_url=humanwire_service.base_url) as client,
        pytest.raises(AuthenticationError) as raised,
    ):
        client.numbers.list()
    assert raised.value.status_code == 401


async def test_idempotency_key_sends_once_async(async_humanwire_client: AsyncHumanWire) -> None:
    client = async_humanwire_client
    first = await client.messages.sms(message="Only once", to=HUMAN, idempotency_key="k-1")
    again = await client.messages.sms(message="Only once", to=HUMAN, idempotency_key="k-1")
    assert again.interaction_id == first.interaction_id
    assert len(await client.sandbox.deliveries()) == 1
    with pytest.raises(ConflictError):
        await client.messages.sms(message="Something else", to=HUMAN, idempotency_key="k-1")
    other = await client.messages.sms(message="Only once", to=HUMAN)  # a fresh key each call
    assert other.interaction_id != first.interaction_id
    assert len(await client.sandbox.deliveries()) == 2


def test_rate_limit(start_service: StartService) -> None:
    service = start_service(rate_limit_requests=5, rate_limit_window=60.0)
    key = service.create_account("busy")
    with HumanWire(api_key=key, base_url=service.base_url, max_retries=0) as client:
        for _ in range(5):
            assert client.numbers.list() == []
        with pytest.raises(RateLimitError) as raised:
            client.numbers.list()
    assert raised.value.retry_after is not None and raised.value.retry_after >= 1
    fresh = service.create_account("calm")
    with HumanWire(api_key=fresh, base_url=service.base_url, max_retries=0) as client:
        assert client.numbers.list() == []


def test_spam_suspends_the_account(start_service: StartService) -> None:
    service = start_service(spam_recipients=3, spam_window=60.0)
    key = service.create_account("spammer")
    recipients = ["+12025550101", "+12025550102", "+12025550103", "+12025550104"]
    with HumanWire(api_key=key, base_url=service.base_url) as client:
        with pytest.raises(AccountSuspendedError):
            for to in recipients:
                client.messages.sms(message="BIG SALE! 90% off today only", to=to)
        with pytest.raises(AccountSuspendedError):
            client.numbers.list()
        with pytest.raises(AccountSuspendedError):
            client.sandbox.deliveries()
    honest = service.create_account("honest")
    with HumanWire(api_key=honest, base_url=service.base_url) as client:
        assert client.messages.sms(message="BIG SALE! 90% off today only", to=HUMAN).status
