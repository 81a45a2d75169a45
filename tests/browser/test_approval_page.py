"""The approval page an approver opens (``/a/{token}``), driven in headless chromium with
JavaScript off: the request and its action shown readably, a comment, Reject, and the
page saying what was recorded."""

from __future__ import annotations

import re

import httpx
import pytest
from browser_helpers import PHONE
from playwright.sync_api import Browser, expect

from humanwire.testing.service import RunningService

pytestmark = pytest.mark.browser


def test_an_approver_rejects_with_a_reason_without_javascript(
    humanwire_service: RunningService, browser: Browser
) -> None:
    key = humanwire_service.create_account("approval page")
    with httpx.Client(
        base_url=humanwire_service.base_url, headers={"Authorization": f"Bearer {key}"}
    ) as api:
        asked = api.post(
            "/approvals",
            json={
                "title": "Wire $4,200 to ACME Ltd",
                "description": "Invoice 118",
                "action": {"name": "wire_money", "arguments": {"amount": 4200, "to": "ACME <Ltd>"}},
                "approvers": [{"channel": "link", "to": "Ada"}, {"channel": "link", "to": "Bob"}],
                "followUpTime": 120,
            },
        ).json()
        context = browser.new_context(java_script_enabled=False, viewport=PHONE)  # type: ignore[arg-type]
        try:
            page = context.new_page()
            page.goto(asked["links"][0]["url"])
            expect(page.get_by_role("heading", name="Wire $4,200 to ACME Ltd")).to_be_visible()
            expect(page.get_by_text("Invoice 118")).to_be_visible()
            expect(page.get_by_role("row", name="to ACME <Ltd>")).to_be_visible()
            expect(page.get_by_text("Waiting for a decision (0 of 1 approvals).")).to_be_visible()
            page.get_by_label("Comment (optional)").fill("too big for this month")
            page.get_by_role("button", name="Reject").click()
            expect(
                page.get_by_role("heading", name="Thank you, your decision was recorded")
            ).to_be_visible()
            expect(page.get_by_text("Rejected by Ada: too big for this month.")).to_be_visible()
            page.goto(asked["links"][0]["url"])
            expect(page.get_by_role("button", name="Approve")).to_have_count(0)
        finally:
            context.close()
        decided = api.get(f"/approvals/{asked['interactionId']}").json()
    assert decided["decision"] == "rejected"
    assert decided["decisions"][0]["comment"] == "too big for this month"


def test_an_email_approver_confirms_the_link_of_their_email(
    humanwire_service: RunningService, browser: Browser
) -> None:
    key = humanwire_service.create_account("approval email link")
    with httpx.Client(
        base_url=humanwire_service.base_url, headers={"Authorization": f"Bearer {key}"}
    ) as api:
        asked = api.post(
            "/approvals",
            json={
                "title": "Ship the release",
                "approvers": [{"channel": "email", "to": "ada@example.com"}],
                "followUpTime": 120,
            },
        ).json()
        [email] = api.get("/sandbox/messages", params={"to": "ada@example.com"}).json()
        approve = re.search(r"Approve: (\S+)", email["text"])
        assert approve is not None, email["text"]
        context = browser.new_context(java_script_enabled=False, viewport=PHONE)  # type: ignore[arg-type]
        try:
            page = context.new_page()
            page.goto(approve.group(1))
            expect(page.get_by_role("heading", name="Ship the release")).to_be_visible()
            page.get_by_label("Comment (optional)").fill("notes checked")
            page.get_by_role("button", name="Confirm: Approve").click()
            expect(
                page.get_by_role("heading", name="Thank you, your decision was recorded")
            ).to_be_visible()
            page.goto(approve.group(1))  # used again: the decision shown, no button
            expect(
                page.get_by_role("heading", name="This request is no longer open")
            ).to_be_visible()
            expect(page.get_by_text("You approved it.")).to_be_visible()
            expect(page.get_by_role("button")).to_have_count(0)
        finally:
            context.close()
        decided = api.get(f"/approvals/{asked['interactionId']}").json()
    assert decided["decision"] == "approved"
    assert (decided["decisions"][0]["via"], decided["decisions"][0]["comment"]) == (
        "email_link",
        "notes checked",
    )
