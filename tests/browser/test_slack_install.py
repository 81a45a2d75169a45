"""An account installs the bot into its own workspace from the inbox, in chromium: "Add to
Slack", Slack's consent (the contract fake's), back to the service, the workspace listed,
then disconnected."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from humanwire.server.config import SlackConfig
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.service import fast_config
from humanwire.testing.slack import SlackFakeServer, slack_fake

pytestmark = pytest.mark.browser


@pytest.fixture
def slack() -> Iterator[SlackFakeServer]:
    with slack_fake() as server:
        yield server


@pytest.fixture
def runner(tmp_path: Path, slack: SlackFakeServer) -> Iterator[ServiceRunner]:
    fake = slack.fake
    config = replace(
        fast_config(tmp_path / "slack.db"),
        slack=SlackConfig(
            bot_token=fake.workspace.bot_token,
            signing_secret=fake.signing_secret,
            api_base=slack.api_base,
            client_id=fake.client_id,
            client_secret=fake.client_secret,
        ),
    )
    with ServiceRunner(config, "127.0.0.1", 0) as running:
        fake.events_url = f"{running.base_url}/providers/slack/events"
        yield running


def test_add_to_slack_from_the_inbox_and_disconnect(
    desktop_page: Page, runner: ServiceRunner, slack: SlackFakeServer
) -> None:
    page, fake = desktop_page, slack.fake
    acme = fake.add_workspace("Acme & Co <Ltd>")
    fake.next_install_team = acme.team_id
    key = runner.create_account("tester")
    page.goto(f"{runner.base_url}/inbox?key={key}")
    page.get_by_role("link", name="Slack").click()
    expect(page).to_have_url(re.compile(r"/inbox/slack$"))
    expect(page.get_by_text("No workspace of your own yet.")).to_be_visible()
    expect(page.get_by_text(fake.workspace.team_id)).to_be_visible()  # the shared one

    page.get_by_role("link", name="Add to Slack").click()
    # Through Slack's consent page and back to the service's OAuth redirect.
    expect(page).to_have_url(re.compile(r"/providers/slack/oauth\?"))
    expect(page.get_by_role("heading", name="Installed in Acme & Co <Ltd>")).to_be_visible()
    assert acme.bot_token not in page.content()
    assert acme.installed and fake.authorizations[-1].team == acme.team_id

    page.goto(f"{runner.base_url}/inbox/slack")
    row = page.get_by_role("row", name=re.compile(acme.team_id))
    expect(row).to_contain_text("Acme & Co <Ltd>")  # escaped, shown as text
    row.get_by_role("button", name="Disconnect Acme & Co <Ltd>").click()
    expect(page).to_have_url(re.compile(r"/inbox/slack$"))
    expect(page.get_by_text("No workspace of your own yet.")).to_be_visible()
    assert fake.violations == []
