"""Error mapping, auth, validation paths and limits of the HTTP layer, one behaviour each."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from http_support import (
    BASE_URL,
    HUMAN,
    AppUnderTest,
    assert_error,
    fast_config,
    running_app,
    svc_fixture,
)

__all__ = ["svc_fixture"]

FIELDS = [{"id": "name", "label": "Name", "type": "text"}]


def form(**changes: object) -> dict[str, object]:
    return {"title": "Check", "fields": FIELDS, "to": HUMAN, "waitTime": 1, **changes}


async def test_healthz_needs_no_key(svc: AppUnderTest) -> None:
    async with svc.anonymous() as anonymous:
        response = await anonymous.get("/healthz")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})


async def test_missing_key_is_401_with_the_bearer_challenge(svc: AppUnderTest) -> None:
    async with svc.anonymous() as anonymous:
        response = await anonymous.get("/numbers")
        assert_error(response, 401, "unauthorized", None)
        assert response.headers["www-authenticate"].startswith("Bearer")
        wrong = await anonymous.get("/numbers", headers={"Authorization": "Bearer hw_nope"})
        assert_error(wrong, 401, "unauthorized")
        # The scheme is case-insensitive, as HTTP says.
        right = await anonymous.get("/numbers", headers={"Authorization": f"bearer {svc.api_key}"})
        assert (right.status_code, right.json()) == (200, [])


async def test_field_paths_name_the_offending_property(svc: AppUnderTest) -> None:
    fields = [
        {"id": "a", "label": "A", "type": "text"},
        {"id": "b", "label": "B", "type": "email"},
        {"id": "c", "label": "C", "type": "text", "validations": [{"title": "t", "pattern": "(["}]},
    ]
    response = await svc.client.post("/forms/sms", json=form(fields=fields))
    error = assert_error(response, 400, "invalid_request", "fields[2].validations[0].pattern")
    assert "regular expression" in error["message"]

    duplicate = [FIELDS[0], {"id": "name", "label": "Again", "type": "text"}]
    response = await svc.client.post("/forms/sms", json=form(fields=duplicate))
    assert_error(response, 400, "invalid_request", "fields[1].id")

    options = [{"id": "a", "label": "A", "type": "text", "options": [{"label": "x", "value": "x"}]}]
    response = await svc.client.post("/forms/sms", json=form(fields=options))
    assert_error(response, 400, "invalid_request", "fields[0].options")

    response = await svc.client.post("/forms/sms", json=form(waitTime=None))
    assert_error(response, 400, "invalid_request", "waitTime")
    response = await svc.client.post("/forms/sms", json=form(waitTime=601))
    assert_error(response, 400, "invalid_request", "waitTime")
    response = await svc.client.post("/forms/sms", json=form(colour="blue"))
    error = assert_error(response, 400, "invalid_request", "colour")
    assert "unknown property" in error["message"]

    response = await svc.client.post("/calls", json={"prompt": "p", "to": HUMAN, "voice": "robot"})
    assert_error(response, 400, "invalid_request", "voice")
    response = await svc.client.post(
        "/webhooks", json={"url": "http://127.0.0.1:9/h", "eventTypes": []}
    )
    assert_error(response, 400, "invalid_request", "eventTypes")
    assert await svc.deliveries() == []


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/messages/sms", {"message": "m", "to": "+15555550100"}, "to"),
        ("/messages/sms", {"message": "m", "to": "12025550100"}, "to"),
        ("/messages/sms", {"message": "m", "to": HUMAN, "from": "+1"}, "from"),
        ("/messages/whatsapp", {"message": "m", "to": "not a number"}, "to"),
        ("/messages/slack", {"message": "m", "to": "+12025550100"}, "to"),
        ("/calls", {"prompt": "p", "to": HUMAN, "transferTo": "+44"}, "transferTo"),
        ("/phone/call", {"message": "p", "to": "+999"}, "to"),
        ("/phone/sms", {"message": "p", "to": "+1202555"}, "to"),
        ("/channels", {"type": "sms", "to": "+15555550100", "waitTime": 5}, "to"),
        ("/forms/sms", form(to="+15555550100"), "to"),
    ],
)
async def test_bad_recipients_are_invalid_to_number(
    svc: AppUnderTest, path: str, body: dict[str, object], field: str
) -> None:
    response = await svc.client.post(path, json=body)
    error = assert_error(response, 400, "invalid_to_number", field)
    assert error["message"] == "invalid to number"
    assert await svc.deliveries() == []


async def test_body_must_be_json_object_of_json_type(svc: AppUnderTest) -> None:
    valid = b'{"message": "m", "to": "+12025550100"}'
    response = await svc.client.post("/messages/sms", content=valid)  # no content type
    assert_error(response, 400, "invalid_request", None)
    response = await svc.client.post(
        "/messages/sms", content=valid, headers={"Content-Type": "text/plain"}
    )
    assert_error(response, 400, "invalid_request")
    # A charset parameter is fine.
    response = await svc.client.post(
        "/messages/sms", content=valid, headers={"Content-Type": "application/json; charset=utf-8"}
    )
    assert response.status_code == 200, response.text
    response = await svc.client.post(
        "/messages/sms", content=b"{", headers={"Content-Type": "application/json"}
    )
    error = assert_error(response, 400, "invalid_request", None)
    assert "JSON" in error["message"]
    assert len(await svc.deliveries()) == 1


async def test_channel_paths_that_are_no_channel_id_are_not_found_before_the_body(
    svc: AppUnderTest,
) -> None:
    response = await svc.client.post("/messages/carrier-pigeon", json={"bad": "body"})
    assert_error(response, 404, "not_found")
    response = await svc.client.post("/messages/ch_" + "x" * 24, json={"message": "hi"})
    assert_error(response, 404, "not_found")
    response = await svc.client.get("/channels/ch_" + "x" * 24)
    assert_error(response, 404, "not_found")


async def test_unknown_route_and_wrong_method(svc: AppUnderTest) -> None:
    response = await svc.client.get("/nothing/here")
    error = assert_error(response, 404, "not_found", None)
    assert "/nothing/here" in error["message"]
    response = await svc.client.delete("/messages/sms")
    assert_error(response, 405, "method_not_allowed", None)
    assert response.headers["allow"] == "POST"
    response = await svc.client.put("/webhooks", json={})
    assert_error(response, 405, "method_not_allowed")
    assert set(response.headers["allow"].split(", ")) == {"GET", "HEAD", "POST"}


async def test_unknown_or_repeated_query_parameters_are_refused(svc: AppUnderTest) -> None:
    body = {"message": "m", "to": HUMAN}
    response = await svc.client.post("/messages/sms", json=body, params={"nope": "1"})
    assert_error(response, 400, "invalid_request", "nope")
    response = await svc.client.get("/webhooks?limit=1&limit=2")
    assert_error(response, 400, "invalid_request", "limit")
    # No query string at all: nothing to check, the send goes out.
    assert (await svc.client.post("/messages/sms", json=body)).status_code == 200


async def test_head_is_answered_as_get_without_a_body(svc: AppUnderTest) -> None:
    got = await svc.client.get("/webhooks")
    head = await svc.client.head("/webhooks")
    assert (head.status_code, head.content) == (got.status_code, b"")


async def test_status_wait_bounds(svc: AppUnderTest) -> None:
    sent = await svc.client.post("/messages/sms", json={"message": "m", "to": HUMAN})
    interaction_id = sent.json()["interactionId"]
    url = f"/interactions/{interaction_id}/status"
    for bad in ["-1", "61", "-3", "soon", "nan"]:
        assert_error(
            await svc.client.get(url, params={"wait": bad}), 400, "invalid_request", "wait"
        )
    # An ended interaction returns at once, whatever the wait.
    ok = await svc.client.get(url, params={"wait": "60"}, timeout=5)
    assert ok.status_code == 200
    assert ok.json()["status"] == "ended"
    assert ok.json()["interactionId"] == interaction_id
    # wait=0 holds nothing: a pending interaction is looked at once (a client whose
    # deadline has come sends it).
    pending = await svc.client.post(
        "/messages/sms", json={"message": "m", "to": HUMAN, "followUpTime": 60}
    )
    started = time.monotonic()
    now = await svc.client.get(
        f"/interactions/{pending.json()['interactionId']}/status", params={"wait": "0"}
    )
    assert (now.status_code, now.json()["status"]) == (200, "pending")
    assert time.monotonic() - started < 1


async def test_available_numbers_query(svc: AppUnderTest) -> None:
    us = await svc.client.get("/numbers/available", params={"country": "US"})
    assert us.status_code == 200
    assert us.json() and all(n["country"] == "US" for n in us.json())
    area = us.json()[0]["areaCode"]
    same_area = await svc.client.get("/numbers/available", params={"areaCode": area})
    assert same_area.json() and all(n["areaCode"] == area for n in same_area.json())
    gb = await svc.client.get("/numbers/available", params={"country": "GB"})
    assert gb.json() and all(n["phoneNumber"].startswith("+44") for n in gb.json())
    nothing = await svc.client.get("/numbers/available", params={"country": "US", "areaCode": "1"})
    assert (nothing.status_code, nothing.json()) == (200, [])
    for params in [{"country": "FR"}, {"areaCode": "2a"}]:
        response = await svc.client.get("/numbers/available", params=params)
        assert_error(response, 400, "invalid_request", next(iter(params)))


async def test_statuses_of_creations_and_deletes(svc: AppUnderTest) -> None:
    webhook = await svc.client.post(
        "/webhooks", json={"url": "http://127.0.0.1:9/h", "eventTypes": ["message.received"]}
    )
    assert webhook.status_code == 201
    assert webhook.json()["secret"]
    deleted = await svc.client.delete(f"/webhooks/{webhook.json()['id']}")
    assert (deleted.status_code, deleted.content) == (204, b"")
    again = await svc.client.delete(f"/webhooks/{webhook.json()['id']}")
    assert_error(again, 404, "not_found")

    channel = await svc.client.post("/channels", json={"type": "call", "to": HUMAN})
    assert channel.status_code == 201
    channel_id = channel.json()["id"]
    assert channel_id.startswith("ch_")
    fetched = await svc.client.get(f"/channels/{channel_id}")
    assert fetched.json() == channel.json()
    assert (await svc.client.delete(f"/channels/{channel_id}")).status_code == 204
    assert_error(await svc.client.get(f"/channels/{channel_id}"), 404, "not_found")


async def test_message_without_wait_is_id_status_and_delivery(svc: AppUnderTest) -> None:
    response = await svc.client.post("/messages/sms", json={"message": "m", "to": HUMAN})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"interactionId", "status", "deliveryStatus"}
    assert body["status"] == "ended"
    assert body["deliveryStatus"] == "delivered"  # the sandbox's: it reached the inbox


async def test_an_unexpected_failure_is_a_logged_500_with_the_error_body(
    svc: AppUnderTest, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(svc.engine.numbers, "of", broken)
    transport = httpx.ASGITransport(svc.app, raise_app_exceptions=False)
    headers = {"Authorization": f"Bearer {svc.api_key}"}
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL, headers=headers) as c:
        with caplog.at_level(logging.ERROR, logger="humanwire.server"):
            response = await c.get("/numbers")
    error = assert_error(response, 500, "internal_error", None)
    assert "disk on fire" not in error["message"]  # internals stay in the log
    assert any("disk on fire" in str(record.exc_info) for record in caplog.records)


@pytest.fixture(name="limited")
async def limited_fixture(tmp_path: Path, database: str) -> AsyncIterator[AppUnderTest]:
    config = fast_config(tmp_path, db_path=database, rate_limit_requests=3, rate_limit_window=60.0)
    async for service in running_app(config):
        yield service


async def test_rate_limit_is_429_with_retry_after(limited: AppUnderTest) -> None:
    statuses = [(await limited.client.get("/numbers")).status_code for _ in range(3)]
    assert statuses == [200, 200, 200]
    response = await limited.client.get("/numbers")
    assert_error(response, 429, "rate_limited")
    assert int(response.headers["retry-after"]) >= 1
    # Another account has its own budget.
    async with await limited.new_account("other") as other:
        assert (await other.get("/numbers")).status_code == 200


@pytest.fixture(name="spam_guarded")
async def spam_guarded_fixture(tmp_path: Path, database: str) -> AsyncIterator[AppUnderTest]:
    config = fast_config(tmp_path, db_path=database, spam_recipients=3, spam_window=60.0)
    async for service in running_app(config):
        yield service


async def test_same_text_to_many_recipients_suspends_the_account(
    spam_guarded: AppUnderTest,
) -> None:
    recipients = ["+12025550101", "+12025550102", "+12025550103", "+12025550104"]
    statuses = []
    for to in recipients:
        response = await spam_guarded.client.post(
            "/messages/sms", json={"message": "BUY NOW, 50% off!", "to": to}
        )
        statuses.append(response.status_code)
    assert statuses[0] == 200
    assert 403 in statuses, statuses
    # From then on every request of the account is refused, not only sends.
    response = await spam_guarded.client.get("/numbers")
    assert_error(response, 403, "account_suspended")
    async with await spam_guarded.new_account("innocent") as other:
        assert (await other.get("/numbers")).status_code == 200


async def test_sandbox_api_is_absent_when_disabled(tmp_path: Path, database: str) -> None:
    config = fast_config(tmp_path, db_path=database, sandbox_enabled=False)
    async for service in running_app(config):
        response = await service.client.get("/sandbox/messages")
        assert_error(response, 404, "not_found")
        response = await service.client.post("/sandbox/replies", json={})
        assert_error(response, 404, "not_found")
        assert (await service.client.get("/numbers")).status_code == 200


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/messages/sms", {"message": "before\x00after", "to": HUMAN}, "message"),
        ("/webhooks", {"url": "http://127.0.0.1:9/h\x00", "eventTypes": []}, "url"),
        ("/calls", {"prompt": "p", "to": HUMAN, "message": "hi\x00"}, "message"),
        (
            "/forms/sms",
            form(fields=[{"id": "n", "label": "Na\x00me", "type": "text"}]),
            "fields[0].label",
        ),
        ("/messages/sms", {"message": "m", "to": HUMAN, "metadata": {"k\x00": "v"}}, "metadata"),
        (
            "/sandbox/replies",
            {"channel": "sms", "from": HUMAN, "to": "+12025550199", "body": "yes\x00"},
            "body",
        ),
    ],
)
async def test_text_holding_a_nul_is_refused_on_both_stores(
    svc: AppUnderTest, path: str, body: dict[str, object], field: str
) -> None:
    """No channel carries a NUL and PostgreSQL's text cannot hold one: refused as a 400
    naming the field on both stores (a 500 on PostgreSQL before), and nothing is stored."""
    response = await svc.client.post(path, json=body)
    error = assert_error(response, 400, "invalid_request", field)
    assert "NUL" in error["message"]
    sent = await svc.client.get("/sandbox/messages")
    assert all("\x00" not in str(delivery) for delivery in sent.json())
