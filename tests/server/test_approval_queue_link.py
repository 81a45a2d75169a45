""" "Or open your queue": an approval request asking a person of the directory carries the
console's queue (``<public URL>/console``) on every channel the person is asked on (SMS
in its short form), in the ask and in each reminder; an approver asked by a bare address
of nobody in the directory, who cannot sign in to the console, is offered no queue. Over
real HTTP on loopback, on both stores, the sandbox standing for every channel. (A Slack
address cannot be confirmed yet, so no Slack approver is a person: Slack's button is
tested on its blocks, tests/providers/test_slack_approval_requests.py.)"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from console_support import account_api, deliveries, person
from humanwire.server.delivery.telegram.channel import SANDBOX_BOT
from humanwire.testing.service import RunningService, fast_config, start_test_service

ADDRESSES = [
    ("sms", "+12025550141"),
    ("whatsapp", "+12025550142"),
    ("email", "ada@example.com"),
    ("telegram", "5550141"),
    ("discord", "412345678901234567"),
    ("teams", "29:1ada-teams"),
]
PEOPLE = ADDRESSES[:4]
"""The channels a person is confirmed on over the sandbox (a Telegram chat by its start
link); Discord's and Teams' Confirm buttons need their providers, and a Slack address
cannot be confirmed yet: their texts and buttons are tested in tests/unit/
test_approval_queue_buttons.py."""


def _telegram_person(api: httpx.Client, name: str, chat: str) -> str:
    made = api.post("/people", json={"name": name, "addresses": [{"channel": "telegram"}]})
    assert made.status_code == 201, made.text
    person_id: str = made.json()["personId"]
    link = api.post(f"/people/{person_id}/confirm", json={"channel": "telegram"}).json()
    token = link["startLink"].rsplit("start=", 1)[1]
    started = api.post(
        "/sandbox/replies",
        json={"channel": "telegram", "from": chat, "to": SANDBOX_BOT, "body": f"/start {token}"},
    )
    assert started.status_code == 204, started.text
    [address] = api.get(f"/people/{person_id}").json()["addresses"]
    assert (address["to"], address["confirmed"]) == (chat, True)
    return person_id


@pytest.fixture
def service(database: str) -> Iterator[RunningService]:
    running = start_test_service(database, fast_config(database))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def api(service: RunningService) -> Iterator[httpx.Client]:
    with account_api(service, "queue-link") as client:
        yield client


def _asks(api: httpx.Client, interaction_id: str, to: str, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 20
    while True:
        found = [d for d in deliveries(api, to) if d["interactionId"] == interaction_id]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_every_channel_of_a_person_offers_the_queue(
    service: RunningService, api: httpx.Client
) -> None:
    people = [
        _telegram_person(api, "Ada telegram", t)
        if c == "telegram"
        else person(api, f"Ada {c}", [(c, t)])
        for c, t in PEOPLE
    ]
    queue = f"{service.base_url.rstrip('/')}/console"
    asked = api.post(
        "/approvals",
        json={
            "title": "Deploy payments-api?",
            "action": {"name": "deploy", "arguments": {"service": "payments-api"}},
            "approvers": [{"person": p} for p in people],
            "followUpTime": 600,
        },
    )
    assert asked.status_code == 200, asked.text
    interaction_id = asked.json()["interactionId"]
    for channel, to in PEOPLE:
        [ask] = _asks(api, interaction_id, to, 1)
        assert ask["channel"] == channel
        lines = ask["text"].splitlines()
        if channel == "sms":
            assert f"Your queue: {queue}" in lines, ask["text"]
            assert "Or open your queue" not in ask["text"]
        elif channel == "email":
            assert any(line.endswith(f": {queue}") for line in lines), ask["text"]
            assert "Or open your queue" in ask["text"]
        else:
            assert f"Or open your queue: {queue}" in lines, (channel, ask["text"])


def test_a_reminder_offers_the_queue_too(service: RunningService, api: httpx.Client) -> None:
    per = person(api, "Ada", [ADDRESSES[0]])
    asked = api.post(
        "/approvals",
        json={
            "title": "Deploy?",
            "approvers": [{"person": per}],
            "followUpTime": 600,
            "remindEvery": 1,
        },
    )
    assert asked.status_code == 200, asked.text
    texts = [d["text"] for d in _asks(api, asked.json()["interactionId"], ADDRESSES[0][1], 2)]
    assert len(texts) == 2 and texts[1].startswith("Reminder"), texts
    assert all(f"Your queue: {service.base_url.rstrip('/')}/console" in t for t in texts)


def test_an_approver_asked_by_address_is_offered_no_queue(api: httpx.Client) -> None:
    approvers = [{"channel": c, "to": t} for c, t in ADDRESSES]
    asked = api.post(
        "/approvals", json={"title": "Deploy?", "approvers": approvers, "followUpTime": 600}
    )
    assert asked.status_code == 200, asked.text
    for _channel, to in ADDRESSES:
        [ask] = _asks(api, asked.json()["interactionId"], to, 1)
        assert "queue" not in ask["text"], ask["text"]
        assert "/console" not in ask["text"]
