"""A person's telegram address bound by the bot's start link, through the real provider
(python-telegram-bot) against the Telegram contract fake, on loopback and on both stores:
``POST /people/{id}/confirm`` answers the link (nothing is sent: a bot cannot write
first); the person opening it sends ``/start <token>`` and the chat becomes the address,
confirmed, once; a token unknown, spent or replaced by a newer link confirms nothing and
the chat is told; a group's ``/start`` binds nothing; an ask waiting in the chat is not
answered by the ``/start``."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from telegram_support import SECRET, TelegramLive

from humanwire.server.engine.people import START_ALREADY, START_BOUND, START_NOT_VALID

pytest.importorskip("telegram")


def _person(live: TelegramLive, address: dict[str, Any] | None = None) -> str:
    created = live.http.post(
        "/people",
        json={"name": "Ada", "addresses": [address or {"channel": "telegram"}]},
    )
    assert created.status_code == 201, created.text
    return str(created.json()["personId"])


def _link(live: TelegramLive, person_id: str) -> tuple[dict[str, Any], str]:
    answered = live.http.post(f"/people/{person_id}/confirm", json={"channel": "telegram"})
    assert answered.status_code == 200, answered.text
    body: dict[str, Any] = answered.json()
    link = urlsplit(body["startLink"])
    assert (link.scheme, link.netloc, link.path) == ("https", "t.me", f"/{live.fake.username}")
    (token,) = parse_qs(link.query)["start"]
    return body, token


def _address(live: TelegramLive, person_id: str) -> dict[str, Any]:
    found: dict[str, Any] = live.http.get(f"/people/{person_id}").json()["addresses"][0]
    return found


def _told(live: TelegramLive, chat: int, count: int) -> str:
    """What the bot said in ``chat``, the ``count``-th message."""
    return live.sent(chat, count).text


def test_the_start_link_binds_the_chat_it_is_opened_in_once(telegram_live: TelegramLive) -> None:
    live = telegram_live
    person_id = _person(live)
    assert _address(live, person_id) == {"channel": "telegram", "confirmed": False}
    body, token = _link(live, person_id)
    assert body["personId"] == person_id and body["channel"] == "telegram"
    assert "to" not in body and "interactionId" not in body and body["expiresAt"]
    assert 20 <= len(token) <= 64 and live.fake.sent_to(live.ada) == []  # nothing sent
    live.fake.start(live.ada, token)
    assert _told(live, live.ada, 1) == START_BOUND
    address = _address(live, person_id)
    assert (address["to"], address["confirmed"]) == (str(live.ada), True)
    assert address["confirmedAt"]
    # Once: the same link opened again, in another chat, binds nothing.
    eve = live.fake.add_person("Eve")
    live.fake.start(eve, token)
    assert _told(live, eve, 1) == START_NOT_VALID
    assert _address(live, person_id)["to"] == str(live.ada)
    # The person is found by the chat now.
    listed = live.http.get("/people", params={"channel": "telegram", "to": str(live.ada)})
    assert [p["personId"] for p in listed.json()["people"]] == [person_id]
    live.fake.wait_idle()
    assert live.fake.violations == [] and live.fake.errors == []


def test_a_token_unknown_or_replaced_confirms_nothing_and_the_chat_is_told(
    telegram_live: TelegramLive,
) -> None:
    live = telegram_live
    person_id = _person(live)
    _, older = _link(live, person_id)
    _, newer = _link(live, person_id)
    assert older != newer
    for n, token in enumerate(("x" * 43, "not a token!", "é" * 10, older), start=1):
        live.fake.start(live.ada, token)
        assert _told(live, live.ada, n) == START_NOT_VALID, token
        assert _address(live, person_id)["confirmed"] is False
    live.fake.start(live.ada, newer)
    assert _told(live, live.ada, 5) == START_BOUND
    assert _address(live, person_id)["confirmed"] is True


def test_a_given_chat_is_replaced_by_the_one_the_link_is_opened_in(
    telegram_live: TelegramLive,
) -> None:
    live = telegram_live
    person_id = _person(live, {"channel": "telegram", "to": "424242"})
    body, token = _link(live, person_id)
    assert body["to"] == "424242"
    live.fake.start(live.ada, token)
    assert _told(live, live.ada, 1) == START_BOUND
    address = _address(live, person_id)
    assert (address["to"], address["confirmed"]) == (str(live.ada), True)


def test_a_chat_that_is_the_persons_other_address_is_not_listed_twice(
    telegram_live: TelegramLive,
) -> None:
    live = telegram_live
    created = live.http.post(
        "/people",
        json={
            "name": "Ada",
            "addresses": [{"channel": "telegram"}, {"channel": "telegram", "to": str(live.ada)}],
        },
    )
    person_id = created.json()["personId"]
    _, token = _link(live, person_id)  # the first telegram address: the unbound one
    live.fake.start(live.ada, token)
    assert _told(live, live.ada, 1) == START_ALREADY
    addresses = live.http.get(f"/people/{person_id}").json()["addresses"]
    assert [(a.get("to"), a["confirmed"]) for a in addresses] == [
        (None, False),
        (str(live.ada), False),
    ]


def test_a_start_in_a_group_binds_nothing(telegram_live: TelegramLive) -> None:
    live = telegram_live
    person_id = _person(live)
    _, token = _link(live, person_id)
    group = -100123
    update = {
        "update_id": 9_000_001,
        "message": {
            "message_id": 1,
            "date": int(time.time()),
            "chat": {"id": group, "type": "group", "title": "ops"},
            "from": {"id": live.ada, "is_bot": False, "first_name": "Ada"},
            "text": f"/start {token}",
        },
    }
    url = f"{live.base_url}/providers/telegram/updates"
    assert live.fake.post_update(url, json.dumps(update).encode(), secret=SECRET).status_code == 200

    def told_the_group() -> str | None:  # (the fake knows no groups: it refuses the send)
        for name, values in live.fake.requests:
            if name == "sendMessage" and str(values.get("chat_id")) == str(group):
                return str(values["text"])
        return None

    assert "private chat" in live.fake.wait_for(told_the_group)
    assert _address(live, person_id)["confirmed"] is False
    # The token was not spent: the private chat binds.
    live.fake.start(live.ada, token)
    assert _told(live, live.ada, 1) == START_BOUND


def test_a_start_is_no_answer_to_an_ask_waiting_in_the_chat(telegram_live: TelegramLive) -> None:
    live = telegram_live
    asked = live.ask(message="Ship it?", followUpTime=60).json()
    live.sent(live.ada)
    person_id = _person(live)
    _, token = _link(live, person_id)
    live.fake.start(live.ada, token)
    assert _told(live, live.ada, 2) == START_BOUND
    status = live.http.get(f"/interactions/{asked['interactionId']}/status").json()
    assert status["status"] == "pending"
    events = live.http.get("/events").json()
    assert token not in json.dumps(events)


def test_the_webhook_still_refuses_what_it_cannot_verify(telegram_live: TelegramLive) -> None:
    live = telegram_live
    person_id = _person(live)
    _, token = _link(live, person_id)
    update = {
        "update_id": 9_000_002,
        "message": {"message_id": 1, "chat": {"id": live.ada}, "text": f"/start {token}"},
    }
    url = f"{live.base_url}/providers/telegram/updates"
    refused = live.fake.post_update(url, json.dumps(update).encode(), secret="wrong")
    assert refused.status_code == 403
    assert _address(live, person_id)["confirmed"] is False
    assert httpx.get(f"{live.base_url}/healthz").status_code == 200
