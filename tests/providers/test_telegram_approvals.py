"""Approvers on telegram through the real provider against the Telegram contract fake:
the ask goes out with Approve / Reject inline buttons carrying ``hw:<id>:<choice>``
(within Telegram's 64 bytes, which the fake enforces), a press by the approver decides
(answered, the message edited to show it, the keyboard gone), a press by anyone else
decides nothing, and a second press is told it was decided already."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from telegram_support import TelegramLive

from humanwire.server.delivery.telegram.provider import button_data

pytest.importorskip("telegram")

ACTION = {"name": "restart", "arguments": {"service": "api"}}


def _approval(live: TelegramLive, **body: Any) -> tuple[threading.Thread, dict[str, Any]]:
    answer: dict[str, Any] = {}

    def ask() -> None:
        sent = live.http.post(
            "/approvals",
            json={
                "title": "Restart the API?",
                "action": ACTION,
                "approvers": [{"channel": "telegram", "to": str(live.ada)}],
                "waitTime": 30,
                **body,
            },
        )
        answer.update(sent.json(), status_code=sent.status_code)

    thread = threading.Thread(target=ask)
    thread.start()
    return thread, answer


def test_the_approver_decides_with_a_button_and_the_message_shows_it(
    telegram_live: TelegramLive,
) -> None:
    live = telegram_live
    asking, answer = _approval(live)
    asked = live.sent(live.ada)
    datas = [button["callback_data"] for button in asked.buttons]
    assert len(datas) == 2 and all(
        d.startswith("hw:") and d.endswith(("approve", "reject")) for d in datas
    )
    assert all(len(d.encode()) <= 64 for d in datas)
    query = live.fake.click(asked, datas[0])
    asking.join(30)
    assert answer["status_code"] == 200, answer
    assert answer["decision"] == "approved"
    assert answer["decisions"][0]["via"] == "telegram_button"
    live.fake.wait_for(lambda: live.fake.callbacks[query]["answered"])
    assert "Recorded" in live.fake.callbacks[query]["text"]
    live.fake.wait_for(lambda: asked.edits)
    assert "Approved" in asked.text and asked.reply_markup is None  # the keyboard is gone
    assert live.fake.violations == [] and live.fake.errors == []


def test_a_press_by_someone_else_or_a_second_press_decides_nothing(
    telegram_live: TelegramLive,
) -> None:
    live = telegram_live
    accepted = live.http.post(
        "/approvals",
        json={
            "title": "Restart?",
            "action": ACTION,
            "approvers": [{"channel": "telegram", "to": str(live.ada)}],
            "followUpTime": 60,
        },
    ).json()
    interaction_id = accepted["interactionId"]
    asked = live.sent(live.ada)
    # The same message seen by another chat (a forwarded copy, a forged press).
    eve = live.fake.add_person("Eve")
    forged = live.fake._add(eve, asked.text, from_bot=True, reply_markup=asked.reply_markup)
    refused = live.fake.click(forged, button_data(interaction_id, "approve"))
    live.fake.wait_for(lambda: live.fake.callbacks[refused]["answered"])
    assert "not yours" in live.fake.callbacks[refused]["text"]
    status = live.http.get(f"/approvals/{interaction_id}").json()
    assert status["status"] == "pending" and status["decisions"] == []
    first = live.fake.click(asked, button_data(interaction_id, "reject"))
    live.fake.wait_for(lambda: live.fake.callbacks[first]["answered"])
    deadline = time.monotonic() + 10
    while live.http.get(f"/approvals/{interaction_id}").json()["status"] != "ended":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert live.http.get(f"/approvals/{interaction_id}").json()["decision"] == "rejected"


def test_the_button_data_fits_telegrams_64_bytes() -> None:
    assert len(button_data("0" * 36, "approve").encode()) <= 64
    with pytest.raises(ValueError, match="64 bytes"):
        button_data("0" * 60, "approve")
