"""Accounts' own workspaces: the OAuth v2 install started from the inbox, sends with
``from`` = that workspace's team id, tokens kept sealed and never shown, revoked by an
uninstall, from the inbox or with ``humanwire slack revoke``."""

from __future__ import annotations

import logging

import httpx
import pytest
from slack_support import SlackLive, install

from humanwire import InvalidRequestError
from humanwire.cli import main as cli_main
from humanwire.testing.receiver import WebhookReceiver
from humanwire.testing.slack import FakeWorkspace
from pg_support import stored_bytes


@pytest.fixture
def own(slack_live: SlackLive) -> FakeWorkspace:
    workspace = slack_live.fake.add_workspace("Acme")
    page = install(slack_live, slack_live.key, workspace)
    assert page.status_code == 200, page.text
    assert "Installed in Acme" in page.text and workspace.team_id in page.text
    return workspace


def test_an_installed_workspace_is_a_sender_of_its_account(
    slack_live: SlackLive, own: FakeWorkspace
) -> None:
    live = slack_live
    assert own.installed
    scopes = live.fake.authorizations[-1].scopes
    assert {"chat:write", "im:write", "im:history", "channels:history"} <= set(scopes)
    member = live.fake.add_member("grace", team=own.team_id)

    from twilio_support import in_background

    def answer() -> None:
        live.fake.reply(live.posted(member), member, "from Acme")

    done = in_background(answer)
    result = live.client.messages.slack(
        to=member, message="Hi Acme", wait_time=10, from_=own.team_id
    )
    done()
    assert result.reply == "from Acme"
    [posted] = live.fake.posted_to(member)
    assert posted.team == own.team_id
    post = [r for r in live.fake.requests if r.method == "chat.postMessage"][-1]
    assert post.token == own.bot_token  # the workspace's own token, not the shared bot's
    assert live.fake.violations == []


def test_tokens_are_never_shown_stored_in_clear_or_logged(
    slack_live: SlackLive, database: str, caplog: pytest.LogCaptureFixture
) -> None:
    live = slack_live
    caplog.set_level(logging.DEBUG)
    workspace = live.fake.add_workspace("Sealed")
    page = install(live, live.key, workspace)
    assert page.status_code == 200
    token = workspace.bot_token
    assert token.startswith("xoxb-")
    shown = httpx.get(
        f"{live.base_url}/inbox/slack", headers={"Authorization": f"Bearer {live.key}"}
    )
    assert workspace.team_id in shown.text and "Sealed" in shown.text
    for text in (page.text, shown.text, caplog.text):
        assert token not in text
    stored = stored_bytes(database)
    assert token.encode() not in stored and workspace.team_id.encode() in stored


def test_another_account_can_neither_send_from_nor_take_the_workspace(
    slack_live: SlackLive, own: FakeWorkspace
) -> None:
    live = slack_live
    other, other_key = live.account("other")
    member = live.fake.add_member("lin", team=own.team_id)
    with pytest.raises(InvalidRequestError) as caught:
        other.messages.slack(to=member, message="Hi", from_=own.team_id)
    assert caught.value.field == "from"
    refused = install(live, other_key, own)
    assert refused.status_code == 409
    assert "another humanwire account" in refused.text
    other.close()


def test_a_dm_to_the_accounts_own_bot_is_its_message_received(
    slack_live: SlackLive, own: FakeWorkspace
) -> None:
    live = slack_live
    member = live.fake.add_member("ken", team=own.team_id)
    # Open the DM (the bot writes first), then the member writes outside any thread.
    live.client.messages.slack(to=member, message="Hello", from_=own.team_id)
    dm = live.posted(member).channel
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        live.fake.post(dm, member, "unprompted", team=own.team_id)
        [event] = receiver.wait_for("message.received")
    assert event.payload.interaction_id is None
    assert (event.payload.body, event.payload.to) == ("unprompted", own.team_id)


def test_a_dm_to_the_shared_bot_outside_a_thread_belongs_to_nobody(
    slack_live: SlackLive,
) -> None:
    live = slack_live
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        live.client.messages.slack(to=live.member, message="Hello")
        dm = live.posted(live.member).channel
        live.fake.post(dm, live.member, "unprompted")
        live.fake.wait_idle()
        assert receiver.events == []


def test_an_uninstall_forgets_the_token(slack_live: SlackLive, own: FakeWorkspace) -> None:
    live = slack_live
    live.fake.uninstall(own.team_id)
    live.fake.wait_idle()
    member = live.fake.add_member("max", team=own.team_id)
    with pytest.raises(InvalidRequestError) as caught:
        live.client.messages.slack(to=member, message="Still there?", from_=own.team_id)
    assert caught.value.field == "from"
    page = httpx.get(
        f"{live.base_url}/inbox/slack", headers={"Authorization": f"Bearer {live.key}"}
    )
    assert own.team_id not in page.text


def test_disconnecting_in_the_inbox_and_the_revoke_command(
    slack_live: SlackLive, own: FakeWorkspace, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    live = slack_live
    auth = {"Authorization": f"Bearer {live.key}"}
    gone = httpx.post(
        f"{live.base_url}/inbox/slack/disconnect", data={"team": own.team_id}, headers=auth
    )
    assert gone.status_code == 303
    with pytest.raises(InvalidRequestError):
        live.client.messages.slack(to="U0ANYONE01", message="x", from_=own.team_id)
    # Installed again, then revoked from the command line against the same database.
    assert install(live, live.key, own).status_code == 200
    db = database
    assert cli_main(["slack", "workspaces", "--db", db]) == 0
    listed = capsys.readouterr().out
    assert own.team_id in listed and own.bot_token not in listed
    assert cli_main(["slack", "revoke", own.team_id, "--db", db]) == 0
    assert cli_main(["slack", "revoke", own.team_id, "--db", db]) == 1
    with pytest.raises(InvalidRequestError):
        live.client.messages.slack(to="U0ANYONE01", message="x", from_=own.team_id)


def test_an_install_link_is_single_use_and_needs_an_account(slack_live: SlackLive) -> None:
    live = slack_live
    anonymous = httpx.get(f"{live.base_url}/providers/slack/install")
    assert anonymous.status_code == 401
    forged = httpx.get(f"{live.base_url}/providers/slack/oauth?code=x&state=made-up")
    assert forged.status_code == 400
    workspace = live.fake.add_workspace("Once")
    started = httpx.get(
        f"{live.base_url}/providers/slack/install",
        headers={"Authorization": f"Bearer {live.key}"},
    )
    live.fake.next_install_team = workspace.team_id
    back = live.fake.authorize(started.headers["location"])
    assert httpx.get(back).status_code == 200
    assert httpx.get(back).status_code == 400  # the state was used up
