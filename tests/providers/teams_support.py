"""A humanwire service wired to the Teams contract fake, both on loopback: the service
asks the fake's token endpoint for the bot's tokens, reads its key set, and calls its
Connector at the service URL each install gave; the fake signs the people's activities
with that key set and posts them to the service's messaging endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest

from humanwire.server.config import TeamsConfig
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.service import fast_config
from humanwire.testing.teams import FakeActivity, FakeTeams, FakeTeamsUser, TeamsFakeServer

__all__ = ["TeamsLive", "fake_teams", "teams_config", "teams_live"]


def teams_config(server: TeamsFakeServer, **options: Any) -> TeamsConfig:
    fake = server.fake
    return TeamsConfig(
        app_id=fake.app_id,
        app_password=fake.app_password,
        tenant_id=options.pop("tenant_id", fake.tenant_id),
        token_url=server.token_url,
        jwks_url=server.jwks_url,
        **options,
    )


@dataclass
class TeamsLive:
    fake: FakeTeams
    server: TeamsFakeServer
    runner: ServiceRunner
    http: httpx.Client
    ada: FakeTeamsUser
    """A person of the tenant who installed the app."""

    @property
    def base_url(self) -> str:
        return self.runner.base_url

    def sent(self, to: FakeTeamsUser, count: int = 1, timeout: float = 10) -> FakeActivity:
        """The ``count``-th activity the bot sent ``to``."""
        self.fake.wait_for(lambda: len(self.fake.sent_to(to)) >= count, timeout=timeout)
        return self.fake.sent_to(to)[count - 1]

    def ask(self, **body: Any) -> httpx.Response:
        return self.http.post("/messages/teams", json={"to": self.ada.id, **body})


@pytest.fixture
def fake_teams() -> Iterator[TeamsFakeServer]:
    with TeamsFakeServer() as server:
        yield server


@pytest.fixture
def teams_live(database: str, fake_teams: TeamsFakeServer) -> Iterator[TeamsLive]:
    """The service wired to the fake, on each store in turn; ada has installed the app."""
    fake = fake_teams.fake
    ada = fake.add_user("Ada Lovelace")
    runner = ServiceRunner(replace(fast_config(database), teams=teams_config(fake_teams)))
    runner.start()
    fake.messaging_endpoint = f"{runner.base_url}/providers/teams/messages"
    installed = fake.install(ada)
    assert installed.status_code == 200, installed.text
    key = runner.create_account("tester")
    http = httpx.Client(
        base_url=runner.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
    try:
        yield TeamsLive(fake, fake_teams, runner, http, ada)
    finally:
        http.close()
        runner.stop()
