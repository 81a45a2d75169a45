"""The console's audit trail in headless chromium, phone-sized (390 px): a person signed
in follows "Audit trail" from the queue, sees the chain's check and the entries of their
own requests with their hash links (the full hash in the details), narrows them by event
with the keyboard, and downloads the filtered entries as JSON Lines: exactly those rows."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from console_support import ask, person, sign_in_code
from humanwire.testing.service import RunningService

pytestmark = pytest.mark.browser

ADA = "+12025550186"
"""A number no other test's person has: the console finds people by address alone."""
BOB = "+12025550185"


def test_a_person_reads_filters_and_downloads_their_audit_trail(
    humanwire_service: RunningService, page: Page, tmp_path: Path
) -> None:
    base = humanwire_service.base_url
    key = humanwire_service.create_account("console audit browser")
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as api:
        ada = person(api, "Ada Audit", [("sms", ADA)])
        bob = person(api, "Bob Audit", [("sms", BOB)])
        mine = ask(
            api,
            "Deploy billing",
            [{"person": ada}],
            action={"name": "deploy", "arguments": {"service": "billing"}},
        )
        bobs = ask(api, "Bob's alone", [{"person": bob}])
        page.goto(f"{base}/console/signin")
        page.get_by_label("Phone number or email").fill(ADA)
        page.get_by_role("button", name="Send me a code").click()
        expect(page.get_by_role("heading", name="Enter your code")).to_be_visible()
        code = sign_in_code(api, ADA)
        assert code is not None
        page.get_by_label("Code").fill(code)
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("button", name="Approve").click()
        expect(page.get_by_role("status").filter(has_text="Approved.")).to_be_visible()

        page.get_by_role("link", name="Audit trail").click()
        expect(page.get_by_role("heading", name="Audit trail")).to_be_visible()
        log = api.get("/audit", params={"limit": 1000}).json()["entries"]
        expect(page.locator('[data-chain="verified"]')).to_contain_text(
            f"Chain verified through entry {log[-1]['sequence']} "
        )
        of_mine = [e for e in log if e["interactionId"] == mine]
        expect(page.locator("[data-entry]")).to_have_count(len(of_mine))
        expect(page.get_by_text(bobs)).to_have_count(0)
        # The hash link: shortened, the full value in its title and in the details.
        [decision] = [e for e in of_mine if e["type"] == "approval.decision"]
        entry = page.locator(f'[data-entry="{decision["sequence"]}"]')
        expect(entry.locator("[data-hash]")).to_have_attribute("title", decision["hash"])
        expect(entry.locator("[data-prev]")).to_have_attribute("title", decision["prev"])
        expect(entry.get_by_text(decision["hash"], exact=True)).to_be_hidden()
        entry.get_by_text(f"Hash link and data of #{decision['sequence']}").click()
        expect(entry.get_by_text(decision["hash"], exact=True)).to_be_visible()

        # Narrowed by event, with the keyboard alone.
        page.get_by_label("Event").select_option("approval.decision")
        page.get_by_label("Action name").focus()
        page.keyboard.type("deploy")
        page.keyboard.press("Enter")
        expect(page.locator("[data-entry]")).to_have_count(1)
        expect(page.locator(f'[data-entry="{decision["sequence"]}"]')).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390

        with page.expect_download() as download_info:
            page.get_by_role("link", name="JSON Lines").click()
        download = download_info.value
        assert download.suggested_filename.startswith("humanwire-audit-")
        assert download.suggested_filename.endswith(".jsonl")
        saved = tmp_path / download.suggested_filename
        download.save_as(saved)
        rows = [json.loads(line) for line in saved.read_text(encoding="utf-8").splitlines()]
        assert rows == [decision]
