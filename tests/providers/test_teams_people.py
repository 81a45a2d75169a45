"""A person's teams address confirmed by a Confirm card, through the real provider
against the Teams contract fake, on loopback and on both stores: ``POST
/people/{id}/confirm`` posts a card whose Confirm (``Action.Submit``) carries a one-time
token in the install's conversation; the user's press confirms the address (the card
replaced, the person told), once; a press by anyone else is refused and binds nothing; a
replayed, replaced or expired token confirms nothing; a person without the app is the
typed invalid ``to``; a person so confirmed is asked on Teams by name."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import httpx
from teams_support import TeamsLive

from humanwire.server.engine.people import (
    CONFIRM_BOUND,
    CONFIRM_NOT_YOURS,
    START_NOT_VALID,
    START_TTL,
)
from humanwire.testing.teams import FakeActivity


def _clean(live: TeamsLive) -> None:
    assert live.fake.violations == [] and live.fake.errors == []


def _person(live: TeamsLive, to: str | None = None) -> str:
    created = live.http.post(
        "/people",
        json={"name": "Ada", "addresses": [{"channel": "teams", "to": to or live.ada.id}]},
    )
    assert created.status_code == 201, created.text
    return str(created.json()["personId"])


def _confirm(live: TeamsLive, person_id: str, count: int = 1) -> FakeActivity:
    answered = live.http.post(f"/people/{person_id}/confirm", json={"channel": "teams"})
    assert answered.status_code == 200, answered.text
    body = answered.json()
    assert (body["personId"], body["channel"], body["to"]) == (person_id, "teams", live.ada.id)
    assert "interactionId" not in body and "startLink" not in body and body["expiresAt"]
    return live.sent(live.ada, count)


def _address(live: TeamsLive, person_id: str) -> dict[str, Any]:
    found: dict[str, Any] = live.http.get(f"/people/{person_id}").json()["addresses"][0]
    return found


def _told(live: TeamsLive, user: Any, count: int) -> str:
    return live.sent(user, count).text


def test_the_confirm_card_confirms_the_address_once(teams_live: TeamsLive) -> None:
    live = teams_live
    person_id = _person(live)
    assert _address(live, person_id)["confirmed"] is False
    card = _confirm(live, person_id)
    [submit] = card.actions()
    assert (submit["type"], submit["title"]) == ("Action.Submit", "Confirm")
    prefix, token, action = submit["data"]["hw"].split(":")
    assert (prefix, action) == ("hw", "confirm") and len(token) >= 32
    pressed = live.fake.submit(card, live.ada)
    assert pressed.status_code == 200, pressed.text
    assert _told(live, live.ada, 2) == CONFIRM_BOUND
    live.fake.wait_for(lambda: card.actions() == [])  # the card shows the outcome
    address = _address(live, person_id)
    assert (address["to"], address["confirmed"]) == (live.ada.id, True)
    assert address["confirmedAt"]
    # The token is spent: a press on a copy of the card (a replay) confirms nothing.
    copy = live.fake.state.add_activity(card.conversation_id, live.fake.bot_id, card.body)
    assert live.fake.submit(copy, live.ada).status_code == 200
    assert _told(live, live.ada, 4) == START_NOT_VALID
    _clean(live)


def test_another_users_press_is_refused_and_binds_nothing(teams_live: TeamsLive) -> None:
    live = teams_live
    person_id = _person(live)
    card = _confirm(live, person_id)
    eve = live.fake.add_user("Eve")
    assert live.fake.install(eve).status_code == 200
    # Eve presses the Confirm of Ada's card (its data forged into her own chat).
    refused = live.fake.submit(card, eve)
    assert refused.status_code == 200, refused.text
    assert _told(live, eve, 1) == CONFIRM_NOT_YOURS
    assert _address(live, person_id)["confirmed"] is False
    assert card.actions() != []  # Ada's card is untouched
    # The token was not spent by Eve: Ada's own press still confirms.
    live.fake.submit(card, live.ada)
    assert _told(live, live.ada, 2) == CONFIRM_BOUND
    assert _address(live, person_id)["confirmed"] is True
    _clean(live)


def test_a_replaced_or_expired_token_confirms_nothing(teams_live: TeamsLive) -> None:
    live = teams_live
    person_id = _person(live)
    first = _confirm(live, person_id)
    second = _confirm(live, person_id, 2)
    # A newer card voids the one before.
    live.fake.submit(first, live.ada)
    assert _told(live, live.ada, 3) == START_NOT_VALID
    assert _address(live, person_id)["confirmed"] is False
    # Past its time, the newer one binds nothing either.
    people = live.runner.engine.people
    now = people._runtime.clock()

    def later() -> None:
        people._runtime = replace(people._runtime, clock=lambda: now + START_TTL + 1)

    live.runner.call(later)
    live.fake.submit(second, live.ada)
    assert _told(live, live.ada, 4) == START_NOT_VALID
    assert _address(live, person_id)["confirmed"] is False
    _clean(live)


def test_a_person_without_the_app_is_refused_naming_to(teams_live: TeamsLive) -> None:
    live = teams_live
    eve = live.fake.add_user("Eve")
    person_id = _person(live, eve.id)
    answered = live.http.post(f"/people/{person_id}/confirm", json={"channel": "teams"})
    assert answered.status_code == 400, answered.text
    error = answered.json()["error"]
    assert (error["code"], error["field"]) == ("invalid_to_number", "to")
    assert "installed" in error["message"]
    assert live.fake.sent_to(eve) == []


def test_a_hostile_press_is_no_answer_and_no_500(teams_live: TeamsLive) -> None:
    live = teams_live
    person_id = _person(live)
    card = _confirm(live, person_id)
    for value in (
        "hw::confirm",
        "hw:not a token!:confirm",
        7,
        ["x"],
        "hw:" + "a" * 200 + ":confirm",
    ):
        forged = live.fake.state.add_activity(
            card.conversation_id,
            live.fake.bot_id,
            {
                "type": "message",
                "attachments": [
                    {
                        "contentType": "application/vnd.microsoft.card.adaptive",
                        "content": {
                            "type": "AdaptiveCard",
                            "version": "1.5",
                            "body": [],
                            "actions": [
                                {"type": "Action.Submit", "title": "Confirm", "data": {"hw": value}}
                            ],
                        },
                    }
                ],
            },
        )
        assert live.fake.submit(forged, live.ada).status_code == 200
    assert _address(live, person_id)["confirmed"] is False
    _clean(live)


def test_another_accounts_person_is_not_found(teams_live: TeamsLive) -> None:
    live = teams_live
    person_id = _person(live)
    key = live.runner.create_account("other")
    with httpx.Client(
        base_url=live.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as other:
        answered = other.post(f"/people/{person_id}/confirm", json={"channel": "teams"})
    assert answered.status_code == 404, answered.text
    assert live.fake.sent_to(live.ada) == []


def test_a_confirmed_person_is_asked_on_teams_by_name(teams_live: TeamsLive) -> None:
    live = teams_live
    person_id = _person(live)
    live.fake.submit(_confirm(live, person_id), live.ada)
    assert _told(live, live.ada, 2) == CONFIRM_BOUND
    asked = live.http.post(
        "/messages/person", json={"person": person_id, "message": "Ready?", "followUpTime": 60}
    )
    assert asked.status_code == 200, asked.text
    assert live.sent(live.ada, 3).text == "Ready?"
    live.fake.say(live.ada, "ready")
    live.fake.wait_for(
        lambda: (
            live.http.get(f"/interactions/{asked.json()['interactionId']}/status").json()["status"]
            == "ended"
        ),
        timeout=10,
    )
    _clean(live)


def test_a_confirmed_person_approves_on_teams(teams_live: TeamsLive) -> None:
    live = teams_live
    person_id = _person(live)
    live.fake.submit(_confirm(live, person_id), live.ada)
    assert _told(live, live.ada, 2) == CONFIRM_BOUND
    answer: dict[str, Any] = {}

    def approve() -> None:
        sent = live.http.post(
            "/approvals",
            json={
                "title": "Restart the API?",
                "action": {"name": "restart", "arguments": {}},
                "approvers": [{"person": person_id}],
                "waitTime": 30,
            },
        )
        answer.update(sent.json(), status_code=sent.status_code)

    thread = threading.Thread(target=approve)
    thread.start()
    request = live.sent(live.ada, 3)
    assert live.fake.execute(request, live.ada, "approve").status_code == 200
    thread.join(30)
    assert answer["status_code"] == 200, answer
    assert answer["decision"] == "approved"
    [decision] = answer["decisions"]
    assert decision["approver"]["person"] == person_id and decision["via"] == "teams_button"
    _clean(live)
