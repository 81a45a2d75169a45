""" "Or open your queue" on the channels with buttons: an approval request's ask that
carries the console's queue (``Outbound.queue_url``, set for an approver who is a person
of the directory) shows an "Open your queue" link button beside Approve / Reject and the
page's, on Slack, Telegram, Discord and Teams (public links only where the platform opens
no other); without one, no such button. The text of the ask carries the queue line on
every channel (the short form on SMS)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from humanwire.server.approvals.texts import EmailLinks, ask_text, email_ask_text, reminder_text
from humanwire.server.config import DiscordConfig, SlackConfig, TelegramConfig
from humanwire.server.delivery.base import Outbound
from humanwire.server.delivery.port import InboundPort
from humanwire.server.delivery.teams.provider import approval_card

QUEUE = "https://hw.example.com/console"
PAGE = "https://hw.example.com/a/tok"


class _Inbound:
    """What the providers read of the engine to draw an approval's buttons."""

    metrics = None
    state = None

    async def button_approver(self, channel: str, interaction_id: str, to_addr: str) -> int:
        return 0


def _item(channel: str, queue: str | None) -> Outbound:
    return Outbound(
        account_id="acc_1",
        interaction_id="int_1",
        channel=channel,  # type: ignore[arg-type]
        kind="message",
        from_addr="bot",
        to_addr="1234",
        text="Approval requested: Deploy?",
        form_url=PAGE,
        queue_url=queue,
    )


def _inbound() -> InboundPort:
    return cast(InboundPort, _Inbound())


def test_every_text_carries_the_queue_line_and_sms_its_short_form() -> None:
    chat = ask_text("Deploy?", None, None, PAGE, None, replies=False, queue=QUEUE)
    assert chat.splitlines()[-1] == f"Or open your queue: {QUEUE}"
    sms = ask_text("Deploy?", None, None, PAGE, "4821", replies=True, queue=QUEUE, short=True)
    assert sms.splitlines()[-1] == f"Your queue: {QUEUE}"
    reminder = reminder_text("Deploy?", PAGE, None, replies=True, queue=QUEUE, short=True)
    assert reminder.splitlines()[-1] == f"Your queue: {QUEUE}"
    email = email_ask_text("Deploy?", None, None, EmailLinks(PAGE, "a", "r", QUEUE))
    assert email.splitlines()[-1].endswith(f"your queue (every request waiting for you): {QUEUE}")
    assert "queue" not in ask_text("Deploy?", None, None, PAGE, None, replies=False)
    assert "queue" not in email_ask_text("Deploy?", None, None, EmailLinks(PAGE, "a", "r"))


@pytest.mark.parametrize("queue", [QUEUE, None])
def test_slack_shows_an_open_your_queue_button(queue: str | None) -> None:
    pytest.importorskip("slack_sdk")
    from humanwire.server.delivery.slack.provider import SlackProvider

    provider = SlackProvider(SlackConfig("xoxb-1", "s"), _inbound(), public_url=PAGE)
    blocks = asyncio.run(provider._blocks(_item("slack", queue)))
    buttons = [e for b in blocks if b["type"] == "actions" for e in b["elements"]]
    links = {e["text"]["text"]: e.get("url") for e in buttons}
    assert links["Open the page"] == PAGE
    assert links.get("Open your queue") == queue
    assert len({e["action_id"] for e in buttons}) == len(buttons)  # Slack wants them unique


@pytest.mark.parametrize("queue", [QUEUE, None])
def test_telegram_shows_an_open_your_queue_button(queue: str | None) -> None:
    pytest.importorskip("telegram")
    from humanwire.server.delivery.telegram.provider import TelegramProvider

    provider = TelegramProvider(TelegramConfig("1:t", "s"), _inbound(), public_url=PAGE)
    keyboard = asyncio.run(provider._keyboard(_item("telegram", queue)))
    assert keyboard is not None
    urls = {b.text: b.url for row in keyboard.inline_keyboard for b in row}
    assert urls.get("Open your queue") == queue
    assert {"Approve", "Reject"} <= set(urls)


def test_telegram_and_teams_offer_no_button_for_a_link_that_is_not_public() -> None:
    pytest.importorskip("telegram")
    from humanwire.server.delivery.telegram.provider import TelegramProvider

    local = "http://127.0.0.1:8080/console"
    provider = TelegramProvider(TelegramConfig("1:t", "s"), _inbound(), public_url=PAGE)
    keyboard = asyncio.run(provider._keyboard(_item("telegram", local)))
    assert keyboard is not None
    assert all(b.url is None for row in keyboard.inline_keyboard for b in row)
    card = approval_card("Deploy?", "int_1", PAGE, local)
    assert [a["title"] for a in card["actions"] if a["type"] == "Action.OpenUrl"] == [
        "Open the page"
    ]


@pytest.mark.parametrize("queue", [QUEUE, None])
def test_discord_shows_an_open_your_queue_button(queue: str | None) -> None:
    pytest.importorskip("discord")
    from humanwire.server.delivery.discord.provider import DiscordProvider

    config = DiscordConfig("t", "1", "00" * 32)
    provider = DiscordProvider(config, _inbound(), public_url=PAGE)
    rows: list[dict[str, Any]] = asyncio.run(provider._components(_item("discord", queue)))
    urls = {c["label"]: c.get("url") for row in rows for c in row["components"]}
    assert urls["Open the page"] == PAGE
    assert urls.get("Open your queue") == queue


@pytest.mark.parametrize("queue", [QUEUE, None])
def test_teams_card_shows_an_open_your_queue_action(queue: str | None) -> None:
    card = approval_card("Deploy?", "int_1", PAGE, queue)
    urls = {a["title"]: a.get("url") for a in card["actions"]}
    assert urls["Open the page"] == PAGE
    assert urls.get("Open your queue") == queue
