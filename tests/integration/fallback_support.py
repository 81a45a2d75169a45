"""What the ``fallbackAfter`` tests share (messages and forms): a person with addresses
confirmed through the sandbox, the deliveries, replies, audit moves and statuses, over
the real service's HTTP API (imported by name: ``from fallback_support import``)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

import httpx

T = TypeVar("T")

ADA_PHONE = "+12025550100"
ADA_MAIL = "ada@example.com"
ADA_OTHER_PHONE = "+12025550101"
ADA = {
    "name": "Ada Lovelace",
    "addresses": [
        {"channel": "sms", "to": ADA_PHONE},
        {"channel": "email", "to": ADA_MAIL},
        {"channel": "sms", "to": ADA_OTHER_PHONE},
    ],
}


def until(read: Callable[[], T], timeout: float = 15) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if value:
            return value
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.05)


def deliveries(api: httpx.Client, to: str | None = None) -> list[dict[str, Any]]:
    found = [d for d in api.get("/sandbox/messages").json() if to is None or d["to"] == to]
    return sorted(found, key=lambda d: str(d["createdAt"]))


def reply(api: httpx.Client, delivery: dict[str, Any], body: str) -> None:
    answer: dict[str, Any] = {
        "channel": delivery["channel"],
        "from": delivery["to"],
        "to": delivery["from"],
        "body": body,
    }
    if delivery["channel"] == "email":
        answer["interactionId"] = delivery["interactionId"]
    response = api.post("/sandbox/replies", json=answer)
    assert response.status_code < 300, response.text


def confirm(api: httpx.Client, person_id: str, channel: str, to: str) -> None:
    sent = api.post(f"/people/{person_id}/confirm", json={"channel": channel, "to": to})
    assert sent.status_code == 200, sent.text
    delivery = next(
        d for d in deliveries(api, to) if d["interactionId"] == sent.json()["interactionId"]
    )
    code = re.search(r"\b(\d{6})\b", delivery["text"])
    assert code is not None
    reply(api, delivery, code.group(1))


def ada(api: httpx.Client, *confirmed: tuple[str, str]) -> str:
    """Ada (``ADA``), her ``confirmed`` addresses confirmed; her person id."""
    response = api.post("/people", json=ADA)
    assert response.status_code == 201, response.text
    person_id: str = response.json()["personId"]
    for channel, to in confirmed:
        confirm(api, person_id, channel, to)
    return person_id


def moves(api: httpx.Client, interaction_id: str) -> list[dict[str, Any]]:
    """The interaction's ``message.fallback`` audit entries."""
    entries = api.get("/audit", params={"limit": 500}).json()["entries"]
    return [
        e
        for e in entries
        if e["type"] == "message.fallback" and e["interactionId"] == interaction_id
    ]


def status(api: httpx.Client, interaction_id: str) -> dict[str, Any]:
    response = api.get(f"/interactions/{interaction_id}/status")
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found
