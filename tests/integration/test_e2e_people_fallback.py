"""``fallbackAfter``, end to end on the real service over loopback on both stores: a
message to a person nobody answered moves to the person's next confirmed address (a step
of the schedule, so it survives a restart); a reply on either address answers the one
interaction; an answer before the delay, or a person with no next address, moves
nothing; each move is an audit entry; hostile values are the usual 400 (the service's
documented error shape for a malformed body: ``invalid_request``, naming the field)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import fallback_support as fb
import httpx
import pytest
from e2e_support import StartService
from fallback_support import ADA_MAIL, ADA_PHONE

from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing import RunningService, fast_config
from pg_support import STORES, store_database

ASKED = "Ship it?"


@pytest.fixture
def service(start_service: StartService) -> RunningService:
    return start_service()


@pytest.fixture
def api(service: RunningService) -> Iterator[httpx.Client]:
    key = service.create_account("fallback")
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=service.base_url, headers=headers, timeout=30) as client:
        yield client


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
    ada = fb.ada(api, ("sms", ADA_PHONE), ("email", ADA_MAIL))
    outcome: list[httpx.Response] = []
    body = {"person": ada, "message": "Ship it?", "waitTime": 30, "fallbackAfter": 1}
    thread = threading.Thread(
        target=lambda: outcome.append(api.post("/messages/person", json=body)), daemon=True
    )
    thread.start()
    [first] = fb.until(
        lambda: [d for d in fb.deliveries(api, ADA_PHONE) if d["text"] == "Ship it?"]
    )
    [onward] = fb.until(
        lambda: [d for d in fb.deliveries(api, ADA_MAIL) if d["text"] == "Ship it?"]
    )
    assert onward["interactionId"] != first["interactionId"]
    fb.reply(api, onward, "ship it")
    thread.join(30)
    [response] = outcome
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["interactionId"] == first["interactionId"]
    assert answer["responded"] is True and answer["reply"] == "ship it"
    [move] = fb.moves(api, first["interactionId"])
    assert move["actor"] == {"person": ada, "channel": "email", "to": ADA_MAIL}
    assert move["data"]["from"] == {"channel": "sms", "to": ADA_PHONE}
    assert move["data"]["interactionId"] == onward["interactionId"]


def test_after_the_move_a_reply_on_the_first_address_still_answers(api: httpx.Client) -> None:
    ada = fb.ada(api, ("sms", ADA_PHONE), ("email", ADA_MAIL))
    asked = _ask(api, "/messages/person", person=ada, followUpTime=60, fallbackAfter=1)
    fb.until(lambda: fb.moves(api, asked))
    [first] = [d for d in fb.deliveries(api, ADA_PHONE) if d["interactionId"] == asked]
    fb.reply(api, first, "yes")
    status = fb.until(lambda: (s := fb.status(api, asked))["status"] == "ended" and s)
    assert _body(status) == "yes"
    # The onward message ended with it: a reply there now answers nothing more.
    [onward] = fb.deliveries(api, ADA_MAIL)[-1:]
    fb.reply(api, onward, "late")
    assert _body(fb.status(api, asked)) == "yes"


def test_a_channels_endpoint_moves_to_the_next_address_on_that_channel(
    api: httpx.Client,
) -> None:
    ada = fb.ada(api, ("sms", ADA_PHONE), ("email", ADA_MAIL), ("sms", "+12025550101"))
    asked = _ask(api, "/messages/sms", person=ada, followUpTime=60, fallbackAfter=1)
    [move] = fb.until(lambda: fb.moves(api, asked))
    assert move["actor"]["to"] == "+12025550101"  # not the email between them
    [onward] = fb.deliveries(api, "+12025550101")[-1:]
    assert onward["text"] == "Ship it?"
    fb.reply(api, onward, "go")
    status = fb.until(lambda: (s := fb.status(api, asked))["status"] == "ended" and s)
    assert _body(status) == "go"
    assert all(d["text"] != "Ship it?" for d in fb.deliveries(api, ADA_MAIL))


def test_nothing_moves_when_answered_before_the_delay(api: httpx.Client) -> None:
    ada = fb.ada(api, ("sms", ADA_PHONE), ("email", ADA_MAIL))
    asked = _ask(api, "/messages/person", person=ada, followUpTime=60, fallbackAfter=1)
    [first] = [d for d in fb.deliveries(api, ADA_PHONE) if d["interactionId"] == asked]
    fb.reply(api, first, "yes")
    assert fb.status(api, asked)["status"] == "ended"
    time.sleep(2)  # past the delay: its step ran and found it answered
    assert fb.moves(api, asked) == []
    assert all(d["text"] != "Ship it?" for d in fb.deliveries(api, ADA_MAIL))


def test_a_person_with_one_confirmed_address_is_asked_there_only(api: httpx.Client) -> None:
    ada = fb.ada(api, ("sms", ADA_PHONE))
    asked = _ask(api, "/messages/person", person=ada, followUpTime=60, fallbackAfter=1)
    time.sleep(2)  # past the delay: no next address, nothing moves
    assert fb.moves(api, asked) == []
    assert [d["interactionId"] for d in fb.deliveries(api) if d["text"] == "Ship it?"] == [asked]
    assert fb.status(api, asked)["status"] == "pending"


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
    ada = fb.ada(api, ("sms", ADA_PHONE))
    body = {"person": ada, "message": "x", "followUpTime": 60, **changes}
    for path in ("/messages/person", "/messages/sms"):
        response = api.post(path, content=_json(body), headers={"content-type": "application/json"})
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["code"] == "invalid_request" and error["field"] == "fallbackAfter", error
        assert message in error["message"], error
    assert fb.deliveries(api, ADA_PHONE)[-1]["text"] != "x"


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
                ada = fb.ada(api, ("sms", ADA_PHONE), ("email", ADA_MAIL))
                asked = _ask(
                    api, "/messages/person", person=ada, followUpTime=60, fallbackAfter=1.5
                )
                runner.stop()  # down while the move falls due
                time.sleep(2)
                runner = ServiceRunner(replace(config), "127.0.0.1", port).start()
                [move] = fb.until(lambda: fb.moves(api, asked))
                [onward] = [d for d in fb.deliveries(api, ADA_MAIL) if d["text"] == "Ship it?"]
                assert move["data"]["interactionId"] == onward["interactionId"]
                fb.reply(api, onward, "after the restart")
                status = fb.until(lambda: (s := fb.status(api, asked))["status"] == "ended" and s)
                assert _body(status) == "after the restart"
        finally:
            runner.stop()
