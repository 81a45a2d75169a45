"""Screenshots for the console's guide (docs/guides/console.md): each screen of the
approvers' console, 1280 px wide (desktop) and 390 px wide (phone).

    python scripts/console_screenshots.py [out_dir]     # default: docs/screenshots

It starts the embedded service on a free port (SQLite in a temporary directory, the
sandbox on, ``deploy`` grantable), makes three people of the directory with confirmed
numbers, asks them three approval requests (one with metadata, one two-of-three with a
decision already, one Bob is on), signs Ada in through ``/console/signin`` with the code
the sandbox shows (``GET /sandbox/messages``), and photographs each screen of ``SCREENS``
in headless chromium (Debian's, /usr/bin/chromium) as ``console-<screen>-desktop.png``
and ``console-<screen>-phone.png``: the whole page, cut at ``MAX_HEIGHT`` pixels."""

from __future__ import annotations

import re
import sys
import tempfile
import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

from humanwire.testing.service import RunningService, fast_config, start_test_service

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
SCREENS = ("signin", "code", "queue", "grants", "request", "reassign", "away", "audit")
"""The screens, in the order the flow reaches them (the guide shows each)."""
SIZES = {"desktop": 1280, "phone": 390}
MAX_HEIGHT = 1600
ADA = "+12025550160"
BOB = "+12025550161"
CY = "+12025550162"
CODE = re.compile(r"sign-in code is (\d{6})")


def _until(check: Any, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)
    return found


def _sent_to(api: httpx.Client, to: str) -> list[dict[str, Any]]:
    found = [d for d in api.get("/sandbox/messages").json() if d["to"] == to]
    return sorted(found, key=lambda d: str(d["createdAt"]))


def _person(api: httpx.Client, name: str, phone: str) -> str:
    """A person of the directory whose number is confirmed (by replying its code)."""
    made = api.post("/people", json={"name": name, "addresses": [{"channel": "sms", "to": phone}]})
    made.raise_for_status()
    person_id: str = made.json()["personId"]
    sent = api.post(f"/people/{person_id}/confirm", json={"channel": "sms", "to": phone})
    sent.raise_for_status()
    [delivery] = [
        d for d in _sent_to(api, phone) if d["interactionId"] == sent.json()["interactionId"]
    ]
    code = re.search(r"\b\d{6}\b", delivery["text"])
    assert code is not None, delivery
    reply = {"channel": "sms", "from": phone, "to": delivery["from"], "body": code.group(0)}
    api.post("/sandbox/replies", json=reply).raise_for_status()
    _until(lambda: api.get(f"/people/{person_id}").json()["addresses"][0]["confirmed"])
    return person_id


def _ask(api: httpx.Client, body: dict[str, Any]) -> str:
    asked = api.post("/approvals", json={"followUpTime": 3 * 3600, **body})
    asked.raise_for_status()
    interaction_id: str = asked.json()["interactionId"]
    return interaction_id


def _sign_in(page: Page, base_url: str, api: httpx.Client, phone: str) -> None:
    """Types ``phone`` on the sign-in page and the code it was sent, and stops there."""
    page.goto(f"{base_url}/console/signin")
    page.get_by_label("Phone number or email").fill(phone)
    page.get_by_role("button", name="Send me a code").click()
    expect(page.get_by_role("heading", name="Enter your code")).to_be_visible()

    def code() -> str | None:
        for delivery in reversed(_sent_to(api, phone)):
            if found := CODE.search(delivery["text"]):
                return found.group(1)
        return None

    page.get_by_label("Code").fill(_until(code))


def _shoot(page: Page, out_dir: Path, screen: str, part: Locator | None = None) -> list[Path]:
    """The page at each width of ``SIZES``: the whole page, cut at ``MAX_HEIGHT`` (or
    only ``part`` of it)."""
    written = []
    for size, width in SIZES.items():
        page.set_viewport_size({"width": width, "height": 900})
        path = out_dir / f"console-{screen}-{size}.png"
        if part is not None:
            part.screenshot(path=str(path))
            written.append(path)
            continue
        height = page.evaluate("document.documentElement.scrollHeight")
        clip = {"x": 0, "y": 0, "width": width, "height": min(height, MAX_HEIGHT)}
        page.screenshot(path=str(path), full_page=True, clip=clip)  # type: ignore[arg-type]
        written.append(path)
    return written


def take_console_screenshots(
    browser: Browser, service: RunningService, out_dir: Path
) -> list[Path]:
    """The screens of ``SCREENS``, on ``service`` (which must let ``deploy`` be granted)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    base = service.base_url
    key = service.create_account("Acme operations")
    written: list[Path] = []
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30) as api:
        ada = _person(api, "Ada Lovelace", ADA)
        bob = _person(api, "Bob Martin", BOB)
        _person(api, "Cy Young", CY)
        deploy = _ask(
            api,
            {
                "title": "Deploy payments-api 4.2.0",
                "description": "Canary was green for 2 hours; 3 migrations run first.",
                "action": {
                    "name": "deploy",
                    "arguments": {
                        "service": "payments-api",
                        "version": "4.2.0",
                        "region": "eu-west-1",
                    },
                },
                "metadata": {"agent": "release-bot", "ticket": "OPS-1432"},
                "approvers": [{"person": ada}],
            },
        )
        _ask(
            api,
            {
                "title": "Refund order #8812",
                "description": "Customer reports a double charge.",
                "action": {"name": "refund", "arguments": {"order": "8812", "amount": 420}},
                "metadata": {"agent": "billing"},
                "approvers": [{"person": ada}, {"person": bob}, {"channel": "link", "to": "Dana"}],
                "quorum": 2,
                "followUpTime": 3600,
            },
        )
        _ask(
            api,
            {
                "title": "Rotate the database credentials",
                "action": {"name": "rotate_credentials", "arguments": {"database": "orders"}},
                "approvers": [{"person": ada}, {"person": bob}],
                "followUpTime": 2700,
                "remindEvery": 900,
            },
        )
        # Bob, in a browser of his own, approves the refund and is on the rotation.
        bobs = browser.new_context(viewport={"width": 390, "height": 844})
        bobs.set_default_timeout(10_000)
        try:
            page = bobs.new_page()
            _sign_in(page, base, api, BOB)
            page.get_by_role("button", name="Sign in").click()
            refund = page.locator("li.msg[data-approval]", has_text="Refund order #8812")
            refund.get_by_role("button", name="Approve").click()
            expect(page.get_by_role("status").filter(has_text="Approved.")).to_be_visible()
            rotation = page.locator(
                "li.msg[data-approval]", has_text="Rotate the database credentials"
            )
            rotation.get_by_role("button", name="I'm on it").click()
            expect(page.get_by_role("status").filter(has_text="You are on it")).to_be_visible()
        finally:
            bobs.close()
        # A standing approval Ada granted (after the deploy was asked: it is not covered).
        expires = (datetime.now(timezone.utc) + timedelta(hours=4)).isoformat()
        api.post(
            "/approvals/grants",
            json={
                "actionName": "deploy",
                "match": {"service": "docs-site"},
                "expiresAt": expires,
                "grantedBy": ada,
            },
        ).raise_for_status()

        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(10_000)
        try:
            page = context.new_page()
            page.goto(f"{base}/console/signin")
            page.get_by_label("Phone number or email").fill("+1 202 555 0160")
            written += _shoot(page, out_dir, "signin")
            _sign_in(page, base, api, ADA)
            written += _shoot(page, out_dir, "code")
            page.get_by_role("button", name="Sign in").click()
            expect(page.get_by_role("heading", name="Waiting for you (3)")).to_be_visible()
            written += _shoot(page, out_dir, "queue")
            grants = page.locator("section.panel", has=page.get_by_role("heading", name="Standing"))
            written += _shoot(page, out_dir, "grants", grants)
            page.goto(f"{base}/console/approvals/{deploy}")
            expect(page.get_by_role("heading", name="Standing approval")).to_be_visible()
            written += _shoot(page, out_dir, "request")
            page.goto(f"{base}/console/approvals/{deploy}/reassign")
            expect(page.get_by_label("Hand to")).to_be_visible()
            page.get_by_label("Hand to").select_option(label="Cy Young")
            written += _shoot(page, out_dir, "reassign")
            page.goto(f"{base}/console/away")
            now = datetime.now(timezone.utc)
            page.get_by_label("Send my requests to").select_option(label="Bob Martin")
            page.get_by_label("From (empty: now)").fill(
                (now + timedelta(days=7)).strftime("%Y-%m-%dT09:00")
            )
            page.get_by_label("Until").fill((now + timedelta(days=12)).strftime("%Y-%m-%dT18:00"))
            page.get_by_role("button", name="Delegate").click()
            expect(page.get_by_text("Your requests go to Bob Martin")).to_be_visible()
            page.goto(f"{base}/console/away")  # without the "Delegated." notice
            written += _shoot(page, out_dir, "away")
            page.goto(f"{base}/console/audit")
            expect(page.get_by_text("Chain verified through entry")).to_be_visible()
            written += _shoot(page, out_dir, "audit")
        finally:
            context.close()
    return written


def main() -> None:
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/screenshots")
    database = Path(tempfile.mkdtemp()) / "console-screens.db"
    config = replace(fast_config(database), approvals_grantable=("deploy",))
    service = start_test_service(database, config)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
            )
            try:
                for path in take_console_screenshots(browser, service, out_dir):
                    print(f"{path} ({path.stat().st_size // 1024} KB)")
            finally:
                browser.close()
    finally:
        service.stop()


if __name__ == "__main__":
    main()
