"""``fallbackAfter``, end to end on the real service over loopback on both stores: a
message to a person nobody answered moves to the person's next confirmed address (a step
of the schedule, so it survives a restart); a reply on either address answers the one
interaction; an answer before the delay, or a person with no next address, moves
nothing; each move is an audit entry; hostile values are the usual 400 (the service's
documented error shape for a malformed body: ``invalid_request``, naming the field)."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from e2e_support import StartService

from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing import RunningService, fast_config
from pg_support import STORES, store_database

T = TypeVar("T")

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


@pytest.fixture
def service(start_service: StartService) -> RunningService:
    return start_service()


@pytest.fixture
def api(service: RunningService) -> Iterator[httpx.Client]:
    key = service.create_account("fallback")
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=service.base_url, headers=headers, timeout=30) as client:
        yield client


def _until(read: Callable[[], T], timeout: float = 15) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if value:
            return value
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.05)


def _deliveries(api: httpx.Client, to: str | None = None) -> list[dict[str, Any]]:
    found = [d for d in api.get("/sandbox/messages").json() if to is None or d["to"] == to]
    return sorted(found, key=lambda d: str(d["createdAt"]))


def _reply(api: httpx.Client, delivery: dict[str, Any], body: str) -> None:
    reply: dict[str, Any] = {
        "channel": delivery["channel"],
        "from": delivery["to"],
        "to": delivery["from"],
        "body": body,
    }
    if delivery["channel"] == "email":
        reply["interactionId"] = delivery["interactionId"]
    response = api.post("/sandbox/replies", json=reply)
    assert response.status_code < 300, response.text


def _confirm(api: httpx.Client, person_id: str, channel: str, to: str) -> None:
    sent = api.post(f"/people/{person_id}/confirm", json={"channel": channel, "to": to})
    assert sent.status_code == 200, sent.text
    delivery = next(
        d for d in _deliveries(api, to) if d["interactionId"] == sent.json()["interactionId"]
    )
    code = re.search(r"\b(\d{6})\b", delivery["text"])
    assert code is not None
    _reply(api, delivery, code.group(1))


def _ada(api: httpx.Client, *confirmed: tuple[str, str]) -> str:
    response = api.post("/people", json=ADA)
    assert response.status_code == 201, response.text
    person_id: str = response.json()["personId"]
    for channel, to in confirmed:
        _confirm(api, person_id, channel, to)
    return person_id


def _moves(api: httpx.Client, interaction_id: str) -> list[dict[str, Any]]:
    entries = api.get("/audit", params={"limit": 500}).json()["entries"]
    return [
        e
        for e in entries
        if e["type"] == "message.fallback" and e["interactionId"] == interaction_id
    ]


def _status(api: httpx.Client, interaction_id: str) -> dict[str, Any]:
    response = api.get(f"/interactions/{interaction_id}/status")
    assert response.status_code == 200, response.text
    status: dict[str, Any] = response.json()
    return status


def _body(status: dict[str, Any]) -> str:
    """The reply that ended it, as its status shows it (its ``message.received``)."""
    body: str = status["result"]["payload"]["body"]
    return body


def _ask(api: httpx.Client, path: str, **body: Any) -> str:
    response = api.post(path, json={"message": "Ship it?", **body})
    assert response.status_code == 200, response.text
    interaction_id: str = response.json()["interactionId"]
    return interaction_id


def test_a_held_ask_moves_to_the_next_address_and_the_reply_there_answers_it(
    api: httpx.Client,
) -> None:
    ada = _ada(api, ("sms", ADA_PHONE), ("email", ADA_MAIL))
    outcome: list[httpx.Response] = []
    body = {"person": ada, "message": "Ship it?", "waitTime": 30, "fallbackAfter": 1}
    thread = threading.Thread(
        target=lambda: outcome.append(api.post("/messages/person", json=body)), daemon=True
    )
    thread.start()
    [first] = _until(lambda: [d for d in _deliveries(api, ADA_PHONE) if d["text"] == "Ship it?"])
    [onward] = _until(lambda: [d for d in _deliveries(api, ADA_MAIL) if d["text"] == "Ship it?"])
    assert onward["interactionId"] != first["interactionId"]
    _reply(api, onward, "ship it")
    thread.join(30)
    [response] = outcome
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["interactionId"] == first["interactionId"]
    assert answer["responded"] is True and answer["reply"] == "ship it"
    [move] = _moves(api, first["interactionId"])
    assert move["actor"] == {"person": ada, "channel": "email", "to": ADA_MAIL}
    assert move["data"]["from"] == {"channel": "sms", "to": ADA_PHONE}
    assert move["data"]["interactionId"] == onward["interactionId"]


def test_after_the_move_a_reply_on_the_first_address_still_answers(api: httpx.Client) -> None:
    ada = _ada(api, ("sms", ADA_PHONE), ("email", ADA_MAIL))
    asked = _ask(api, "/messages/person", person=ada, followUpTime=60, fallbackAfter=1)
    _until(lambda: _moves(api, asked))
    [first] = [d for d in _deliveries(api, ADA_PHONE) if d["interactionId"] == asked]
    _reply(api, first, "yes")
    status = _until(lambda: (s := _status(api, asked))["status"] == "ended" and s)
    assert _body(status) == "yes"
    # The onward message ended with it: a reply there now answers nothing more.
    [onward] = _deliveries(api, ADA_MAIL)[-1:]
    _reply(api, onward, "late")
    assert _body(_status(api, asked)) == "yes"


def test_a_channels_endpoint_moves_to_the_next_address_on_that_channel(
    api: httpx.Client,
) -> None:
    ada = _ada(api, ("sms", ADA_PHONE), ("email", ADA_MAIL), ("sms", "+12025550101"))
    asked = _ask(api, "/messages/sms", person=ada, followUpTime=60, fallbackAfter=1)
    [move] = _until(lambda: _moves(api, asked))
    assert move["actor"]["to"] == "+12025550101"  # not the email between them
    [onward] = _deliveries(api, "+12025550101")[-1:]
    assert onward["text"] == "Ship it?"
    _reply(api, onward, "go")
    status = _until(lambda: (s := _status(api, asked))["status"] == "ended" and s)
    assert _body(status) == "go"
    assert all(d["text"] != "Ship it?" for d in _deliveries(api, ADA_MAIL))


def test_nothing_moves_when_answered_before_the_delay(api: httpx.Client) -> None:
    ada = _ada(api, ("sms", ADA_PHONE), ("email", ADA_MAIL))
    asked = _ask(api, "/messages/person", person=ada, followUpTime=60, fallbackAfter=1)
    [first] = [d for d in _deliveries(api, ADA_PHONE) if d["interactionId"] == asked]
    _reply(api, first, "yes")
    assert _status(api, asked)["status"] == "ended"
    time.sleep(2)  # past the delay: its step ran and found it answered
    assert _moves(api, asked) == []
    assert all(d["text"] != "Ship it?" for d in _deliveries(api, ADA_MAIL))


def test_a_person_with_one_confirmed_address_is_asked_there_only(api: httpx.Client) -> None:
    ada = _ada(api, ("sms", ADA_PHONE))
    asked = _ask(api, "/messages/person", person=ada, followUpTime=60, fallbackAfter=1)
    time.sleep(2)  # past the delay: no next address, nothing moves
    assert _moves(api, asked) == []
    assert [d["interactionId"] for d in _deliveries(api) if d["text"] == "Ship it?"] == [asked]
    assert _status(api, asked)["status"] == "pending"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"fallbackAfter": -1}, "from 1"),
        ({"fallbackAfter": 0}, "from 1"),
        ({"fallbackAfter": 10**400}, "from 1"),
        ({"fallbackAfter": 1e300}, "from 1"),
        ({"fallbackAfter": "5"}, "number"),
        ({"fallbackAfter": True}, "number"),
        ({"fallbackAfter": [5]}, "number"),
        ({"fallbackAfter": 60601}, "from 1"),
    ],
)
def test_hostile_fallback_values_are_the_usual_400(
    api: httpx.Client, changes: dict[str, Any], message: str
) -> None:
    ada = _ada(api, ("sms", ADA_PHONE))
    body = {"person": ada, "message": "x", "followUpTime": 60, **changes}
    for path in ("/messages/person", "/messages/sms"):
        response = api.post(path, content=_json(body), headers={"content-type": "application/json"})
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["code"] == "invalid_request" and error["field"] == "fallbackAfter", error
        assert message in error["message"], error
    assert _deliveries(api, ADA_PHONE)[-1]["text"] != "x"


def test_fallback_after_with_to_is_a_400(api: httpx.Client) -> None:
    body = {"to": ADA_PHONE, "message": "x", "followUpTime": 60, "fallbackAfter": 5}
    response = api.post("/messages/sms", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["field"] == "fallbackAfter"


def _json(body: dict[str, Any]) -> str:
    # Python's json writes 10**400 as digits, as a hostile client would.
    import json

    return json.dumps(body)


@pytest.mark.parametrize("store", STORES)
def test_the_move_survives_a_restart(store: str, tmp_path: Path) -> None:
    with store_database(store, tmp_path / "restart.db", "hw_fallback") as db:
        config = replace(fast_config(tmp_path / "unused.db"), db_path=db)
        runner = ServiceRunner(config, "127.0.0.1", 0).start()
        port = runner.port
        try:
            key = runner.create_account("restart")
            headers = {"Authorization": f"Bearer {key}"}
            with httpx.Client(base_url=runner.base_url, headers=headers, timeout=30) as api:
                ada = _ada(api, ("sms", ADA_PHONE), ("email", ADA_MAIL))
                asked = _ask(
                    api, "/messages/person", person=ada, followUpTime=60, fallbackAfter=1.5
                )
                runner.stop()  # down while the move falls due
                time.sleep(2)
                runner = ServiceRunner(replace(config), "127.0.0.1", port).start()
                [move] = _until(lambda: _moves(api, asked))
                [onward] = [d for d in _deliveries(api, ADA_MAIL) if d["text"] == "Ship it?"]
                assert move["data"]["interactionId"] == onward["interactionId"]
                _reply(api, onward, "after the restart")
                status = _until(lambda: (s := _status(api, asked))["status"] == "ended" and s)
                assert _body(status) == "after the restart"
        finally:
            runner.stop()
