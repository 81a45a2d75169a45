"""Standing approvals in the approvers' console, over real HTTP on loopback, on both
stores: the queue page lists the account's live grants (never another account's), and a
signed-in person revokes one (a POST with its CSRF token; without it, 403 and the grant
stays live), after which it covers no request."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import httpx
import pytest

from console_support import (
    account_api,
    csrf_in,
    grant_deploy,
    grantable_service,
    person,
    sign_in_code,
)
from humanwire.testing.service import RunningService

ADA_PHONE = "+12025550140"
DEPLOY = {"name": "deploy", "arguments": {"service": "payments-api"}}


@pytest.fixture
def service(database: str) -> Iterator[RunningService]:
    with grantable_service(database) as running:
        yield running


def _signed_in(service: RunningService, api: httpx.Client) -> tuple[httpx.Client, str]:
    client = httpx.Client(base_url=service.base_url, follow_redirects=True, timeout=30)
    csrf = csrf_in(client.get("/console/signin").text)
    sent = client.post("/console/signin", data={"csrf": csrf, "address": ADA_PHONE})
    assert sent.status_code == 200, sent.text
    code = sign_in_code(api, ADA_PHONE)
    assert code is not None
    queue = client.post("/console/code", data={"csrf": csrf, "address": ADA_PHONE, "code": code})
    assert queue.status_code == 200 and queue.url.path == "/console", queue.text
    return client, queue.text


def _covered(api: httpx.Client) -> bool:
    asked = api.post(
        "/approvals",
        json={
            "title": "Deploy?",
            "approvers": [{"channel": "link", "to": "Bo"}],
            "followUpTime": 60,
            "action": DEPLOY,
        },
    )
    assert asked.status_code == 200, asked.text
    return bool(asked.json()["decision"] == "approved")


def test_the_queue_lists_live_grants_and_a_person_revokes_one(service: RunningService) -> None:
    with account_api(service, "console") as api, account_api(service, "other") as other:
        ada = person(api, "Ada", [("sms", ADA_PHONE)])
        mine = grant_deploy(api, ada)
        theirs = grant_deploy(other, person(other, "Oz", [("sms", "+12025550199")]))
        client, page = _signed_in(service, api)
        with contextlib.closing(client):
            assert f'data-grant="{mine}"' in page and "Standing approvals (1)" in page
            assert theirs not in page  # another account's grant is never shown
            csrf = csrf_in(page)
            # Without the CSRF token: refused, and the grant still covers.
            forged = client.post(f"/console/grants/{mine}/revoke", data={})
            assert forged.status_code == 403
            assert _covered(api)
            # Another account's grant, or none: 404, and theirs stays live.
            for grant_id in (theirs, "grt_nothing", "..%2Fx"):
                refused = client.post(f"/console/grants/{grant_id}/revoke", data={"csrf": csrf})
                assert refused.status_code == 404, grant_id
            assert [g["grantId"] for g in other.get("/approvals/grants").json()["grants"]] == [
                theirs
            ]
            revoked = client.post(f"/console/grants/{mine}/revoke", data={"csrf": csrf})
            assert revoked.status_code == 200 and revoked.url.path == "/console"
            assert "Revoked." in revoked.text and "data-no-grants" in revoked.text
            assert api.get("/approvals/grants").json() == {"grants": []}
            assert not _covered(api)
            again = client.post(f"/console/grants/{mine}/revoke", data={"csrf": csrf})
            assert again.status_code == 404
