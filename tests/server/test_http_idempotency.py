"""``Idempotency-Key``: a retried send never reaches the human twice."""

from __future__ import annotations

import asyncio

from http_support import HUMAN, AppUnderTest, assert_error, svc_fixture

__all__ = ["svc_fixture"]

SMS = {"message": "Deploy now?", "to": HUMAN}


async def test_same_key_and_body_replays_the_first_answer(svc: AppUnderTest) -> None:
    headers = {"Idempotency-Key": "send-1"}
    first = await svc.client.post("/messages/sms", json=SMS, headers=headers)
    assert first.status_code == 200
    assert "idempotent-replayed" not in first.headers
    second = await svc.client.post("/messages/sms", json=SMS, headers=headers)
    assert second.status_code == 200
    assert second.json() == first.json()
    assert second.headers["idempotent-replayed"] == "true"
    assert len(await svc.deliveries()) == 1


async def test_replays_keep_the_creation_status(svc: AppUnderTest) -> None:
    body = {"url": "http://127.0.0.1:9/h", "eventTypes": ["message.received"]}
    headers = {"Idempotency-Key": "hook-1"}
    first = await svc.client.post("/webhooks", json=body, headers=headers)
    second = await svc.client.post("/webhooks", json=body, headers=headers)
    assert (first.status_code, second.status_code) == (201, 201)
    assert second.json()["id"] == first.json()["id"]
    assert len((await svc.client.get("/webhooks")).json()) == 1


async def test_same_key_with_another_body_or_path_is_a_conflict(svc: AppUnderTest) -> None:
    headers = {"Idempotency-Key": "send-2"}
    assert (await svc.client.post("/messages/sms", json=SMS, headers=headers)).status_code == 200
    other_body = {**SMS, "message": "Deploy tomorrow?"}
    response = await svc.client.post("/messages/sms", json=other_body, headers=headers)
    assert_error(response, 409, "conflict")
    response = await svc.client.post("/messages/whatsapp", json=SMS, headers=headers)
    assert_error(response, 409, "conflict")
    assert len(await svc.deliveries()) == 1


async def test_keys_are_per_account_and_absent_keys_send_each_time(svc: AppUnderTest) -> None:
    headers = {"Idempotency-Key": "shared-key"}
    assert (await svc.client.post("/messages/sms", json=SMS, headers=headers)).status_code == 200
    async with await svc.new_account("other") as other:
        response = await other.post("/messages/sms", json=SMS, headers=headers)
        assert response.status_code == 200
        assert "idempotent-replayed" not in response.headers
        assert len((await other.get("/sandbox/messages")).json()) == 1
    for _ in range(2):
        assert (await svc.client.post("/messages/sms", json=SMS)).status_code == 200
    assert len(await svc.deliveries()) == 3


async def test_a_retry_arriving_while_the_first_is_held_waits_for_it(svc: AppUnderTest) -> None:
    headers = {"Idempotency-Key": "held-1"}
    body = {**SMS, "waitTime": 1}
    first, second = await asyncio.gather(
        svc.client.post("/messages/sms", json=body, headers=headers),
        svc.client.post("/messages/sms", json=body, headers=headers),
    )
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json()
    assert first.json()["responded"] is False
    replayed = [r.headers.get("idempotent-replayed") for r in (first, second)]
    assert replayed.count("true") == 1
    assert len(await svc.deliveries()) == 1


async def test_a_rejected_body_is_not_remembered(svc: AppUnderTest) -> None:
    headers = {"Idempotency-Key": "fix-and-retry"}
    bad = await svc.client.post("/messages/sms", json={**SMS, "to": "+1"}, headers=headers)
    assert_error(bad, 400, "invalid_to_number", "to")
    good = await svc.client.post("/messages/sms", json=SMS, headers=headers)
    assert good.status_code == 200
    assert len(await svc.deliveries()) == 1
