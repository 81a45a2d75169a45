"""A humanwire service wired to the Discord contract fake, both on loopback: the service
calls the fake's REST API as it would discord.com (discord.py's one ``Route.BASE``), the
fake signs the people's clicks and modal submissions with the application's Ed25519 key
and posts them to the service's interactions endpoint, and the test plays the people."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest

from humanwire.server.config import DiscordConfig
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.discord import (
    DiscordFakeServer,
    FakeDiscord,
    FakeDiscordMessage,
    FakeModal,
    FakeUser,
)
from humanwire.testing.service import fast_config

__all__ = ["DiscordLive", "discord_config", "discord_live", "fake_discord"]


def discord_config(server: DiscordFakeServer) -> DiscordConfig:
    fake = server.fake
    return DiscordConfig(
        bot_token=fake.bot_token,
        application_id=fake.application_id,
        public_key=fake.public_key,
        api_base=server.api_base,
    )


@dataclass
class DiscordLive:
    fake: FakeDiscord
    server: DiscordFakeServer
    runner: ServiceRunner
    http: httpx.Client
    ada: FakeUser
    """A person who shares the app's server: DMs reach her."""

    @property
    def base_url(self) -> str:
        return self.runner.base_url

    def account(self, name: str) -> httpx.Client:
        key = self.runner.create_account(name)
        return httpx.Client(
            base_url=self.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
        )

    def posted(self, to: Any, count: int = 1, timeout: float = 10) -> FakeDiscordMessage:
        """The ``count``-th message the bot posted to ``to`` (a user's DM or a channel)."""
        self.fake.wait_for(lambda: len(self.fake.posted_to(to)) >= count, timeout=timeout)
        return self.fake.posted_to(to)[count - 1]

    def modal(self, count: int = 1) -> FakeModal:
        self.fake.wait_for(lambda: len(self.fake.modals) >= count)
        return self.fake.modals[count - 1]

    def ask(self, http: httpx.Client | None = None, **body: Any) -> httpx.Response:
        return (http or self.http).post("/messages/discord", json={"to": self.ada.id, **body})

    def status(self, interaction_id: str, http: httpx.Client | None = None) -> str:
        answer = (http or self.http).get(f"/interactions/{interaction_id}/status")
        return str(answer.json()["status"])


@pytest.fixture
def fake_discord() -> Iterator[DiscordFakeServer]:
    with DiscordFakeServer() as server:
        yield server


@pytest.fixture
def discord_live(database: str, fake_discord: DiscordFakeServer) -> Iterator[DiscordLive]:
    """The service wired to the fake, on each store in turn."""
    fake = fake_discord.fake
    ada = fake.add_user("ada")
    runner = ServiceRunner(replace(fast_config(database), discord=discord_config(fake_discord)))
    runner.start()
    fake.interactions_url = f"{runner.base_url}/providers/discord/interactions"
    key = runner.create_account("tester")
    http = httpx.Client(
        base_url=runner.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
    try:
        yield DiscordLive(fake, fake_discord, runner, http, ada)
    finally:
        http.close()
        runner.stop()
