"""A person in place of ``to``, end to end on the real service over loopback on both
stores: a send naming a person goes to the person's first confirmed address on its
channel (never an unconfirmed one); ``/messages/person`` to the first confirmed address
in the person's order, whatever its channel; another
account's person is 404; ``to`` with ``person``, or neither, is 400 naming the field."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from e2e_support import StartService

from humanwire.testing import RunningService

ADA_PHONE = "+12025550100"
ADA_MAIL = "ada@example.com"
ADA = {
    "name": "Ada Lovelace",
    "addresses": [
        {"channel": "sms", "to": ADA_PHONE},
        {"channel": "email", "to": ADA_MAIL},
        {"channel": "sms", "to": "+12025550101"},
    ],
}
FORM = {"title": "Shift", "fields": [{"id": "day", "label": "Which day?", "type": "text"}]}


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
    with _client(service, "recipients") as client:
        yield client


def _deliveries(api: httpx.Client, to: str | None = None) -> list[dict[str, Any]]:
    found = [d for d in api.get("/sandbox/messages").json() if to is None or d["to"] == to]
    return sorted(found, key=lambda d: str(d["createdAt"]))


def _confirm(api: httpx.Client, person_id: str, channel: str, to: str) -> None:
    """Confirmed as the person would: the code sent to ``to``, answered from there."""
    sent = api.post(f"/people/{person_id}/confirm", json={"channel": channel, "to": to})
    assert sent.status_code == 200, sent.text
    delivery = next(
        d for d in _deliveries(api, to) if d["interactionId"] == sent.json()["interactionId"]
    )
    code = re.search(r"\b(\d{6})\b", delivery["text"])
    assert code is not None
    reply: dict[str, Any] = {
        "channel": channel,
        "from": to,
        "to": delivery["from"],
        "body": code.group(1),
    }
    if channel == "email":
        reply["interactionId"] = delivery["interactionId"]
    assert api.post("/sandbox/replies", json=reply).status_code < 300
    person = api.get(f"/people/{person_id}").json()
    assert any(a["to"] == to and a["confirmed"] for a in person["addresses"]), person


def _ada(api: httpx.Client) -> str:
    response = api.post("/people", json=ADA)
    assert response.status_code == 201, response.text
    person_id: str = response.json()["personId"]
    return person_id


def _error(response: httpx.Response, status: int, field: str) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error.get("field") == field, error
    message: str = error["message"]
    return message


def test_a_send_to_a_person_uses_only_a_confirmed_address_on_its_channel(
    api: httpx.Client,
) -> None:
    ada = _ada(api)
    unconfirmed = api.post("/messages/sms", json={"person": ada, "message": "Ship it?"})
    assert "confirm" in _error(unconfirmed, 400, "person")
    assert _deliveries(api) == []
    # The second sms address confirmed: it is the one used, not the first (unconfirmed).
    _confirm(api, ada, "sms", "+12025550101")
    sent = api.post("/messages/sms", json={"person": ada, "message": "Ship it?"})
    assert sent.status_code == 200, sent.text
    [delivery] = [d for d in _deliveries(api) if d["interactionId"] == sent.json()["interactionId"]]
    assert delivery["to"] == "+12025550101" and delivery["text"] == "Ship it?"
    # Email has no confirmed address: refused, though sms has one.
    _error(api.post("/messages/email", json={"person": ada, "message": "x"}), 400, "person")


def test_a_form_to_a_person_goes_to_their_confirmed_address(api: httpx.Client) -> None:
    ada = _ada(api)
    _confirm(api, ada, "email", ADA_MAIL)
    sent = api.post("/forms/email", json={**FORM, "person": ada, "followUpTime": 60})
    assert sent.status_code == 200, sent.text
    [delivery] = [d for d in _deliveries(api) if d["interactionId"] == sent.json()["interactionId"]]
    assert delivery["to"] == ADA_MAIL and sent.json()["formUrl"] in delivery["text"]


def test_messages_person_asks_on_the_first_confirmed_address_in_the_persons_order(
    api: httpx.Client,
) -> None:
    ada = _ada(api)
    _error(api.post("/messages/person", json={"person": ada, "message": "hi"}), 400, "person")
    _confirm(api, ada, "email", ADA_MAIL)
    first = api.post("/messages/person", json={"person": ada, "message": "First?"})
    assert first.status_code == 200, first.text
    [by_mail] = [d for d in _deliveries(api) if d["interactionId"] == first.json()["interactionId"]]
    assert (by_mail["channel"], by_mail["to"]) == ("email", ADA_MAIL)
    # The sms address before it in her order, confirmed: it comes first now.
    _confirm(api, ada, "sms", ADA_PHONE)
    second = api.post("/messages/person", json={"person": ada, "message": "Second?"})
    [by_sms] = [d for d in _deliveries(api) if d["interactionId"] == second.json()["interactionId"]]
    assert (by_sms["channel"], by_sms["to"]) == ("sms", ADA_PHONE)


def test_another_accounts_person_is_not_found(service: RunningService, api: httpx.Client) -> None:
    ada = _ada(api)
    _confirm(api, ada, "sms", ADA_PHONE)
    with _client(service, "other") as other:
        for path, body in [
            ("/messages/sms", {"person": ada, "message": "x"}),
            ("/messages/person", {"person": ada, "message": "x"}),
            ("/forms/sms", {**FORM, "person": ada, "followUpTime": 60}),
        ]:
            _error(other.post(path, json=body), 404, "person")
        assert other.get("/sandbox/messages").json() == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"message": "x"}, "to"),
        ({"to": ADA_PHONE, "person": "per_x", "message": "x"}, "person"),
        ({"person": "ada", "message": "x"}, "person"),
        ({"person": 7, "message": "x"}, "person"),
    ],
    ids=["neither", "both", "not an id", "not a string"],
)
def test_to_or_person_exactly_one_else_400(
    api: httpx.Client, body: dict[str, Any], field: str
) -> None:
    _error(api.post("/messages/sms", json=body), 400, field)
    _error(api.post("/forms/sms", json={**FORM, **body, "followUpTime": 60}), 400, field)
