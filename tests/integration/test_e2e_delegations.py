"""Out-of-office delegations through the account's API, end to end on the real service
over loopback on both stores: made, listed and revoked under ``/people/{personId}``; while
one holds, a request asking the person asks the delegate; every refusal names its field
(the console's checks, one set), and another account's person is 404."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
from e2e_support import StartService

from console_support import account_api, ask, deliveries, person
from humanwire import HumanWire
from humanwire.errors import InvalidRequestError, NotFoundError
from humanwire.testing import RunningService

ANA_PHONE = "+12025550160"
BOB_PHONE = "+12025550161"
CY_PHONE = "+12025550162"


@pytest.fixture
def service(start_service: StartService) -> RunningService:
    return start_service()


@pytest.fixture
def api(service: RunningService) -> Iterator[httpx.Client]:
    with account_api(service, "delegations") as client:
        yield client


def _at(**delta: float) -> str:
    return (datetime.now(timezone.utc) + timedelta(**delta)).isoformat()


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    return error


def test_a_delegation_made_through_the_api_asks_the_delegate(api: httpx.Client) -> None:
    ana = person(api, "Ana", [("sms", ANA_PHONE)])
    bob = person(api, "Bob", [("sms", BOB_PHONE)])
    made = api.post(f"/people/{ana}/delegations", json={"delegate": bob, "endsAt": _at(days=1)})
    assert made.status_code == 201, made.text
    delegation = made.json()
    assert delegation["personId"] == ana and delegation["delegate"] == bob
    assert delegation["delegationId"].startswith("dlg_")
    listed = api.get(f"/people/{ana}/delegations").json()["delegations"]
    assert [d["delegationId"] for d in listed] == [delegation["delegationId"]]
    # Bob's list shows the one to him too.
    assert api.get(f"/people/{bob}/delegations").json()["delegations"] == listed

    before_ana, before_bob = len(deliveries(api, ANA_PHONE)), len(deliveries(api, BOB_PHONE))
    ask(api, "Deploy?", [{"person": ana}])
    assert len(deliveries(api, ANA_PHONE)) == before_ana  # Ana is away
    assert len(deliveries(api, BOB_PHONE)) == before_bob + 1

    revoked = api.delete(f"/people/{ana}/delegations/{delegation['delegationId']}")
    assert revoked.status_code == 204, revoked.text
    assert api.get(f"/people/{ana}/delegations").json()["delegations"] == []
    ask(api, "Deploy again?", [{"person": ana}])
    assert len(deliveries(api, ANA_PHONE)) == before_ana + 1
    gone = api.delete(f"/people/{ana}/delegations/{delegation['delegationId']}")
    assert _error(gone, 404)["code"] == "not_found"


def test_delegations_through_the_api_are_refused_naming_the_field(
    service: RunningService, api: httpx.Client
) -> None:
    ana = person(api, "Ana", [("sms", ANA_PHONE)])
    bob = person(api, "Bob", [("sms", BOB_PHONE)])
    with account_api(service, "other") as other:
        theirs = person(other, "Cy", [("sms", CY_PHONE)])
    path = f"/people/{ana}/delegations"
    refusals: list[tuple[dict[str, Any], int, str]] = [
        ({"delegate": ana, "endsAt": _at(days=1)}, 400, "delegate"),
        ({"delegate": "per_0000000000000000", "endsAt": _at(days=1)}, 404, "delegate"),
        ({"delegate": theirs, "endsAt": _at(days=1)}, 404, "delegate"),
        ({"delegate": bob, "endsAt": _at(days=-1)}, 400, "endsAt"),
        ({"delegate": bob, "startsAt": _at(days=2), "endsAt": _at(days=1)}, 400, "endsAt"),
        ({"delegate": bob, "endsAt": _at(days=95)}, 400, "endsAt"),
        ({"delegate": bob}, 400, "endsAt"),
        ({"delegate": bob, "endsAt": "soon"}, 400, "endsAt"),
    ]
    for body, status, field in refusals:
        error = _error(api.post(path, json=body), status)
        assert error["field"] == field, (body, error)
    # Another account's person, on every route.
    assert _error(api.get(f"/people/{theirs}/delegations"), 404)["field"] == "personId"
    assert (
        _error(
            api.post(
                f"/people/{theirs}/delegations", json={"delegate": bob, "endsAt": _at(days=1)}
            ),
            404,
        )["field"]
        == "personId"
    )

    assert api.post(path, json={"delegate": bob, "endsAt": _at(days=2)}).status_code == 201
    overlapping = {"delegate": bob, "startsAt": _at(days=1), "endsAt": _at(days=3)}
    assert _error(api.post(path, json=overlapping), 400)["field"] == "startsAt"
    loop = {"delegate": ana, "endsAt": _at(days=1)}
    assert _error(api.post(f"/people/{bob}/delegations", json=loop), 400)["field"] == "delegate"
    assert api.get(f"/people/{bob}/delegations").json()["delegations"][0]["personId"] == ana


def test_the_client_makes_lists_and_revokes_delegations(
    service: RunningService, api: httpx.Client
) -> None:
    ana = person(api, "Ana", [("sms", ANA_PHONE)])
    bob = person(api, "Bob", [("sms", BOB_PHONE)])
    key = api.headers["Authorization"].removeprefix("Bearer ")
    with HumanWire(api_key=key, base_url=service.base_url) as client:
        ends = datetime.now(timezone.utc) + timedelta(hours=8)
        made = client.people.delegations.create(ana, delegate=bob, ends_at=ends)
        assert made.person_id == ana and made.delegate == bob
        assert abs((made.ends_at - ends).total_seconds()) < 1
        listed = client.people.delegations.list(ana).delegations
        assert [d.delegation_id for d in listed] == [made.delegation_id]
        with pytest.raises(InvalidRequestError) as refused:
            client.people.delegations.create(ana, delegate=ana, ends_at=ends)
        assert refused.value.field == "delegate"
        client.people.delegations.revoke(ana, made.delegation_id)
        assert client.people.delegations.list(ana).delegations == []
        with pytest.raises(NotFoundError):
            client.people.delegations.revoke(ana, made.delegation_id)
