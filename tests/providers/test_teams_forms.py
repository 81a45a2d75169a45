"""Forms on teams through the real provider against the Teams contract fake, on loopback
and on both stores: a form whose fields map onto Adaptive Card inputs goes out as a card
of those inputs, its submit (``Action.Execute``, verb ``form``) is the form's submission,
checked as the form page checks one (a refused one leaves the card and the form open);
hostile values, another person's press and a second submit are refused; a form with an
address (no card input takes one) goes out as its page's link."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
from teams_support import TeamsLive

from humanwire.testing.teams import FakeActivity

FIELDS: list[dict[str, Any]] = [
    {"id": "city", "type": "text", "label": "City", "required": True, "placeholder": "Lyon"},
    {"id": "notes", "type": "textarea", "label": "Notes"},
    {"id": "email", "type": "email", "label": "Email"},
    {"id": "phone", "type": "phone_number", "label": "Phone"},
    {
        "id": "size",
        "type": "select",
        "label": "Size",
        "options": [{"label": "Small", "value": "s"}, {"label": "Large", "value": "l"}],
    },
    {"id": "gift", "type": "checkbox", "label": "Gift wrap?"},
]
INPUTS = {
    "city": "Input.Text",
    "notes": "Input.Text",
    "email": "Input.Text",
    "phone": "Input.Text",
    "size": "Input.ChoiceSet",
    "gift": "Input.Toggle",
}
MESSAGE = "application/vnd.microsoft.activity.message"


def _in_background(call: Callable[[], httpx.Response]) -> tuple[threading.Thread, dict[str, Any]]:
    answer: dict[str, Any] = {}

    def run() -> None:
        sent = call()
        answer.update(sent.json(), status_code=sent.status_code)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, answer


def _until(predicate: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _send_form(live: TeamsLive, fields: list[dict[str, Any]], **body: Any) -> httpx.Response:
    return live.http.post(
        "/forms/teams",
        json={"to": live.ada.id, "title": "Shipping", "fields": fields, **body},
    )


def _inputs(card: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["id"]: item for item in card["body"] if item["type"].startswith("Input.")}


def _status(live: TeamsLive, interaction_id: str) -> str:
    return str(live.http.get(f"/interactions/{interaction_id}/status").json()["status"])


def _clean(live: TeamsLive) -> None:
    assert live.fake.violations == [] and live.fake.errors == []


def test_a_form_of_card_inputs_goes_out_as_a_card_and_its_submit_answers(
    teams_live: TeamsLive,
) -> None:
    live = teams_live
    sending, answer = _in_background(
        lambda: _send_form(
            live,
            FIELDS,
            message="Where to? {{url}}",
            description="For the offsite",
            submitLabel="Send it",
            waitTime=30,
        )
    )
    asked = live.sent(live.ada)
    [card] = asked.cards()
    assert card["type"] == "AdaptiveCard" and card["version"] == "1.5"
    texts = [item["text"] for item in card["body"] if item["type"] == "TextBlock"]
    assert texts[0].startswith("Where to? ") and "/f/" in texts[0]
    assert "Shipping" in texts and "For the offsite" in texts
    inputs = _inputs(card)
    assert {key: item["type"] for key, item in inputs.items()} == INPUTS
    assert inputs["city"]["isRequired"] is True and inputs["city"]["placeholder"] == "Lyon"
    assert inputs["notes"]["isMultiline"] is True
    assert (inputs["email"]["style"], inputs["phone"]["style"]) == ("email", "tel")
    assert inputs["size"]["choices"] == [
        {"title": "Small", "value": "s"},
        {"title": "Large", "value": "l"},
    ]
    assert (inputs["gift"]["valueOn"], inputs["gift"]["valueOff"]) == ("true", "false")
    [submit] = [a for a in asked.actions() if a["type"] == "Action.Execute"]
    assert (submit["verb"], submit["title"]) == ("form", "Send it")
    pressed = live.fake.execute(
        asked,
        live.ada,
        "form",
        # What Teams sends: every input as a string, an empty one as "".
        {"city": "Lyon", "notes": "", "email": "", "phone": "", "size": "l", "gift": "true"},
    )
    assert pressed.status_code == 200, pressed.text
    replaced = pressed.json()
    assert replaced["statusCode"] == 200 and replaced["type"] == (
        "application/vnd.microsoft.card.adaptive"
    )
    shown = json.dumps(replaced["value"])
    assert "Submitted by Ada Lovelace" in shown and "Input." not in shown
    sending.join(30)
    assert answer["status_code"] == 200, answer
    assert answer["responded"] is True
    assert answer["values"] == {"city": "Lyon", "size": "l", "gift": "true"}
    # The conversation's copy is replaced too (PUT): the inputs are gone for good.
    _until(lambda: len(asked.edits) >= 2)
    assert asked.actions() == [] and "Submitted by" in json.dumps(asked.cards())
    _clean(live)


def _refused(pressed: httpx.Response) -> str:
    assert pressed.status_code == 200, pressed.text
    answer = pressed.json()
    assert (answer["statusCode"], answer["type"]) == (200, MESSAGE), answer
    return str(answer["value"])


def test_a_submit_is_checked_as_the_form_page_checks_it(teams_live: TeamsLive) -> None:
    live = teams_live
    interaction_id = _send_form(live, FIELDS, followUpTime=60).json()["interactionId"]
    asked = live.sent(live.ada)
    missing = _refused(live.fake.execute(asked, live.ada, "form", {"city": " "}))
    assert missing.startswith("Not submitted: city:") and "required" in missing.lower()
    bad_email = _refused(
        live.fake.execute(asked, live.ada, "form", {"city": "Lyon", "email": "not-an-email"})
    )
    assert bad_email.startswith("Not submitted: email:")
    not_an_option = _refused(
        live.fake.execute(asked, live.ada, "form", {"city": "Lyon", "size": "xl"})
    )
    assert not_an_option.startswith("Not submitted: size:")
    # Refused, the card stays as it was and the form waits.
    assert asked.edits == [] and _status(live, interaction_id) == "pending"
    accepted = live.fake.execute(asked, live.ada, "form", {"city": "Lyon", "email": "a@b.co"})
    assert "Submitted by" in json.dumps(accepted.json()["value"])
    _until(lambda: _status(live, interaction_id) == "ended")
    status = live.http.get(f"/interactions/{interaction_id}/status").json()
    assert status["result"]["payload"]["values"] == {
        "city": "Lyon",
        "email": "a@b.co",
        "gift": "false",
    }
    _clean(live)


def _forged(live: TeamsLive, asked: FakeActivity, data: dict[str, Any]) -> httpx.Response:
    """An invoke pressing ``form`` on ``asked`` with ``data`` as the action's whole data,
    signed as Teams would (the card may show no such action any more)."""
    fake = live.fake
    invoke = {
        **fake.sender._base(live.ada, "invoke"),
        "name": "adaptiveCard/action",
        "replyToId": asked.id,
        "value": {
            "action": {"type": "Action.Execute", "verb": "form", "data": data},
            "trigger": "manual",
        },
    }
    return fake.post(json.dumps(invoke).encode(), fake.token())


def test_hostile_values_another_person_and_a_second_submit_are_refused(
    teams_live: TeamsLive,
) -> None:
    live = teams_live
    interaction_id = _send_form(live, FIELDS, followUpTime=60).json()["interactionId"]
    asked = live.sent(live.ada)
    token = {"hw": f"hw:{interaction_id}:form"}
    for hostile, named in (
        ({"city": {"$ne": ""}}, "values.city must be a string"),
        ({"city": ["Lyon", "Paris"]}, "values.city must be a string"),
        ({"city": "Lyon", "admin": "true"}, "admin: This form has no such field"),
        ({"city": "x" * 20_000}, "city: This answer is too long"),
        ({"city": "Lyon", "gift": "maybe"}, "gift:"),
        ({"city": "Lyon", "size": 7}, "size:"),
    ):
        refused = _refused(_forged(live, asked, {**token, **hostile}))
        assert refused.startswith(f"Not submitted: {named}"), (hostile, refused)
    # A token for another interaction, or one not of a form, answers nothing.
    approval = live.http.post(
        "/approvals",
        json={
            "title": "Restart?",
            "action": {"name": "restart", "arguments": {}},
            "approvers": [{"channel": "teams", "to": live.ada.id}],
            "followUpTime": 60,
        },
    ).json()["interactionId"]
    other = _refused(_forged(live, asked, {"hw": f"hw:{approval}:form", "city": "Lyon"}))
    assert other == "This form is not yours to fill in."
    eve = live.fake.add_user("Eve")
    live.fake.install(eve)
    assert _refused(live.fake.execute(asked, eve, "form", {"city": "Lyon"})) == (
        "This form is not yours to fill in."
    )
    assert _status(live, interaction_id) == "pending"
    assert live.fake.execute(asked, live.ada, "form", {"city": "Lyon"}).json()["statusCode"] == 200
    _until(lambda: _status(live, interaction_id) == "ended")
    again = _refused(_forged(live, asked, {**token, "city": "Paris"}))
    assert again == "This form was submitted already."
    status = live.http.get(f"/interactions/{interaction_id}/status").json()
    assert status["result"]["payload"]["values"]["city"] == "Lyon"
    _clean(live)


def test_a_form_no_card_input_takes_goes_out_as_its_pages_link(teams_live: TeamsLive) -> None:
    live = teams_live
    for count, fields in enumerate(
        (
            [{"id": "office", "type": "address", "label": "Office"}],
            # The token's key beside the inputs' values: a field of that id cannot be a card's.
            [{"id": "hw", "type": "text", "label": "Hardware"}],
        ),
        start=1,
    ):
        sent = _send_form(live, fields, message="Fill {{url}}", followUpTime=60)
        assert sent.status_code == 200, sent.text
        asked = live.sent(live.ada, count=count)
        assert asked.cards() == [] and asked.text.startswith("Fill ") and "/f/" in asked.text
    _clean(live)


def test_a_submit_after_the_form_closed_shows_it_expired(teams_live: TeamsLive) -> None:
    live = teams_live
    fields = [{"id": "city", "type": "text", "label": "City"}]
    closed = _send_form(live, fields, waitTime=1, followUpTime=1)
    assert closed.status_code == 200 and closed.json()["responded"] is False, closed.text
    asked = live.sent(live.ada)
    page = closed.json()["formUrl"]
    _until(lambda: httpx.get(page).status_code == 410)  # the follow-up window closed
    pressed = live.fake.execute(asked, live.ada, "form", {"city": "Lyon"})
    answer = pressed.json()
    assert answer["type"] == "application/vnd.microsoft.card.adaptive", answer
    assert "expired: nothing was submitted" in json.dumps(answer["value"])
    _until(lambda: len(asked.edits) >= 2)
    assert asked.actions() == []
    _clean(live)


def test_a_form_moved_on_to_a_persons_next_teams_address_is_submitted_by_its_card(
    teams_live: TeamsLive,
) -> None:
    """``fallbackAfter``: the person's next confirmed teams address gets the form as a card
    of its own (its own interaction, what its submit names), and that submit answers the
    one form the request asked."""
    live = teams_live
    other = live.fake.add_user("Ada at home")
    assert live.fake.install(other).status_code == 200
    created = live.http.post(
        "/people",
        json={
            "name": "Ada",
            "addresses": [
                {"channel": "teams", "to": live.ada.id},
                {"channel": "teams", "to": other.id},
            ],
        },
    )
    assert created.status_code == 201, created.text
    person_id = created.json()["personId"]
    for user in (live.ada, other):
        confirming = live.http.post(
            f"/people/{person_id}/confirm", json={"channel": "teams", "to": user.id}
        )
        assert confirming.status_code == 200, confirming.text
        assert live.fake.submit(live.sent(user), user).status_code == 200
        live.sent(user, 2)  # told it is confirmed
    fields = [{"id": "city", "type": "text", "label": "City", "required": True}]
    sending, answer = _in_background(
        lambda: live.http.post(
            "/forms/teams",
            json={
                "person": person_id,
                "title": "Shipping",
                "fields": fields,
                "waitTime": 30,
                "fallbackAfter": 1,
            },
        )
    )
    first = live.sent(live.ada, 3)
    onward = live.sent(other, 3)
    assert [a["verb"] for a in onward.actions() if a["type"] == "Action.Execute"] == ["form"]
    pressed = live.fake.execute(onward, other, "form", {"city": "Lyon"})
    assert pressed.status_code == 200, pressed.text
    assert "Submitted by Ada at home" in json.dumps(pressed.json()["value"])
    sending.join(30)
    assert answer["status_code"] == 200, answer
    assert answer["responded"] is True and answer["values"] == {"city": "Lyon"}
    # The one form: the first address's card now finds it submitted.
    again = live.fake.execute(first, live.ada, "form", {"city": "Paris"})
    assert "submitted already" in again.text
    _clean(live)
