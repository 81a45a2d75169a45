"""The discord channel's registration (``delivery.channels.ChatChannel``): light, so
listing it loads no SDK."""

from __future__ import annotations

from typing import Any

from humanwire.types import DiscordFormRequest, DiscordMessageRequest

from ..channels import ChatChannel

__all__ = ["DISCORD", "SANDBOX_BOT"]

SANDBOX_BOT = "1100000000000000001"
"""The sandbox's fictional bot (a user id, as Discord numbers them)."""


def _configured(config: Any) -> bool:
    return getattr(config, "discord", None) is not None


def _describe(config: Any) -> str:
    details = [
        f"application {config.discord.application_id}",
        "interactions /providers/discord/interactions",
    ]
    if config.discord.api_base != "https://discord.com/api/v10":
        details.append(f"api {config.discord.api_base}")
    return "; ".join(details)


DISCORD = ChatChannel(
    name="discord",
    title="Discord",
    message_request=DiscordMessageRequest,
    operation_id="sendDiscord",
    form_request=DiscordFormRequest,
    form_operation_id="sendDiscordForm",
    summary="Message a human over Discord",
    description=(
        "Sends a DM from the app's bot to a user id (the person shares a server with the "
        "app) or a post to a channel id, with a Reply button: the text the person types in "
        "the form it opens is the answer."
    ),
    sandbox_sender=SANDBOX_BOT,
    configured=_configured,
    describe=_describe,
    button_via="discord_button",
    # No gateway, so no "next message in the chat": only the Reply button answers.
    by_pair=False,
)
