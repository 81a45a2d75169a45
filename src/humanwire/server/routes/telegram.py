"""An account's own Telegram bot: ``POST /telegram/bots``, ``GET /telegram/bots``,
``DELETE /telegram/bots/{botId}`` (the provider's ``BotRegistry``: the token checked
with ``getMe``, the webhook set and removed there)."""

from __future__ import annotations

from datetime import datetime, timezone

from pydantic import TypeAdapter

from humanwire.types import TelegramBot, TelegramBotRequest

from ..delivery import BotRegistry, OwnBot
from ..errors import InvalidRequest, NotFound
from ._api import ApiCall, Operation, PathParam, Payload

__all__ = ["operations"]


def _registry(call: ApiCall) -> BotRegistry:
    provider = call.engine.providers.get("telegram")
    if not isinstance(provider, BotRegistry):
        raise InvalidRequest(
            "this service has no Telegram bot configured ([telegram]): own bots need it"
        )
    return provider


def _wire(bot: OwnBot) -> TelegramBot:
    return TelegramBot(
        bot_id=bot.bot_id,
        username=bot.username,
        token_hint=bot.token_hint,
        webhook_url=bot.webhook_url,
        created_at=datetime.fromtimestamp(bot.registered_at, tz=timezone.utc),
    )


async def _register(call: ApiCall) -> Payload:
    request = call.body_as(TelegramBotRequest)
    return _wire(await _registry(call).register_bot(call.account.id, request.token))


async def _list(call: ApiCall) -> Payload:
    provider = call.engine.providers.get("telegram")
    if not isinstance(provider, BotRegistry):
        return []
    return [_wire(bot) for bot in await provider.bots_of(call.account.id)]


async def _delete(call: ApiCall) -> Payload:
    bot_id = call.path("botId")
    provider = call.engine.providers.get("telegram")
    if not isinstance(provider, BotRegistry) or not await provider.remove_bot(
        call.account.id, bot_id
    ):
        raise NotFound(f"no Telegram bot {bot_id!r}", field="botId")
    return None


def operations() -> list[Operation]:
    return [
        Operation(
            "POST",
            "/telegram/bots",
            _register,
            operation_id="registerTelegramBot",
            summary="Register the account's own Telegram bot",
            description="The token is checked with Telegram (`getMe`) and the bot's "
            "webhook set to this service; from then on the account's telegram sends go "
            "out from it, its start links open it, and what people write to it is this "
            "account's only. One bot per account (409 for a second, or for a bot another "
            "account registered); the token is never shown again.",
            tag="telegram",
            status=201,
            body=TypeAdapter(TelegramBotRequest),
            response=TypeAdapter(TelegramBot),
            errors=(409, 502),
        ),
        Operation(
            "GET",
            "/telegram/bots",
            _list,
            operation_id="listTelegramBots",
            summary="The account's own Telegram bot",
            description="Empty when the account sends from the shared bot.",
            tag="telegram",
            response=TypeAdapter(list[TelegramBot]),
        ),
        Operation(
            "DELETE",
            "/telegram/bots/{botId}",
            _delete,
            operation_id="deleteTelegramBot",
            summary="Delete the account's own Telegram bot",
            description="Its webhook is removed and its token forgotten; the account's "
            "sends go out from the shared bot again.",
            tag="telegram",
            status=204,
            errors=(404,),
            path_params=(PathParam("botId", "The bot's id."),),
        ),
    ]
