"""Approvers who are people of the directory, end to end on the real service over
loopback on both stores: ``{person}`` is asked on the person's first confirmed address;
an address of a person given alone is that person's; **the quorum counts people** (two
numbers of one person count once, and a decision from either is the person's);
decisions, the audit and ``GET /approvals?personId`` name the person; another account's
person is 404 and an address not the person's, or never confirmed, is 400, naming the
approver."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from e2e_support import StartService

from humanwire.testing import RunningService

ADA_PHONE = "+12025550100"
ADA_OTHER_PHONE = "+12025550101"
BOB_PHONE = "+12025550122"


@pytest.fixture
def service(start_service: StartService) -> RunningService:
    return start_service()


def _client(service: RunningService, name: str) -> httpx.Client:
    key = service.create_account(name)
    return httpx.Client(
        base_url=service.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )


@pytest.fixture
def api(service: RunningService) -> Iterator[httpx.Client]:
    with _client(service, "approvals-people") as client:
        yield client


def _deliveries(api: httpx.Client, to: str) -> list[dict[str, Any]]:
    found = [d for d in api.get("/sandbox/messages").json() if d["to"] == to]
    return sorted(found, key=lambda d: str(d["createdAt"]))


def _reply(api: httpx.Client, delivery: dict[str, Any], body: str) -> None:
    reply = {"channel": "sms", "from": delivery["to"], "to": delivery["from"], "body": body}
    response = api.post("/sandbox/replies", json=reply)
    assert response.status_code < 300, response.text


def _person(api: httpx.Client, name: str, *phones: str, confirmed: bool = True) -> str:
    made = api.post(
        "/people", json={"name": name, "addresses": [{"channel": "sms", "to": p} for p in phones]}
    )
    assert made.status_code == 201, made.text
    person_id: str = made.json()["personId"]
    for phone in phones if confirmed else ():
        sent = api.post(f"/people/{person_id}/confirm", json={"channel": "sms", "to": phone})
        assert sent.status_code == 200, sent.text
        [delivery] = [
            d for d in _deliveries(api, phone) if d["interactionId"] == sent.json()["interactionId"]
        ]
        code = re.search(r"\b\d{6}\b", delivery["text"])
        assert code is not None
        _reply(api, delivery, code.group(0))
    return person_id


def _ask(api: httpx.Client, **body: Any) -> httpx.Response:
    return api.post("/approvals", json={"title": "Rotate keys", "followUpTime": 60, **body})


def _asked(api: httpx.Client, interaction_id: str, to: str) -> dict[str, Any]:
    """The approval request's message to ``to`` (the one naming its code, if several)."""
    found = [d for d in _deliveries(api, to) if "Rotate keys" in d["text"]]
    assert found, _deliveries(api, to)
    return found[-1]


def _error(response: httpx.Response, status: int, field: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["field"] == field, response.json()


def test_the_quorum_counts_people_not_addresses(api: httpx.Client) -> None:
    ada = _person(api, "Ada", ADA_PHONE, ADA_OTHER_PHONE)
    bob = _person(api, "Bob", BOB_PHONE)
    approvers = [
        {"channel": "sms", "to": ADA_PHONE},
        {"channel": "sms", "to": ADA_OTHER_PHONE},
        {"person": bob},
    ]
    # Three approvers, two people: a quorum of three can never be reached.
    too_many = _ask(api, approvers=approvers, quorum=3)
    _error(too_many, 400, "quorum")
    assert "2 different people" in too_many.json()["error"]["message"]
    asked = _ask(api, approvers=approvers, quorum=2)
    assert asked.status_code == 200, asked.text
    interaction_id = asked.json()["interactionId"]
    # Bob is asked on his confirmed number.
    bob_asked = _asked(api, interaction_id, BOB_PHONE)
    # Ada approves from one number, then again from her other: one person, counted once.
    _reply(api, _asked(api, interaction_id, ADA_PHONE), "yes")
    _reply(api, _asked(api, interaction_id, ADA_OTHER_PHONE), "yes")
    view = api.get(f"/approvals/{interaction_id}").json()
    assert view["decision"] is None, view
    assert [d["approver"] for d in view["decisions"]] == [
        {"channel": "sms", "to": ADA_PHONE, "person": ada}
    ]
    _reply(api, bob_asked, "yes")
    view = api.get(f"/approvals/{interaction_id}").json()
    assert view["decision"] == "approved", view
    assert [d["approver"].get("person") for d in view["decisions"]] == [ada, bob]
    # Listed by either person; the audit's actors name them too.
    for person in (ada, bob):
        listed = api.get("/approvals", params={"personId": person}).json()
        assert [a["interactionId"] for a in listed["approvals"]] == [interaction_id]
    audit = api.get("/audit", params={"limit": 500}).json()["entries"]
    decided = [e["actor"] for e in audit if e["type"] == "approval.decision"]
    assert {a.get("person") for a in decided} == {ada, bob}


def test_a_person_approver_is_asked_on_their_first_confirmed_address(
    api: httpx.Client,
) -> None:
    ada = _person(api, "Ada", ADA_PHONE, ADA_OTHER_PHONE, confirmed=False)
    never = _ask(api, approvers=[{"person": ada}])
    _error(never, 400, "approvers[0].person")
    # Her second number confirmed: that is where she is asked.
    _person_confirm(api, ada, ADA_OTHER_PHONE)
    asked = _ask(api, approvers=[{"person": ada}])
    assert asked.status_code == 200, asked.text
    interaction_id = asked.json()["interactionId"]
    assert [d for d in _deliveries(api, ADA_PHONE) if "Rotate keys" in d["text"]] == []
    _reply(api, _asked(api, interaction_id, ADA_OTHER_PHONE), "yes")
    view = api.get(f"/approvals/{interaction_id}").json()
    assert view["decision"] == "approved"
    assert view["decisions"][0]["approver"] == {
        "channel": "sms",
        "to": ADA_OTHER_PHONE,
        "person": ada,
    }


def _person_confirm(api: httpx.Client, person_id: str, phone: str) -> None:
    sent = api.post(f"/people/{person_id}/confirm", json={"channel": "sms", "to": phone})
    assert sent.status_code == 200, sent.text
    [delivery] = [
        d for d in _deliveries(api, phone) if d["interactionId"] == sent.json()["interactionId"]
    ]
    code = re.search(r"\b\d{6}\b", delivery["text"])
    assert code is not None
    _reply(api, delivery, code.group(0))


def test_people_approvers_that_cannot_be_are_refused_before_anyone_is_asked(
    service: RunningService, api: httpx.Client
) -> None:
    ada = _person(api, "Ada", ADA_PHONE)
    before = len(api.get("/sandbox/messages").json())
    # An address given with the person that is not theirs.
    _error(
        _ask(api, approvers=[{"person": ada, "channel": "sms", "to": BOB_PHONE}]),
        400,
        "approvers[0].person",
    )
    # A channel she has no confirmed address on.
    _error(_ask(api, approvers=[{"person": ada, "channel": "email"}]), 400, "approvers[0].person")
    # The same person twice, by name and by address.
    _error(
        _ask(api, approvers=[{"person": ada}, {"channel": "sms", "to": ADA_PHONE}]),
        400,
        "approvers[1]",
    )
    # Shapes the wire refuses.
    for approver, field in [
        ({"channel": "sms"}, "approvers[0].to"),
        ({"to": ADA_PHONE}, "approvers[0].channel"),
        ({"person": ada, "channel": "link"}, "approvers[0].person"),
        ({"person": None}, "approvers[0].person"),
    ]:
        _error(_ask(api, approvers=[approver]), 400, field)
    assert len(api.get("/sandbox/messages").json()) == before
    with _client(service, "other") as other:
        _error(_ask(other, approvers=[{"person": ada}]), 404, "approvers[0].person")
