"""A humanwire service wired to the Slack contract fake, both on loopback: the service
posts through the fake's Web API as it would through slack.com, the fake delivers signed
events and button clicks as Slack would, and the test plays the workspace's members."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest
from twilio_support import in_background

from humanwire import HumanWire
from humanwire.server.config import SlackConfig
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.service import fast_config
from humanwire.testing.slack import FakeSlack, FakeSlackMessage, FakeWorkspace, SlackFakeServer

__all__ = [
    "SlackLive",
    "fake_slack",
    "install",
    "reply_when_posted",
    "slack_live",
    "start_slack_live",
]


@dataclass
class SlackLive:
    fake: FakeSlack
    server: SlackFakeServer
    runner: ServiceRunner
    client: HumanWire
    key: str
    member: str
    """A member of the shared workspace (the human)."""
    channel: str
    """A channel of the shared workspace the bot is in."""

    @property
    def base_url(self) -> str:
        return self.runner.base_url

    def account(self, name: str) -> tuple[HumanWire, str]:
        key = self.runner.create_account(name)
        return HumanWire(api_key=key, base_url=self.base_url, max_retries=0), key

    def posted(self, to: str, count: int = 1, timeout: float = 10) -> FakeSlackMessage:
        """The ``count``-th message the bot posted to ``to`` (a member's DM or a channel)."""
        self.fake.wait_for(lambda: len(self.fake.posted_to(to)) >= count, timeout=timeout)
        return self.fake.posted_to(to)[count - 1]


@pytest.fixture
def fake_slack() -> Iterator[SlackFakeServer]:
    with SlackFakeServer() as server:
        yield server


def start_slack_live(
    database: str, server: SlackFakeServer, **changes: Any
) -> tuple[ServiceRunner, str]:
    """The service on ``database`` (a SQLite file or a PostgreSQL URL), wired to the fake."""
    fake = server.fake
    settings: dict[str, Any] = {
        "bot_token": fake.workspace.bot_token,
        "signing_secret": fake.signing_secret,
        "api_base": server.api_base,
        "client_id": fake.client_id,
        "client_secret": fake.client_secret,
    }
    slack = SlackConfig(**{**settings, **changes.pop("slack", {})})
    config = replace(fast_config(database), slack=slack, **changes)
    runner = ServiceRunner(config, "127.0.0.1", 0)
    runner.start()
    # The app's Event Subscriptions and Interactivity URLs, as the operator sets them
    # (docs/going-live/slack.md).
    fake.events_url = f"{runner.base_url}/providers/slack/events"
    fake.interactions_url = f"{runner.base_url}/providers/slack/interactions"
    return runner, runner.create_account("tester")


@pytest.fixture
def slack_live(database: str, fake_slack: SlackFakeServer) -> Iterator[SlackLive]:
    """The service wired to the fake, on each store in turn."""
    fake = fake_slack.fake
    member = fake.add_member("ada")
    channel = fake.add_channel("deploys", members=[member])
    runner, key = start_slack_live(database, fake_slack)
    client = HumanWire(api_key=key, base_url=runner.base_url, max_retries=0)
    try:
        yield SlackLive(fake, fake_slack, runner, client, key, member, channel)
    finally:
        client.close()
        runner.stop()


def reply_when_posted(live: SlackLive, to: str, text: str, *, user: str | None = None) -> Any:
    """Once the bot posted to ``to``, ``user`` (the member) answers ``text`` in its thread."""

    def act() -> None:
        message = live.posted(to)
        live.fake.reply(message, user or live.member, text)

    return in_background(act)


def install(live: SlackLive, key: str, workspace: FakeWorkspace) -> httpx.Response:
    """What an admin does: "Add to Slack" in the inbox, allow in Slack, land back here."""
    started = httpx.get(
        f"{live.base_url}/inbox/slack/install", headers={"Authorization": f"Bearer {key}"}
    )
    assert started.status_code == 303, started.text
    assert started.headers["location"].startswith("/providers/slack/install?state=")
    to_slack = httpx.get(live.base_url + started.headers["location"])
    assert to_slack.status_code == 302
    authorize = to_slack.headers["location"]
    assert authorize.startswith(live.server.base_url + "/oauth/v2/authorize?")
    live.fake.next_install_team = workspace.team_id
    back = live.fake.authorize(authorize)
    assert back.startswith(f"{live.base_url}/providers/slack/oauth?")
    return httpx.get(back)
