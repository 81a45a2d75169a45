"""An account's own Telegram bot (``/telegram/bots``)."""

from __future__ import annotations

from pydantic import Field

from ._base import RequestModel, ResponseModel, Timestamp

__all__ = ["TELEGRAM_BOT_TOKEN_PATTERN", "TelegramBot", "TelegramBotRequest"]

TELEGRAM_BOT_TOKEN_PATTERN = r"^[0-9]{5,20}:[A-Za-z0-9_-]{30,100}$"
"""What @BotFather hands out: the bot's id, a colon, then the secret part."""


class TelegramBotRequest(RequestModel):
    """``POST /telegram/bots``: the token of a bot the account made with @BotFather."""

    token: str = Field(
        pattern=TELEGRAM_BOT_TOKEN_PATTERN,
        description="The bot's token from @BotFather (`123456789:AA…`). Kept encrypted, "
        "never shown again.",
    )


class TelegramBot(ResponseModel):
    """An account's own bot: its sends on telegram go out from it, its start links
    open it, and what people write to it is this account's only."""

    bot_id: str = Field(description="The bot's id (the number its token starts with).")
    username: str = Field(description="Its name: start links are `t.me/<username>?start=…`.")
    token_hint: str = Field(description="The bot id and the token's last four characters.")
    webhook_url: str = Field(description="Where the service set the bot's webhook.")
    created_at: Timestamp
