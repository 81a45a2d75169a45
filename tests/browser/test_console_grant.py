"""Making a standing approval from the console in headless chromium, phone-sized: on a
request's page the person keeps the argument to match ticked, unticks the other, picks a
duration and submits; the queue lists the new grant, and a next request like it is
approved at once."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from console_support import ask, person, sign_in_code
from humanwire.testing.service import RunningService, fast_config, start_test_service

pytestmark = pytest.mark.browser

PHONE_NUMBER = "+12025550189"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[RunningService]:
    database = str(tmp_path / "grant.db")
    config = replace(fast_config(database), approvals_grantable=("deploy",))
    running = start_test_service(database, config)
    try:
        yield running
    finally:
        running.stop()


def test_a_person_makes_a_standing_approval_from_a_request(
    service: RunningService, page: Page
) -> None:
    key = service.create_account("console grant")
    with httpx.Client(base_url=service.base_url, headers={"Authorization": f"Bearer {key}"}) as api:
        ada = person(api, "Ada Grant", [("sms", PHONE_NUMBER)])
        arguments = {"service": "payments-api", "version": "4.2"}
        iid = ask(
            api, "Deploy 4.2", [{"person": ada}], action={"name": "deploy", "arguments": arguments}
        )
        page.goto(f"{service.base_url}/console/signin")
        page.get_by_label("Phone number or email").fill(PHONE_NUMBER)
        page.get_by_role("button", name="Send me a code").click()
        expect(page.get_by_role("heading", name="Enter your code")).to_be_visible()
        code = sign_in_code(api, PHONE_NUMBER)
        assert code is not None
        page.get_by_label("Code").fill(code)
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("heading", name="Waiting for you (1)")).to_be_visible()

        page.get_by_role("link", name="Deploy 4.2").click()
        expect(page).to_have_url(f"{service.base_url}/console/approvals/{iid}")
        group = page.get_by_role("group", name="Approve deploy")
        expect(group.get_by_role("checkbox")).to_have_count(2)
        group.get_by_label('where version = "4.2"').uncheck()
        expect(group.get_by_label('where service = "payments-api"')).to_be_checked()
        page.get_by_label("for").select_option(label="2 hours")
        page.get_by_role("button", name="Approve like this").click()

        expect(page.get_by_role("status").filter(has_text="Standing approval made")).to_be_visible()
        expect(page.get_by_role("heading", name="Standing approvals (1)")).to_be_visible()
        expect(page.locator("[data-grants]")).to_contain_text('{"service": "payments-api"}')
        [grant] = api.get("/approvals/grants").json()["grants"]
        assert grant["match"] == {"service": "payments-api"} and grant["grantedBy"] == ada
        covered = api.post(
            "/approvals",
            json={
                "title": "Deploy 4.3",
                "approvers": [{"channel": "link", "to": "Bo"}],
                "followUpTime": 60,
                "action": {"name": "deploy", "arguments": {**arguments, "version": "4.3"}},
            },
        ).json()
    assert covered["decision"] == "approved"
