"""Webhooks: registration, the SSRF guard, signed deliveries to a real loopback receiver,
retries until it comes back, giving up, and the outbox surviving a restart."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from engine_support import (
    HUMAN,
    Receiver,
    account,
    engine,
    eventually,
    fast_config,
    reply,
    sms,
)

from humanwire.server.config import SHARED_SMS_NUMBER
from humanwire.server.engine import Account, Engine
from humanwire.server.errors import InvalidRequest, NotFound
from humanwire.server.outbox import check_webhook_url
from humanwire.types import WebhookCreateRequest, event_adapter

__all__ = ["account", "engine"]


def hook(url: str, *events: str, headers: dict[str, str] | None = None) -> WebhookCreateRequest:
    return WebhookCreateRequest.model_validate(
        {"url": url, "eventTypes": list(events or ["message.received"]), "headers": headers}
    )


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    instance = Receiver()
    await instance.start()
    yield instance
    await instance.stop()


async def test_registration_shows_secret_once_and_masks_headers(
    engine: Engine, account: Account
) -> None:
    created = await engine.create_webhook(
        account, hook("http://127.0.0.1:9/x", headers={"Authorization": "Bearer agent-token"})
    )
    assert created.secret is not None and created.secret.startswith("whsec_")
    assert len(created.secret) > 40
    assert created.headers == {"Authorization": "Bearer agent-token"}
    listed = engine.list_webhooks(account)
    assert len(listed) == 1
    assert listed[0].id == created.id
    assert listed[0].secret is None
    assert listed[0].headers == {"Authorization": "Bear…"}
    other, _ = engine.create_account("other")
    assert engine.list_webhooks(other) == []
    with pytest.raises(NotFound):
        engine.delete_webhook(other, created.id)
    engine.delete_webhook(account, created.id)
    assert engine.list_webhooks(account) == []


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/hook",
        "http://localhost:8080/hook",
        "http://10.0.0.5/hook",
        "http://192.168.1.2/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/hook",
        "http://100.64.0.1/hook",
        "http://internal.example/hook",
    ],
)
def test_ssrf_guard_refuses_private_targets_outside_local_mode(url: str) -> None:
    def resolve(host: str, port: int) -> list[str]:
        return {"localhost": ["127.0.0.1"], "internal.example": ["10.1.2.3"]}[host]

    with pytest.raises(InvalidRequest) as caught:
        check_webhook_url(url, local_mode=False, resolve=resolve)
    assert caught.value.field == "url"


def test_ssrf_guard_allows_public_and_in_local_mode_loopback() -> None:
    def resolve(host: str, port: int) -> list[str]:
        known = {"hooks.example": ["93.184.215.14"], "localhost": ["127.0.0.1"]}
        if host not in known:
            raise OSError(f"cannot resolve {host}")  # what getaddrinfo raises
        return known[host]

    check_webhook_url("https://hooks.example/in", local_mode=False, resolve=resolve)
    check_webhook_url("https://93.184.215.14/in", local_mode=False, resolve=resolve)
    check_webhook_url("http://localhost:9000/in", local_mode=True, resolve=resolve)
    check_webhook_url("http://127.0.0.1:9000/in", local_mode=True, resolve=resolve)
    # Link-local (cloud metadata) stays refused even locally.
    with pytest.raises(InvalidRequest):
        check_webhook_url("http://169.254.169.254/", local_mode=True, resolve=resolve)
    with pytest.raises(InvalidRequest):
        check_webhook_url("http://unresolvable.example/", local_mode=False, resolve=resolve)


async def test_engine_applies_the_guard_from_config(tmp_path: Path) -> None:
    engine = Engine(fast_config(tmp_path, local_mode=False), resolve=lambda h, p: ["10.0.0.1"])
    account, _ = engine.create_account()
    with pytest.raises(InvalidRequest):
        await engine.create_webhook(account, hook("http://127.0.0.1:9/x"))
    with pytest.raises(InvalidRequest):
        await engine.create_webhook(account, hook("http://hooks.internal/x"))
    assert engine.list_webhooks(account) == []
    engine.store.close()


async def test_late_reply_is_delivered_signed_with_headers(
    engine: Engine, account: Account, receiver: Receiver
) -> None:
    created = await engine.create_webhook(
        account, hook(receiver.url, headers={"Authorization": "Bearer agent-token"})
    )
    assert created.secret is not None
    response = await engine.send_message(account, sms(wait_time=0.05, follow_up_time=5))
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "late"))
    await eventually(lambda: len(receiver.requests) == 1)
    request = receiver.requests[0]
    assert request.path == "/hook"
    assert request.headers["authorization"] == "Bearer agent-token"
    assert request.headers["content-type"] == "application/json"
    event = event_adapter.validate_json(request.body)
    assert event.event_type == "message.received"
    assert event.payload.interaction_id == response.interaction_id
    assert request.headers["humanwire-event-id"] == engine.list_events(account)[0]["id"]
    signature = dict(
        part.split("=", 1) for part in request.headers["humanwire-signature"].split(",")
    )
    expected = hmac.new(
        created.secret.encode(), f"{signature['t']}.".encode() + request.body, hashlib.sha256
    ).hexdigest()
    assert hmac.compare_digest(signature["v1"], expected)
    await eventually(lambda: engine.list_deliveries_log(account)[0]["status"] == "delivered")
    log = engine.list_deliveries_log(account)[0]
    assert (log["attempts"], log["eventType"], log["url"]) == (1, "message.received", receiver.url)


async def test_only_subscribed_event_types_are_delivered(
    engine: Engine, account: Account, receiver: Receiver
) -> None:
    await engine.create_webhook(account, hook(receiver.url, "form.received"))
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "unsolicited"))
    assert len(engine.list_events(account)) == 1
    assert engine.list_deliveries_log(account) == []
    assert receiver.requests == []


async def test_retries_until_the_receiver_comes_back(
    engine: Engine, account: Account, receiver: Receiver
) -> None:
    receiver.status = 503
    await engine.create_webhook(account, hook(receiver.url))
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "hello"))
    await eventually(lambda: len(receiver.requests) >= 2)
    log = engine.list_deliveries_log(account)[0]
    assert log["status"] == "pending"
    assert log["lastError"] == "HTTP 503"
    receiver.status = 200
    await eventually(lambda: engine.list_deliveries_log(account)[0]["status"] == "delivered")
    bodies = {request.body for request in receiver.requests}
    ids = {request.headers["humanwire-event-id"] for request in receiver.requests}
    assert len(bodies) == 1 and len(ids) == 1  # the same event each time


async def test_unreachable_receiver_is_retried_then_given_up(
    engine: Engine, account: Account, receiver: Receiver
) -> None:
    url = receiver.url
    await receiver.stop()  # nothing listens on the port any more
    await engine.create_webhook(account, hook(url))
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "hello"))
    await eventually(lambda: engine.list_deliveries_log(account)[0]["status"] == "failed")
    log = engine.list_deliveries_log(account)[0]
    assert log["attempts"] == engine.config.webhook_max_attempts
    assert "Connect" in str(log["lastError"])


async def test_outbox_survives_a_restart(tmp_path: Path, receiver: Receiver) -> None:
    config = fast_config(tmp_path, webhook_retry_base=0.05)
    first = Engine(config)
    await first.start()
    account, key = first.create_account()
    url = receiver.url
    await receiver.stop()
    await first.create_webhook(account, hook(url))
    await first.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "kept"))
    await eventually(lambda: first.list_deliveries_log(account)[0]["attempts"] != 0)
    await first.close()

    await receiver.start(port=int(url.split(":")[2].split("/")[0]))
    second = Engine(config)
    await second.start()
    try:
        restored = second.authenticate(key)
        assert restored is not None
        await eventually(lambda: len(receiver.requests) == 1)
        assert receiver.requests[0].json()["payload"]["body"] == "kept"
        await eventually(lambda: second.list_deliveries_log(restored)[0]["status"] == "delivered")
    finally:
        await second.close()


async def test_deleting_a_webhook_cancels_its_pending_deliveries(
    engine: Engine, account: Account, receiver: Receiver
) -> None:
    receiver.status = 500
    created = await engine.create_webhook(account, hook(receiver.url))
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "x"))
    await eventually(lambda: len(receiver.requests) >= 1)
    engine.delete_webhook(account, created.id)
    assert engine.list_deliveries_log(account)[0]["status"] == "cancelled"
