"""The chat channels the service knows: one registration each (``channels.ChatChannel``).

Adding a chat channel is its package under ``delivery/`` and one entry here; no engine
file, no route module changes (docs/explanation/architecture.md, "A new chat channel").
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from .channels import ChatChannel
from .discord.channel import DISCORD
from .teams.channel import TEAMS
from .telegram.channel import TELEGRAM

if TYPE_CHECKING:
    from ..config import ServiceConfig

__all__ = ["CHAT_CHANNELS", "chat_channel_of", "chat_form_of", "startup_lines"]

CHAT_CHANNELS: Mapping[str, ChatChannel] = MappingProxyType(
    {channel.name: channel for channel in (TELEGRAM, DISCORD, TEAMS)}
)
"""Every chat channel by its name, in the order pages and start-up lines show them."""


def chat_channel_of(request: object) -> ChatChannel | None:
    """The chat channel whose message request ``request`` is (None: none's)."""
    for channel in CHAT_CHANNELS.values():
        if isinstance(request, channel.message_request):
            return channel
    return None


def chat_form_of(request: object) -> ChatChannel | None:
    """The chat channel whose form request ``request`` is (None: none's)."""
    for channel in CHAT_CHANNELS.values():
        if isinstance(request, channel.form_request):
            return channel
    return None


def startup_lines(config: ServiceConfig) -> list[str]:
    """``config.startup_lines`` with a line per chat channel after the built-in
    channels' (``→ Telegram (…)``, or ``→ sandbox (no telegram)``): what ``humanwire
    serve`` prints. Never a secret."""
    from ..config import CHANNELS
    from ..config import startup_lines as channel_lines

    lines = channel_lines(config)
    labels = tuple(f"{channel:<9} " for channel in CHANNELS)
    at = max((i + 1 for i, line in enumerate(lines) if line.startswith(labels)), default=0)
    chat = [
        f"{channel.name:<9} → {channel.title} ({channel.describe(config)})"
        if channel.configured(config)
        else f"{channel.name:<9} → sandbox (no {channel.name})"
        for channel in CHAT_CHANNELS.values()
    ]
    return [*lines[:at], *chat, *lines[at:]]
