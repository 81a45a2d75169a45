"""The inbox, where a developer plays the human, and the reply page of cards with
``replyLink``, driven in headless chromium against the service on loopback."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from browser_helpers import held
from playwright.sync_api import BrowserContext, Page, expect

from humanwire import HumanWire
from humanwire.testing import WebhookReceiver
from humanwire.testing.service import RunningService

pytestmark = pytest.mark.browser

HUMAN = "+12025550100"


def open_inbox(page: Page, service: RunningService, key: str) -> None:
    """The embedded service's printed link: ``?key=`` sets the cookie, then drops out of
    the address; the page goes live over server-sent events."""
    page.goto(f"{service.base_url}/inbox?key={key}")
    assert page.url == f"{service.base_url}/inbox"
    page.wait_for_selector("html[data-live-connected]")


def delivery(page: Page, text: str) -> object:
    return page.locator("li.msg", has_text=text)


def test_login_with_the_api_key(
    humanwire_service: RunningService, humanwire_api_key: str, context: BrowserContext
) -> None:
    page = context.new_page()
    page.goto(f"{humanwire_service.base_url}/inbox")
    expect(page).to_have_url(re.compile(r"/inbox/login\?next=%2Finbox$"))
    page.get_by_label("API key").fill("hw_wrong")
    page.get_by_role("button", name="Open the inbox").click()
    expect(page.get_by_role("alert")).to_have_text("That API key is not valid.")

    page.get_by_label("API key").fill(humanwire_api_key)
    page.get_by_role("button", name="Open the inbox").click()
    expect(page).to_have_url(f"{humanwire_service.base_url}/inbox")
    expect(page.get_by_role("heading", name="What your agents sent")).to_be_visible()
    cookies = {c["name"]: c for c in context.cookies()}
    assert "hw_inbox_key" not in cookies  # the browser never keeps the key
    session = cookies["hw_inbox_session"]
    assert session["httpOnly"] is True and session["sameSite"] == "Strict"
    assert session["value"] != humanwire_api_key and session["path"] == "/inbox"
    assert cookies["hw_csrf"]["httpOnly"] is True

    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(re.compile(r"/inbox/login$"))
    page.goto(f"{humanwire_service.base_url}/inbox")
    expect(page).to_have_url(re.compile(r"/inbox/login"))
    # The session ended on the server: its cookie, put back, opens nothing.
    context.add_cookies([session])
    page.goto(f"{humanwire_service.base_url}/inbox")
    expect(page).to_have_url(re.compile(r"/inbox/login"))


def test_inbox_reply_reaches_the_waiting_request(
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire_client: HumanWire,
    page: Page,
    background: ThreadPoolExecutor,
) -> None:
    open_inbox(page, humanwire_service, humanwire_api_key)
    # Sent after the page opened: it appears live, without a reload.
    waiting = held(
        background,
        humanwire_client.messages.sms,
        to=HUMAN,
        message="Can I deploy <v2> now?",
        wait_time=20,
    )
    item = page.locator("li.msg", has_text="Can I deploy <v2> now?")
    expect(item).to_be_visible()
    expect(item.locator(".chip.pending")).to_be_visible()
    expect(item).to_contain_text("wait open until")
    item.get_by_placeholder(f"Reply as {HUMAN}…").fill("Yes, go ahead")
    item.get_by_role("button", name="Reply").click()

    result = waiting.result(timeout=10)
    assert result.responded is True
    assert result.response == "Human response: Yes, go ahead"
    expect(page.get_by_role("status").filter(has_text="Replied as")).to_be_visible()
    item = page.locator("li.msg", has_text="Can I deploy <v2> now?")
    expect(item.locator(".msg-reply")).to_contain_text("Yes, go ahead")
    expect(item.locator(".chip.ended")).to_be_visible()


def test_slack_reply_goes_in_the_thread(
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire_client: HumanWire,
    page: Page,
    background: ThreadPoolExecutor,
) -> None:
    open_inbox(page, humanwire_service, humanwire_api_key)
    waiting = held(
        background,
        humanwire_client.messages.slack,
        to="U0HUMAN0001",
        message="Which region?",
        wait_time=20,
    )
    item = page.locator("li.msg", has_text="Which region?")
    item.get_by_placeholder("Reply in thread…").fill("eu-west-1")
    item.get_by_role("button", name="Reply in thread").click()
    assert waiting.result(timeout=10).response == "Human response: eu-west-1"


def test_call_answered_from_the_inbox(
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire_client: HumanWire,
    page: Page,
    background: ThreadPoolExecutor,
) -> None:
    open_inbox(page, humanwire_service, humanwire_api_key)
    call = held(
        background,
        humanwire_client.calls.create,
        to=HUMAN,
        prompt="Confirm tomorrow's delivery slot.",
        wait_for_call_end=True,
    )
    item = page.locator("li.msg[data-kind=call]", has_text="Confirm tomorrow's delivery slot.")
    item.get_by_placeholder("What the callee said…").fill("Delivery confirmed for 9am")
    item.get_by_role("button", name="Answer & end call").click()

    ended = call.result(timeout=10)
    assert ended.status == "ended"
    assert ended.outcome == "completed"
    assert ended.summary == "Delivery confirmed for 9am"
    expect(page.locator("li.msg[data-kind=call]").get_by_text("Call ended.")).to_be_visible()


@pytest.mark.parametrize(
    ("button", "outcome"), [("No answer", "no_answer"), ("Transfer", "transferred")]
)
def test_call_not_answered_or_transferred(
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire_client: HumanWire,
    page: Page,
    button: str,
    outcome: str,
) -> None:
    placed = humanwire_client.calls.create(
        to=HUMAN, prompt="Ask about the invoice.", transfer_to="+12025550123"
    )
    open_inbox(page, humanwire_service, humanwire_api_key)
    page.locator("li.msg[data-kind=call]").get_by_role("button", name=button).click()
    status = humanwire_client.interactions.wait(placed.interaction_id, timeout=10)
    assert status.status == "ended"
    assert status.result is not None
    assert status.result.event_type == "call.conversation.ended"
    if outcome == "no_answer":
        assert "did not respond" in status.result.payload.summary


def test_unsolicited_text_inbound_call_and_webhook_deliveries(
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire_client: HumanWire,
    page: Page,
) -> None:
    number = humanwire_client.numbers.available(country="US")[0].phone_number
    humanwire_client.numbers.reserve(number)
    with WebhookReceiver() as receiver:
        humanwire_client.webhooks.create(
            url=receiver.url, event_types=["message.received", "call.conversation.ended"]
        )
        open_inbox(page, humanwire_service, humanwire_api_key)
        expect(page.locator("[data-reserved-numbers]")).to_contain_text(number)

        page.get_by_label("Message").fill("Hello agent, any news?")
        page.get_by_role("button", name="Send text").click()
        expect(page.get_by_role("status").filter(has_text=f"Text sent to {number}")).to_be_visible()
        texts = page.locator("section.panel", has_text="Texts to the agent")
        expect(texts).to_contain_text("Hello agent, any news?")
        (event,) = receiver.wait_for("message.received", timeout=10)
        assert event.payload.body == "Hello agent, any news?"
        assert event.payload.to == number

        # A slack text: the sender follows the channel (the page's script does that, so
        # wait until the reloaded page runs it).
        page.wait_for_selector("html[data-live-connected]")
        page.get_by_label("Channel", exact=True).select_option("slack")
        expect(page.get_by_label("From").first).to_have_value("U0HUMAN0001")
        page.get_by_label("Message").fill("Ping from slack")
        page.get_by_role("button", name="Send text").click()
        expect(texts).to_contain_text("Ping from slack")
        (_, slack_event) = receiver.wait_for("message.received", count=2, timeout=10)
        assert slack_event.payload.medium == "slack"
        assert slack_event.payload.from_ == "U0HUMAN0001"

        page.get_by_label("What the caller says").fill("Please call me back about the order")
        page.get_by_role("button", name=f"Call {number}").click()
        (called,) = receiver.wait_for("call.conversation.ended", timeout=10)
        assert called.payload.summary == "Please call me back about the order"

        # The three deliveries show up live in the webhook table with their status.
        table = page.locator("tbody[data-live=webhooks]")
        expect(table.locator("tr")).to_have_count(3)
        expect(table.locator(".chip.delivered")).to_have_count(3)
        expect(table).to_contain_text("call.conversation.ended")


def test_channel_cards_created_and_deleted_in_the_inbox(
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire_client: HumanWire,
    desktop_page: Page,
) -> None:
    page = desktop_page
    page.goto(f"{humanwire_service.base_url}/inbox/channels?key={humanwire_api_key}")
    expect(page.get_by_text("No channel cards yet.")).to_be_visible()
    page.get_by_label("Type").select_option("whatsapp")
    page.get_by_label("Recipient (number, slack id or email address)").fill(HUMAN)
    page.get_by_label("Follow-up time").fill("90")
    page.get_by_label("Outgoing message template").fill("Ops: {{message}} ({{waitTime}} s)")
    page.get_by_role("button", name="Create card").click()
    # Without a wait time a whatsapp card is refused; the input is kept.
    expect(page.get_by_role("alert")).to_contain_text("waitTime is required")
    expect(page.get_by_label("Outgoing message template")).to_have_value(
        "Ops: {{message}} ({{waitTime}} s)"
    )
    page.get_by_label("Wait time").fill("30")
    page.get_by_label("Reply link").check()
    page.get_by_role("button", name="Create card").click()
    expect(page.get_by_role("status")).to_contain_text("Created channel card ch_")

    cards = humanwire_client.channels.list()
    assert len(cards) == 1
    card = cards[0]
    assert (card.type, card.to, card.wait_time, card.follow_up_time, card.reply_link) == (
        "whatsapp",
        HUMAN,
        30,
        90,
        True,
    )
    assert card.message_template == "Ops: {{message}} ({{waitTime}} s)"
    row = page.locator("tr", has_text=card.id)
    expect(row).to_contain_text("Human response: {{message}}")
    row.get_by_role("button", name=f"Delete card {card.id}").click()
    expect(page.get_by_role("status")).to_contain_text(f"Deleted channel card {card.id}")
    expect(page.get_by_text("No channel cards yet.")).to_be_visible()
    assert humanwire_client.channels.list() == []


def test_reply_link_page_answers_the_waiting_request(
    humanwire_service: RunningService,
    humanwire_client: HumanWire,
    page: Page,
    background: ThreadPoolExecutor,
) -> None:
    card = humanwire_client.channels.create(
        type="sms", to=HUMAN, wait_time=20, follow_up_time=60, reply_link=True
    )
    waiting = held(
        background, humanwire_client.messages.channel, card.id, message="Approve <PO-7>?"
    )
    deadline = time.monotonic() + 5
    text = ""
    while "/r/" not in text and time.monotonic() < deadline:
        found = humanwire_client.sandbox.deliveries()
        text = found[0].text if found else ""
        time.sleep(0.05)
    link = re.search(r"https?://\S+/r/\S+", text)
    assert link is not None, text

    page.goto(link.group(0))
    expect(page.get_by_role("heading", name="Message from your AI agent")).to_be_visible()
    expect(page.locator(".quote")).to_have_text("Approve <PO-7>?")
    page.get_by_role("button", name="Send reply").click()  # empty: the browser refuses
    assert waiting.done() is False
    page.get_by_label("Your reply").fill("Approved")
    page.get_by_role("button", name="Send reply").click()
    expect(page.get_by_role("heading", name="Your reply was sent")).to_be_visible()
    assert waiting.result(timeout=10).response == "Human response: Approved"

    # The link takes one answer.
    again = page.request.post(link.group(0), form={"body": "Changed my mind"})
    assert again.status == 409


def test_a_two_of_three_approval_decided_in_the_inbox_as_two_approvers(
    humanwire_service: RunningService, humanwire_api_key: str, page: Page
) -> None:
    open_inbox(page, humanwire_service, humanwire_api_key)
    # Asked after the page opened: it appears live, without a reload.
    asked = httpx.post(
        f"{humanwire_service.base_url}/approvals",
        json={
            "title": "Deploy <v2> to production",
            "action": {"name": "deploy", "arguments": {"service": "api", "version": "2.0.1"}},
            "approvers": [
                {"channel": "link", "to": "Ada"},
                {"channel": "link", "to": "Bob"},
                {"channel": "link", "to": "Cy"},
            ],
            "quorum": 2,
            "followUpTime": 120,
        },
        headers={"Authorization": f"Bearer {humanwire_api_key}"},
    ).json()
    card = page.locator(f'li[data-approval="{asked["interactionId"]}"]')
    expect(card.get_by_text("Deploy <v2> to production")).to_be_visible()
    expect(card.get_by_role("row", name="version 2.0.1")).to_be_visible()
    expect(card.locator("[data-tally]")).to_have_text("0 of 2 approvals · 0 of 1 rejections")

    card.get_by_label("Decide as").select_option(label="Ada (Link)")
    card.get_by_label("Comment (optional)").fill("looks right")
    card.get_by_role("button", name="Approve").click()
    expect(page.locator("[data-flash]")).to_have_text("Approved as Ada (Link).")
    expect(card.locator("[data-tally]")).to_have_text("1 of 2 approvals · 0 of 1 rejections")
    expect(card.get_by_text("approved via the inbox: “looks right”")).to_be_visible()
    expect(card.locator("[data-approval-state]")).to_have_attribute(
        "data-approval-state", "pending"
    )

    card.get_by_label("Decide as").select_option(label="Cy (Link)")
    card.get_by_role("button", name="Approve").click()
    expect(card.locator("[data-approval-state]")).to_have_attribute(
        "data-approval-state", "approved"
    )
    expect(card.get_by_text("Approved by Ada and Cy (2 of 2).")).to_be_visible()
    expect(card.get_by_role("button", name="Approve")).to_have_count(0)
    decided = httpx.get(
        f"{humanwire_service.base_url}/approvals/{asked['interactionId']}",
        headers={"Authorization": f"Bearer {humanwire_api_key}"},
    ).json()
    assert decided["decision"] == "approved"
    assert [(d["approver"]["to"], d["via"]) for d in decided["decisions"]] == [
        ("Ada", "inbox"),
        ("Cy", "inbox"),
    ]


def _overflowing_cells(page: Page, table: str) -> list[str]:
    """The cells of ``table`` (a CSS selector) that reach past the viewport or past the
    table's own box (hidden in a sideways scroll), and the box if it scrolls sideways."""
    found: list[str] = page.evaluate(
        """(selector) => {
          const table = document.querySelector(selector);
          const box = table.closest(".table-scroll");
          const width = document.documentElement.clientWidth;
          const right = Math.min(width, box.getBoundingClientRect().right) + 0.5;
          const out = [];
          if (box.scrollWidth > box.clientWidth) out.push("the table scrolls sideways");
          table.querySelectorAll("td").forEach((cell) => {
            const r = cell.getBoundingClientRect();
            if (r.right > right) out.push(cell.textContent + " ends at " + Math.round(r.right));
          });
          return out;
        }""",
        table,
    )
    return found


def test_the_inbox_tables_fit_a_phone(
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire_client: HumanWire,
    page: Page,
) -> None:
    """At 390 px nothing of the interactions or webhook tables is cut off on the right:
    each row stacks its cells, each under its column's name."""
    assert page.viewport_size == {"width": 390, "height": 844}
    with WebhookReceiver() as receiver:
        humanwire_client.webhooks.create(url=receiver.url, event_types=["message.received"])
        sent = humanwire_client.messages.sms(to=HUMAN, message="Deploy?", follow_up_time=120)
        humanwire_client.calls.create(to=HUMAN, prompt="Confirm the delivery")
        humanwire_client.sandbox.reply(
            channel="sms", from_="+13125550177", to="+12025550199", body="unsolicited"
        )
        receiver.wait_for("message.received", timeout=10)
        open_inbox(page, humanwire_service, humanwire_api_key)
        page.locator("tbody[data-live=webhooks] tr").first.wait_for()
        for table in (
            "[data-live-panel=interactions] table",
            "[data-live-panel=webhooks] table",
        ):
            assert _overflowing_cells(page, table) == [], table
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        row = page.locator(f'tbody[data-live=interactions] tr[data-key="x-{sent.interaction_id}"]')
        expect(row.locator("td[data-label=Windows]")).to_contain_text("open until")
