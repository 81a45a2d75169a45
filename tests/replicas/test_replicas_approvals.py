"""Approval requests on two replicas of one PostgreSQL database (``humanwire serve``
processes): a decision arriving on one replica answers the request held on the other;
reminders go out once however many replicas run; of 200 concurrent ``consume`` calls
spread over both, one succeeds."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from replica_support import Replica, replicas, wait_until

from humanwire.types.approvals import action_digest

HUMAN = "+12025550100"
OTHER = "+12025550111"
ACTION = {"name": "wire_money", "arguments": {"amount": 4200}}


@pytest.fixture
def pair(database: str, tmp_path: Path) -> Iterator[list[Replica]]:
    key = f"hw_replicas_{uuid.uuid4().hex}"
    with replicas(database, 2, tmp_path / "home", key) as started:
        yield started


def _deliveries(replica: Replica, to: str) -> list[dict[str, Any]]:
    with replica.client() as http:
        found: list[dict[str, Any]] = http.get("/sandbox/messages", params={"to": to}).json()
    return found


def test_approvals_across_replicas(pair: list[Replica]) -> None:
    a, b = pair
    held: dict[str, Any] = {}

    def ask() -> None:
        with a.client() as http:
            held.update(
                http.post(
                    "/approvals",
                    json={
                        "title": "Wire",
                        "action": ACTION,
                        "approvers": [{"channel": "sms", "to": HUMAN}],
                        "waitTime": 30,
                    },
                ).json()
            )

    thread = threading.Thread(target=ask)
    started = time.monotonic()
    thread.start()
    wait_until(lambda: _deliveries(b, HUMAN))
    sender = _deliveries(b, HUMAN)[0]["from"]
    with b.client() as http:
        replied = http.post(
            "/sandbox/replies", json={"channel": "sms", "from": HUMAN, "to": sender, "body": "YES"}
        )
        assert replied.status_code == 204, replied.text
    thread.join(30)
    assert held["decision"] == "approved", held
    assert time.monotonic() - started < 20  # woken by the decision, not the window

    # Reminders: one each second, at most three, once across both replicas.
    with b.client() as http:
        reminded = http.post(
            "/approvals",
            json={
                "title": "Refund",
                "approvers": [{"channel": "sms", "to": OTHER}],
                "remindEvery": 1,
                "followUpTime": 60,
            },
        )
        assert reminded.status_code == 200, reminded.text
    wait_until(lambda: len(_deliveries(a, OTHER)) >= 4, timeout=20)
    time.sleep(2)
    assert len(_deliveries(a, OTHER)) == 4

    # 200 concurrent consumes over both replicas: one is 200.
    path = f"/approvals/{held['interactionId']}/consume"

    async def race() -> list[int]:
        headers = {"Authorization": f"Bearer {a.api_key}"}
        clients = [
            httpx.AsyncClient(base_url=r.base_url, headers=headers, timeout=60, trust_env=False)
            for r in (a, b)
        ]
        try:
            answers = await asyncio.gather(
                *(
                    clients[i % 2].post(path, json={"actionDigest": action_digest(ACTION)})
                    for i in range(200)
                )
            )
        finally:
            for client in clients:
                await client.aclose()
        return [answer.status_code for answer in answers]

    statuses = asyncio.run(race())
    assert (statuses.count(200), statuses.count(409)) == (1, 199)
