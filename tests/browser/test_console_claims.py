"""Claims, reassignment and delegation in the approvers' console, in headless chromium:
Ana says "I'm on it" and Bob, asked too, sees it in his own queue (in his own browser)
with its time; then Ana hands the request to Dan from its reassign page, and Dan, asked
on his number, finds it in his queue and decides it as himself. A person away delegates
to a colleague (a period over 90 days refused first), who decides for them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import httpx
import pytest
from browser_helpers import PHONE
from playwright.sync_api import Browser, Page, expect

from console_support import ask, deliveries, person, sign_in_code
from humanwire.testing.service import RunningService

pytestmark = pytest.mark.browser

ANA = "+12025550191"
BOB = "+12025550192"
DAN = "+12025550193"
AWAY_ANA = "+12025550194"
AWAY_BOB = "+12025550195"
"""Numbers no other test's person has: the console finds people by address alone."""


@pytest.fixture
def pages(browser: Browser) -> Iterator[list[Page]]:
    """Three phone-sized browsers of their own (cookies apart): Ana's, Bob's, Dan's."""
    contexts = [browser.new_context(viewport=PHONE) for _ in range(3)]  # type: ignore[arg-type]
    for context in contexts:
        context.set_default_timeout(10_000)
    try:
        yield [c.new_page() for c in contexts]
    finally:
        for context in contexts:
            context.close()


def _sign_in(page: Page, base_url: str, api: httpx.Client, phone: str) -> None:
    page.goto(f"{base_url}/console/signin")
    page.get_by_label("Phone number or email").fill(phone)
    page.get_by_role("button", name="Send me a code").click()
    expect(page.get_by_role("heading", name="Enter your code")).to_be_visible()
    code = sign_in_code(api, phone)
    assert code is not None
    page.get_by_label("Code").fill(code)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Waiting for you (1)")).to_be_visible()


def test_a_claim_is_seen_by_a_co_approver_and_the_request_is_handed_on(
    humanwire_service: RunningService, pages: list[Page]
) -> None:
    base = humanwire_service.base_url
    key = humanwire_service.create_account("console claims browser")
    ana_page, bob_page, dan_page = pages
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as api:
        ana = person(api, "Ana Claims", [("sms", ANA)])
        bob = person(api, "Bob Claims", [("sms", BOB)])
        dan = person(api, "Dan Claims", [("sms", DAN)])
        iid = ask(
            api,
            "Deploy payments-api",
            [{"person": ana}, {"person": bob}],
            quorum=2,
            remindEvery=3600,
        )
        _sign_in(ana_page, base, api, ANA)
        _sign_in(bob_page, base, api, BOB)

        ana_page.get_by_role("button", name="I'm on it").click()
        expect(ana_page.get_by_role("status").filter(has_text="You are on it")).to_be_visible()
        expect(ana_page.get_by_text("You are on it since")).to_be_visible()
        expect(ana_page.get_by_role("button", name="Release")).to_be_visible()

        bob_page.reload()
        expect(bob_page.get_by_text("Ana Claims is on it since")).to_be_visible()
        expect(bob_page.locator("[data-claim=other] time")).to_have_text(
            re.compile(r"^\d\d:\d\d UTC$")
        )
        expect(bob_page.get_by_role("button", name="I'm on it")).to_have_count(0)

        ana_page.get_by_role("link", name="Hand to someone else").click()
        expect(ana_page.get_by_role("heading", name="Hand “Deploy payments-api”")).to_be_visible()
        ana_page.get_by_label("Hand to").select_option(label="Dan Claims")
        ana_page.get_by_role("button", name="Hand it over").click()
        expect(
            ana_page.get_by_role("status").filter(has_text="Handed to Dan Claims")
        ).to_be_visible()
        expect(ana_page.get_by_role("heading", name="Waiting for you (0)")).to_be_visible()

        # Dan was asked on his number, and decides from his own queue.
        assert any("Deploy payments-api" in d["text"] for d in deliveries(api, DAN))
        _sign_in(dan_page, base, api, DAN)
        dan_page.get_by_role("button", name="Approve").click()
        expect(dan_page.get_by_role("status").filter(has_text="Approved.")).to_be_visible()
        bob_page.reload()
        expect(bob_page.get_by_text("Ana Claims is on it")).to_have_count(0)

        approval = api.get(f"/approvals/{iid}").json()
        entries = api.get("/audit", params={"limit": 500}).json()["entries"]
    assert [d["approver"]["person"] for d in approval["decisions"]] == [dan]
    kinds = [e["type"] for e in entries if e["interactionId"] == iid]
    assert "approval.claimed" in kinds and "approval.reassigned" in kinds


def test_a_person_away_delegates_and_the_delegate_decides_for_them(
    humanwire_service: RunningService, pages: list[Page]
) -> None:
    base = humanwire_service.base_url
    key = humanwire_service.create_account("console away browser")
    ana_page, bob_page, _ = pages
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as api:
        ana = person(api, "Ana Away", [("sms", AWAY_ANA)])
        bob = person(api, "Bob Covers", [("sms", AWAY_BOB)])
        first = ask(api, "Rotate keys", [{"person": ana}])  # so her queue is not empty
        _sign_in(ana_page, base, api, AWAY_ANA)
        ana_page.get_by_role("link", name="Out of office").click()
        expect(ana_page.get_by_role("heading", name="Out of office")).to_be_visible()
        ana_page.get_by_label("Send my requests to").select_option(label="Bob Covers")
        ana_page.get_by_label("Until").fill("2099-01-01T09:00")  # refused: over 90 days
        ana_page.get_by_role("button", name="Delegate").click()
        expect(ana_page.get_by_text("until: a delegation lasts 90 days at most")).to_be_visible()
        ana_page.go_back()
        until = (datetime.now(timezone.utc) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
        ana_page.get_by_label("Send my requests to").select_option(label="Bob Covers")
        ana_page.get_by_label("Until").fill(until)
        ana_page.get_by_role("button", name="Delegate").click()
        expect(ana_page.get_by_role("status").filter(has_text="Delegated.")).to_be_visible()
        expect(ana_page.get_by_text("Your requests go to Bob Covers")).to_be_visible()

        iid = ask(api, "Deploy payments-api", [{"person": ana}])
        _sign_in(bob_page, base, api, AWAY_BOB)
        expect(bob_page.get_by_text("Asked of you for Ana Away (away).")).to_be_visible()
        bob_page.get_by_role("button", name="Approve").click()
        expect(bob_page.get_by_role("status").filter(has_text="Approved.")).to_be_visible()
        [decision] = api.get(f"/approvals/{iid}").json()["decisions"]
        assert api.get(f"/approvals/{first}").json()["status"] == "pending"
    assert decision["approver"]["person"] == bob and decision["onBehalfOf"] == ana
