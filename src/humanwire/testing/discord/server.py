"""``DiscordFakeServer``: ``FakeDiscord`` served over loopback HTTP (``_fake_server``):
``api_base`` is what the REST base ``https://discord.com/api/v10`` would be."""

from __future__ import annotations

from .._fake_server import FakeServer
from .fake import FakeDiscord
from .responses import API_PREFIX

__all__ = ["DiscordFakeServer", "discord_fake"]


class DiscordFakeServer(FakeServer[FakeDiscord]):
    """``with DiscordFakeServer() as discord:`` — ``discord.api_base`` is the REST base."""

    label = "fake Discord"

    def __init__(
        self, fake: FakeDiscord | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        super().__init__(fake or FakeDiscord(), host, port)

    @property
    def api_base(self) -> str:
        return f"{self.base_url}{API_PREFIX}"


def discord_fake(fake: FakeDiscord | None = None) -> DiscordFakeServer:
    """A fake Discord to serve: ``with discord_fake() as discord: ...``."""
    return DiscordFakeServer(fake)
