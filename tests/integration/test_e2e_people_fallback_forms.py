"""``fallbackAfter`` on forms, end to end on the real service over loopback on both
stores: a form to a person not submitted in time goes to the person's next confirmed
address on the endpoint's channel (its link: the one form), a step of the schedule that
survives a restart; a submission through any address asked answers the one interaction,
its held request and its status, also by the onward form's own token (what a channel
rendering the form natively submits by); a submission before the delay, or a person with
no next address there, moves nothing; each move is an audit entry; hostile values are the
usual 400 naming ``fallbackAfter``."""

from __future__ import annotations

import json
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
from fallback_support import ADA_MAIL, ADA_OTHER_PHONE, ADA_PHONE

from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing import RunningService, fast_config
from pg_support import STORES, store_database

FORM: dict[str, Any] = {
    "title": "Shift swap",
    "fields": [{"id": "day", "type": "text", "label": "Which day?", "required": True}],
}


@pytest.fixture
def service(start_service: StartService) -> RunningService:
    return start_service()


@pytest.fixture
def api(service: RunningService) -> Iterator[httpx.Client]:
    key = service.create_account("fallback-forms")
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=service.base_url, headers=headers, timeout=30) as client:
        yield client


def _form(api: httpx.Client, path: str, **body: Any) -> dict[str, Any]:
    response = api.post(path, json={**FORM, **body})
    assert response.status_code == 200, response.text
    sent: dict[str, Any] = response.json()
    return sent


def _forms_to(api: httpx.Client, to: str) -> list[dict[str, Any]]:
    return [d for d in fb.deliveries(api, to) if d["kind"] == "form"]


def _ended(api: httpx.Client, interaction_id: str) -> dict[str, Any] | None:
    status = fb.status(api, interaction_id)
    return status if status["status"] == "ended" else None


def _submit(url: str, day: str) -> httpx.Response:
    return httpx.post(url, json={"values": {"day": day}}, timeout=30)


def test_a_held_form_moves_on_its_channel_and_the_link_there_answers_it(
    api: httpx.Client,
) -> None:
    ada = fb.ada(api, ("sms", ADA_PHONE), ("email", ADA_MAIL), ("sms", ADA_OTHER_PHONE))
    outcome: list[httpx.Response] = []
    body = {**FORM, "person": ada, "waitTime": 30, "fallbackAfter": 1}
    thread = threading.Thread(
        target=lambda: outcome.append(api.post("/forms/sms", json=body)), daemon=True
    )
    thread.start()
    [first] = fb.until(lambda: _forms_to(api, ADA_PHONE))
    [onward] = fb.until(lambda: _forms_to(api, ADA_OTHER_PHONE))
    assert onward["interactionId"] != first["interactionId"]
    # The same form wherever it goes: its one link, in the same text.
    assert onward["formUrl"] == first["formUrl"]
    assert onward["text"] == first["text"] and first["formUrl"] in onward["text"]
    assert _forms_to(api, ADA_MAIL) == []  # not the email between them: /forms/sms
    assert _submit(onward["formUrl"], "Tuesday").status_code < 300
    thread.join(30)
    [response] = outcome
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["interactionId"] == first["interactionId"]
    assert answer["responded"] is True and answer["values"] == {"day": "Tuesday"}
    [move] = fb.moves(api, first["interactionId"])
    assert move["actor"] == {"person": ada, "channel": "sms", "to": ADA_OTHER_PHONE}
    assert move["data"]["from"] == {"channel": "sms", "to": ADA_PHONE}
    assert move["data"]["interactionId"] == onward["interactionId"]
    # One interaction: the onward form is no event of its own, and no second submission.
    assert _submit(first["formUrl"], "Wednesday").status_code == 409


def test_the_onward_forms_own_token_submits_the_first(
    service: RunningService, api: httpx.Client
) -> None:
    """What Discord's modal, a Teams card or Slack's buttons submit by: the onward form
    interaction's own token, which is the first one's form."""
    ada = fb.ada(api, ("sms", ADA_PHONE), ("sms", ADA_OTHER_PHONE))
    sent = _form(api, "/forms/sms", person=ada, followUpTime=60, fallbackAfter=1)
    [move] = fb.until(lambda: fb.moves(api, sent["interactionId"]))
    engine = service.runner.engine
    onward = service.runner.call(engine.store.get_interaction, move["data"]["interactionId"])
    assert onward is not None and onward.form_token is not None
    own_url = f"{service.base_url}/f/{onward.form_token}"
    assert own_url != sent["formUrl"]
    page = httpx.get(own_url, timeout=30)
    assert page.status_code == 200 and "Shift swap" in page.text
    assert _submit(own_url, "Friday").status_code < 300
    status = fb.until(
        lambda: (s := fb.status(api, sent["interactionId"]))["status"] == "ended" and s
    )
    assert status["result"]["payload"]["values"] == {"day": "Friday"}
    assert _submit(sent["formUrl"], "again").status_code == 409


def test_nothing_moves_when_submitted_before_the_delay(api: httpx.Client) -> None:
    ada = fb.ada(api, ("sms", ADA_PHONE), ("sms", ADA_OTHER_PHONE))
    sent = _form(api, "/forms/sms", person=ada, followUpTime=60, fallbackAfter=1)
    assert _submit(sent["formUrl"], "Monday").status_code < 300
    time.sleep(2)  # past the delay: its step ran and found it answered
    assert fb.moves(api, sent["interactionId"]) == []
    assert _forms_to(api, ADA_OTHER_PHONE) == []


def test_a_person_with_no_next_address_on_the_channel_is_asked_there_only(
    api: httpx.Client,
) -> None:
    ada = fb.ada(api, ("sms", ADA_PHONE), ("email", ADA_MAIL))
    sent = _form(api, "/forms/email", person=ada, followUpTime=60, fallbackAfter=1)
    time.sleep(2)  # past the delay: her one email address, nothing moves
    assert fb.moves(api, sent["interactionId"]) == []
    assert [d["interactionId"] for d in fb.deliveries(api) if d["kind"] == "form"] == [
        sent["interactionId"]
    ]
    assert fb.status(api, sent["interactionId"])["status"] == "pending"


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
        ({"to": ADA_PHONE, "fallbackAfter": 5}, "give person, not to"),
    ],
)
def test_hostile_fallback_values_are_the_usual_400(
    api: httpx.Client, changes: dict[str, Any], message: str
) -> None:
    ada = fb.ada(api, ("sms", ADA_PHONE))
    for path in ("/forms/sms", "/forms/whatsapp", "/forms/email", "/forms/slack"):
        body = {**FORM, "person": ada, "followUpTime": 60, **changes}
        if "to" in changes:
            body.pop("person")
            body["to"] = {"/forms/email": ADA_MAIL, "/forms/slack": "U0HUMAN0001"}.get(
                path, ADA_PHONE
            )
        # Python's json writes 10**400 as digits, as a hostile client would.
        response = api.post(
            path, content=json.dumps(body), headers={"content-type": "application/json"}
        )
        assert response.status_code == 400, (path, response.text)
        error = response.json()["error"]
        assert error["code"] == "invalid_request", error
        assert error["field"] == "fallbackAfter", (path, error)
        assert message in error["message"], error
    assert [d for d in fb.deliveries(api) if d["kind"] == "form"] == []


@pytest.mark.parametrize("store", STORES)
def test_the_move_survives_a_restart(store: str, tmp_path: Path) -> None:
    with store_database(store, tmp_path / "restart.db", "hw_fallback_forms") as db:
        config = replace(fast_config(tmp_path / "unused.db"), db_path=db)
        runner = ServiceRunner(config, "127.0.0.1", 0).start()
        port = runner.port
        try:
            key = runner.create_account("restart")
            headers = {"Authorization": f"Bearer {key}"}
            with httpx.Client(base_url=runner.base_url, headers=headers, timeout=30) as api:
                ada = fb.ada(api, ("sms", ADA_PHONE), ("sms", ADA_OTHER_PHONE))
                sent = _form(api, "/forms/sms", person=ada, followUpTime=60, fallbackAfter=1.5)
                runner.stop()  # down while the move falls due
                time.sleep(2)
                runner = ServiceRunner(replace(config), "127.0.0.1", port).start()
                [move] = fb.until(lambda: fb.moves(api, sent["interactionId"]))
                [onward] = _forms_to(api, ADA_OTHER_PHONE)
                assert move["data"]["interactionId"] == onward["interactionId"]
                assert _submit(onward["formUrl"], "after the restart").status_code < 300
                status = fb.until(
                    lambda: (s := fb.status(api, sent["interactionId"]))["status"] == "ended" and s
                )
                assert status["result"]["payload"]["values"] == {"day": "after the restart"}
                assert len(fb.moves(api, sent["interactionId"])) == 1
        finally:
            runner.stop()
