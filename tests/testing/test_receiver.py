"""The webhook receiver of the testing kit, driven over real loopback HTTP."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from humanwire.testing import WebhookReceiver
from humanwire.webhooks import sign

MESSAGE_EVENT = {
    "eventType": "message.received",
    "payload": {"medium": "sms", "from": "+12025550100", "to": "+12025550199", "body": "hi"},
}
FORM_EVENT = {"eventType": "form.received", "payload": {"interactionId": "i-1", "values": {}}}


def post(
    receiver: WebhookReceiver,
    event: object,
    *,
    event_id: str = "e-1",
    secret: str | None = None,
    raw: bytes | None = None,
) -> httpx.Response:
    body = raw if raw is not None else json.dumps(event).encode()
    headers = {
        "Content-Type": "application/json",
        "Humanwire-Event-Id": event_id,
        "Authorization": "Bearer agent-token",
    }
    if secret is not None:
        headers["Humanwire-Signature"] = sign(secret, body, int(time.time()))
    return httpx.post(receiver.url, content=body, headers=headers, trust_env=False)


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as started:
        yield started


def test_records_method_path_headers_body_and_parsed_event(receiver: WebhookReceiver) -> None:
    assert receiver.url.startswith("http://127.0.0.1:")
    response = post(receiver, MESSAGE_EVENT)
    assert response.status_code == 200
    [delivery] = receiver.deliveries
    assert delivery.method == "POST"
    assert delivery.path == "/webhooks"
    assert delivery.headers["authorization"] == "Bearer agent-token"
    assert delivery.event_id == "e-1"
    assert delivery.json() == MESSAGE_EVENT
    assert delivery.signature_valid is None  # no secret known
    [event] = receiver.events
    assert event.event_type == "message.received"
    assert event.payload.body == "hi"  # type: ignore[union-attr]


def test_fail_next_then_recovers(receiver: WebhookReceiver) -> None:
    receiver.fail_next(2)
    statuses = [post(receiver, MESSAGE_EVENT).status_code for _ in range(3)]
    assert statuses == [500, 500, 200]
    assert [d.status for d in receiver.deliveries] == [500, 500, 200]
    # Retries of one event count once.
    assert len(receiver.events) == 1


def test_set_status_applies_until_reset(receiver: WebhookReceiver) -> None:
    receiver.set_status(503)
    assert post(receiver, MESSAGE_EVENT, event_id="a").status_code == 503
    assert receiver.events == []
    receiver.set_status(200)
    assert post(receiver, MESSAGE_EVENT, event_id="a").status_code == 200
    assert len(receiver.events) == 1


def test_distinct_event_ids_are_distinct_events(receiver: WebhookReceiver) -> None:
    post(receiver, MESSAGE_EVENT, event_id="a")
    post(receiver, FORM_EVENT, event_id="b")
    post(receiver, MESSAGE_EVENT, event_id="a")
    assert [e.event_type for e in receiver.events] == ["message.received", "form.received"]
    assert len(receiver.wait_for("form.received", timeout=0.1)) == 1


def test_signatures_are_checked_when_the_secret_is_known() -> None:
    with WebhookReceiver(secret="whsec_test") as receiver:
        assert post(receiver, MESSAGE_EVENT, secret="whsec_test").status_code == 200
        assert post(receiver, MESSAGE_EVENT, event_id="e-2", secret="wrong").status_code == 401
        assert post(receiver, MESSAGE_EVENT, event_id="e-3").status_code == 401  # unsigned
        assert [d.signature_valid for d in receiver.deliveries] == [True, False, False]
        # Parsed anyway, so a failing test can show what came, but not accepted.
        assert receiver.deliveries[1].event is not None
        assert len(receiver.events) == 1


def test_a_body_that_is_no_event_is_refused(receiver: WebhookReceiver) -> None:
    assert post(receiver, None, raw=b"not json").status_code == 400
    assert post(receiver, {"eventType": "nope", "payload": {}}).status_code == 400
    assert [d.event for d in receiver.deliveries] == [None, None]
    assert receiver.events == []


def test_wait_for_blocks_until_the_delivery_arrives(receiver: WebhookReceiver) -> None:
    timer = threading.Timer(0.2, post, args=(receiver, FORM_EVENT))
    timer.start()
    started = time.monotonic()
    events = receiver.wait_for("form.received", timeout=5)
    assert 0.1 < time.monotonic() - started < 5
    assert events[0].event_type == "form.received"
    timer.join()


def test_wait_for_times_out_with_what_did_arrive(receiver: WebhookReceiver) -> None:
    receiver.set_status(500)
    post(receiver, MESSAGE_EVENT)
    with pytest.raises(AssertionError) as info:
        receiver.wait_for("message.received", count=1, timeout=0.2)
    message = str(info.value)
    assert "expected 1 message.received event(s)" in message
    assert "message.received -> 500" in message


def test_wait_for_count(receiver: WebhookReceiver) -> None:
    post(receiver, MESSAGE_EVENT, event_id="a")
    with pytest.raises(AssertionError):
        receiver.wait_for(count=2, timeout=0.1)
    post(receiver, MESSAGE_EVENT, event_id="b")
    assert len(receiver.wait_for(count=2, timeout=1)) == 2


async def test_async_wait_for(receiver: WebhookReceiver) -> None:
    timer = threading.Timer(0.1, post, args=(receiver, MESSAGE_EVENT))
    timer.start()
    events = await receiver.async_wait_for("message.received", timeout=5)
    assert len(events) == 1
    timer.join()


def test_close_releases_the_port() -> None:
    receiver = WebhookReceiver().start()
    url = receiver.url
    receiver.close()
    with pytest.raises(httpx.ConnectError):
        httpx.post(url, json=MESSAGE_EVENT, trust_env=False)
