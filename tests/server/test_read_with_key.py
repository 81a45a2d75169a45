"""The interaction a request names is read with its key: a Slack reply's thread (named
in its body) and a status (named in its path). On PostgreSQL in the key check's own round
trip, on SQLite beside it; never again by the engine call it is passed to. Over loopback
HTTP, on each store."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from humanwire.server.config import SHARED_SLACK_WORKSPACE
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.service import fast_config
from pg_support import drop_schema, new_schema

HUMAN = "U0HUMAN0001"

Spans = list[tuple[str, float, float, tuple[Any, ...]]]
JSON = {"Content-Type": "application/json"}


@pytest.fixture(params=["sqlite", "postgres"])
def runner(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServiceRunner]:
    if request.param == "sqlite":
        db = str(tmp_path / "read_with_key.db")
        with ServiceRunner(fast_config(db), "127.0.0.1", 0) as started:
            yield started
        return
    schema, url = new_schema("hw_named")
    try:
        with ServiceRunner(fast_config(url), "127.0.0.1", 0) as started:
            yield started
    finally:
        drop_schema(schema)


def timed(owner: Any, name: str, spans: Spans) -> None:
    """``owner.name`` (an async method) records when each call ran, with its arguments."""
    original: Callable[..., Awaitable[Any]] = getattr(owner, name)

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            return await original(*args, **kwargs)
        finally:
            spans.append((name, started, time.monotonic(), args))

    setattr(owner, name, wrapper)


def watched(runner: ServiceRunner) -> Spans:
    spans: Spans = []
    timed(runner.engine.coordinator, "account_by_key", spans)
    timed(runner.engine.store, "get_interaction", spans)
    return spans


def read_with_the_key(spans: Spans, interaction_id: str) -> bool:
    """The key check was asked for the interaction, and the interaction was read no more
    than once, inside the key check (SQLite: beside it; PostgreSQL: in its statement)."""
    checks = [span for span in spans if span[0] == "account_by_key"]
    assert len(checks) == 1, checks
    (_, key_start, key_end, args) = checks[0]
    reads = [(start, end) for name, start, end, _ in spans if name == "get_interaction"]
    inside = all(key_start <= start and end <= key_end for start, end in reads)
    return args[1:] == (interaction_id,) and len(reads) <= 1 and inside


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


def test_a_slack_replys_thread_is_read_with_its_key(runner: ServiceRunner) -> None:
    key = runner.create_account("read with the key")
    with client(runner, key) as http:
        interaction_id = slack_send(http)
        spans = watched(runner)
        replied = http.post("/sandbox/replies", json=slack_reply(interaction_id))
        assert replied.status_code == 204, replied.text
        assert read_with_the_key(spans, interaction_id)
        status = http.get(f"/interactions/{interaction_id}/status").json()
    assert status["status"] == "ended" and status["result"]["payload"]["body"] == "yes"


def test_a_status_is_read_with_its_key(runner: ServiceRunner) -> None:
    key = runner.create_account("read with the key")
    with client(runner, key) as http:
        interaction_id = slack_send(http)
        spans = watched(runner)
        status = http.get(f"/interactions/{interaction_id}/status")
    assert status.status_code == 200 and status.json()["status"] == "pending"
    assert read_with_the_key(spans, interaction_id)


def test_what_is_read_with_a_key_is_shown_only_to_its_account(runner: ServiceRunner) -> None:
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


def test_a_body_read_before_its_key_is_still_checked_as_any_other(runner: ServiceRunner) -> None:
    # Read before its key is checked, a body is refused afterwards as it always was: not JSON
    # is 400 (and 401 without a key), too large 413, never a 500.
    key = runner.create_account("read with the key")
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


def test_a_status_is_one_round_trip_on_postgres() -> None:
    # The key's account, its rate count and the interaction the path names: one round
    # trip in all (a pending status needs nothing more). A long lease: no heartbeat,
    # claim or sweep falls inside the counted request.
    schema, url = new_schema("hw_named")
    try:
        config = replace(fast_config(url), replica_lease=600.0)
        with ServiceRunner(config, "127.0.0.1", 0) as runner:
            key = runner.create_account("one round trip")
            with client(runner, key) as http:
                interaction_id = slack_send(http)
                time.sleep(0.2)  # the send's own notice goes out on the loop's next turn
                store = runner.engine.store
                before = store.round_trips
                status = http.get(f"/interactions/{interaction_id}/status")
                trips = store.round_trips - before
    finally:
        drop_schema(schema)
    assert status.status_code == 200 and status.json()["status"] == "pending"
    assert trips == 1


def test_a_name_no_interaction_could_have_is_not_read(runner: ServiceRunner) -> None:
    # Unprintable (a lone surrogate, a NUL) or too long: not read with the key, and the
    # engine call answers as for any unknown interaction.
    key = runner.create_account("read with the key")
    spans = watched(runner)
    with client(runner, key) as http:
        for name in ("\\ud800", "\\u0000x", "x" * 300):
            body = json.dumps({**slack_reply("x"), "interactionId": "NAME"}).replace(
                '"NAME"', f'"{name}"'
            )
            replied = http.post("/sandbox/replies", content=body, headers=JSON)
            assert replied.status_code in (400, 404), (name, replied.text)
    assert [span[3][1:] for span in spans if span[0] == "account_by_key"] == [(None,)] * 3
