"""Screenshots of the form page and the inbox, for the README (``docs/screenshots``).

Run as ``python tests/browser/browser_screenshots.py [out_dir]``; ``test_screenshots.py``
runs the same code into a temporary directory so it cannot rot."""

from __future__ import annotations

import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, sync_playwright

from humanwire import HumanWire
from humanwire.testing.service import RunningService, start_test_service

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}

DEMO_FIELDS: list[dict[str, Any]] = [
    {
        "id": "name",
        "label": "Full name",
        "type": "text",
        "required": True,
        "placeholder": "Ada Lovelace",
    },
    {
        "id": "email",
        "label": "Email",
        "type": "email",
        "required": True,
        "helperText": "We send the receipt here.",
    },
    {"id": "phone", "label": "Mobile number", "type": "phone_number"},
    {
        "id": "plan",
        "label": "Plan",
        "type": "select",
        "required": True,
        "options": [{"label": "Starter", "value": "starter"}, {"label": "Team", "value": "team"}],
    },
    {"id": "address", "label": "Billing address", "type": "address"},
    {"id": "notes", "label": "Anything we should know?", "type": "textarea"},
    {"id": "terms", "label": "I accept the terms", "type": "checkbox", "required": True},
]


def _populate(service: RunningService, client: HumanWire, pool: ThreadPoolExecutor) -> str:
    """A realistic inbox: a form, a question waiting for a reply, an answered text, a
    call ringing, a reserved number, a channel card, an unsolicited text."""
    number = client.numbers.available(country="US")[0].phone_number
    client.numbers.reserve(number)
    client.channels.create(
        type="sms",
        to="+12025550100",
        wait_time=60,
        message_template="Ops bot: {{message}}",
        reply_link=True,
    )
    answered = pool.submit(
        client.messages.sms, to="+12025550100", message="Deploy v2.3 to production?", wait_time=30
    )
    _wait_for(client, 1)
    client.sandbox.reply(channel="sms", from_="+12025550100", to=number, body="Yes, go ahead")
    answered.result(10)
    sent = client.forms.sms(
        to="+12025550100",
        title="Confirm your order",
        description="Your agent needs a few details to place the order.",
        brand_image_url=f"{service.base_url}/static/favicon.svg",
        fields=DEMO_FIELDS,
        follow_up_time=3600,
    )
    pool.submit(
        client.messages.slack,
        to="U0HUMAN0001",
        message="Which region should the new cluster go to?",
        wait_time=120,
    )
    pool.submit(
        client.calls.create,
        to="+12025550100",
        wait_for_call_end=True,
        prompt="You are calling on behalf of Acme to confirm tomorrow's delivery.",
    )
    _wait_for(client, 4)
    client.sandbox.reply(
        channel="sms", from_="+14155550123", to=number, body="Hi, is my order shipped yet?"
    )
    assert sent.form_url is not None
    return sent.form_url


def _wait_for(client: HumanWire, count: int) -> None:
    deadline = time.monotonic() + 10
    while len(client.sandbox.deliveries()) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"expected {count} deliveries")
        time.sleep(0.05)


def take_screenshots(browser: Browser, service: RunningService, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    key = service.create_account("Acme agents")
    written: list[Path] = []
    with (
        HumanWire(api_key=key, base_url=service.base_url) as client,
        ThreadPoolExecutor(max_workers=4) as pool,
    ):
        form_url = _populate(service, client, pool)
        for name, viewport in (("phone", PHONE), ("desktop", DESKTOP)):
            context = browser.new_context(
                viewport=viewport,  # type: ignore[arg-type]
                device_scale_factor=2 if name == "phone" else 1,
            )
            page = context.new_page()
            page.goto(form_url)
            page.get_by_label("Full name").fill("Ada Lovelace")
            page.get_by_label("Email").fill("ada@example")
            page.get_by_label("Email").blur()
            path = out_dir / f"form-{name}.png"
            page.screenshot(path=str(path), full_page=True)
            written.append(path)

            page.goto(f"{service.base_url}/inbox?key={key}")
            page.wait_for_selector("[data-live-connected]")
            path = out_dir / f"inbox-{name}.png"
            page.screenshot(path=str(path), full_page=name == "desktop")
            written.append(path)
            context.close()
        # Let the held requests end: answer the call and the slack question.
        for delivery in client.sandbox.deliveries():
            if delivery.kind == "call" and delivery.interaction_id:
                client.sandbox.end_call(delivery.interaction_id, outcome="no_answer")
            if delivery.channel == "slack" and delivery.interaction_id:
                client.sandbox.reply(
                    channel="slack",
                    from_=delivery.to,
                    to=delivery.from_ or "",
                    body="eu-west-1",
                    interaction_id=delivery.interaction_id,
                )
    return written


def main() -> None:
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/screenshots")
    service = start_test_service(Path(tempfile.mkdtemp()) / "screens.db")
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS
            )
            try:
                for path in take_screenshots(browser, service, out_dir):
                    print(path)
            finally:
                browser.close()
    finally:
        service.stop()


if __name__ == "__main__":
    main()
