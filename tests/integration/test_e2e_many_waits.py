"""One client, many waits (docs/design.md "Many waits from one client"): past a handful of
held sends in flight, the client asks for 202s and collects each answer from the
account's outcome stream, so waiting holds no connection; each call still returns what a
held send returns. Against the real service on loopback, with a responder answering
every message in its thread."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from e2e_support import NO_RESPONSE, SLACK_HUMAN, StartService

from humanwire import AsyncHumanWire, HumanWire
from humanwire._constants import MULTIPLEX_WAITS_AFTER, SHORT_REQUESTS_AT_ONCE
from humanwire.server.config import SHARED_SLACK_WORKSPACE
from humanwire.testing import RunningService


@pytest.fixture
def service(start_service: StartService) -> RunningService:
    # The account's rate limit raised for the run, as a load test would.
    return start_service("many.db", rate_limit_requests=1_000_000)


class Responder:
    """The human: once ``expected`` messages are out, answers each in its thread with
    ``"re: <text>"`` (``go`` releases it, so a test can look at the pending state)."""

    def __init__(self, service: RunningService, key: str, expected: int) -> None:
        self.client = HumanWire(api_key=key, base_url=service.base_url)
        self.expected = expected
        self.go = threading.Event()
        self.all_out = threading.Event()
        self.answered = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        deadline = time.monotonic() + 60
        seen: dict[str, str] = {}
        while len(seen) < self.expected and time.monotonic() < deadline:
            for delivery in self.client.sandbox.deliveries(channel="slack"):
                if delivery.interaction_id:
                    seen[delivery.interaction_id] = delivery.text
            time.sleep(0.05)
        self.all_out.set()
        self.go.wait(60)
        for interaction_id, text in seen.items():
            self.client.sandbox.reply(
                channel="slack",
                from_=SLACK_HUMAN,
                to=SHARED_SLACK_WORKSPACE,
                body=f"re: {text}",
                interaction_id=interaction_id,
            )
            self.answered += 1

    def close(self) -> None:
        self.go.set()
        self.thread.join(30)
        self.client.close()


@pytest.fixture
def account(service: RunningService) -> str:
    return service.create_account("many-waits")


def _ask_all(client: AsyncHumanWire, prefix: str, count: int) -> list[asyncio.Future[Any]]:
    """``count`` asks at once (``<prefix><i>``, 30 s waits), each its own task."""
    return [
        asyncio.ensure_future(
            client.messages.slack(to=SLACK_HUMAN, message=f"{prefix}{i}", wait_time=30)
        )
        for i in range(count)
    ]


def _active_connections(client: AsyncHumanWire | HumanWire) -> int:
    pool: Any = client._http._transport._pool  # type: ignore[attr-defined]
    return sum(1 for connection in pool.connections if not connection.is_idle())


async def test_hundreds_of_async_waits_over_a_handful_of_connections(
    service: RunningService, account: str
) -> None:
    count = 200
    responder = Responder(service, account, count)
    client = AsyncHumanWire(api_key=account, base_url=service.base_url)  # defaults
    try:
        asks = _ask_all(client, "q", count)
        await asyncio.to_thread(responder.all_out.wait, 30)
        batcher = client._driver.batcher
        assert batcher is not None
        # A batch's messages reach the human before its answer (the 202s) reaches the
        # client: under load up to ``BATCHES_AT_ONCE`` posts may still be reading. Those
        # are sending, not waiting; count once every send has its 202.
        deadline = time.monotonic() + 20
        while batcher.in_flight and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert batcher.in_flight == 0, batcher.in_flight
        await asyncio.sleep(0.3)
        # Every message is out and waiting: the waits hold no connection of their own
        # (the few held sends before multiplexing, and the outcome stream).
        active = _active_connections(client)
        assert active <= MULTIPLEX_WAITS_AFTER + 2, active
        assert not any(ask.done() for ask in asks)
        # ... and went out in a few ``POST /batch`` requests, not one request each.
        assert 1 <= batcher.batches <= count // 4, batcher
        responder.go.set()
        results = await asyncio.wait_for(asyncio.gather(*asks), 60)
    finally:
        responder.close()
        await client.aclose()
    for i, result in enumerate(results):
        assert (result.responded, result.reply) == (True, f"re: q{i}"), i
        assert result.response == f"Human response: re: q{i}"
        assert result.status == "ended"


async def test_a_dropped_stream_resumes_and_loses_nothing(
    service: RunningService, account: str
) -> None:
    count = 30
    responder = Responder(service, account, count)
    client = AsyncHumanWire(api_key=account, base_url=service.base_url)
    try:
        asks = _ask_all(client, "d", count)
        await asyncio.to_thread(responder.all_out.wait, 30)
        hub = client._driver.hub
        assert hub is not None
        for _ in range(50):
            if hub._response is not None:
                break
            await asyncio.sleep(0.05)
        assert hub._response is not None
        await hub._response.aclose()  # the connection drops
        responder.go.set()
        results = await asyncio.wait_for(asyncio.gather(*asks), 60)
        assert hub.reconnects >= 1
    finally:
        responder.close()
        await client.aclose()
    assert [r.reply for r in results] == [f"re: d{i}" for i in range(count)]


class LoseFirstBatchAnswer(httpx.AsyncBaseTransport):
    """The real transport, except that the first ``POST /batch``'s answer is lost on the
    way back (the service did the work; the client sees the connection drop)."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.lost = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if request.url.path == "/batch" and not self.lost:
            self.lost += 1
            await response.aread()
            await response.aclose()
            raise httpx.ReadError("connection reset by peer", request=request)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_lost_batch_answer_is_retried_under_the_same_keys(
    service: RunningService, account: str
) -> None:
    count = 40
    responder = Responder(service, account, count)
    transport = LoseFirstBatchAnswer()
    async with httpx.AsyncClient(transport=transport) as http:
        client = AsyncHumanWire(api_key=account, base_url=service.base_url, http_client=http)
        try:
            asks = _ask_all(client, "l", count)
            await asyncio.to_thread(responder.all_out.wait, 30)
            responder.go.set()
            results = await asyncio.wait_for(asyncio.gather(*asks), 60)
            batcher = client._driver.batcher
            assert transport.lost == 1 and batcher is not None and batcher.batches >= 2
        finally:
            responder.close()
            await client.aclose()
    # Every ask got its own answer; the retries re-attached, nothing went out twice.
    assert [r.reply for r in results] == [f"re: l{i}" for i in range(count)]
    with HumanWire(api_key=account, base_url=service.base_url) as check:
        texts = [d.text for d in check.sandbox.deliveries(channel="slack")]
    assert sorted(texts) == sorted(f"l{i}" for i in range(count))


async def test_waits_that_time_out_return_the_no_response_text(
    service: RunningService, account: str
) -> None:
    client = AsyncHumanWire(api_key=account, base_url=service.base_url)
    try:
        results = await asyncio.gather(
            *[
                client.messages.slack(
                    to=SLACK_HUMAN, message=f"t{i}", wait_time=1, follow_up_time=60
                )
                for i in range(12)
            ]
        )
        assert client._driver.hub is not None  # past the handful: through the stream
        assert client._driver.hub.event_type == "wait.ended"  # the service took the filter
    finally:
        await client.aclose()
    for result in results:
        assert (result.responded, result.response) == (False, NO_RESPONSE)
        assert result.status == "pending"  # the follow-up window listens on


def test_a_sync_client_shared_by_many_threads(service: RunningService, account: str) -> None:
    count = 40
    responder = Responder(service, account, count)
    responder.go.set()
    with HumanWire(api_key=account, base_url=service.base_url) as client:
        with ThreadPoolExecutor(max_workers=count) as pool:
            futures = [
                pool.submit(client.messages.slack, to=SLACK_HUMAN, message=f"s{i}", wait_time=30)
                for i in range(count)
            ]
            results = [future.result(timeout=60) for future in futures]
        assert client._driver.hub is not None
        assert client._driver.hub.event_type == "wait.ended"  # the service took the filter
    responder.close()
    assert [r.reply for r in results] == [f"re: s{i}" for i in range(count)]


@pytest.fixture(autouse=True)
def _no_leaked_threads() -> Iterator[None]:
    """A closed sync client's outcome stream thread ends with it."""
    before = set(threading.enumerate())
    yield
    started = [
        t for t in threading.enumerate() if t.name == "humanwire-outcomes" and t not in before
    ]
    for thread in started:
        thread.join(5)
    assert not [t for t in started if t.is_alive()]


async def test_own_http_client_and_opting_out(service: RunningService, account: str) -> None:
    import httpx

    async with httpx.AsyncClient() as http:
        client = AsyncHumanWire(api_key=account, base_url=service.base_url, http_client=http)
        await asyncio.gather(
            *[client.messages.slack(to=SLACK_HUMAN, message=f"o{i}", wait_time=1) for i in range(8)]
        )
        hub = client._driver.hub
        assert hub is not None and hub._task is not None
        task = hub._task
        await client.aclose()  # the stream ends with the client, on your http client too
        assert task.done() and http.is_closed is False
        held = AsyncHumanWire(
            api_key=account, base_url=service.base_url, http_client=http, multiplex_waits=False
        )
        results = await asyncio.gather(
            *[held.messages.slack(to=SLACK_HUMAN, message=f"h{i}", wait_time=1) for i in range(8)]
        )
        assert held._driver.hub is None  # every wait held its own connection
        assert all(r.response == NO_RESPONSE for r in results)
        await held.aclose()


class CountInFlight(httpx.AsyncBaseTransport):
    """The real transport, counting the requests in flight through it (each kept a little
    while, as a busy service would)."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.in_flight = 0
        self.most = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(0.02)
            return await self.inner.handle_async_request(request)
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_thousands_of_short_requests_wait_their_turn_in_the_client(
    service: RunningService, account: str
) -> None:
    # A gather of requests that hold nothing (here reads; approvals created, consumes)
    # goes out SHORT_REQUESTS_AT_ONCE at a time: the rest wait in the client, not in
    # httpx's pool, where each would spend its pool timeout.
    transport = CountInFlight()
    async with httpx.AsyncClient(transport=transport) as http:
        client = AsyncHumanWire(api_key=account, base_url=service.base_url, http_client=http)
        try:
            pages = await asyncio.wait_for(
                asyncio.gather(*(client.sandbox.deliveries(channel="slack") for _ in range(300))),
                120,
            )
        finally:
            await client.aclose()
    assert len(pages) == 300 and all(page == [] for page in pages)
    assert 1 < transport.most <= SHORT_REQUESTS_AT_ONCE
