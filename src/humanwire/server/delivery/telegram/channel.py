"""The telegram channel's registration (``delivery.channels.ChatChannel``): light, so
listing it loads no SDK."""

from __future__ import annotations

from typing import Any

from humanwire.types import TelegramFormRequest, TelegramMessageRequest

from ..channels import ChatChannel

__all__ = ["SANDBOX_BOT", "SANDBOX_BOT_USERNAME", "TELEGRAM"]

SANDBOX_BOT = "7000000001"
"""The sandbox's fictional shared bot (a bot's id, as Telegram numbers it)."""
SANDBOX_BOT_USERNAME = "humanwire_sandbox_bot"
"""Its name in start links (``t.me/<name>?start=…``): fictional, nothing opens them."""


def _configured(config: Any) -> bool:
    return getattr(config, "telegram", None) is not None


def _describe(config: Any) -> str:
    details = ["the shared bot", "webhook /providers/telegram/updates"]
    if config.telegram.api_base != "https://api.telegram.org":
        details.append(f"api {config.telegram.api_base}")
    return "; ".join(details)


TELEGRAM = ChatChannel(
    name="telegram",
    title="Telegram",
    message_request=TelegramMessageRequest,
    operation_id="sendTelegram",
    form_request=TelegramFormRequest,
    form_operation_id="sendTelegramForm",
    summary="Message a human over Telegram",
    description=(
        "Sends a message from the bot to a chat (the person started the chat with the "
        "bot: a bot cannot write first); a reply to it, or the next message in the chat, "
        "is the answer."
    ),
    sandbox_sender=SANDBOX_BOT,
    configured=_configured,
    describe=_describe,
    button_via="telegram_button",
)
