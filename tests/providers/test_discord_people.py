"""A person's discord address confirmed by a Confirm button, through the real provider
(discord.py's REST client) against the Discord contract fake, on loopback and on both
stores: ``POST /people/{id}/confirm`` DMs the user a Confirm button carrying a one-time
token; the user's press confirms the address (the message updated in the answer),
once; a press by anyone else is refused and binds nothing; another account's
person is 404; a person so confirmed is asked on Discord by name and decides an
approval as that person."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest
from discord_support import DiscordLive

from humanwire.server.engine.people import CONFIRM_BOUND, CONFIRM_NOT_YOURS, START_NOT_VALID
from humanwire.testing.discord import FakeDiscordMessage

pytest.importorskip("discord")


def _clean(live: DiscordLive) -> None:
    assert live.fake.violations == [] and live.fake.errors == []


def _person(live: DiscordLive, http: httpx.Client | None = None) -> str:
    created = (http or live.http).post(
        "/people",
        json={"name": "Ada", "addresses": [{"channel": "discord", "to": live.ada.id}]},
    )
    assert created.status_code == 201, created.text
    return str(created.json()["personId"])


def _confirm(live: DiscordLive, person_id: str, count: int = 1) -> FakeDiscordMessage:
    answered = live.http.post(f"/people/{person_id}/confirm", json={"channel": "discord"})
    assert answered.status_code == 200, answered.text
    body = answered.json()
    assert (body["personId"], body["channel"], body["to"]) == (person_id, "discord", live.ada.id)
    assert "interactionId" not in body and "startLink" not in body and body["expiresAt"]
    return live.posted(live.ada, count)


def _address(live: DiscordLive, person_id: str) -> dict[str, Any]:
    found: dict[str, Any] = live.http.get(f"/people/{person_id}").json()["addresses"][0]
    return found


def test_the_confirm_button_confirms_the_address_once(discord_live: DiscordLive) -> None:
    live = discord_live
    person_id = _person(live)
    assert _address(live, person_id)["confirmed"] is False
    dm = _confirm(live, person_id)
    [button] = dm.custom_ids()
    prefix, token, action = button.split(":")
    assert (prefix, action) == ("hw", "confirm") and len(token) >= 32
    pressed = live.fake.click(dm, button, live.ada)
    assert pressed.json()["type"] == 7  # the message updated, in the response
    assert CONFIRM_BOUND in dm.content and dm.components == []
    address = _address(live, person_id)
    assert (address["to"], address["confirmed"]) == (live.ada.id, True)
    assert address["confirmedAt"]
    # The token is spent: a second press (on a copy of the button) confirms nothing more.
    copy = live.fake.state.create_message(
        dm.channel_id,
        {
            "content": "copy",
            "components": [
                {
                    "type": 1,
                    "components": [
                        {"type": 2, "style": 3, "label": "Confirm", "custom_id": button}
                    ],
                }
            ],
        },
    )
    again = live.fake.click(copy, button, live.ada)
    assert again.json()["type"] == 4 and again.json()["data"]["content"] == START_NOT_VALID
    _clean(live)


def test_another_users_press_is_refused_and_binds_nothing(discord_live: DiscordLive) -> None:
    live = discord_live
    person_id = _person(live)
    dm = _confirm(live, person_id)
    [button] = dm.custom_ids()
    eve = live.fake.add_user("eve")
    refused = live.fake.click(dm, button, eve)
    assert refused.json()["type"] == 4 and refused.json()["data"]["flags"] == 64
    assert refused.json()["data"]["content"] == CONFIRM_NOT_YOURS
    assert _address(live, person_id)["confirmed"] is False
    # The token was not spent by Eve: Ada's own press still confirms.
    assert live.fake.click(dm, button, live.ada).json()["type"] == 7
    assert _address(live, person_id)["confirmed"] is True
    _clean(live)


def test_another_accounts_person_is_not_found(discord_live: DiscordLive) -> None:
    live = discord_live
    person_id = _person(live)
    with live.account("other") as other:
        answered = other.post(f"/people/{person_id}/confirm", json={"channel": "discord"})
    assert answered.status_code == 404, answered.text
    assert answered.json()["error"]["field"] == "personId"
    assert live.fake.posted_to(live.ada) == []  # nothing sent


def test_a_confirmed_person_is_asked_and_approves_on_discord(discord_live: DiscordLive) -> None:
    live = discord_live
    person_id = _person(live)
    dm = _confirm(live, person_id)
    live.fake.click(dm, dm.custom_ids()[0], live.ada)
    # Asked by name: the DM goes to the confirmed address.
    asked = live.http.post(
        "/messages/person", json={"person": person_id, "message": "Ready?", "followUpTime": 60}
    )
    assert asked.status_code == 200, asked.text
    ask = live.posted(live.ada, 2)
    assert "Ready?" in ask.content and ask.custom_ids()[0].endswith(":reply")
    # An approver given as the person: asked on Discord, the press is the person's.
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
    request = live.posted(live.ada, 3)
    approve_id = next(i for i in request.custom_ids() if i.endswith(":approve"))
    assert live.fake.click(request, approve_id, live.ada).json()["type"] == 7
    thread.join(30)
    assert answer["status_code"] == 200, answer
    assert answer["decision"] == "approved"
    [decision] = answer["decisions"]
    assert decision["approver"]["person"] == person_id and decision["via"] == "discord_button"
    _clean(live)
