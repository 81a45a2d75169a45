"""The approvers' console in headless chromium, phone-sized: a person of the directory
signs in by the code sent to their confirmed number, finds the request waiting for them
in their queue (the action and its arguments, the tally, the deadline), approves it with a
comment, and the decision is theirs, ``via: console``; signing out ends the session."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Page, expect

from console_support import ask, person, sign_in_code
from humanwire.testing.service import RunningService

pytestmark = pytest.mark.browser

PHONE_NUMBER = "+12025550187"
"""A number no other test's person has: the console finds people by address alone."""


def test_a_person_signs_in_and_approves_from_the_queue(
    humanwire_service: RunningService, page: Page
) -> None:
    key = humanwire_service.create_account("console browser")
    with httpx.Client(
        base_url=humanwire_service.base_url, headers={"Authorization": f"Bearer {key}"}
    ) as api:
        ada = person(api, "Ada Console", [("sms", PHONE_NUMBER)])
        iid = ask(
            api,
            "Deploy payments-api",
            [{"person": ada}, {"channel": "link", "to": "Bob"}],
            quorum=2,
            action={"name": "deploy", "arguments": {"service": "payments-api"}},
        )
        page.goto(f"{humanwire_service.base_url}/console")
        expect(page).to_have_url(f"{humanwire_service.base_url}/console/signin")
        page.get_by_label("Phone number or email").fill("+1 202 555 0187")
        page.get_by_role("button", name="Send me a code").click()
        expect(page.get_by_role("heading", name="Enter your code")).to_be_visible()
        code = sign_in_code(api, PHONE_NUMBER)
        assert code is not None
        page.get_by_label("Code").fill(code)
        page.get_by_role("button", name="Sign in").click()

        expect(page.get_by_role("heading", name="Waiting for you (1)")).to_be_visible()
        expect(page.get_by_text("Ada Console")).to_be_visible()
        expect(page.get_by_role("link", name="Deploy payments-api")).to_be_visible()
        expect(page.get_by_role("row", name="service payments-api")).to_be_visible()
        expect(page.get_by_text("0 of 2 approvals · 0 of 1 rejections")).to_be_visible()
        expect(page.locator("time")).to_have_count(1)
        page.get_by_label("Comment (optional)").fill("ship it")
        page.get_by_role("button", name="Approve").click()
        expect(page.get_by_role("status").filter(has_text="Approved.")).to_be_visible()
        expect(page.get_by_text("1 of 2 approvals · 0 of 1 rejections")).to_be_visible()
        expect(page.get_by_text("You decided: waiting for the others.")).to_be_visible()
        expect(page.get_by_role("button", name="Approve")).to_have_count(0)

        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("button", name="Send me a code")).to_be_visible()
        page.goto(f"{humanwire_service.base_url}/console/approvals/{iid}")
        expect(page).to_have_url(f"{humanwire_service.base_url}/console/signin")

        [decision] = api.get(f"/approvals/{iid}").json()["decisions"]
    assert decision["via"] == "console" and decision["approver"]["person"] == ada
    assert decision["comment"] == "ship it" and decision["decision"] == "approve"
