"""The HTTP surface over a real socket (uvicorn), where connection handling differs from
the in-process tests: size limits, key-less endpoints, error bodies."""

from __future__ import annotations

import http.client
import time
from collections.abc import Iterator

import httpx
import pytest
from e2e_support import HUMAN

from humanwire import HumanWire
from humanwire.errors import PayloadTooLargeError
from humanwire.testing import RunningService


def test_oversized_bodies_are_413_over_the_wire(
    humanwire_service: RunningService, humanwire_api_key: str, humanwire_client: HumanWire
) -> None:
    url = f"{humanwire_service.base_url}/messages/sms"
    headers = {"Authorization": f"Bearer {humanwire_api_key}", "Content-Type": "application/json"}
    declared = httpx.post(url, content=b" " * (4 << 20), headers=headers)
    assert declared.status_code == 413
    assert declared.json()["error"]["code"] == "payload_too_large"

    def chunks() -> Iterator[bytes]:
        for _ in range(6):
            yield b" " * (256 << 10)

    streamed = httpx.post(url, content=chunks(), headers=headers)
    assert streamed.status_code == 413
    with pytest.raises(PayloadTooLargeError):
        humanwire_client.messages.sms(message="x" * (1 << 20), to=HUMAN)
    assert humanwire_client.sandbox.deliveries() == []
    # The service is unharmed.
    assert humanwire_client.numbers.list() == []


def test_keyless_endpoints_and_error_bodies_over_the_wire(
    humanwire_service: RunningService,
) -> None:
    base = humanwire_service.base_url
    assert httpx.get(f"{base}/healthz").json() == {"status": "ok"}
    document = httpx.get(f"{base}/openapi.json").json()
    assert document["openapi"] == "3.1.0"
    assert document["servers"] == [{"url": base}]
    missing = httpx.get(f"{base}/numbers")
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert missing.json()["error"]["code"] == "unauthorized"
    unknown = httpx.get(f"{base}/v2/numbers")
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "not_found")


def test_an_idle_connection_outlives_the_clients_keep_alive(
    humanwire_service: RunningService,
) -> None:
    # httpx keeps an idle connection 5 s; a server that closed its side at 5 s too raced
    # the client's reuse (a read error on the next request). The server waits longer.
    host, port = humanwire_service.base_url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", "/healthz")
        first = conn.getresponse()
        assert (first.status, first.read()) == (200, b'{"status":"ok"}')
        sock = conn.sock
        time.sleep(6.0)
        # The same connection, idle longer than httpx keeps one: a server that closed it
        # makes this RemoteDisconnected.
        conn.request("GET", "/healthz")
        second = conn.getresponse()
        assert (second.status, second.read()) == (200, b'{"status":"ok"}')
        assert conn.sock is sock
    finally:
        conn.close()


def test_answers_on_a_kept_alive_connection_are_not_held_back(
    humanwire_service: RunningService,
) -> None:
    # An answer is written in two parts (head, body). Without TCP_NODELAY on the
    # service's sockets the second waited for the client's delayed ACK: ~40 ms a request
    # on every kept-alive connection past its first few exchanges.
    host, port = humanwire_service.base_url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        started = time.monotonic()
        for _ in range(20):
            conn.request("GET", "/healthz")
            answer = conn.getresponse()
            assert (answer.status, answer.read()) == (200, b'{"status":"ok"}')
        elapsed = time.monotonic() - started
    finally:
        conn.close()
    assert elapsed < 0.5, f"20 requests took {elapsed:.2f} s"
