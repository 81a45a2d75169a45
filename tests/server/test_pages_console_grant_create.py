"""Making a standing approval from the console, over real HTTP on loopback, on both
stores: on a request's page a person picks the arguments matched and a duration, and the
grant is made by the same code as ``POST /approvals/grants`` (grantable actions only, at
most ``max_grant``), as that person, audited as ``approval.grant_created`` (as the API's
is, ``via: api`` there); every refusal is a 400 page naming the form's field, a person
not asked the request gets a 404, a post without the CSRF token a 403."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest

from console_support import ask, person, signed_in
from humanwire.testing.service import RunningService, fast_config, start_test_service

ADA_PHONE = "+12025550151"
BO_PHONE = "+12025550152"
DEPLOY = {"name": "deploy", "arguments": {"service": "payments-api", "version": "4.2"}}


@pytest.fixture
def service(database: str) -> Iterator[RunningService]:
    config = replace(
        fast_config(database), approvals_grantable=("deploy",), approvals_max_grant=8 * 3600
    )
    running = start_test_service(database, config)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def api(service: RunningService) -> Iterator[httpx.Client]:
    key = service.create_account("grants")
    with httpx.Client(
        base_url=service.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as client:
        yield client


def _audit(api: httpx.Client, kind: str) -> list[dict[str, Any]]:
    entries = api.get("/audit").json()["entries"]
    return [e for e in entries if e["type"] == kind]


def _deploy(api: httpx.Client, approvers: list[dict[str, Any]], **arguments: Any) -> dict[str, Any]:
    action = {"name": "deploy", "arguments": {**DEPLOY["arguments"], **arguments}}  # type: ignore[dict-item]
    made = api.post(
        "/approvals",
        json={"title": "Deploy?", "approvers": approvers, "followUpTime": 60, "action": action},
    )
    assert made.status_code == 200, made.text
    return dict(made.json())


def test_a_person_grants_like_this_request_and_the_next_one_is_approved_at_once(
    service: RunningService, api: httpx.Client
) -> None:
    ada = person(api, "Ada", [("sms", ADA_PHONE)])
    iid = ask(api, "Deploy 4.2?", [{"person": ada}], action=DEPLOY)
    client, csrf = signed_in(service, api, ADA_PHONE)
    page = client.get(f"/console/approvals/{iid}").text
    assert "data-grant-form" in page and 'name="arg-0"' in page and 'name="arg-1"' in page
    offered = re.findall(r'<option value="(\d+)"', page)
    assert offered and max(int(s) for s in offered) <= 8 * 3600  # none beyond max_grant
    # Only `service` ticked: `version` may be anything.
    made = client.post(
        f"/console/approvals/{iid}/grant", data={"csrf": csrf, "arg-0": "1", "duration": "3600"}
    )
    assert made.status_code == 200 and made.url.path == "/console", made.text
    assert "Standing approval made: deploy" in made.text
    [grant] = api.get("/approvals/grants").json()["grants"]
    assert grant["actionName"] == "deploy" and grant["match"] == {"service": "payments-api"}
    assert grant["grantedBy"] == ada
    expires = datetime.fromisoformat(grant["expiresAt"].replace("Z", "+00:00"))
    left = expires - datetime.now(timezone.utc)
    assert timedelta(minutes=55) < left <= timedelta(hours=1)
    [created] = _audit(api, "approval.grant_created")
    assert created["interactionId"] == grant["grantId"]
    assert created["actor"] == {"person": ada}
    assert created["data"]["via"] == "console" and created["data"]["match"] == grant["match"]
    # The next request like it (another version) is approved at once, as Ada.
    covered = _deploy(api, [{"channel": "link", "to": "Bo"}], version="4.3")
    assert covered["decision"] == "approved"
    assert covered["decisions"][0]["grantId"] == grant["grantId"]
    # Another service is not covered.
    assert _deploy(api, [{"channel": "link", "to": "Bo"}], service="ledger")["status"] == "pending"


def test_the_apis_grant_is_audited_too(api: httpx.Client) -> None:
    ada = person(api, "Ada", [("sms", ADA_PHONE)])
    expires = (datetime.now(timezone.utc) + timedelta(minutes=30)).isoformat()
    made = api.post(
        "/approvals/grants",
        json={
            "actionName": "deploy",
            "match": {"service": "payments-api"},
            "expiresAt": expires,
            "grantedBy": ada,
        },
    )
    assert made.status_code == 201, made.text
    [created] = _audit(api, "approval.grant_created")
    assert created["interactionId"] == made.json()["grantId"] and created["actor"] is None
    assert created["data"]["via"] == "api" and created["data"]["grantedBy"] == ada


def _refusal(response: httpx.Response, status: int, field: str) -> None:
    assert response.status_code == status, response.text
    assert f"{field}:" in response.text, response.text


def test_refusals_name_the_field_and_grant_nothing(
    service: RunningService, api: httpx.Client
) -> None:
    ada = person(api, "Ada", [("sms", ADA_PHONE)])
    iid = ask(api, "Deploy?", [{"person": ada}], action=DEPLOY)
    drop = ask(
        api, "Drop?", [{"person": ada}], action={"name": "drop_table", "arguments": {"t": "x"}}
    )
    client, csrf = signed_in(service, api, ADA_PHONE)
    url = f"/console/approvals/{iid}/grant"
    ok = {"csrf": csrf, "arg-0": "1", "duration": "3600"}
    # An action the service does not let be granted: no form, and a post is refused.
    page = client.get(f"/console/approvals/{drop}").text
    assert "data-no-grant" in page and "data-grant-form" not in page
    _refusal(client.post(f"/console/approvals/{drop}/grant", data=ok), 400, "action")
    # Longer than max_grant (8 h).
    _refusal(client.post(url, data={**ok, "duration": str(9 * 3600)}), 400, "duration")
    for bad in ("", "abc", "-5", "0", "1e9", "٣٦٠٠", "9" * 40):
        _refusal(client.post(url, data={**ok, "duration": bad}), 400, "duration")
    # No argument ticked.
    _refusal(client.post(url, data={"csrf": csrf, "duration": "3600"}), 400, "arguments")
    # Without the CSRF token.
    assert client.post(url, data={**ok, "csrf": "forged"}).status_code == 403
    assert api.get("/approvals/grants").json()["grants"] == []
    assert _audit(api, "approval.grant_created") == []


def test_a_person_not_asked_gets_a_404(service: RunningService, api: httpx.Client) -> None:
    ada = person(api, "Ada", [("sms", ADA_PHONE)])
    person(api, "Bo", [("sms", BO_PHONE)])
    iid = ask(api, "Deploy?", [{"person": ada}], action=DEPLOY)
    client, csrf = signed_in(service, api, BO_PHONE)
    data = {"csrf": csrf, "arg-0": "1", "duration": "3600"}
    assert client.get(f"/console/approvals/{iid}").status_code == 404
    assert client.post(f"/console/approvals/{iid}/grant", data=data).status_code == 404
    assert client.post("/console/approvals/int_nothing/grant", data=data).status_code == 404
    # Another account's request, asked of its own Ada.
    key = service.create_account("other")
    with httpx.Client(
        base_url=service.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as other:
        theirs = ask(other, "Deploy?", [{"channel": "link", "to": "Cy"}], action=DEPLOY)
    assert client.post(f"/console/approvals/{theirs}/grant", data=data).status_code == 404
    assert api.get("/approvals/grants").json()["grants"] == []
