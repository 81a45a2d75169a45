"""The console queue, live, in headless chromium (phone-sized): a request made through the
API after the page loaded appears on the open page without a reload, announced in its
status line, the heading's count following; what the person was typing under another
request stays; a request cancelled by its agent leaves the page; nothing is fetched from
outside the service (its Content-Security-Policy holds: the script is its own)."""

from __future__ import annotations

import httpx
import pytest
from browser_helpers import OutsideRequests
from playwright.sync_api import Page, expect

from console_support import ask, person, sign_in_code
from humanwire.testing.service import RunningService

pytestmark = pytest.mark.browser

PHONE_NUMBER = "+12025550188"
"""A number no other test's person has: the console finds people by address alone."""
POLL = 15_000
"""How long an expectation waits for the page's next round (it polls every 5 s)."""


def test_a_new_request_appears_on_the_open_page(
    humanwire_service: RunningService, page: Page, outside_requests: OutsideRequests
) -> None:
    base = humanwire_service.base_url
    key = humanwire_service.create_account("console live")
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as api:
        ada = person(api, "Ada Live", [("sms", PHONE_NUMBER)])
        first = ask(api, "Rotate keys", [{"person": ada}], followUpTime=300)
        page.goto(f"{base}/console/signin")
        page.get_by_label("Phone number or email").fill(PHONE_NUMBER)
        page.get_by_role("button", name="Send me a code").click()
        expect(page.get_by_role("heading", name="Enter your code")).to_be_visible()
        code = sign_in_code(api, PHONE_NUMBER)
        assert code is not None
        page.get_by_label("Code").fill(code)
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("heading", name="Waiting for you (1)")).to_be_visible()
        # A mark on this very page: a reload would lose it.
        page.evaluate("window.__sameLoad = true")
        comment = page.locator(f'[data-approval="{first}"]').get_by_label("Comment (optional)")
        comment.fill("half-typed")

        second = ask(api, "Deploy payments", [{"person": ada}])
        expect(page.get_by_role("link", name="Deploy payments")).to_be_visible(timeout=POLL)
        expect(page.get_by_role("heading", name="Waiting for you (2)")).to_be_visible()
        expect(page.get_by_role("status")).to_have_text("1 new request")
        assert page.evaluate("window.__sameLoad === true")
        expect(comment).to_have_value("half-typed")
        expect(comment).to_be_focused()

        # Cancelled by its agent: it leaves the open page too, the typing still kept.
        cancelled = api.post(f"/interactions/{second}/cancel")
        assert cancelled.status_code < 300, cancelled.text
        expect(page.get_by_role("link", name="Deploy payments")).to_have_count(0, timeout=POLL)
        expect(page.get_by_role("heading", name="Waiting for you (1)")).to_be_visible()
        expect(page.get_by_role("status")).to_have_text("1 request left the queue")
        expect(comment).to_have_value("half-typed")
    assert outside_requests == []
    assert errors == []
