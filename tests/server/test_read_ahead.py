"""The interaction a request names is read beside its key check (``ReadAhead``): a Slack
reply's thread (named in its body) and a status (named in its path) take one round
trip's time for the two reads, not two in turn. Over loopback HTTP, on each store; the
key check is slowed so that the overlap, or its absence, is plain."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from humanwire.server.config import SHARED_SLACK_WORKSPACE
from humanwire.server.runner import ServiceRunner
from humanwire.testing.service import fast_config
from pg_support import drop_schema, new_schema

HUMAN = "U0HUMAN0001"
KEY_CHECK = 0.3
"""Seconds the key check is slowed by."""

Spans = list[tuple[str, float, float]]
JSON = {"Content-Type": "application/json"}


@pytest.fixture(params=["sqlite", "postgres"])
def runner(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServiceRunner]:
    if request.param == "sqlite":
        db = str(tmp_path / "read_ahead.db")
        with ServiceRunner(fast_config(db), "127.0.0.1", 0) as started:
            yield started
        return
    schema, url = new_schema("hw_ahead")
    try:
        with ServiceRunner(fast_config(url), "127.0.0.1", 0) as started:
            yield started
    finally:
        drop_schema(schema)


def timed(owner: Any, name: str, spans: Spans, delay: float = 0.0) -> None:
    """``owner.name`` (an async method) records when each call ran, ``delay`` slower."""
    original: Callable[..., Awaitable[Any]] = getattr(owner, name)

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            if delay:
                await asyncio.sleep(delay)
            return await original(*args, **kwargs)
        finally:
            spans.append((name, started, time.monotonic()))

    setattr(owner, name, wrapper)


def watched(runner: ServiceRunner) -> Spans:
    spans: Spans = []
    timed(runner.engine.coordinator, "account_by_key", spans, KEY_CHECK)
    timed(runner.engine.store, "get_interaction", spans)
    return spans


def overlapped(spans: Spans) -> bool:
    """The interaction's read started while the key was being checked."""
    (_, key_start, key_end) = next(span for span in spans if span[0] == "account_by_key")
    reads = [start for name, start, _ in spans if name == "get_interaction"]
    assert reads, "the interaction was never read"
    return key_start <= min(reads) < key_end


def slack_send(http: httpx.Client) -> str:
    sent = http.post(
        "/messages/slack",
        json={"to": HUMAN, "message": "Ship it?", "waitTime": 60},
        headers={"Prefer": "respond-async"},
    )
    assert sent.status_code == 202, sent.text
    return str(sent.json()["interactionId"])


def slack_reply(interaction_id: str) -> dict[str, Any]:
    return {
        "channel": "slack",
        "from": HUMAN,
        "to": SHARED_SLACK_WORKSPACE,
        "body": "yes",
        "interactionId": interaction_id,
    }


def client(runner: ServiceRunner, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=runner.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=20
    )


def test_a_slack_replys_thread_is_read_beside_its_key(runner: ServiceRunner) -> None:
    key = runner.create_account("read ahead")
    with client(runner, key) as http:
        interaction_id = slack_send(http)
        spans = watched(runner)
        replied = http.post("/sandbox/replies", json=slack_reply(interaction_id))
        assert replied.status_code == 204, replied.text
        assert overlapped(spans)
        status = http.get(f"/interactions/{interaction_id}/status").json()
    assert status["status"] == "ended" and status["result"]["payload"]["body"] == "yes"


def test_a_status_is_read_beside_its_key(runner: ServiceRunner) -> None:
    key = runner.create_account("read ahead")
    with client(runner, key) as http:
        interaction_id = slack_send(http)
        spans = watched(runner)
        status = http.get(f"/interactions/{interaction_id}/status")
    assert status.status_code == 200 and status.json()["status"] == "pending"
    assert overlapped(spans)


def test_what_is_read_ahead_is_shown_only_to_its_account(runner: ServiceRunner) -> None:
    owner = runner.create_account("owner")
    other = runner.create_account("other")
    with client(runner, owner) as http:
        interaction_id = slack_send(http)
    with client(runner, other) as http:
        assert http.get(f"/interactions/{interaction_id}/status").status_code == 404
        replied = http.post("/sandbox/replies", json=slack_reply(interaction_id))
        assert replied.status_code == 404
    with client(runner, "hw_not_a_key") as http:
        assert http.get(f"/interactions/{interaction_id}/status").status_code == 401
        assert http.post("/sandbox/replies", json=slack_reply(interaction_id)).status_code == 401
    with client(runner, owner) as http:  # still open: nobody else's reply took it
        assert http.get(f"/interactions/{interaction_id}/status").json()["status"] == "pending"


def test_a_body_read_ahead_is_still_checked_as_any_other(runner: ServiceRunner) -> None:
    # Read before its key passed, a body is refused afterwards as it always was: not JSON
    # is 400 (and 401 without a key), too large 413, never a 500.
    key = runner.create_account("read ahead")
    broken = b'{"channel": "slack", "interactionId": '
    with client(runner, key) as http:
        interaction_id = slack_send(http)
        sent = http.post("/sandbox/replies", content=broken, headers=JSON)
        assert sent.status_code == 400 and sent.json()["error"]["code"] == "invalid_request"
        nested = b'{"channel": "slack", "interactionId": ' + b"[" * 5000 + b"]" * 5000 + b"}"
        assert http.post("/sandbox/replies", content=nested, headers=JSON).status_code == 400
        large = json.dumps({**slack_reply(interaction_id), "body": "x" * 2_000_000})
        assert http.post("/sandbox/replies", content=large, headers=JSON).status_code == 413
        status = http.get(f"/interactions/{interaction_id}/status").json()
    assert status["status"] == "pending"
    with client(runner, "hw_not_a_key") as http:
        assert http.post("/sandbox/replies", content=broken, headers=JSON).status_code == 401
