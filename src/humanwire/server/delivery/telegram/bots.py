"""Accounts' own Telegram bots: the tokens accounts register (``POST /telegram/bots``),
kept as Slack's workspace tokens are.

A bot belongs to one account at a time, and an account has at most one (its sends go out
from it by default, so there is no choice to make): a second account registering the
same bot is refused until the first deletes it. Tokens are stored encrypted (Fernet,
with a key derived from ``telegram.webhook_secret``: the database alone cannot read
them), are never returned by any endpoint (only ``tokenHint``, the bot id and the last
four characters) and never logged; rotating the webhook secret means registering again.

Each bot's webhook is its own URL (``/providers/telegram/bots/<bot id>/updates``) with
its own secret token, derived from ``telegram.webhook_secret`` and the bot id (HMAC), so
one bot's secret says nothing of another's and nothing of it is stored.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import time
from typing import TYPE_CHECKING, Any

from ..base import OwnBot

if TYPE_CHECKING:
    from ..port import ProviderState

__all__ = ["BOT_SCOPE", "OwnBot", "OwnBots", "bot_secret"]

logger = logging.getLogger("humanwire.telegram")

BOT_SCOPE = "telegram-bot"
"""provider_state scope: bot id → the registration (token encrypted)."""


def bot_secret(webhook_secret: str, bot_id: str) -> str:
    """The secret token of ``bot_id``'s webhook: 43 characters of ``A-Za-z0-9_-``
    (Telegram's alphabet for ``secret_token``)."""
    digest = hmac.new(
        webhook_secret.encode(), f"humanwire telegram bot {bot_id}".encode(), hashlib.sha256
    ).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def token_hint(token: str) -> str:
    bot_id, _, rest = token.partition(":")
    return f"{bot_id}:…{rest[-4:]}"


def _fernet(secret: str) -> Any:
    from cryptography.fernet import Fernet

    key = hmac.new(secret.encode(), b"humanwire telegram bot tokens", hashlib.sha256).digest()
    return Fernet(base64.urlsafe_b64encode(key))


class OwnBots:
    def __init__(self, store: ProviderState, secret: str) -> None:
        self._store = store
        self._fernet = _fernet(secret)

    async def save(self, *, account_id: str, bot_id: str, username: str, token: str) -> OwnBot:
        now = time.time()
        await self._store.put_provider_state(
            BOT_SCOPE,
            bot_id,
            {
                "account": account_id,
                "username": username,
                "token": self._fernet.encrypt(token.encode()).decode(),
                "hint": token_hint(token),
                "registered_at": now,
            },
            now,
        )
        return OwnBot(bot_id, username, account_id, token_hint(token), now)

    async def get(self, bot_id: str) -> OwnBot | None:
        data = await self._store.get_provider_state(BOT_SCOPE, bot_id) if bot_id else None
        return _own_bot(bot_id, data) if data is not None else None

    async def of_account(self, account_id: str) -> list[OwnBot]:
        return sorted(
            (
                _own_bot(bot_id, data)
                for bot_id, data in await self._store.provider_states(BOT_SCOPE)
                if data.get("account") == account_id
            ),
            key=lambda found: found.registered_at,
        )

    async def all(self) -> list[OwnBot]:
        return [
            _own_bot(bot_id, data) for bot_id, data in await self._store.provider_states(BOT_SCOPE)
        ]

    async def token(self, bot_id: str) -> str | None:
        """The token of ``bot_id`` (None: none, or not readable with this secret)."""
        data = await self._store.get_provider_state(BOT_SCOPE, bot_id) if bot_id else None
        if data is None:
            return None
        from cryptography.fernet import InvalidToken

        try:
            return str(self._fernet.decrypt(str(data["token"]).encode()).decode())
        except InvalidToken:
            logger.warning(
                "the token of Telegram bot %s cannot be read with this webhook secret: "
                "register the bot again",
                bot_id,
            )
            return None

    async def remove(self, bot_id: str) -> None:
        await self._store.delete_provider_state(BOT_SCOPE, bot_id)


def _own_bot(bot_id: str, data: dict[str, Any]) -> OwnBot:
    return OwnBot(
        bot_id=bot_id,
        username=str(data.get("username") or ""),
        account_id=str(data["account"]),
        token_hint=str(data.get("hint") or f"{bot_id}:…"),
        registered_at=float(data.get("registered_at") or 0.0),
    )
