"""The console queue's filters in headless chromium, phone-sized: the person types an
action's name and picks "Newest first" in the GET form, the queue narrows to it (the URL
holding the query), a metadata link filters by that entry, and "Clear" shows all again."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Page, expect

from console_support import ask, person, sign_in_code
from humanwire.testing.service import RunningService

pytestmark = pytest.mark.browser

PHONE_NUMBER = "+12025550179"
"""A number no other test's person has: the console finds people by address alone."""


def test_a_person_filters_the_queue(humanwire_service: RunningService, page: Page) -> None:
    base = humanwire_service.base_url
    key = humanwire_service.create_account("console filters")
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as api:
        ada = person(api, "Ada Filters", [("sms", PHONE_NUMBER)])
        for title, action, agent in (
            ("Deploy billing", "deploy", "billing"),
            ("Restart ops", "restart", "ops"),
        ):
            ask(
                api,
                title,
                [{"person": ada}],
                action={"name": action, "arguments": {"service": "api"}},
                metadata={"agent": agent},
            )
        page.goto(f"{base}/console/signin")
        page.get_by_label("Phone number or email").fill(PHONE_NUMBER)
        page.get_by_role("button", name="Send me a code").click()
        expect(page.get_by_role("heading", name="Enter your code")).to_be_visible()
        code = sign_in_code(api, PHONE_NUMBER)
        assert code is not None
        page.get_by_label("Code").fill(code)
        page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Waiting for you (2)")).to_be_visible()

    search = page.get_by_role("search", name="Filter the queue")
    search.get_by_label("Action").fill("deploy")
    search.get_by_label("Order").select_option(label="Newest first")
    search.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(f"{base}/console?action=deploy&meta=&sort=newest")
    expect(page.get_by_role("heading", name="Waiting for you (1)")).to_be_visible()
    expect(page.get_by_role("link", name="Deploy billing")).to_be_visible()
    expect(page.get_by_role("link", name="Restart ops")).to_have_count(0)
    expect(search.get_by_label("Action")).to_have_value("deploy")

    page.get_by_role("link", name="Clear").click()
    expect(page.get_by_role("heading", name="Waiting for you (2)")).to_be_visible()
    page.get_by_role("link", name="agent: ops").click()
    expect(page.get_by_role("heading", name="Waiting for you (1)")).to_be_visible()
    expect(page.get_by_role("link", name="Restart ops")).to_be_visible()
    expect(search.get_by_label("Metadata (key=value)")).to_have_value("agent=ops")
