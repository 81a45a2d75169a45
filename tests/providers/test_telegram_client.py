"""``client.telegram.bots``, sync and async, against the real service over loopback with
the Telegram contract fake (on both stores): ``register`` answers the typed bot (its
webhook set, the token never in it), ``list`` the account's bot, ``delete`` removes it;
refusals are the typed errors naming the field."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from telegram_support import TelegramLive

from humanwire import AsyncHumanWire, ConflictError, HumanWire, InvalidRequestError, NotFoundError
from humanwire.types import TelegramBot

pytest.importorskip("telegram")

MODES = ["sync", "async"]


def _call(live: TelegramLive, mode: str, use: Callable[[Any], Any], key: str | None = None) -> Any:
    """What ``use(client)`` gives, on a client of the mode (the live account's key)."""
    key = key or live.http.headers["Authorization"].removeprefix("Bearer ")
    if mode == "sync":
        with HumanWire(key, live.base_url, max_retries=0) as client:
            return use(client)

    async def run() -> Any:
        async with AsyncHumanWire(key, live.base_url, max_retries=0) as client:
            return await use(client)

    return asyncio.run(run())


def _refused(live: TelegramLive, mode: str, use: Callable[[Any], Any]) -> Exception:
    try:
        _call(live, mode, use)
    except Exception as exc:
        return exc
    raise AssertionError("not refused")


@pytest.mark.parametrize("mode", MODES)
def test_the_client_registers_lists_and_deletes_the_accounts_bot(
    telegram_live: TelegramLive, mode: str
) -> None:
    live = telegram_live
    own = live.fake.add_bot("acme_ops_bot")
    assert _call(live, mode, lambda c: c.telegram.bots.list()) == []
    bot = _call(live, mode, lambda c: c.telegram.bots.register(token=own.token))
    url = f"{live.base_url}/providers/telegram/bots/{own.bot_id}/updates"
    assert isinstance(bot, TelegramBot)
    assert (bot.bot_id, bot.username, bot.webhook_url) == (str(own.bot_id), "acme_ops_bot", url)
    assert bot.token_hint == f"{own.bot_id}:…{own.token[-4:]}" and bot.created_at.tzinfo
    assert own.token not in bot.model_dump_json() and own.webhook_url == url
    assert _call(live, mode, lambda c: c.telegram.bots.list()) == [bot]
    # Another account's client sees none of it, and cannot delete it.
    other = live.runner.create_account("other")
    assert _call(live, mode, lambda c: c.telegram.bots.list(), other) == []
    with pytest.raises(NotFoundError):
        _call(live, mode, lambda c: c.telegram.bots.delete(bot.bot_id), other)
    assert _call(live, mode, lambda c: c.telegram.bots.delete(bot.bot_id)) is None
    assert _call(live, mode, lambda c: c.telegram.bots.list()) == []
    assert own.webhook_url == ""  # deleteWebhook
    missing = _refused(live, mode, lambda c: c.telegram.bots.delete(bot.bot_id))
    assert isinstance(missing, NotFoundError)
    assert live.fake.violations == [] and live.fake.errors == []


@pytest.mark.parametrize("mode", MODES)
def test_the_clients_refusals_are_typed_and_name_the_field(
    telegram_live: TelegramLive, mode: str
) -> None:
    live = telegram_live
    calls = len(live.fake.calls)
    # Not a token: refused before anything is sent.
    malformed = _refused(live, mode, lambda c: c.telegram.bots.register(token="not-a-token"))
    assert isinstance(malformed, InvalidRequestError) and malformed.field == "token"
    blank = _refused(live, mode, lambda c: c.telegram.bots.delete(" "))
    assert isinstance(blank, InvalidRequestError) and blank.field == "botId"
    assert len(live.fake.calls) == calls
    # Refused by Telegram (getMe 401), and the shared bot's own.
    revoked = live.fake.add_bot("revoked_bot")
    live.fake.revoke_bot(revoked)
    for token in (revoked.token, live.fake.token):
        refused = _refused(live, mode, lambda c, t=token: c.telegram.bots.register(token=t))
        assert isinstance(refused, InvalidRequestError) and refused.field == "token", token
    # One bot per account.
    first, second = live.fake.add_bot("first_bot"), live.fake.add_bot("second_bot")
    _call(live, mode, lambda c: c.telegram.bots.register(token=first.token))
    taken = _refused(live, mode, lambda c: c.telegram.bots.register(token=second.token))
    assert isinstance(taken, ConflictError) and taken.field == "token"
    assert live.fake.violations == []
