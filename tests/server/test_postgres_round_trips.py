"""Round trips to PostgreSQL per send and per answer, with two replicas on one schema.

``PostgresStore`` counts what it asks of the server (``round_trips``, ``transactions``).
The counts of one send and of one answer reaching a request held on another replica are
deterministic, so they are pinned here as upper bounds: a change that brings back a
BEGIN and COMMIT around each statement, a second read per outcome or a statement folded
apart again fails this test, whatever the machine's speed. (With a BEGIN and a COMMIT around every
statement, as before, a send took about three times the bound.)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import httpx
import psycopg
import pytest

from humanwire.server.config import SHARED_SLACK_WORKSPACE
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.server.store.postgres import PostgresStore
from humanwire.testing.service import fast_config
from pg_support import drop_schema, new_schema

HUMAN = "U0HUMAN0001"


@pytest.fixture
def schema_url() -> Iterator[str]:
    schema, url = new_schema("hw_trips")
    yield url
    drop_schema(schema)


def counts(runner: ServiceRunner) -> tuple[int, int]:
    store = runner.engine.store
    assert isinstance(store, PostgresStore)
    return store.round_trips, store.transactions


def wait_ended(url: str, interaction_id: str) -> None:
    """Until the held send's ``wait.ended`` is stored (read apart from the store, so the
    reading is not counted)."""
    deadline = time.monotonic() + 20
    with psycopg.connect(url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM outcomes WHERE interaction_id = %s "
                "AND body LIKE '%%wait.ended%%'",
                (interaction_id,),
            ).fetchone()
            if row and row[0]:
                return
            time.sleep(0.02)
    raise AssertionError("the held send never ended")


def send(a: ServiceRunner, key: str, n: int) -> str:
    """One send held on ``a``, answered 202 at once (``Prefer: respond-async``)."""
    with httpx.Client(base_url=a.base_url, headers=auth(key), timeout=20) as http:
        sent = http.post(
            "/messages/slack",
            json={"to": HUMAN, "message": f"question {n}", "waitTime": 60},
            headers={"Prefer": "respond-async", "Idempotency-Key": f"key-{n}"},
        )
    assert sent.status_code == 202, sent.text
    return str(sent.json()["interactionId"])


def reply(b: ServiceRunner, key: str, interaction_id: str, body: str) -> None:
    """The human's Slack reply to ``interaction_id``, posted to ``b``."""
    with httpx.Client(base_url=b.base_url, headers=auth(key), timeout=20) as http:
        replied = http.post(
            "/sandbox/replies",
            json={
                "channel": "slack",
                "from": HUMAN,
                "to": SHARED_SLACK_WORKSPACE,
                "body": body,
                "interactionId": interaction_id,
            },
        )
    assert replied.status_code < 300, replied.text


def answer(
    b: ServiceRunner, key: str, n: int, interaction_id: str, url: str, text: str = "answer"
) -> None:
    """The human's answer through ``b``; returns once it reached the hold."""
    reply(b, key, interaction_id, f"{text} {n}")
    wait_ended(url, interaction_id)
    time.sleep(0.2)  # the holder's last notice goes out on its loop's next turn


def held_by(url: str, interaction_id: str) -> str | None:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT held_by FROM interactions WHERE id = %s", (interaction_id,)
        ).fetchone()
    assert row is not None
    return row[0]


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def total(a: ServiceRunner, b: ServiceRunner) -> tuple[int, int]:
    """(round trips, transactions) of both replicas' stores."""
    (trips_a, tx_a), (trips_b, tx_b) = counts(a), counts(b)
    return trips_a + trips_b, tx_a + tx_b


@contextmanager
def two_replicas(url: str) -> Iterator[tuple[ServiceRunner, ServiceRunner]]:
    # A long lease: no heartbeat, claim or sweep falls inside the counted steps.
    config = replace(fast_config(Path("unused.db")), db_path=url, replica_lease=600.0)
    with (
        ServiceRunner(config, "127.0.0.1", 0) as a,
        ServiceRunner(config, "127.0.0.1", 0) as b,
    ):
        yield a, b


def test_round_trips_per_send_and_per_answer_on_another_replica(schema_url: str) -> None:
    with two_replicas(schema_url) as (a, b):
        key = a.create_account("round trips")
        # First uses (the notice channel's name) left out.
        answer(b, key, 0, send(a, key, 0), schema_url)
        time.sleep(0.2)
        start = total(a, b)
        interaction_id = send(a, key, 1)
        time.sleep(0.2)  # the send's notice goes out on the loop's next turn
        sent, sent_on_a = total(a, b), counts(a)[0]
        answer(b, key, 1, interaction_id, schema_url)
        answered, answered_on_a = total(a, b), counts(a)[0]
        assert a.base_url != b.base_url and counts(a)[0] > 10 and counts(b)[0] > 10
    one_send = sent[0] - start[0]
    one_answer = answered[0] - sent[0]
    # A send: the key's account with the rate count, the key's result and link (one
    # statement), the spam count, the interaction with its link, the sandbox's delivery,
    # its status, and the notice of it (the 202's body is built from the hold: no read).
    assert one_send <= 7, f"{one_send} round trips for one send"
    # An answer on B: the key's account with the rate count and, in the same round trip,
    # the thread; then the end with its outcome, the held send's wait.ended and its key's
    # result, the inbound text, the hold let go and one notice of them (which says how it
    # ended). A, told by that notice, writes nothing.
    assert one_answer <= 2, f"{one_answer} round trips for one answer"
    assert answered_on_a == sent_on_a, "the holder wrote something after the answer"
    # Each round trip is one transaction: no BEGIN or COMMIT of their own.
    assert answered[1] - start[1] == answered[0] - start[0]
    # Let go with its wait.ended: a sweep of A (dead or retired) sends nothing again.
    assert held_by(schema_url, interaction_id) is None


def test_an_answer_too_large_for_the_notice_is_read_by_its_holder(schema_url: str) -> None:
    with two_replicas(schema_url) as (a, b):
        key = a.create_account("large answers")
        interaction_id = send(a, key, 1)
        time.sleep(0.2)
        before = total(a, b)
        long = "é" * 4000  # 8,000 bytes: no notice carries it
        answer(b, key, 1, interaction_id, schema_url, text=long)
        after = total(a, b)
        with httpx.Client(base_url=a.base_url, headers=auth(key), timeout=20) as http:
            events = http.get("/events", params={"after": 0}).json()["events"]
    ended = [e for e in events if e["eventType"] == "wait.ended"]
    assert [e["response"]["reply"] for e in ended] == [f"{long} 1"]
    # One more than from a notice: the holder reads the row (its wait.ended, too large
    # for the notice, was written with the end on B; A writes nothing).
    assert after[0] - before[0] == 3
    assert held_by(schema_url, interaction_id) is None


def test_a_held_request_answered_from_the_notice_lets_go_of_its_hold(schema_url: str) -> None:
    """Held without ``respond-async`` (no ``wait.ended`` to let go with): the hold is let
    go as the request answers, so a sweep of A would send nothing again."""
    with two_replicas(schema_url) as (a, b), ThreadPoolExecutor(1) as pool:
        key = a.create_account("held")

        def held_send() -> dict[str, object]:
            with httpx.Client(base_url=a.base_url, headers=auth(key), timeout=20) as http:
                sent = http.post(
                    "/messages/slack", json={"to": HUMAN, "message": "go?", "waitTime": 60}
                )
            assert sent.status_code == 200, sent.text
            return dict(sent.json())

        held = pool.submit(held_send)
        deadline = time.monotonic() + 20
        with psycopg.connect(schema_url, autocommit=True) as conn:
            while not (
                holds := conn.execute(
                    "SELECT id FROM interactions WHERE held_by IS NOT NULL"
                ).fetchall()
            ):
                assert time.monotonic() < deadline, "the send was never held"
                time.sleep(0.02)
        ((interaction_id,),) = holds
        reply(b, key, interaction_id, "yes")
        response = held.result(20)
    assert (response["interactionId"], response["reply"]) == (interaction_id, "yes")
    assert held_by(schema_url, interaction_id) is None


def test_the_pool_holds_db_pool_size_connections_at_most(schema_url: str) -> None:
    # A far database needs more connections in flight than the default (docs: stores).
    config = replace(fast_config(Path("unused.db")), db_path=schema_url, db_pool_size=23)
    with ServiceRunner(config, "127.0.0.1", 0) as runner:
        store = runner.engine.store
        assert isinstance(store, PostgresStore)
        assert store._pool.max_size == 23
