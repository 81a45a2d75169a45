"""Webhooks: registration, the SSRF guard, signed deliveries to a real loopback receiver,
retries until it comes back, giving up, and the outbox surviving a restart."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
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

from humanwire.server.background.outbox import HostLookupTimeout, check_webhook_url
from humanwire.server.config import SHARED_SMS_NUMBER
from humanwire.server.engine import Account, Engine
from humanwire.server.errors import InvalidRequest, NotFound
from humanwire.server.store.records import WebhookRecord
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
    created = await engine.webhooks.create(
        account, hook("http://127.0.0.1:9/x", headers={"Authorization": "Bearer agent-token"})
    )
    assert created.secret is not None and created.secret.startswith("whsec_")
    assert len(created.secret) > 40
    assert created.headers == {"Authorization": "Bearer agent-token"}
    listed = await engine.webhooks.of(account)
    assert len(listed) == 1
    assert listed[0].id == created.id
    assert listed[0].secret is None
    assert listed[0].headers == {"Authorization": "Bear…"}
    other, _ = await engine.accounts.create("other")
    assert await engine.webhooks.of(other) == []
    with pytest.raises(NotFound):
        await engine.webhooks.delete(other, created.id)
    await engine.webhooks.delete(account, created.id)
    assert await engine.webhooks.of(account) == []


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


async def test_engine_applies_the_guard_from_config(tmp_path: Path, database: str) -> None:
    engine = Engine(
        fast_config(tmp_path, db_path=database, local_mode=False), resolve=lambda h, p: ["10.0.0.1"]
    )
    account, _ = await engine.accounts.create()
    with pytest.raises(InvalidRequest):
        await engine.webhooks.create(account, hook("http://127.0.0.1:9/x"))
    with pytest.raises(InvalidRequest):
        await engine.webhooks.create(account, hook("http://hooks.internal/x"))
    assert await engine.webhooks.of(account) == []
    await engine.store.close()


async def test_hostname_resolving_to_loopback_is_refused_outside_local_mode(
    tmp_path: Path, database: str
) -> None:
    def resolve(host: str, port: int) -> list[str]:
        return {"hooks.example": ["127.0.0.1"]}[host]

    public = Engine(fast_config(tmp_path, db_path=database, local_mode=False), resolve=resolve)
    account, _ = await public.accounts.create()
    with pytest.raises(InvalidRequest) as caught:
        await public.webhooks.create(account, hook("http://hooks.example:9000/x"))
    assert caught.value.field == "url"
    assert "public address" in caught.value.message
    assert await public.webhooks.of(account) == []
    await public.store.close()

    local = Engine(fast_config(tmp_path, db_path=database), resolve=resolve)
    account, _ = await local.accounts.create()
    created = await local.webhooks.create(account, hook("http://hooks.example:9000/x"))
    assert [w.id for w in await local.webhooks.of(account)] == [created.id]
    await local.store.close()


async def test_host_lookup_runs_off_the_event_loop(tmp_path: Path, database: str) -> None:
    lookups: list[tuple[str, int, int]] = []

    def slow_resolve(host: str, port: int) -> list[str]:
        lookups.append((host, port, threading.get_ident()))
        time.sleep(0.3)  # a slow DNS server
        return ["93.184.215.14"]

    engine = Engine(fast_config(tmp_path, db_path=database, local_mode=False), resolve=slow_resolve)
    account, _ = await engine.accounts.create()
    ticks = 0
    stop = asyncio.Event()

    async def tick() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    ticker = asyncio.create_task(tick())
    created = await engine.webhooks.create(account, hook("https://hooks.example/in"))
    stop.set()
    await ticker
    assert created.url == "https://hooks.example/in"
    assert lookups == [("hooks.example", 443, lookups[0][2])]
    assert lookups[0][2] != threading.get_ident()  # not on the loop's thread
    assert ticks >= 10  # the loop kept running during the 0.3 s lookup
    await engine.store.close()


async def test_a_lookup_past_the_timeout_refuses_the_url(tmp_path: Path, database: str) -> None:
    def hanging_resolve(host: str, port: int) -> list[str]:
        time.sleep(0.6)
        return ["93.184.215.14"]

    engine = Engine(
        fast_config(tmp_path, db_path=database, local_mode=False),
        resolve=hanging_resolve,
        resolve_timeout=0.1,
    )
    account, _ = await engine.accounts.create()
    started = time.monotonic()
    with pytest.raises(HostLookupTimeout) as caught:
        await engine.webhooks.create(account, hook("https://slow.example/in"))
    assert time.monotonic() - started < 0.5
    assert isinstance(caught.value, InvalidRequest)  # a 400 on url, not a 500
    assert caught.value.field == "url"
    assert "did not resolve within 0.1 s" in caught.value.message
    assert await engine.webhooks.of(account) == []
    await engine.store.close()


async def test_default_lookup_goes_through_loop_getaddrinfo(
    tmp_path: Path, database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = {"loopback.example": "127.0.0.1", "public.example": "93.184.215.14"}
    asked: list[tuple[str, int]] = []

    async def getaddrinfo(host: str, port: int, **kwargs: Any) -> list[Any]:
        asked.append((host, port))
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers[host], port))]

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", getaddrinfo)
    engine = Engine(fast_config(tmp_path, db_path=database, local_mode=False))
    account, _ = await engine.accounts.create()
    with pytest.raises(InvalidRequest):
        await engine.webhooks.create(account, hook("http://loopback.example/x"))
    created = await engine.webhooks.create(account, hook("https://public.example:8443/x"))
    assert asked == [("loopback.example", 80), ("public.example", 8443)]
    assert [w.id for w in await engine.webhooks.of(account)] == [created.id]
    # An IP literal needs no lookup.
    with pytest.raises(InvalidRequest):
        await engine.webhooks.create(account, hook("http://10.0.0.1/x"))
    assert len(asked) == 2
    await engine.store.close()


async def test_a_lookup_timeout_at_delivery_is_retried_not_final(
    tmp_path: Path, database: str
) -> None:
    calls = 0

    def flaky_resolve(host: str, port: int) -> list[str]:
        nonlocal calls
        calls += 1
        if calls > 1:  # fine at registration, hanging when delivering
            time.sleep(0.3)
        return ["93.184.215.14"]

    # Nothing may leave loopback: deliveries that get past the lookup hit this transport.
    transport = httpx.MockTransport(lambda request: httpx.Response(200))
    engine = Engine(
        fast_config(tmp_path, db_path=database, local_mode=False, webhook_retry_base=0.02),
        resolve=flaky_resolve,
        resolve_timeout=0.05,
        webhook_transport=transport,
    )
    await engine.start()
    try:
        account, _ = await engine.accounts.create()
        await engine.webhooks.create(account, hook("https://hooks.example/in"))
        await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "hi"))

        async def check() -> bool:
            return bool((await engine.store.list_outbox(account.id, 1))[0].attempts >= 2)

        await eventually(check)
        log = (await engine.webhooks.deliveries(account))[0]
        assert "did not resolve within" in str(log["lastError"])
    finally:
        await engine.close()


async def test_late_reply_is_delivered_signed_with_headers(
    engine: Engine, account: Account, receiver: Receiver
) -> None:
    created = await engine.webhooks.create(
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
    assert request.headers["humanwire-event-id"] == (await engine.webhooks.events(account))[0]["id"]
    signature = dict(
        part.split("=", 1) for part in request.headers["humanwire-signature"].split(",")
    )
    expected = hmac.new(
        created.secret.encode(), f"{signature['t']}.".encode() + request.body, hashlib.sha256
    ).hexdigest()
    assert hmac.compare_digest(signature["v1"], expected)

    async def check() -> bool:
        return bool((await engine.webhooks.deliveries(account))[0]["status"] == "delivered")

    await eventually(check)
    log = (await engine.webhooks.deliveries(account))[0]
    assert (log["attempts"], log["eventType"], log["url"]) == (1, "message.received", receiver.url)


async def test_a_stored_header_that_cannot_be_sent_is_left_out_of_deliveries(
    engine: Engine, account: Account, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    """Registration refuses them; one stored before it did must not fail every delivery
    ("failed unexpectedly") nor reach the receiver."""
    record = WebhookRecord(
        id=str(uuid.uuid4()),
        account_id=account.id,
        url=receiver.url,
        event_types=["message.received"],
        headers={
            "Authorization": "Bearer agent-token",
            "Transfer-Encoding": "chunked",
            "Host": "internal.example",
            "X-Broken": "a\r\nX-Injected: 1",
            "X-Accent": "café",
            "Bad Name": "1",
        },
        secret="whsec_test",
        created_at=time.time(),
    )
    await engine.store.insert_webhook(record)
    with caplog.at_level(logging.WARNING, logger="humanwire"):
        await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "hi"))

        async def check() -> bool:
            return bool((await engine.webhooks.deliveries(account))[0]["status"] == "delivered")

        await eventually(check)
    [request] = receiver.requests
    assert request.headers["authorization"] == "Bearer agent-token"
    assert request.headers["host"] == f"127.0.0.1:{receiver.port}"
    assert "transfer-encoding" not in request.headers
    assert not {"x-broken", "x-injected", "x-accent", "bad name"} & set(request.headers)
    skipped = [r.getMessage() for r in caplog.records if r.name == "humanwire.outbox"]
    assert len(skipped) == 5 and all("left out" in line for line in skipped), skipped
    assert "unexpectedly" not in caplog.text and "a\r\nX" not in caplog.text


async def test_only_subscribed_event_types_are_delivered(
    engine: Engine, account: Account, receiver: Receiver
) -> None:
    await engine.webhooks.create(account, hook(receiver.url, "form.received"))
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "unsolicited"))
    assert len(await engine.webhooks.events(account)) == 1
    assert await engine.webhooks.deliveries(account) == []
    assert receiver.requests == []


async def test_retries_until_the_receiver_comes_back(
    engine: Engine, account: Account, receiver: Receiver
) -> None:
    receiver.status = 503
    await engine.webhooks.create(account, hook(receiver.url))
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "hello"))
    await eventually(lambda: len(receiver.requests) >= 2)
    log = (await engine.webhooks.deliveries(account))[0]
    assert log["status"] == "pending"
    assert log["lastError"] == "HTTP 503"
    receiver.status = 200

    async def check() -> bool:
        return bool((await engine.webhooks.deliveries(account))[0]["status"] == "delivered")

    await eventually(check)
    bodies = {request.body for request in receiver.requests}
    ids = {request.headers["humanwire-event-id"] for request in receiver.requests}
    assert len(bodies) == 1 and len(ids) == 1  # the same event each time


async def test_unreachable_receiver_is_retried_then_given_up(
    engine: Engine, account: Account, receiver: Receiver
) -> None:
    url = receiver.url
    await receiver.stop()  # nothing listens on the port any more
    await engine.webhooks.create(account, hook(url))
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "hello"))

    async def check() -> bool:
        return bool((await engine.webhooks.deliveries(account))[0]["status"] == "failed")

    await eventually(check)
    log = (await engine.webhooks.deliveries(account))[0]
    assert log["attempts"] == engine.config.webhook_max_attempts
    assert "Connect" in str(log["lastError"])


async def test_outbox_survives_a_restart(tmp_path: Path, database: str, receiver: Receiver) -> None:
    config = fast_config(tmp_path, db_path=database, webhook_retry_base=0.05)
    first = Engine(config)
    await first.start()
    account, key = await first.accounts.create()
    url = receiver.url
    await receiver.stop()
    await first.webhooks.create(account, hook(url))
    await first.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "kept"))

    async def check() -> bool:
        return bool((await first.webhooks.deliveries(account))[0]["attempts"] != 0)

    await eventually(check)
    await first.close()

    await receiver.start(port=int(url.split(":")[2].split("/")[0]))
    second = Engine(config)
    await second.start()
    try:
        restored = await second.accounts.authenticate(key)
        assert restored is not None
        await eventually(lambda: len(receiver.requests) == 1)
        assert receiver.requests[0].json()["payload"]["body"] == "kept"

        async def check() -> bool:
            return bool((await second.webhooks.deliveries(restored))[0]["status"] == "delivered")

        await eventually(check)
    finally:
        await second.close()


async def test_deleting_a_webhook_cancels_its_pending_deliveries(
    engine: Engine, account: Account, receiver: Receiver
) -> None:
    receiver.status = 500
    created = await engine.webhooks.create(account, hook(receiver.url))
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "x"))
    await eventually(lambda: len(receiver.requests) >= 1)
    await engine.webhooks.delete(account, created.id)
    assert (await engine.webhooks.deliveries(account))[0]["status"] == "cancelled"
