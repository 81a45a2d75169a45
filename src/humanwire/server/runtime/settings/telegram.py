"""``[telegram]``: the shared Telegram bot (docs/going-live/telegram.md)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, SecretStr

from ...config import TelegramConfig
from .checks import HttpURL, _about, _Strict

__all__ = ["TelegramSettings"]

_BOT_TOKEN = re.compile(r"[0-9]{5,20}:[A-Za-z0-9_-]{30,}")
_WEBHOOK_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")


def _bot_token(value: SecretStr) -> SecretStr:
    if not _BOT_TOKEN.fullmatch(value.get_secret_value()):
        raise ValueError("must be a Telegram bot token from @BotFather (123456789:AA…)")
    return value


def _webhook_secret(value: SecretStr) -> SecretStr:
    # Telegram's own rule for setWebhook's secret_token.
    if not _WEBHOOK_SECRET.fullmatch(value.get_secret_value()):
        raise ValueError("must be 1-256 characters of A-Z, a-z, 0-9, _ and -")
    return value


class TelegramSettings(_Strict):
    bot_token: Annotated[
        SecretStr | None,
        AfterValidator(lambda v: v if v is None else _bot_token(v)),
        _about(
            "The shared bot's token (from @BotFather); with `webhook_secret`, turns Telegram on."
        ),
    ] = None
    webhook_secret: Annotated[
        SecretStr | None,
        AfterValidator(lambda v: v if v is None else _webhook_secret(v)),
        _about(
            "The secret the service gives `setWebhook`: Telegram sends it in "
            "`X-Telegram-Bot-Api-Secret-Token` with every update, and an update without it "
            "is refused (1-256 of `A-Za-z0-9_-`)."
        ),
    ] = None
    api_base: Annotated[HttpURL, _about("The Bot API's address; tests point it at the fake.")] = (
        TelegramConfig.api_base
    )

    @property
    def given(self) -> bool:
        return bool(self.model_fields_set)

    def problems(self) -> list[str]:
        if not self.given:
            return []
        missing = [key for key in ("bot_token", "webhook_secret") if getattr(self, key) is None]
        if not missing:
            return []
        return [
            f"telegram is half-configured: missing {', '.join(f'telegram.{k}' for k in missing)}"
        ]

    def config(self) -> TelegramConfig | None:
        if self.bot_token is None or self.webhook_secret is None:
            return None
        return TelegramConfig(
            bot_token=self.bot_token.get_secret_value(),
            webhook_secret=self.webhook_secret.get_secret_value(),
            api_base=self.api_base,
        )
