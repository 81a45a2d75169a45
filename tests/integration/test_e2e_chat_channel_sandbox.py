"""A chat channel plugged in by its registration alone (``delivery/chat.py``), on the
sandbox: ``POST /messages/telegram`` goes out from the sandbox's bot, the person's next
message in the chat answers it, a reply to the message (its ``interactionId``) answers
that one, and nothing of one account's chat reaches another's."""

from __future__ import annotations

import threading
from typing import Any

import httpx
from e2e_support import StartService

from humanwire.server.delivery.chat import CHAT_CHANNELS
from humanwire.server.delivery.telegram.channel import SANDBOX_BOT
from humanwire.testing import RunningService

CHAT = "5550001"


def _http(service: RunningService, name: str) -> httpx.Client:
    key = service.create_account(name)
    return httpx.Client(
        base_url=service.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )


def _reply(http: httpx.Client, body: str, **extra: Any) -> None:
    sent = http.post(
        "/sandbox/replies",
        json={"channel": "telegram", "from": CHAT, "to": SANDBOX_BOT, "body": body, **extra},
    )
    assert sent.status_code == 204, sent.text


def _status(http: httpx.Client, interaction_id: str) -> str:
    return str(http.get(f"/interactions/{interaction_id}/status").json()["status"])


def _delivery(http: httpx.Client) -> dict[str, Any]:
    found = http.get("/sandbox/messages", params={"channel": "telegram", "wait": 10}).json()
    assert found, "nothing delivered on telegram"
    return dict(found[0])


def test_telegram_is_a_registered_chat_channel() -> None:
    assert "telegram" in CHAT_CHANNELS


def test_a_telegram_ask_is_answered_by_the_next_message_in_the_chat(
    start_service: StartService,
) -> None:
    service = start_service()
    with _http(service, "tg") as http:
        answer: dict[str, Any] = {}

        def ask() -> None:
            sent = http.post(
                "/messages/telegram",
                json={"to": CHAT, "message": "Ship it?", "waitTime": 30, "metadata": {"k": "v"}},
            )
            answer.update(sent.json(), status_code=sent.status_code)

        asking = threading.Thread(target=ask)
        asking.start()
        delivery = _delivery(http)
        assert (delivery["from"], delivery["to"], delivery["text"]) == (
            SANDBOX_BOT,
            CHAT,
            "Ship it?",
        )
        _reply(http, "yes")
        asking.join(30)
        assert answer["status_code"] == 200, answer
        assert (answer["responded"], answer["reply"], answer["metadata"]) == (
            True,
            "yes",
            {"k": "v"},
        )
        assert delivery["interactionId"] == answer["interactionId"]


def test_a_reply_to_an_older_message_answers_that_one(start_service: StartService) -> None:
    service = start_service()
    with _http(service, "tg") as http:
        first = http.post(
            "/messages/telegram", json={"to": CHAT, "message": "First?", "followUpTime": 60}
        ).json()
        second = http.post(
            "/messages/telegram", json={"to": CHAT, "message": "Second?", "followUpTime": 60}
        ).json()
        _reply(http, "about the first", interactionId=first["interactionId"])
        assert _status(http, first["interactionId"]) == "ended"
        assert _status(http, second["interactionId"]) == "pending"


def test_a_telegram_chat_id_is_checked(start_service: StartService) -> None:
    service = start_service()
    with _http(service, "tg") as http:
        for to in ("abc", "", "12a", "0", "+15550100"):
            sent = http.post("/messages/telegram", json={"to": to, "message": "hi"})
            assert sent.status_code == 400, (to, sent.text)
            assert sent.json()["error"]["field"] == "to"
        too_long = http.post("/messages/telegram", json={"to": CHAT, "message": "x" * 4097})
        assert too_long.status_code == 400


def test_another_accounts_telegram_ask_is_not_answered_by_this_chat(
    start_service: StartService,
) -> None:
    service = start_service()
    with _http(service, "a") as a, _http(service, "b") as b:
        asked = a.post(
            "/messages/telegram", json={"to": CHAT, "message": "A's?", "followUpTime": 60}
        ).json()
        _reply(b, "b's human speaking")
        assert a.get(f"/interactions/{asked['interactionId']}/status").json()["status"] == "pending"
        missing = b.get(f"/interactions/{asked['interactionId']}/status")
        assert missing.status_code == 404


def test_discord_is_a_registered_chat_channel_answered_in_its_thread(
    start_service: StartService,
) -> None:
    """Discord has no "next message in the chat" (no gateway): on the sandbox too, only a
    reply naming its message answers it."""
    from humanwire.server.delivery.discord.channel import SANDBOX_BOT as DISCORD_BOT

    assert "discord" in CHAT_CHANNELS
    user = "80351110224678912"
    service = start_service()
    with _http(service, "dc") as http:
        asked = http.post(
            "/messages/discord", json={"to": user, "message": "Ship it?", "followUpTime": 60}
        ).json()
        reply = {"channel": "discord", "from": user, "to": DISCORD_BOT, "body": "yes"}
        assert http.post("/sandbox/replies", json=reply).status_code == 204
        assert _status(http, asked["interactionId"]) == "pending"
        named = {**reply, "interactionId": asked["interactionId"]}
        assert http.post("/sandbox/replies", json=named).status_code == 204
        assert _status(http, asked["interactionId"]) == "ended"
        for to in ("abc", "12", "0123456789"):
            sent = http.post("/messages/discord", json={"to": to, "message": "hi"})
            assert sent.status_code == 400 and sent.json()["error"]["field"] == "to", to
        too_long = http.post("/messages/discord", json={"to": user, "message": "x" * 2001})
        assert too_long.status_code == 400
