"""Messages: held waits, follow-up windows, status shapes, templates and reply matching."""

from __future__ import annotations

import asyncio
import time

import pytest
from engine_support import (
    HUMAN,
    OTHER_HUMAN,
    SLACK_HUMAN,
    account,
    engine,
    eventually,
    next_delivery,
    reply,
    slack,
    sms,
    whatsapp,
)

from humanwire.server.config import (
    SHARED_SLACK_WORKSPACE,
    SHARED_SMS_NUMBER,
    SHARED_WHATSAPP_NUMBER,
)
from humanwire.server.engine import Account, Engine
from humanwire.server.errors import NotFound
from humanwire.types import MessageReceivedEvent

__all__ = ["account", "engine"]


async def test_reply_inside_wait_is_returned_within_milliseconds(
    engine: Engine, account: Account
) -> None:
    held = asyncio.create_task(engine.send_message(account, sms(wait_time=5)))
    delivery = await next_delivery(engine, account)
    assert delivery.text == "Deploy to prod?"
    assert (delivery.from_, delivery.to, delivery.channel) == (SHARED_SMS_NUMBER, HUMAN, "sms")
    started = time.perf_counter()
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "ship it"))
    response = await held
    assert time.perf_counter() - started < 0.1
    assert response.status == "ended"
    assert response.responded is True
    assert response.response == "Human response: ship it"
    assert response.reply == "ship it"
    # Answered inside waitTime: no webhook event, but the status carries the result.
    status = await engine.interaction_status(account, response.interaction_id)
    assert status.status == "ended"
    assert isinstance(status.result, MessageReceivedEvent)
    assert status.result.payload.interaction_id == response.interaction_id
    assert status.result.payload.body == "ship it"
    assert await engine.webhooks.events(account) == []


async def test_timeout_returns_no_response_text_and_late_reply_becomes_event(
    engine: Engine, account: Account
) -> None:
    response = await engine.send_message(account, sms(wait_time=0.15, follow_up_time=5))
    assert response.responded is False
    assert response.response == "Human did not respond. Continue where you left off."
    assert response.status == "pending"  # the follow-up window still listens
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "late yes"))
    events = await engine.webhooks.events(account)
    assert len(events) == 1
    assert events[0]["eventType"] == "message.received"
    assert events[0]["interactionId"] == response.interaction_id
    payload = events[0]["payload"]
    assert isinstance(payload, dict)
    assert payload["interactionId"] == response.interaction_id
    assert payload["body"] == "late yes"
    status = await engine.interaction_status(account, response.interaction_id)
    assert status.status == "ended"
    assert status.result is not None


async def test_timeout_without_follow_up_ends_and_later_text_is_unsolicited(
    engine: Engine, account: Account
) -> None:
    response = await engine.send_message(account, sms(wait_time=0.1))
    assert (response.status, response.responded) == ("ended", False)
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "too late"))
    events = await engine.webhooks.events(account)
    payload = events[0]["payload"]
    assert isinstance(payload, dict)
    assert "interactionId" not in payload
    assert events[0]["interactionId"] is None


async def test_follow_up_window_closes_to_ended_without_result(
    engine: Engine, account: Account
) -> None:
    response = await engine.send_message(account, sms(wait_time=0.1, follow_up_time=0.15))
    assert response.status == "pending"
    status = await engine.interaction_status(account, response.interaction_id, wait=2)
    assert status.status == "ended"
    assert status.result is None


async def test_message_without_wait_is_ended_unless_follow_up_listens(
    engine: Engine, account: Account
) -> None:
    plain = await engine.send_message(account, sms())
    assert (plain.status, plain.responded, plain.response) == ("ended", None, None)
    listening = await engine.send_message(account, sms(follow_up_time=5))
    assert listening.status == "pending"
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "ok"))
    events = await engine.webhooks.events(account)
    assert events[0]["interactionId"] == listening.interaction_id


async def test_status_wait_returns_on_change_and_at_once_when_ended(
    engine: Engine, account: Account
) -> None:
    response = await engine.send_message(account, sms(follow_up_time=30))
    waiting = asyncio.create_task(
        engine.interaction_status(account, response.interaction_id, wait=10)
    )
    await asyncio.sleep(0.05)
    assert not waiting.done()
    started = time.perf_counter()
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "done"))
    status = await waiting
    assert status.status == "ended"
    assert time.perf_counter() - started < 0.1
    started = time.perf_counter()
    again = await engine.interaction_status(account, response.interaction_id, wait=10)
    assert again.status == "ended"
    assert time.perf_counter() - started < 0.1


async def test_status_wait_gives_up_after_wait(engine: Engine, account: Account) -> None:
    response = await engine.send_message(account, sms(follow_up_time=30))
    started = time.perf_counter()
    status = await engine.interaction_status(account, response.interaction_id, wait=0.15)
    assert status.status == "pending"
    assert 0.1 < time.perf_counter() - started < 1.0


async def test_whatsapp_templates_exactly_as_specified(engine: Engine, account: Account) -> None:
    await engine.send_message(account, whatsapp("Build is green"))
    first = await next_delivery(engine, account)
    assert first.text == "Notification from AI agent: Build is green. No response required."
    assert first.from_ == SHARED_WHATSAPP_NUMBER
    held = asyncio.create_task(engine.send_message(account, whatsapp("Deploy?", wait_time=30)))
    second = await next_delivery(engine, account, after=first.id)
    assert second.text == (
        "Your AI agent is requesting your input. Message from agent: Deploy?. Please review "
        "and reply with your guidance. If no response is received within 30 seconds, the "
        "request will be automatically closed."
    )
    await engine.sandbox_reply(account, reply("whatsapp", HUMAN, SHARED_WHATSAPP_NUMBER, "yes"))
    assert (await held).response == "Human response: yes"


async def test_sms_reply_answers_most_recent_open_interaction_of_that_pair(
    engine: Engine, account: Account
) -> None:
    older = await engine.send_message(account, sms("first", follow_up_time=30))
    newer = await engine.send_message(account, sms("second", follow_up_time=30))
    elsewhere = await engine.send_message(account, sms("other", to=OTHER_HUMAN, follow_up_time=30))
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "answer"))
    assert (await engine.interaction_status(account, newer.interaction_id)).status == "ended"
    assert (await engine.interaction_status(account, older.interaction_id)).status == "pending"
    assert (await engine.interaction_status(account, elsewhere.interaction_id)).status == "pending"
    # The next reply from the same human now answers the older one.
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "answer 2"))
    assert (await engine.interaction_status(account, older.interaction_id)).status == "ended"


async def test_reply_on_other_channel_or_to_other_number_does_not_match(
    engine: Engine, account: Account
) -> None:
    pending = await engine.send_message(account, sms(follow_up_time=30))
    # Same human, but on whatsapp; then sms to a number that did not send it.
    await engine.sandbox_reply(account, reply("whatsapp", HUMAN, SHARED_WHATSAPP_NUMBER, "a"))
    await engine.sandbox_reply(account, reply("sms", HUMAN, "+12125550142", "b"))
    assert (await engine.interaction_status(account, pending.interaction_id)).status == "pending"
    events = await engine.webhooks.events(account)
    assert [event["interactionId"] for event in events] == [None, None]
    inbound = await engine.webhooks.inbound(account)
    assert [item.body for item in inbound] == ["b", "a"]


async def test_slack_reply_matches_only_in_thread(engine: Engine, account: Account) -> None:
    held = asyncio.create_task(engine.send_message(account, slack(wait_time=5)))
    delivery = await next_delivery(engine, account)
    assert (delivery.from_, delivery.to) == (SHARED_SLACK_WORKSPACE, SLACK_HUMAN)
    # Outside the thread: unsolicited, the wait goes on.
    await engine.sandbox_reply(account, reply("slack", SLACK_HUMAN, SHARED_SLACK_WORKSPACE, "hi"))
    await asyncio.sleep(0.02)
    assert not held.done()
    await engine.sandbox_reply(
        account,
        reply("slack", SLACK_HUMAN, SHARED_SLACK_WORKSPACE, "in thread", delivery.interaction_id),
    )
    response = await held
    assert response.response == "Human response: in thread"
    assert (await engine.webhooks.events(account))[0]["interactionId"] is None


async def test_slack_thread_of_another_account_is_not_found(
    engine: Engine, account: Account
) -> None:
    other, _ = await engine.accounts.create("other")
    theirs = await engine.send_message(other, slack(follow_up_time=30))
    with pytest.raises(NotFound):
        await engine.sandbox_reply(
            account,
            reply("slack", SLACK_HUMAN, SHARED_SLACK_WORKSPACE, "x", theirs.interaction_id),
        )
    assert (await engine.interaction_status(other, theirs.interaction_id)).status == "pending"


async def test_unsolicited_message_is_kept_without_webhooks(
    engine: Engine, account: Account
) -> None:
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "hello?"))
    events = await engine.webhooks.events(account)
    assert len(events) == 1
    assert events[0]["eventType"] == "message.received"
    assert await engine.webhooks.deliveries(account) == []


async def test_reply_with_no_held_request_inside_wait_goes_to_webhooks(
    engine: Engine, account: Account
) -> None:
    held = asyncio.create_task(engine.send_message(account, sms(wait_time=5)))
    delivery = await next_delivery(engine, account)
    held.cancel()  # the client went away; the window is still open
    await asyncio.gather(held, return_exceptions=True)
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "still here"))

    async def check() -> bool:
        return bool(await engine.webhooks.events(account))

    await eventually(check)
    assert (await engine.webhooks.events(account))[0]["interactionId"] == delivery.interaction_id


async def test_subscribe_sees_deliveries_and_interaction_changes(
    engine: Engine, account: Account
) -> None:
    changes = engine.subscribe(account)
    await engine.send_message(account, sms())
    kinds = set()
    for _ in range(2):
        change = await asyncio.wait_for(changes.__anext__(), 1)
        assert change.account_id == account.id
        kinds.add(change.kind)
    assert kinds == {"delivery", "interaction"}
    await changes.aclose()  # type: ignore[attr-defined]
