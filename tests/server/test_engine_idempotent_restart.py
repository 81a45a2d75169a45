"""A retry after a restart never reaches the human twice.

The service is closed while an idempotent send is held (or after it sent but before its
result was stored); a retry with the same ``Idempotency-Key`` and body re-attaches to
the interaction the first run created: nothing is delivered again, and the retry gets
what the interaction becomes (or became), in the shape the first run would have used.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from engine_support import (
    HUMAN,
    SLACK_HUMAN,
    fast_config,
    next_delivery,
    reply,
    slack,
    sms,
    sms_form,
    whatsapp,
)
from pydantic import BaseModel

from humanwire.server.config import (
    SHARED_SLACK_WORKSPACE,
    SHARED_SMS_NUMBER,
    SHARED_WHATSAPP_NUMBER,
)
from humanwire.server.delivery import Outbound, Provider, Sent
from humanwire.server.engine import Account, Engine, SendContext
from humanwire.server.errors import CallTimeout, Conflict, ServiceUnavailable
from humanwire.types import (
    CallRequest,
    ChannelCardCreateRequest,
    ChannelMessageRequest,
    PhoneCallRequest,
    SandboxCallOutcomeRequest,
    SandboxDelivery,
    SandboxReplyRequest,
)

KEY = "retry-key-1"
FINGERPRINT = "POST /messages/sms 0f0f"
NO_RESPONSE = "Human did not respond. Continue where you left off."

Send = Callable[[Engine, Account, SendContext], Awaitable[BaseModel]]
"""A send made with the context ``engine.idempotency.run`` gives its run (the key's link)."""


def encode(model: BaseModel) -> bytes:
    """As the routes encode a response (by alias, ``None`` left out)."""
    return model.model_dump_json(by_alias=True, exclude_none=True).encode()


class Service:
    """One database (either store), an engine on it, closed and opened again like a
    restart."""

    def __init__(self, tmp_path: Path, database: str, **changes: Any) -> None:
        self.config = fast_config(tmp_path, db_path=database, **changes)
        self.engine = Engine(self.config)
        self.runs = 0

    async def restart(self) -> None:
        await self.engine.close()
        self.engine = Engine(self.config)
        await self.engine.start()

    def submit(
        self, account: Account, send: Send, *, key: str = KEY, crash_after_send: bool = False
    ) -> asyncio.Task[tuple[int, bytes]]:
        """The request as the HTTP layer runs it: through ``engine.idempotency.run``. With
        ``crash_after_send`` the run fails after the send returned, so no result is
        stored (what a crash between sending and answering leaves behind)."""
        engine = self.engine

        async def run(context: SendContext) -> tuple[int, bytes]:
            self.runs += 1
            body = encode(await send(engine, account, context))
            if crash_after_send:
                raise RuntimeError("the service went down before answering")
            return 200, body

        return asyncio.create_task(engine.idempotency.run(account, key, FINGERPRINT, run))

    async def deliveries(self, account: Account) -> int:
        return len(await self.engine.list_sandbox_deliveries(account))

    async def held(self, count: int = 1) -> None:
        deadline = time.monotonic() + 3
        while self.engine.held_waits < count:
            assert time.monotonic() < deadline, "the retry is not held"
            await asyncio.sleep(0.005)


@pytest.fixture
async def service(tmp_path: Path, database: str) -> AsyncIterator[Service]:
    instance = Service(tmp_path, database, call_wait_limit=30.0)
    await instance.engine.start()
    try:
        yield instance
    finally:
        await instance.engine.close()


async def cut_off(first: asyncio.Task[tuple[int, bytes]]) -> None:
    """The first request, after the restart: answered 503 ``unavailable`` by the closing
    engine (a client retries it), nothing stored."""
    await asyncio.wait({first}, timeout=2)
    assert first.done()
    assert isinstance(first.exception(), ServiceUnavailable), first


async def sent(engine: Engine, account: Account) -> tuple[SandboxDelivery, str]:
    """The one delivery of the first run, and its interaction."""
    delivery = await next_delivery(engine, account)
    assert delivery.interaction_id is not None
    return delivery, delivery.interaction_id


def body_of(result: tuple[int, bytes]) -> dict[str, Any]:
    status, body = result
    assert status == 200
    data: dict[str, Any] = json.loads(body)
    return data


def answer(channel: str, interaction_id: str, text: str) -> SandboxReplyRequest:
    sender = {"sms": HUMAN, "whatsapp": HUMAN, "slack": SLACK_HUMAN}[channel]
    shared = {
        "sms": SHARED_SMS_NUMBER,
        "whatsapp": SHARED_WHATSAPP_NUMBER,
        "slack": SHARED_SLACK_WORKSPACE,
    }[channel]
    # slack: the reply is in the message's thread; sms / whatsapp match by number pair.
    thread = interaction_id if channel == "slack" else None
    return reply(channel, sender, shared, text, thread)


MESSAGE_SENDS: dict[str, Send] = {
    "sms": lambda engine, account, context: engine.send_message(account, sms(wait_time=5), context),
    "whatsapp": lambda engine, account, context: engine.send_message(
        account, whatsapp(wait_time=5), context
    ),
    "slack": lambda engine, account, context: engine.send_message(
        account, slack(wait_time=5), context
    ),
}


@pytest.mark.parametrize("channel", sorted(MESSAGE_SENDS))
async def test_held_message_retry_after_restart_gets_the_reply_sent_once(
    service: Service, channel: str
) -> None:
    account, _ = await service.engine.accounts.create()
    send = MESSAGE_SENDS[channel]
    first = service.submit(account, send)
    _delivery, interaction_id = await sent(service.engine, account)
    await service.restart()
    await cut_off(first)

    retry = service.submit(account, send)
    await service.held()
    assert await service.deliveries(account) == 1  # re-attached, not sent again
    await service.engine.sandbox_reply(account, answer(channel, interaction_id, "yes"))
    assert body_of(await asyncio.wait_for(retry, 2)) == {
        "interactionId": interaction_id,
        "status": "ended",
        "responded": True,
        "response": "Human response: yes",
        "reply": "yes",
        "deliveryStatus": "delivered",
    }
    assert await service.deliveries(account) == 1
    # The held retry got the reply, so no webhook event carries it.
    assert await service.engine.webhooks.events(account) == []
    # The retry's result is stored: a third try replays it without running.
    runs = service.runs
    replayed = await service.submit(account, send)
    assert body_of(replayed)["response"] == "Human response: yes"
    assert service.runs == runs


async def test_retry_waits_only_for_what_is_left_of_the_window(service: Service) -> None:
    account, _ = await service.engine.accounts.create()
    started = time.monotonic()

    def send(engine: Engine, account: Account, context: SendContext) -> Awaitable[BaseModel]:
        return engine.send_message(account, sms(wait_time=1.0), context)

    first = service.submit(account, send)
    await next_delivery(service.engine, account)
    await service.restart()
    await cut_off(first)
    await asyncio.sleep(max(0.0, 0.6 - (time.monotonic() - started)))
    result = body_of(await asyncio.wait_for(service.submit(account, send), 3))
    elapsed = time.monotonic() - started
    assert result["responded"] is False
    assert result["response"] == NO_RESPONSE
    assert result["status"] == "ended"  # no follow-up window: the interaction is over
    # The first window (1 s from the first send), not a fresh one from the retry (1.6 s+).
    assert 0.95 <= elapsed < 1.45
    assert await service.deliveries(account) == 1


async def test_reply_that_came_while_away_is_returned_to_the_retry(service: Service) -> None:
    account, _ = await service.engine.accounts.create()

    def send(engine: Engine, account: Account, context: SendContext) -> Awaitable[BaseModel]:
        return engine.send_message(account, sms(wait_time=5, follow_up_time=30), context)

    first = service.submit(account, send)
    _delivery, interaction_id = await sent(service.engine, account)
    await service.restart()
    await cut_off(first)
    # No request holds the interaction now: the reply ends it (and goes to webhooks).
    await service.engine.sandbox_reply(account, answer("sms", interaction_id, "ok"))
    result = body_of(await asyncio.wait_for(service.submit(account, send), 1))
    assert result["responded"] is True
    assert result["response"] == "Human response: ok"
    assert result["interactionId"] == interaction_id
    assert await service.deliveries(account) == 1


async def test_retry_after_the_window_passed_gets_the_no_response_text(service: Service) -> None:
    account, _ = await service.engine.accounts.create()

    def send(engine: Engine, account: Account, context: SendContext) -> Awaitable[BaseModel]:
        return engine.send_message(account, sms(wait_time=0.2, follow_up_time=30), context)

    first = service.submit(account, send)
    _delivery, interaction_id = await sent(service.engine, account)
    await service.restart()
    await cut_off(first)
    await asyncio.sleep(0.3)
    result = body_of(await asyncio.wait_for(service.submit(account, send), 1))
    assert result == {
        "interactionId": interaction_id,
        "status": "pending",  # still listening for the follow-up window
        "responded": False,
        "response": NO_RESPONSE,
        "deliveryStatus": "delivered",
    }
    assert await service.deliveries(account) == 1


async def test_same_key_with_another_body_after_a_restart_is_a_conflict(
    service: Service,
) -> None:
    account, _ = await service.engine.accounts.create()
    first = service.submit(account, MESSAGE_SENDS["sms"])
    await next_delivery(service.engine, account)
    await service.restart()
    await cut_off(first)

    async def run(context: SendContext) -> tuple[int, bytes]:
        raise AssertionError("must not run")

    with pytest.raises(Conflict):
        await service.engine.idempotency.run(account, KEY, "POST /messages/sms another-body", run)
    assert await service.deliveries(account) == 1


async def test_held_form_retry_gets_the_submission_and_the_same_link(service: Service) -> None:
    account, _ = await service.engine.accounts.create()

    def send(engine: Engine, account: Account, context: SendContext) -> Awaitable[BaseModel]:
        return engine.send_form(account, sms_form(wait_time=5), context)

    first = service.submit(account, send)
    delivery, interaction_id = await sent(service.engine, account)
    assert delivery.form_url is not None
    await service.restart()
    await cut_off(first)

    retry = service.submit(account, send)
    await service.held()
    token = delivery.form_url.rsplit("/", 1)[1]
    await service.engine.submit_form(token, {"name": "Ada", "ok": "on"})
    assert body_of(await asyncio.wait_for(retry, 2)) == {
        "interactionId": interaction_id,
        "status": "ended",
        "formUrl": delivery.form_url,
        "responded": True,
        "values": {"name": "Ada", "ok": "true"},
        "content": "Name: Ada\nApprove: Yes",
        "deliveryStatus": "delivered",
    }
    assert await service.deliveries(account) == 1


async def test_follow_up_only_form_sent_but_unanswered_returns_its_link(
    service: Service,
) -> None:
    account, _ = await service.engine.accounts.create()

    def send(engine: Engine, account: Account, context: SendContext) -> Awaitable[BaseModel]:
        return engine.send_form(account, sms_form(follow_up_time=30), context)

    with pytest.raises(RuntimeError):
        await service.submit(account, send, crash_after_send=True)
    delivery, interaction_id = await sent(service.engine, account)
    await service.restart()
    assert body_of(await service.submit(account, send)) == {
        "interactionId": interaction_id,
        "status": "pending",
        "formUrl": delivery.form_url,
        "deliveryStatus": "delivered",
    }
    assert await service.deliveries(account) == 1


def place_call(wait: bool) -> Send:
    request = CallRequest.model_validate(
        {"prompt": "Ask whether the deploy may go ahead.", "to": HUMAN, "waitForCallEnd": wait}
    )
    return lambda engine, account, context: engine.place_call(account, request, context)


async def test_call_waiting_for_its_end_is_not_placed_twice(service: Service) -> None:
    account, _ = await service.engine.accounts.create()
    first = service.submit(account, place_call(True))
    delivery, interaction_id = await sent(service.engine, account)
    assert delivery.kind == "call"
    await service.restart()
    await cut_off(first)

    retry = service.submit(account, place_call(True))
    await service.held()
    ended = SandboxCallOutcomeRequest.model_validate(
        {"outcome": "completed", "summary": "Go ahead."}
    )
    await service.engine.sandbox_end_call(account, interaction_id, ended)
    result = body_of(await asyncio.wait_for(retry, 2))
    assert result["interactionId"] == interaction_id
    assert (result["status"], result["outcome"], result["summary"]) == (
        "ended",
        "completed",
        "Go ahead.",
    )
    assert await service.deliveries(account) == 1


async def test_call_not_waited_for_returns_its_interaction_once(service: Service) -> None:
    account, _ = await service.engine.accounts.create()
    with pytest.raises(RuntimeError):
        await service.submit(account, place_call(False), crash_after_send=True)
    _delivery, interaction_id = await sent(service.engine, account)
    await service.restart()
    result = body_of(await service.submit(account, place_call(False)))
    assert result == {
        "interactionId": interaction_id,
        "status": "pending",
        "deliveryStatus": "delivered",
    }
    assert await service.deliveries(account) == 1


async def test_phone_call_retry_keeps_the_first_limit_and_is_never_placed_again(
    tmp_path: Path, database: str
) -> None:
    service = Service(tmp_path, database, phone_call_limit=0.6)
    await service.engine.start()
    try:
        account, _ = await service.engine.accounts.create()
        started = time.monotonic()

        def send(engine: Engine, account: Account, context: SendContext) -> Awaitable[BaseModel]:
            return engine.phone_call(account, PhoneCallRequest(message="Call.", to=HUMAN), context)

        first = service.submit(account, send)
        _delivery, interaction_id = await sent(service.engine, account)
        await service.restart()
        await cut_off(first)
        with pytest.raises(CallTimeout):
            await asyncio.wait_for(service.submit(account, send), 3)
        # The 5-minute-style limit counts from the first request, not the retry.
        assert time.monotonic() - started < 1.2
        status = await service.engine.interaction_status(account, interaction_id)
        assert status.status == "ended"
        # "A pending call is never retried": another try times out again, placing none.
        with pytest.raises(CallTimeout):
            await asyncio.wait_for(service.submit(account, send), 1)
        assert await service.deliveries(account) == 1
    finally:
        await service.engine.close()


async def test_channel_card_with_reply_link_reattaches(service: Service) -> None:
    account, _ = await service.engine.accounts.create()
    card = await service.engine.channel_cards.create(
        account,
        ChannelCardCreateRequest.model_validate(
            {
                "type": "sms",
                "to": HUMAN,
                "waitTime": 5,
                "responseTemplate": "Card says: {{message}}",
                "replyLink": True,
            }
        ),
    )

    def send(engine: Engine, account: Account, context: SendContext) -> Awaitable[BaseModel]:
        return engine.send_channel_message(
            account, card.id, ChannelMessageRequest(message="Ok?"), context
        )

    first = service.submit(account, send)
    delivery, interaction_id = await sent(service.engine, account)
    await service.restart()
    await cut_off(first)

    retry = service.submit(account, send)
    await service.held()
    found = re.search(r"/r/(\S+)$", delivery.text)
    assert found is not None
    await service.engine.reply_by_link(found.group(1), "approved")
    result = body_of(await asyncio.wait_for(retry, 2))
    assert result["interactionId"] == interaction_id
    assert result["response"] == "Card says: approved"
    assert await service.deliveries(account) == 1


async def test_call_card_reattaches_and_gets_the_summary(service: Service) -> None:
    account, _ = await service.engine.accounts.create()
    card = await service.engine.channel_cards.create(
        account,
        ChannelCardCreateRequest.model_validate({"type": "call", "to": HUMAN, "waitTime": 5}),
    )

    def send(engine: Engine, account: Account, context: SendContext) -> Awaitable[BaseModel]:
        return engine.send_channel_message(
            account, card.id, ChannelMessageRequest(message="Ok?"), context
        )

    first = service.submit(account, send)
    _delivery, interaction_id = await sent(service.engine, account)
    await service.restart()
    await cut_off(first)

    retry = service.submit(account, send)
    await service.held()
    ended = SandboxCallOutcomeRequest.model_validate({"outcome": "completed", "summary": "Yes."})
    await service.engine.sandbox_end_call(account, interaction_id, ended)
    result = body_of(await asyncio.wait_for(retry, 2))
    assert (result["interactionId"], result["response"]) == (
        interaction_id,
        "Human response: Yes.",
    )
    assert await service.deliveries(account) == 1


class FailingOnce:
    """A provider whose first delivery fails (nothing reaches the human)."""

    name = "failing-once"

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.senders = inner.senders
        self.failed = False

    async def deliver(self, item: Outbound) -> Sent:
        if not self.failed:
            self.failed = True
            raise ConnectionError("the carrier is down")
        return await self.inner.deliver(item)

    def hang_up(self, ref: str) -> None:
        self.inner.hang_up(ref)


async def test_a_send_whose_delivery_failed_is_sent_by_the_retry(service: Service) -> None:
    account, _ = await service.engine.accounts.create()
    sandbox = service.engine.provider
    service.engine.use_provider(FailingOnce(sandbox), ["sms"])
    with pytest.raises(ConnectionError):
        await service.submit(account, MESSAGE_SENDS["sms"])
    [failed] = await service.engine.store.list_interactions(account.id, 10)
    assert failed.outcome == "failed"
    retry = service.submit(account, MESSAGE_SENDS["sms"])
    _delivery, interaction_id = await sent(service.engine, account)
    assert interaction_id != failed.id
    # The sandbox plays the human only on a channel no real provider carries.
    service.engine.use_provider(sandbox, ["sms"])
    await service.engine.sandbox_reply(account, answer("sms", interaction_id, "sure"))
    assert body_of(await asyncio.wait_for(retry, 2))["response"] == "Human response: sure"
    assert await service.deliveries(account) == 1


async def test_sends_without_a_key_or_with_another_key_still_send(service: Service) -> None:
    account, _ = await service.engine.accounts.create()

    def send(engine: Engine, account: Account, context: SendContext) -> Awaitable[BaseModel]:
        return engine.send_message(account, sms(follow_up_time=5), context)

    await service.submit(account, send, key="a")
    await service.submit(account, send, key="b")
    await send(service.engine, account, SendContext())
    assert await service.deliveries(account) == 3
