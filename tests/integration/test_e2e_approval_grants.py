"""Standing approvals (``/approvals/grants``) end to end: the real service over loopback
HTTP on both stores. A request a live grant covers is approved at once, ``via: "grant"``,
the grant's id in its decision and in the audit entry (and ``humanwire audit verify``
passes the chain); one it does not cover (another argument, another action) goes to its
approvers; a revoked or expired grant covers nothing from then on; every refusal is a 400
naming its field; one account never sees, revokes or is covered by another's grants."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
from e2e_support import StartService

from humanwire import AsyncHumanWire, HumanWire
from humanwire.cli import main
from humanwire.errors import InvalidRequestError, NotFoundError
from humanwire.testing import RunningService

DEPLOY = {"name": "deploy", "arguments": {"service": "payments-api", "env": "prod-eu", "n": 2}}


@pytest.fixture
def service(start_service: StartService) -> RunningService:
    return start_service(approvals_grantable=("deploy", "wire"), approvals_max_grant=3600.0)


def _client(service: RunningService, name: str) -> httpx.Client:
    key = service.create_account(name)
    return httpx.Client(
        base_url=service.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )


@pytest.fixture
def api(service: RunningService) -> Iterator[httpx.Client]:
    with _client(service, "granter") as client:
        yield client


def _person(api: httpx.Client, name: str = "Ada") -> str:
    made = api.post("/people", json={"name": name, "addresses": []})
    assert made.status_code == 201, made.text
    person_id: str = made.json()["personId"]
    return person_id


def _in(seconds: float) -> str:
    return (datetime.now(timezone.utc) + timedelta(seconds=seconds)).isoformat()


def _grant(api: httpx.Client, person: str, **changes: Any) -> httpx.Response:
    body = {
        "actionName": "deploy",
        "match": {"service": "payments-api", "env": {"prefix": "prod-"}, "n": {"oneOf": [1, 2]}},
        "expiresAt": _in(600),
        "grantedBy": person,
        **changes,
    }
    return api.post("/approvals/grants", json=body)


def _ask(api: httpx.Client, action: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "title": "Deploy?",
        "approvers": [{"channel": "link", "to": "Bo"}],
        "followUpTime": 60,
    }
    if action is not None:
        body["action"] = action
    response = api.post("/approvals", json=body)
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


def _audit_of(api: httpx.Client, interaction_id: str) -> list[dict[str, Any]]:
    entries = api.get("/audit", params={"limit": 1000}).json()["entries"]
    return [e for e in entries if e["interactionId"] == interaction_id]


def test_a_covered_request_is_approved_at_once_by_the_grant(
    api: httpx.Client, service: RunningService, capsys: pytest.CaptureFixture[str]
) -> None:
    person = _person(api)
    made = _grant(api, person)
    assert made.status_code == 201, made.text
    grant = made.json()
    assert grant["grantId"].startswith("grt_") and grant["grantedBy"] == person
    assert grant["match"]["env"] == {"prefix": "prod-"} and grant["revokedAt"] is None
    assert api.get("/approvals/grants").json() == {"grants": [grant]}

    asked = _ask(api, DEPLOY)
    assert asked["status"] == "ended" and asked["decision"] == "approved"
    assert asked["links"] == []  # nobody was asked
    [decision] = asked["decisions"]
    assert decision["via"] == "grant" and decision["grantId"] == grant["grantId"]
    assert decision["approver"]["person"] == person
    assert grant["grantId"] in asked["response"]
    assert api.get(f"/approvals/{asked['interactionId']}").json() == asked

    entries = _audit_of(api, asked["interactionId"])
    assert [e["type"] for e in entries] == [
        "approval.requested",
        "approval.decision",
        "approval.decided",
    ]
    assert entries[1]["data"]["via"] == "grant"
    assert entries[1]["data"]["grantId"] == grant["grantId"]
    assert entries[1]["actor"] == {"person": person}

    # Consumed once, as any approval.
    digest = {"actionDigest": asked["actionDigest"]}
    consume = f"/approvals/{asked['interactionId']}/consume"
    assert api.post(consume, json=digest).status_code == 200
    again = api.post(consume, json=digest)
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_consumed"

    code = main(["audit", "verify", "--db", service.config.db_path])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "chain intact" in out


@pytest.mark.parametrize(
    "action",
    [
        {**DEPLOY, "arguments": {**DEPLOY["arguments"], "service": "billing"}},  # exact
        {**DEPLOY, "arguments": {**DEPLOY["arguments"], "env": "staging"}},  # prefix
        {**DEPLOY, "arguments": {**DEPLOY["arguments"], "n": 3}},  # oneOf
        {**DEPLOY, "arguments": {**DEPLOY["arguments"], "n": True}},  # true is not 1
        {**DEPLOY, "arguments": {"service": "payments-api", "env": "prod-eu"}},  # n missing
        {**DEPLOY, "arguments": {**DEPLOY["arguments"], "env": ["prod-eu"]}},  # not a string
        {**DEPLOY, "arguments": {**DEPLOY["arguments"], "service": ["payments-api"]}},
        {"name": "wire", "arguments": DEPLOY["arguments"]},  # another action
        None,  # no action at all
    ],
)
def test_an_uncovered_request_goes_to_its_approvers(
    api: httpx.Client, action: dict[str, Any] | None
) -> None:
    assert _grant(api, _person(api)).status_code == 201
    asked = _ask(api, action)
    assert asked["status"] == "pending" and asked["decision"] is None
    assert asked["decisions"] == [] and len(asked["links"]) == 1


def test_json_equality_counts_one_and_one_point_zero_as_equal(api: httpx.Client) -> None:
    assert _grant(api, _person(api)).status_code == 201
    asked = _ask(api, {**DEPLOY, "arguments": {**DEPLOY["arguments"], "n": 2.0}})
    assert asked["decision"] == "approved"


def test_a_revoked_grant_covers_nothing_from_then_on(api: httpx.Client) -> None:
    grant = _grant(api, _person(api)).json()
    assert _ask(api, DEPLOY)["decision"] == "approved"
    revoked = api.delete(f"/approvals/grants/{grant['grantId']}")
    assert revoked.status_code == 204
    assert api.get("/approvals/grants").json() == {"grants": []}
    assert _ask(api, DEPLOY)["status"] == "pending"
    again = api.delete(f"/approvals/grants/{grant['grantId']}")
    assert again.status_code == 404 and again.json()["error"]["field"] == "grantId"
    unknown = api.delete("/approvals/grants/grt_nothing")
    assert unknown.status_code == 404
    hostile = api.delete("/approvals/grants/..%2F..%2Fpeople")
    assert hostile.status_code == 404


def test_an_expired_grant_covers_nothing(api: httpx.Client) -> None:
    made = _grant(api, _person(api), expiresAt=_in(1.5))
    assert made.status_code == 201, made.text
    while time.time() < datetime.fromisoformat(made.json()["expiresAt"]).timestamp():
        time.sleep(0.1)
    assert api.get("/approvals/grants").json() == {"grants": []}
    assert _ask(api, DEPLOY)["status"] == "pending"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"actionName": "drop_database"}, "actionName"),  # not grantable
        ({"expiresAt": _in(-60)}, "expiresAt"),  # past
        ({"expiresAt": _in(7200)}, "expiresAt"),  # beyond max_grant
        ({"match": {"service": {"regex": ".*"}}}, "match.service"),  # unknown form
        ({"match": {"service": {"oneOf": [], "prefix": "x"}}}, "match.service"),
        ({"match": {"service": {"oneOf": []}}}, "match.service"),  # nothing to match
        ({"match": {"service": {"oneOf": "payments-api"}}}, "match.service"),  # ill-typed
        ({"match": {"service": {"prefix": 5}}}, "match.service"),  # ill-typed
        ({"match": {"service": {"prefix": ""}}}, "match.service"),
        ({"match": {"service": {"oneOf": [{"a": 1}]}}}, "match.service"),  # an object
        ({"match": {"service": ["payments-api"]}}, "match.service"),  # not a scalar
        ({"match": {}}, "match"),  # would cover every call
        ({"match": {f"a{n}": n for n in range(17)}}, "match"),  # too many entries
        ({"match": "service=payments-api"}, "match"),
        ({"grantedBy": "per_nobody"}, "grantedBy"),
        ({"grantedBy": "Ada"}, "grantedBy"),
        ({"expiresAt": "tomorrow"}, "expiresAt"),
        ({"extra": 1}, "extra"),
    ],
)
def test_each_refusal_is_a_400_naming_its_field(
    api: httpx.Client, changes: dict[str, Any], field: str
) -> None:
    refused = _grant(api, _person(api), **changes)
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error["code"] == "invalid_request" and error["field"] == field, error
    assert api.get("/approvals/grants").json() == {"grants": []}


def test_nothing_is_grantable_by_default(start_service: StartService) -> None:
    service = start_service()
    with _client(service, "plain") as api:
        refused = _grant(api, _person(api))
        assert refused.status_code == 400 and refused.json()["error"]["field"] == "actionName"


def test_an_account_never_sees_revokes_or_is_covered_by_anothers_grant(
    api: httpx.Client, service: RunningService
) -> None:
    grant = _grant(api, _person(api)).json()
    with _client(service, "other") as other:
        assert other.get("/approvals/grants").json() == {"grants": []}
        assert other.delete(f"/approvals/grants/{grant['grantId']}").status_code == 404
        assert _ask(other, DEPLOY)["status"] == "pending"
        # Their own person cannot grant as mine, nor mine as theirs.
        refused = _grant(other, _person(api))
        assert refused.status_code == 400 and refused.json()["error"]["field"] == "grantedBy"
    assert api.get("/approvals/grants").json() == {"grants": [grant]}  # still live
    assert _ask(api, DEPLOY)["decision"] == "approved"


def test_the_client_makes_lists_and_revokes_grants(service: RunningService) -> None:
    key = service.create_account("client")
    with HumanWire(api_key=key, base_url=service.base_url) as client:
        person = client.people.create(name="Ada", addresses=[]).person_id
        expires = datetime.now(timezone.utc) + timedelta(minutes=10)
        grant = client.approvals.grants.create(
            action_name="deploy",
            match={"service": "payments-api"},
            expires_at=expires,
            granted_by=person,
        )
        assert [g.grant_id for g in client.approvals.grants.list().grants] == [grant.grant_id]
        # Held (waitTime): the grant's decision answers the held request.
        asked = client.approvals.create(
            title="Deploy?",
            approvers=[{"channel": "link", "to": "Bo"}],
            action=DEPLOY,
            wait_time=30,
        )
        assert asked.decision == "approved" and asked.decisions[0].grant_id == grant.grant_id
        client.approvals.grants.revoke(grant.grant_id)
        assert client.approvals.grants.list().grants == []
        with pytest.raises(NotFoundError):
            client.approvals.grants.revoke(grant.grant_id)
        with pytest.raises(InvalidRequestError) as refused:
            client.approvals.grants.create(
                action_name="deploy",
                match={"service": {"regex": "."}},
                expires_at=expires,
                granted_by=person,
            )
        assert refused.value.field == "match.service"


async def test_the_async_client_makes_lists_and_revokes_grants(service: RunningService) -> None:
    key = service.create_account("async")
    async with AsyncHumanWire(api_key=key, base_url=service.base_url) as client:
        person = (await client.people.create(name="Ada", addresses=[])).person_id
        grant = await client.approvals.grants.create(
            action_name="wire",
            match={"to": {"oneOf": ["acme", "initech"]}},
            expires_at=datetime.now(timezone.utc) + timedelta(minutes=10),
            granted_by=person,
        )
        assert (await client.approvals.grants.list()).grants[0].grant_id == grant.grant_id
        await client.approvals.grants.revoke(grant.grant_id)
        assert (await client.approvals.grants.list()).grants == []
