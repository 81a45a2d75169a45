"""An account's own Telegram bot: ``/telegram/bots`` (``client.telegram.bots``). While
the account has one, its telegram sends go out from it, its start links open it and what
people write to it is this account's only; without one, the shared bot carries them."""

from __future__ import annotations

import builtins

from humanwire._http import Flow
from humanwire.types import TelegramBot, TelegramBotRequest

from ._base import ModeT, Resource, _Core, build, endpoint, path_id

__all__ = ["Telegram", "TelegramBots"]


class TelegramBots(Resource[ModeT]):
    """The account's own bot (at most one), made with @BotFather."""

    @endpoint
    def register(self, *, token: str, idempotency_key: str | None = None) -> Flow[TelegramBot]:
        """``POST /telegram/bots``: the token is checked with Telegram (``getMe``) and the
        bot's webhook set to the service; only then is it kept (encrypted, never shown
        again: the answer has ``token_hint``). ``InvalidRequestError`` naming ``token``
        for one that is not a token, one Telegram refuses, or the shared bot's;
        ``ConflictError`` when the account has another bot, or another account this one;
        ``ProviderError`` when Telegram cannot be reached. Registering the same bot again
        (a new token after ``/revoke``) replaces its token."""
        body = build(TelegramBotRequest, token=token)
        return self._post("/telegram/bots", body, TelegramBot, idempotency_key=idempotency_key)

    @endpoint
    def list(self) -> Flow[builtins.list[TelegramBot]]:
        """``GET /telegram/bots``: the account's bot; ``[]`` when it sends from the shared
        bot (or the service has no ``[telegram]``)."""
        return self._get("/telegram/bots", builtins.list[TelegramBot])  # type: ignore[no-any-return]

    @endpoint
    def delete(self, bot_id: str) -> Flow[None]:
        """``DELETE /telegram/bots/{botId}``: its webhook removed and its token forgotten;
        the account's sends go out from the shared bot again. ``NotFoundError`` for a bot
        that is not the account's."""
        return self._delete(f"/telegram/bots/{path_id(bot_id, 'botId')}")


class Telegram(Resource[ModeT]):
    """Telegram's own endpoints; sends are ``client.messages.telegram`` and
    ``client.forms.telegram``. ``bots`` registers, lists and deletes the account's bot."""

    bots: TelegramBots[ModeT]

    def __init__(self, client: _Core) -> None:
        super().__init__(client)
        self.bots = TelegramBots(client)
