"""The routes Telegram reaches: ``/providers/telegram/updates``, the shared bot's webhook,
and ``/providers/telegram/bots/<bot id>/updates``, an account's own bot's (its secret is
its own, ``OwnBotSecret``: another bot's, or the shared bot's, is refused 403 as a wrong
one is; a bot no longer registered is 404).

It carries no bearer key. Telegram signs nothing: it echoes the ``secret_token`` the
service gave ``setWebhook`` in ``X-Telegram-Bot-Api-Secret-Token``, compared here in
constant time (``TelegramSecret``) through ``signed_route``: a missing or wrong secret is
403, a body that is no update of the shape ``update_shape`` checks is 400, and either
changes nothing. An update is taken once by its ``update_id`` (Telegram retries one it
got no 2xx for; with no timestamp to bound it, a replay is only ever a duplicate), then
worked on in the background so Telegram has its answer at once.
"""

from __future__ import annotations

import hmac
import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from ..provider_routes import (
    Malformed,
    ProviderRoute,
    Unverified,
    json_value,
    not_found,
    signed_route,
)
from .provider import ROUTE_PREFIX

if TYPE_CHECKING:
    from .provider import TelegramProvider

__all__ = ["SECRET_HEADER", "OwnBotSecret", "TelegramSecret", "telegram_routes", "update_shape"]

logger = logging.getLogger("humanwire.telegram")

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
_BOT_ID = re.compile(r"[1-9][0-9]{4,19}")
"""A bot's id, as a token starts with it."""


class TelegramSecret:
    """The webhook's secret token, echoed by Telegram on every update."""

    header = SECRET_HEADER

    def __init__(self, secret: str) -> None:
        self._secret = secret.encode()

    def verify(self, request: Request, body: bytes) -> None:
        given = request.headers.get(self.header)
        if given is None:
            raise Unverified(f"missing {self.header}")
        # Bytes of whatever arrived (a header may carry any latin-1 text): compare_digest
        # of str refuses non-ASCII, of bytes compares in constant time.
        if not hmac.compare_digest(given.encode("latin-1", "replace"), self._secret):
            raise Unverified(f"invalid {self.header}")


def _int(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Malformed(f"{field} must be an integer", field=field)
    return value


def _object(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise Malformed(f"{field} must be an object", field=field)
    return value


def _message(value: Any, field: str) -> None:
    message = _object(value, field)
    _int(message.get("message_id"), f"{field}.message_id")
    _int(_object(message.get("chat"), f"{field}.chat").get("id"), f"{field}.chat.id")
    if "text" in message and not isinstance(message["text"], str):
        raise Malformed(f"{field}.text must be a string", field=f"{field}.text")
    if "from" in message:
        _int(_object(message["from"], f"{field}.from").get("id"), f"{field}.from.id")


def update_shape(request: Request, body: bytes) -> dict[str, Any]:
    """An ``Update`` with what ``TelegramProvider.on_update`` reads checked: its
    ``update_id``; a ``message``'s id, chat id, text and sender (and those of the message
    it replies to); a ``callback_query``'s id, presser, data and message."""
    update = json_value(body)
    if not isinstance(update, dict):
        raise Malformed("the body must be a JSON object (an Update)")
    _int(update.get("update_id"), "update_id")
    if "message" in update:
        _message(update["message"], "message")
        if "reply_to_message" in update["message"]:
            _message(update["message"]["reply_to_message"], "message.reply_to_message")
    if "callback_query" in update:
        query = _object(update["callback_query"], "callback_query")
        if not isinstance(query.get("id"), str):
            raise Malformed("callback_query.id must be a string", field="callback_query.id")
        _int(_object(query.get("from"), "callback_query.from").get("id"), "callback_query.from.id")
        if "data" in query and not isinstance(query["data"], str):
            raise Malformed("callback_query.data must be a string", field="callback_query.data")
        if "message" in query:
            _message(query["message"], "callback_query.message")
    return update


class OwnBotSecret:
    """An own bot's webhook secret (``TelegramProvider.bot_secret``: derived from the
    webhook secret and the bot id in the path), compared in constant time."""

    header = SECRET_HEADER

    def __init__(self, provider: TelegramProvider) -> None:
        self._provider = provider

    def verify(self, request: Request, body: bytes) -> None:
        bot_id = str(request.path_params.get("bot_id", ""))
        if not _BOT_ID.fullmatch(bot_id):
            raise Unverified("no such bot")
        given = request.headers.get(self.header)
        if given is None:
            raise Unverified(f"missing {self.header}")
        expected = self._provider.bot_secret(bot_id).encode()
        if not hmac.compare_digest(given.encode("latin-1", "replace"), expected):
            raise Unverified(f"invalid {self.header}")


def telegram_routes(provider: TelegramProvider) -> list[ProviderRoute]:
    async def updates(request: Request, update: dict[str, Any]) -> Response:
        if not await provider.first_delivery(update["update_id"]):
            return Response(status_code=200)  # a retry of an update already taken

        async def work() -> None:
            outcome = await provider.on_update(update)
            logger.debug("Telegram update %s: %s", update["update_id"], outcome)

        provider.spawn(work())
        return Response(status_code=200)

    async def bot_updates(request: Request, update: dict[str, Any]) -> Response:
        bot_id = str(request.path_params["bot_id"])
        side = await provider.own_side(bot_id)
        if side is None:
            # A bot deleted (its webhook removed: what Telegram had queued still comes).
            return not_found(f"no Telegram bot {bot_id} here")
        if not await provider.first_delivery(update["update_id"], bot_id):
            return Response(status_code=200)

        async def work() -> None:
            outcome = await provider.on_update(update, side)
            logger.debug("Telegram bot %s update %s: %s", bot_id, update["update_id"], outcome)

        provider.spawn(work())
        return Response(status_code=200)

    return [
        signed_route(
            f"{ROUTE_PREFIX}/updates",
            updates,
            provider="telegram",
            verifier=TelegramSecret(provider.config.webhook_secret),
            parse=update_shape,
        ),
        signed_route(
            f"{ROUTE_PREFIX}/bots/{{bot_id}}/updates",
            bot_updates,
            provider="telegram",
            verifier=OwnBotSecret(provider),
            parse=update_shape,
        ),
    ]
