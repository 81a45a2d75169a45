"""The telegram channel through its real provider (python-telegram-bot) against the
Telegram contract fake, on loopback and on both stores: the webhook set at start with
its secret, an ask answered by the next message in the chat or by a reply to it, a chat
that never started the bot refused naming ``to``, each update taken once, two accounts
waiting on one chat kept apart, and the webhook refusing what it cannot verify or read."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
import pytest
from telegram_support import SECRET, TelegramLive

pytest.importorskip("telegram")


def _held(live: TelegramLive, **body: Any) -> tuple[threading.Thread, dict[str, Any]]:
    answer: dict[str, Any] = {}

    def ask() -> None:
        sent = live.ask(**body)
        answer.update(sent.json(), status_code=sent.status_code)

    thread = threading.Thread(target=ask)
    thread.start()
    return thread, answer


def _status(live: TelegramLive, interaction_id: str, http: httpx.Client | None = None) -> str:
    return str((http or live.http).get(f"/interactions/{interaction_id}/status").json()["status"])


def test_the_bot_points_its_webhook_here_with_the_secret(telegram_live: TelegramLive) -> None:
    fake = telegram_live.fake
    assert fake.webhook_url == f"{telegram_live.base_url}/providers/telegram/updates"
    assert fake.secret_token == SECRET
    ready = httpx.get(f"{telegram_live.base_url}/readyz").json()
    assert "telegram" in json.dumps(ready)


def test_an_ask_is_answered_by_the_next_message_in_the_chat(telegram_live: TelegramLive) -> None:
    live = telegram_live
    asking, answer = _held(live, message="Ship it?", waitTime=30, metadata={"run": "7"})
    asked = live.sent(live.ada)
    assert asked.text == "Ship it?" and asked.reply_markup is None
    live.fake.send(live.ada, "yes, ship")
    asking.join(30)
    assert answer["status_code"] == 200, answer
    assert (answer["responded"], answer["reply"]) == (True, "yes, ship")
    assert answer["metadata"] == {"run": "7"} and answer["deliveryStatus"] == "sent"
    live.fake.wait_idle()
    assert live.fake.violations == [] and live.fake.errors == []


def test_a_reply_to_an_older_message_answers_that_one(telegram_live: TelegramLive) -> None:
    live = telegram_live
    first = live.ask(message="First?", followUpTime=60).json()
    second = live.ask(message="Second?", followUpTime=60).json()
    older = live.sent(live.ada, 1)
    live.fake.send(live.ada, "about the first", reply_to=older)
    live.fake.wait_idle()
    deadline = time.monotonic() + 10
    while _status(live, first["interactionId"]) != "ended" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _status(live, first["interactionId"]) == "ended"
    assert _status(live, second["interactionId"]) == "pending"


def test_a_chat_that_never_started_the_bot_is_refused_naming_to(
    telegram_live: TelegramLive,
) -> None:
    live = telegram_live
    shy = live.fake.add_person("Shy", started=False)
    refused = live.http.post("/messages/telegram", json={"to": str(shy), "message": "hi"})
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert (error["code"], error["field"]) == ("invalid_to_number", "to")
    assert "start a chat with the bot" in error["message"]
    unknown = live.http.post("/messages/telegram", json={"to": "987654321", "message": "hi"})
    assert unknown.status_code == 400 and unknown.json()["error"]["field"] == "to"


def test_an_update_sent_twice_is_taken_once(telegram_live: TelegramLive) -> None:
    live = telegram_live
    first = live.ask(message="First?", followUpTime=60).json()
    second = live.ask(message="Second?", followUpTime=60).json()
    live.sent(live.ada, 2)
    live.fake.send(live.ada, "yes")  # answers the latest: the second
    live.fake.wait_idle()
    deadline = time.monotonic() + 10
    while _status(live, second["interactionId"]) != "ended" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _status(live, second["interactionId"]) == "ended"
    # Telegram sends it again (it saw no answer): taken once, the first stays open.
    again = live.fake.redeliver(live.fake.deliveries[-1])
    live.fake.wait_idle()
    assert again.statuses == [200]
    time.sleep(0.3)
    assert _status(live, first["interactionId"]) == "pending"


def test_two_accounts_waiting_on_one_chat_get_nothing_of_each_other(
    telegram_live: TelegramLive,
) -> None:
    live = telegram_live
    with live.account("other") as other:
        mine = live.ask(message="Mine?", followUpTime=60).json()
        theirs = live.ask(other, message="Theirs?", followUpTime=60).json()
        live.sent(live.ada, 2)
        live.fake.send(live.ada, "yes")  # names neither: goes to none, and is explained
        clarified = live.sent(live.ada, 3)
        assert "reply" in clarified.text.lower() or "code" in clarified.text.lower()
        assert _status(live, mine["interactionId"]) == "pending"
        assert _status(live, theirs["interactionId"], other) == "pending"
        # A reply to one of the messages is that account's alone.
        live.fake.send(live.ada, "yes, theirs", reply_to=live.sent(live.ada, 2))
        deadline = time.monotonic() + 10
        while _status(live, theirs["interactionId"], other) != "ended":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert _status(live, mine["interactionId"]) == "pending"
        assert other.get(f"/interactions/{mine['interactionId']}/status").status_code == 404


def test_the_webhook_refuses_what_it_cannot_verify_or_read(telegram_live: TelegramLive) -> None:
    live = telegram_live
    url = f"{live.base_url}/providers/telegram/updates"
    update = json.dumps({"update_id": 1, "message": {"message_id": 1}}).encode()
    for secret in (None, "", "wrong", SECRET + "x", SECRET[:-1]):
        refused = live.fake.post_update(url, b"{}", secret=secret)
        assert refused.status_code == 403, (secret, refused.text)
        assert refused.json()["error"]["code"] == "forbidden"
    for body in (b"", b"[]", b"{}", b'{"update_id": "1"}', update, b"\xff"):
        refused = live.fake.post_update(url, body, secret=SECRET)
        assert refused.status_code == 400, (body, refused.text)
    ignored = live.fake.post_update(url, b'{"update_id": 5, "edited_message": {}}', secret=SECRET)
    assert ignored.status_code == 200


def test_a_form_goes_out_as_its_pages_link_and_its_submission_answers(
    telegram_live: TelegramLive,
) -> None:
    live = telegram_live
    answer: dict[str, Any] = {}

    def send() -> None:
        sent = live.http.post(
            "/forms/telegram",
            json={
                "to": str(live.ada),
                "title": "Shipping",
                "fields": [{"id": "city", "type": "text", "label": "City", "required": True}],
                "message": "Where to? {{url}}",
                "waitTime": 30,
            },
        )
        answer.update(sent.json(), status_code=sent.status_code)

    sending = threading.Thread(target=send)
    sending.start()
    asked = live.sent(live.ada)
    url = asked.text.removeprefix("Where to? ")
    assert url.startswith(f"{live.base_url}/f/") or "/f/" in url, asked.text
    submitted = httpx.post(url, json={"values": {"city": "Lyon"}})
    assert submitted.status_code == 200, submitted.text
    sending.join(30)
    assert answer["status_code"] == 200, answer
    assert answer["responded"] is True and answer["values"] == {"city": "Lyon"}
    assert live.fake.violations == []


def test_a_channel_card_of_type_telegram_asks_through_the_bot(telegram_live: TelegramLive) -> None:
    live = telegram_live
    made = live.http.post(
        "/channels",
        json={
            "type": "telegram",
            "to": str(live.ada),
            "waitTime": 30,
            "messageTemplate": "From the deploy bot: {{message}}",
        },
    )
    assert made.status_code == 201, made.text
    card = made.json()["id"]
    answer: dict[str, Any] = {}

    def ask() -> None:
        sent = live.http.post(f"/messages/{card}", json={"message": "Ship it?"})
        answer.update(sent.json(), status_code=sent.status_code)

    thread = threading.Thread(target=ask)
    thread.start()
    asked = live.sent(live.ada)
    assert asked.text == "From the deploy bot: Ship it?"
    live.fake.send(live.ada, "ship")
    thread.join(30)
    assert answer["status_code"] == 200, answer
    assert (answer["responded"], answer["reply"]) == (True, "ship")
    # A telegram card's to is a chat id, said as the channel's own sends say it.
    bad = live.http.post("/channels", json={"type": "telegram", "to": "ada", "waitTime": 30})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "to", bad.text
