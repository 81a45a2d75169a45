"""``[discord]``: the Discord application (docs/going-live/discord.md)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, SecretStr

from ...config import DiscordConfig
from .checks import HttpURL, _about, _Strict

__all__ = ["DiscordSettings"]

_SNOWFLAKE = re.compile(r"[1-9][0-9]{5,18}")
_PUBLIC_KEY = re.compile(r"[0-9a-fA-F]{64}")
# A bot token is three dot-separated base64url parts; its exact lengths have changed over
# the years, so only its shape is checked.
_BOT_TOKEN = re.compile(r"[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{10,}")


def _bot_token(value: SecretStr) -> SecretStr:
    if not _BOT_TOKEN.fullmatch(value.get_secret_value()):
        raise ValueError("must be the app's bot token (Developer Portal → Bot → Reset Token)")
    return value


def _application_id(value: str) -> str:
    if not _SNOWFLAKE.fullmatch(value):
        raise ValueError("must be the application id (digits, from General Information)")
    return value


def _public_key(value: str) -> str:
    if not _PUBLIC_KEY.fullmatch(value):
        raise ValueError("must be the app's public key: 64 hex digits (General Information)")
    return value.lower()


class DiscordSettings(_Strict):
    bot_token: Annotated[
        SecretStr | None,
        AfterValidator(lambda v: v if v is None else _bot_token(v)),
        _about("The app's bot token; with `application_id` and `public_key`, turns Discord on."),
    ] = None
    application_id: Annotated[
        str | None,
        AfterValidator(lambda v: v if v is None else _application_id(v)),
        _about("The application's id (General Information)."),
    ] = None
    public_key: Annotated[
        str | None,
        AfterValidator(lambda v: v if v is None else _public_key(v)),
        _about(
            "The app's public key (hex): every request to `/providers/discord/interactions` "
            "must carry Discord's Ed25519 signature by it, or is refused 401."
        ),
    ] = None
    api_base: Annotated[HttpURL, _about("The REST API's address; tests point it at the fake.")] = (
        DiscordConfig.api_base
    )

    @property
    def given(self) -> bool:
        return bool(self.model_fields_set)

    def problems(self) -> list[str]:
        if not self.given:
            return []
        needed = ("bot_token", "application_id", "public_key")
        missing = [key for key in needed if getattr(self, key) is None]
        if not missing:
            return []
        return [f"discord is half-configured: missing {', '.join(f'discord.{k}' for k in missing)}"]

    def config(self) -> DiscordConfig | None:
        if self.bot_token is None or self.application_id is None or self.public_key is None:
            return None
        return DiscordConfig(
            bot_token=self.bot_token.get_secret_value(),
            application_id=self.application_id,
            public_key=self.public_key,
            api_base=self.api_base,
        )
