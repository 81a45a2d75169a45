"""``POST /batch`` on the real service over loopback: each item answers what it would
have answered sent alone with ``Prefer: respond-async`` under its own idempotency key,
and the answers conform to the OpenAPI document."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema  # type: ignore[import-untyped,unused-ignore]
import pytest
from e2e_support import HUMAN, NO_RESPONSE, SLACK_HUMAN, StartService

from humanwire import _constants as C
from humanwire.server.config import SHARED_SLACK_WORKSPACE
from humanwire.server.http.openapi import build_openapi
from humanwire.server.routes import api_operations
from humanwire.testing import RunningService

DOCUMENT = build_openapi(api_operations(sandbox_enabled=True), "http://127.0.0.1")
ASYNC = {"Prefer": "respond-async"}


def _slack(text: str, wait: int | None = 30) -> dict[str, Any]:
    body: dict[str, Any] = {"to": SLACK_HUMAN, "message": text, "metadata": {"q": text}}
    if wait is not None:
        body["waitTime"] = wait
    return body


class Api:
    def __init__(self, service: RunningService) -> None:
        self.key = service.create_account("batch")
        self.http = httpx.Client(
            base_url=service.base_url, headers={"Authorization": f"Bearer {self.key}"}, timeout=30
        )

    def batch(self, *items: dict[str, Any]) -> list[dict[str, Any]]:
        answer = self.http.post("/batch", json={"requests": list(items)})
        assert answer.status_code == 200, answer.text
        schema = DOCUMENT["paths"]["/batch"]["post"]["responses"]["200"]["content"]
        jsonschema.Draft202012Validator(
            {**schema["application/json"]["schema"], "components": DOCUMENT["components"]}
        ).validate(answer.json())
        responses: list[dict[str, Any]] = answer.json()["responses"]
        assert len(responses) == len(items)
        return responses

    def reply(self, interaction_id: str, text: str) -> None:
        sent = self.http.post(
            "/sandbox/replies",
            json={
                "channel": "slack",
                "from": SLACK_HUMAN,
                "to": SHARED_SLACK_WORKSPACE,
                "body": text,
                "interactionId": interaction_id,
            },
        )
        assert sent.status_code == 204, sent.text

    def events(self, after: str, count: int) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        deadline = time.monotonic() + 15
        while len(found) < count and time.monotonic() < deadline:
            page = self.http.get("/events", params={"after": after, "wait": 2}).json()
            found += page["events"]
            after = page["cursor"]
        return found

    def cursor(self) -> str:
        return str(self.http.get("/events", params={"wait": 0}).json()["cursor"])


@pytest.fixture
def service(start_service: StartService) -> RunningService:
    return start_service("batch.db")


@pytest.fixture
def api(service: RunningService) -> Iterator[Api]:
    client = Api(service)
    yield client
    client.http.close()


def test_each_item_answers_as_it_would_alone(api: Api) -> None:
    start = api.cursor()
    held, sent, invalid, not_a_send, no_channel = api.batch(
        {"path": "/messages/slack", "idempotencyKey": "b-held", "body": _slack("held?")},
        {"path": "/messages/sms", "body": {"to": HUMAN, "message": "no wait"}},
        {"path": "/messages/sms", "body": {"to": "not a number", "message": "x"}},
        {"path": "/calls", "body": {"to": HUMAN, "task": "x"}},
        {"path": "/messages/ch_nosuchcard0000000000000", "body": {"message": "x"}},
    )
    # A send that holds: 202, pending, its answer to come on the outcome stream.
    assert held["status"] == 202
    assert held["headers"] == {"preference-applied": "respond-async"}
    assert (held["body"]["status"], held["body"]["metadata"]) == ("pending", {"q": "held?"})
    # One that does not hold answers at once, as alone.
    assert sent["status"] == 200 and sent["body"]["status"] == "ended"
    assert sent["body"]["deliveryStatus"] == "delivered"
    # Errors in the documented shape, each naming its own field.
    assert invalid["status"] == 400
    assert invalid["body"]["error"]["code"] == "invalid_to_number"
    assert invalid["body"]["error"]["field"] == "to"
    assert not_a_send["status"] == 404
    assert not_a_send["body"]["error"]["code"] == "not_found"
    assert no_channel["status"] == 404

    interaction_id = held["body"]["interactionId"]
    api.reply(interaction_id, "yes")
    waited = [e for e in api.events(start, 3) if e["eventType"] == "wait.ended"]
    assert [e["interactionId"] for e in waited] == [interaction_id]
    assert waited[0]["response"]["reply"] == "yes"
    assert waited[0]["metadata"] == {"q": "held?"}


def test_idempotency_keys_hold_across_batches_and_single_sends(api: Api) -> None:
    start = api.cursor()
    body = _slack("once?")
    (first,) = api.batch({"path": "/messages/slack", "idempotencyKey": "b-once", "body": body})
    assert first["status"] == 202
    interaction_id = first["body"]["interactionId"]
    # The same key again while it holds, in a batch and alone (the client writes a body
    # the same way both ways): the same interaction, 202 again, nothing sent twice.
    (again,) = api.batch({"path": "/messages/slack", "idempotencyKey": "b-once", "body": body})
    alone = api.http.post(
        "/messages/slack",
        content=json.dumps(body, separators=(",", ":"), ensure_ascii=False),
        headers={**ASYNC, "Idempotency-Key": "b-once", "Content-Type": "application/json"},
    )
    assert (again["status"], again["body"]["interactionId"]) == (202, interaction_id)
    assert (alone.status_code, alone.json()["interactionId"]) == (202, interaction_id)
    # Another body under the key is a conflict, in the batch as alone.
    (conflict,) = api.batch(
        {"path": "/messages/slack", "idempotencyKey": "b-once", "body": _slack("other")}
    )
    assert conflict["status"] == 409
    assert conflict["body"]["error"]["field"] == "Idempotency-Key"
    deliveries = api.http.get("/sandbox/messages", params={"channel": "slack"}).json()
    assert [d["text"] for d in deliveries].count("once?") == 1

    api.reply(interaction_id, "done")
    events = api.events(start, 2)
    waited = [e for e in events if e["eventType"] == "wait.ended"]
    assert len(waited) == 1 and waited[0]["response"]["reply"] == "done"  # one, not three
    # Once it ended, the key replays the stored answer.
    (replayed,) = api.batch({"path": "/messages/slack", "idempotencyKey": "b-once", "body": body})
    assert replayed["status"] == 200 and replayed["body"]["reply"] == "done"
    assert replayed["headers"] == {"idempotent-replayed": "true"}


def test_bad_batches_are_refused_whole(api: Api) -> None:
    item = {"path": "/messages/sms", "body": {"to": HUMAN, "message": "x"}}
    for body, field in (
        ({"requests": []}, "requests"),
        ({"requests": [item] * 101}, "requests"),
        ({"requests": [{**item, "extra": 1}]}, "requests[0].extra"),
        ({"requests": [{"path": "/messages/sms"}]}, "requests[0].body"),
        ({}, "requests"),
    ):
        answer = api.http.post("/batch", json=body)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["field"] == field
    nothing = api.http.get("/sandbox/messages", params={"channel": "sms"}).json()
    assert nothing == []  # a refused batch sends none of its items
    unauthenticated = httpx.post(
        str(api.http.base_url) + "/batch", json={"requests": [item]}, timeout=10
    )
    assert unauthenticated.status_code == 401


def test_the_rate_limit_counts_every_item(start_service: StartService) -> None:
    service = start_service("limited.db", rate_limit_requests=5)
    api = Api(service)
    try:
        items = [
            {"path": "/messages/sms", "body": {"to": HUMAN, "message": f"m{i}"}} for i in range(6)
        ]
        answers = api.batch(*items)  # the batch itself is request 1 of 5
        statuses = [a["status"] for a in answers]
        assert statuses.count(200) == 4 and statuses.count(429) == 2, statuses
        limited = next(a for a in answers if a["status"] == 429)
        assert int(limited["headers"]["retry-after"]) >= 1
        assert limited["body"]["error"]["code"] == "rate_limited"
    finally:
        api.http.close()


async def test_a_service_with_a_small_body_limit_still_gets_every_send(
    start_service: StartService,
) -> None:
    """413 to a batch: its sends go alone and the next batches are smaller."""
    from humanwire import AsyncHumanWire

    service = start_service("small.db", max_body_bytes=20_000)
    key = service.create_account("small")
    client = AsyncHumanWire(api_key=key, base_url=service.base_url)
    padding = "p" * 9000  # three in one batch pass the limit: a 413 whatever the timing
    try:
        results = await asyncio.gather(
            *[
                client.messages.slack(to=SLACK_HUMAN, message=f"s{i} {padding}", wait_time=1)
                for i in range(60)
            ]
        )
        batcher = client._driver.batcher
        assert batcher is not None and batcher.max_bytes < C.BATCH_MAX_BYTES  # it met a 413
    finally:
        await client.aclose()
    assert all(r.responded is False and r.response == NO_RESPONSE for r in results)
    with httpx.Client(base_url=service.base_url, headers={"Authorization": f"Bearer {key}"}) as h:
        texts = [d["text"] for d in h.get("/sandbox/messages", params={"channel": "slack"}).json()]
    assert sorted(texts) == sorted(f"s{i} {padding}" for i in range(60))
