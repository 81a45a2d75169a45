"""Approval requests on replicas of one PostgreSQL database (``humanwire serve``
processes): a decision arriving on one replica answers the request held on the other;
reminders go out once however many replicas run; of 200 concurrent ``consume`` calls
spread over both, one succeeds; with the replicas holding an escalation and a reminder
killed (SIGKILL) before they fall due, every text still goes out exactly once."""

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
THIRD = "+12025550122"
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


def _replica_ids(database: str) -> set[str]:
    import psycopg

    with psycopg.connect(database, autocommit=True) as conn:
        try:
            return {str(row[0]) for row in conn.execute("SELECT id FROM replicas").fetchall()}
        except psycopg.errors.UndefinedTable:  # before the first replica made the schema
            return set()


def _claim(database: str, kind: str, key: str) -> tuple[str | None, float] | None:
    """``(claimed_by, due_at)`` of a step of the schedule (None: not armed)."""
    import psycopg

    with psycopg.connect(database, autocommit=True) as conn:
        row = conn.execute(
            "SELECT claimed_by, due_at FROM schedule WHERE kind = %s AND key = %s", (kind, key)
        ).fetchone()
    return None if row is None else (None if row[0] is None else str(row[0]), float(row[1]))


def _kill_the_claimer(database: str, by_id: dict[str, Replica], kind: str, key: str) -> Replica:
    """Kills (SIGKILL) the replica that claimed the step (they claim it half a second
    before it is due), before it is due."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = _claim(database, kind, key)
        if found is not None and found[0] in by_id:
            assert time.time() < found[1], "the step fell due before the kill"
            victim = by_id.pop(str(found[0]))
            victim.kill()
            return victim
        time.sleep(0.02)
    raise AssertionError(f"nobody claimed {kind} {key} in time")


def test_reminders_and_escalation_once_when_their_replicas_are_killed(
    database: str, tmp_path: Path
) -> None:
    key = f"hw_replicas_{uuid.uuid4().hex}"
    home = tmp_path / "home"
    by_id: dict[str, Replica] = {}
    started: list[Replica] = []
    try:
        for name in "ABC":  # one after another: each one's id is the one that appears
            before = _replica_ids(database)
            replica = Replica(database, key, home, name).start()
            started.append(replica)
            wait_until(lambda: len(_replica_ids(database) - before) == 1)  # noqa: B023
            (new,) = _replica_ids(database) - before
            by_id[new] = replica
        a = started[0]
        with a.client() as http:
            asked = http.post(
                "/approvals",
                json={
                    "title": "Refund $900",
                    "approvers": [{"channel": "sms", "to": OTHER}],
                    "escalation": [{"after": 3, "approvers": [{"channel": "sms", "to": THIRD}]}],
                    "remindEvery": 2,
                    "followUpTime": 60,
                },
            )
            assert asked.status_code == 200, asked.text
        iid = asked.json()["interactionId"]
        wait_until(lambda: len(_deliveries(a, OTHER)) == 2, timeout=10)  # reminded once
        # The replica that claimed the escalation dies before it is due: another takes
        # it over once the claim runs out (a lease after its time).
        first = _kill_the_claimer(database, by_id, "approval.escalate", f"{iid}:1")
        alive = next(iter(by_id.values()))
        wait_until(lambda: _deliveries(alive, THIRD), timeout=10)
        # Between the lead's reminders: the one holding the next dies too.
        wait_until(lambda: len(_deliveries(alive, THIRD)) == 2, timeout=10)
        lead = f"{iid}:1"  # the lead's position
        _kill_the_claimer(database, by_id, "approval.remind", lead)
        survivor = next(iter(by_id.values()))
        assert survivor is not first
        wait_until(lambda: len(_deliveries(survivor, OTHER)) == 4, timeout=15)
        wait_until(lambda: len(_deliveries(survivor, THIRD)) == 4, timeout=15)
        time.sleep(3)  # nothing more comes
        for to in (OTHER, THIRD):
            sent = list(reversed(_deliveries(survivor, to)))
            assert ["Reminder" in d["text"] for d in sent] == [False, True, True, True], to
        with survivor.client() as http:
            entries = http.get("/audit", params={"limit": 1000}).json()["entries"]
        types = [e["type"] for e in entries]
        assert types.count("approval.asked") == 2
        assert types.count("approval.escalated") == 1
        for to in (OTHER, THIRD):
            numbers = [
                e["data"]["reminder"]
                for e in entries
                if e["type"] == "approval.reminded" and e["actor"]["to"] == to
            ]
            assert numbers == [1, 2, 3], (to, numbers)
    finally:
        for replica in started:
            replica.stop()
