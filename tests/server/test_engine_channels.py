"""Channel cards: create / list / get / delete, templates, reply links, call cards."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from engine_support import HUMAN, SLACK_HUMAN, account, engine, next_delivery, reply

from humanwire.server.config import SHARED_SMS_NUMBER
from humanwire.server.engine import Account, Engine
from humanwire.server.errors import Conflict, Gone, NotFound
from humanwire.types import (
    ChannelCardCreateRequest,
    ChannelMessageRequest,
    SandboxCallOutcomeRequest,
)

__all__ = ["account", "engine"]


def card(**values: object) -> ChannelCardCreateRequest:
    windows: dict[str, Any] = {
        k: values.pop(k) for k in ("wait_time", "follow_up_time") if k in values
    }
    base = ChannelCardCreateRequest.model_validate(
        {"type": "sms", "to": HUMAN, "waitTime": 30, **values}
    )
    return base.model_copy(update=windows)


def message(text: str = "Deploy?") -> ChannelMessageRequest:
    return ChannelMessageRequest(message=text)


async def test_card_crud_and_id_format(engine: Engine, account: Account) -> None:
    created = await engine.channel_cards.create(account, card())
    assert re.fullmatch(r"ch_[A-Za-z0-9_-]{24}", created.id)
    assert created.response_template == "Human response: {{message}}"
    assert created.no_response_template == "Human did not respond. Continue where you left off."
    assert created.wait_time == 30 and isinstance(created.wait_time, int)
    assert await engine.channel_cards.get(account, created.id) == created
    assert await engine.channel_cards.of(account) == [created]
    other, _ = await engine.accounts.create("other")
    with pytest.raises(NotFound):
        await engine.channel_cards.get(other, created.id)
    with pytest.raises(NotFound):
        await engine.channel_cards.delete(other, created.id)
    await engine.channel_cards.delete(account, created.id)
    assert await engine.channel_cards.of(account) == []
    with pytest.raises(NotFound):
        await engine.channel_cards.get(account, created.id)


async def test_card_templates_apply_to_the_text_and_the_answer(
    engine: Engine, account: Account
) -> None:
    created = await engine.channel_cards.create(
        account,
        card(
            messageTemplate="[ops] {{message}} (answer within {{waitTime}}s)",
            responseTemplate="Ops said: {{message}}",
        ),
    )
    held = asyncio.create_task(engine.send_channel_message(account, created.id, message()))
    delivery = await next_delivery(engine, account)
    assert delivery.text == "[ops] Deploy? (answer within 30s)"
    assert delivery.to == HUMAN
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "go"))
    response = await held
    assert response.response == "Ops said: go"


async def test_card_no_response_template(engine: Engine, account: Account) -> None:
    created = await engine.channel_cards.create(
        account, card(wait_time=0.1, noResponseTemplate="Nobody answered; skip the deploy.")
    )
    response = await engine.send_channel_message(account, created.id, message())
    assert (response.responded, response.response) == (False, "Nobody answered; skip the deploy.")


async def test_unknown_card_is_not_found(engine: Engine, account: Account) -> None:
    with pytest.raises(NotFound):
        await engine.send_channel_message(account, "ch_" + "x" * 24, message())


async def test_reply_link_answers_the_held_request(engine: Engine, account: Account) -> None:
    created = await engine.channel_cards.create(
        account, card(type="slack", to=SLACK_HUMAN, replyLink=True)
    )
    held = asyncio.create_task(engine.send_channel_message(account, created.id, message()))
    delivery = await next_delivery(engine, account)
    found = re.search(r"http://127\.0\.0\.1:8765/r/(\S+)$", delivery.text)
    assert found, delivery.text
    token = found.group(1)
    view = await engine.get_reply_link(token)
    assert (view.state, view.text, view.to) == ("open", "Deploy?", SLACK_HUMAN)
    await engine.reply_by_link(token, "approved via link")
    response = await held
    assert response.response == "Human response: approved via link"
    assert (await engine.get_reply_link(token)).state == "answered"
    with pytest.raises(Conflict):
        await engine.reply_by_link(token, "again")
    with pytest.raises(NotFound):
        await engine.get_reply_link("unknown")


async def test_reply_link_expires_with_the_windows(engine: Engine, account: Account) -> None:
    created = await engine.channel_cards.create(account, card(wait_time=0.05, replyLink=True))
    response = await engine.send_channel_message(account, created.id, message())
    assert response.status == "ended"
    token = (await engine.list_sandbox_deliveries(account))[0].text.rsplit("/r/", 1)[1]
    assert (await engine.get_reply_link(token)).state == "expired"
    with pytest.raises(Gone):
        await engine.reply_by_link(token, "late")


async def test_call_card_places_a_call_with_the_rendered_prompt(
    engine: Engine, account: Account
) -> None:
    created = await engine.channel_cards.create(
        account,
        card(
            type="call",
            messageTemplate="You call for the ops team. {{message}}",
            responseTemplate="Call summary: {{message}}",
        ),
    )
    held = asyncio.create_task(engine.send_channel_message(account, created.id, message()))
    delivery = await next_delivery(engine, account)
    assert (delivery.kind, delivery.text) == ("call", "You call for the ops team. Deploy?")
    assert delivery.interaction_id is not None
    await engine.sandbox_end_call(
        account,
        delivery.interaction_id,
        SandboxCallOutcomeRequest(outcome="completed", summary="Go ahead."),
    )
    response = await held
    assert (response.status, response.response) == ("ended", "Call summary: Go ahead.")
