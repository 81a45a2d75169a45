"""The async driver's batcher (``humanwire._batch``): how it splits, answers and falls
back, against scripted answers. The real ``POST /batch`` is exercised end to end in
tests/integration/test_e2e_batch.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from humanwire import _constants as C
from humanwire._batch import AsyncBatcher, batch_path
from humanwire._http import Send, default_timeout

BASE = "http://127.0.0.1:9"


def _send(path: str, key: str, body: dict[str, Any] | None = None) -> Send:
    return Send(
        method="POST",
        url=BASE + path,
        headers={"Authorization": "Bearer k", "Idempotency-Key": key, "Prefer": "respond-async"},
        params=None,
        json=body if body is not None else {"to": "U0HUMAN0001", "message": key},
        timeout=default_timeout(),
        wait=30,
        base_url=BASE,
    )


class Service:
    """Answers ``POST /batch`` with ``answer(items)``; records every batch."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.batches: list[list[dict[str, Any]]] = []
        self.requests: list[httpx.Request] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        items = json.loads(request.content)["requests"]
        self.batches.append(items)
        result = self.answer(items)
        if isinstance(result, Exception):
            raise result
        return result  # type: ignore[no-any-return]


def _accepted(items: list[dict[str, Any]]) -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "responses": [
                {
                    "status": 202,
                    "headers": {"preference-applied": "respond-async"},
                    "body": {"interactionId": item["idempotencyKey"], "status": "pending"},
                }
                for item in items
            ]
        },
    )


async def _run(service: Service, sends: list[Send]) -> tuple[AsyncBatcher, list[Any]]:
    async with httpx.AsyncClient(transport=httpx.MockTransport(service.handle)) as http:
        batcher = AsyncBatcher(http)
        results = await asyncio.gather(
            *(batcher.send(s, batch_path(s) or "") for s in sends), return_exceptions=True
        )
        await batcher.aclose()
    return batcher, results


async def test_sends_of_one_turn_go_out_together_up_to_the_item_limit() -> None:
    service = Service(_accepted)
    sends = [_send("/messages/slack", f"k{i}") for i in range(250)]
    batcher, results = await _run(service, sends)
    assert [len(b) for b in service.batches] == [100, 100, 50]
    assert batcher.batches == 3
    sent = [item for batch in service.batches for item in batch]
    assert [item["idempotencyKey"] for item in sent] == [f"k{i}" for i in range(250)]
    assert sent[0] == {
        "path": "/messages/slack",
        "body": {"to": "U0HUMAN0001", "message": "k0"},
        "idempotencyKey": "k0",
    }
    # Each send gets its own answer, as an httpx.Response of its own request.
    for i, response in enumerate(results):
        assert isinstance(response, httpx.Response)
        assert response.status_code == 202
        assert response.headers["preference-applied"] == "respond-async"
        assert response.json()["interactionId"] == f"k{i}"
        assert str(response.request.url) == BASE + "/messages/slack"
    # The batch carries the key, never a send's own headers.
    first = service.requests[0]
    assert first.headers["authorization"] == "Bearer k"
    assert "idempotency-key" not in first.headers and "prefer" not in first.headers
    assert str(first.url) == BASE + "/batch"


async def test_a_batch_stays_under_the_byte_limit() -> None:
    service = Service(_accepted)
    big = "x" * (C.BATCH_MAX_BYTES // 5)
    sends = [_send("/forms/slack", f"b{i}", {"to": "U0HUMAN0001", "f": big}) for i in range(7)]
    _, results = await _run(service, sends)
    sizes = [len(b) for b in service.batches]
    assert sum(sizes) == 7 and max(sizes) <= 5, sizes
    assert all(len(r.content) > 0 for r in service.requests)
    assert all(len(r.content) <= C.BATCH_MAX_BYTES for r in service.requests)
    assert all(isinstance(r, httpx.Response) for r in results)


async def test_a_service_without_batch_gets_each_send_alone() -> None:
    service = Service(lambda items: httpx.Response(404, json={"error": {"code": "not_found"}}))
    batcher, results = await _run(service, [_send("/messages/sms", f"n{i}") for i in range(3)])
    assert results == [None, None, None]  # the driver sends these alone
    assert batcher.supported is False


async def test_a_batch_too_large_for_the_service_goes_alone_and_batching_goes_on() -> None:
    service = Service(lambda items: httpx.Response(413, json={}))
    batcher, results = await _run(service, [_send("/messages/sms", "t0")])
    assert results == [None] and batcher.supported is True
    assert batcher.max_bytes == C.BATCH_MAX_BYTES // 2  # the next batches are smaller


async def test_a_transport_error_reaches_every_send_of_the_batch() -> None:
    service = Service(lambda items: httpx.ReadError("connection reset"))
    _, results = await _run(service, [_send("/messages/sms", f"e{i}") for i in range(4)])
    assert all(isinstance(r, httpx.ReadError) for r in results)


async def test_an_error_answer_to_the_batch_is_each_sends_answer() -> None:
    limited = httpx.Response(
        429,
        json={"error": {"code": "rate_limited", "message": "slow down", "field": None}},
        headers={"Retry-After": "3"},
    )
    service = Service(lambda items: limited)
    _, results = await _run(service, [_send("/messages/sms", f"r{i}") for i in range(2)])
    for response in results:
        assert response.status_code == 429 and response.headers["retry-after"] == "3"
        assert response.json()["error"]["code"] == "rate_limited"


async def test_an_answer_that_is_not_a_batch_answer_sends_each_alone() -> None:
    service = Service(lambda items: httpx.Response(200, json={"responses": []}))
    batcher, results = await _run(service, [_send("/messages/sms", "x0")])
    assert results == [None] and batcher.supported is True


async def test_a_send_given_up_before_it_went_out_is_not_sent() -> None:
    gate = asyncio.Event()

    async def slow(request: httpx.Request) -> httpx.Response:
        await gate.wait()
        return _accepted(json.loads(await request.aread())["requests"])

    sent: list[list[str]] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        sent.append([i["idempotencyKey"] for i in json.loads(await request.aread())["requests"]])
        return await slow(request)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        batcher = AsyncBatcher(http)
        # Some sends, then one more given up on before the worker takes it.
        busy = [
            asyncio.ensure_future(batcher.send(_send("/messages/sms", f"s{i}"), "/messages/sms"))
            for i in range(C.BATCHES_AT_ONCE)
        ]
        for _ in range(C.BATCHES_AT_ONCE + 2):
            await asyncio.sleep(0)
        late = asyncio.ensure_future(batcher.send(_send("/messages/sms", "late"), "/messages/sms"))
        await asyncio.sleep(0)
        late.cancel()
        gate.set()
        await asyncio.gather(*busy)
        await asyncio.sleep(0.05)
        await batcher.aclose()
    assert sorted(k for batch in sent for k in batch) == sorted(
        f"s{i}" for i in range(C.BATCHES_AT_ONCE)
    )


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("POST", "/messages/sms", "/messages/sms"),
        ("POST", "/messages/ch_abc", "/messages/ch_abc"),
        ("POST", "/forms/whatsapp", "/forms/whatsapp"),
        ("POST", "/phone/call", None),
        ("POST", "/calls", None),
        ("GET", "/messages/sms", None),
    ],
)
def test_only_messages_and_forms_are_batched(method: str, path: str, expected: str | None) -> None:
    from dataclasses import replace

    assert batch_path(replace(_send(path, "k"), method=method)) == expected
