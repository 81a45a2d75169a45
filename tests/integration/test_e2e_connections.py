"""The service's own connections over loopback sockets: a request must arrive in time (its
head within ``head_timeout``, its body within ``body_timeout``), one client address holds
a bounded number of connections, and neither limit cuts a held answer or an event stream.

Raw sockets, not httpx: the tests send half a request, a byte at a time, or nothing."""

from __future__ import annotations

import json
import logging
import select
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from e2e_support import HUMAN, NO_RESPONSE, StartService

from humanwire.testing import RunningService

HEAD_TIMEOUT = 1.0
BODY_TIMEOUT = 1.5
SLACK = 1.5
"""Seconds a close may come after its limit on a shared, loaded machine."""


@pytest.fixture
def service(start_service: StartService) -> RunningService:
    return start_service(head_timeout=HEAD_TIMEOUT, body_timeout=BODY_TIMEOUT)


def connect(service: RunningService) -> socket.socket:
    host, port = service.base_url.removeprefix("http://").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10)


def closed_by_peer(sock: socket.socket, wait: float) -> bool:
    """True once the service closed ``sock`` (waiting up to ``wait`` s); what it sent
    before closing is read and dropped."""
    deadline = time.monotonic() + wait
    while True:
        readable, _, _ = select.select([sock], [], [], max(0.0, deadline - time.monotonic()))
        if not readable:
            return False
        try:
            if sock.recv(65536) == b"":
                return True
        except ConnectionResetError:
            return True


def read_until_closed(sock: socket.socket, limit: float) -> tuple[float, bytes]:
    """Seconds until the service closed ``sock`` and everything it sent; fails at ``limit``."""
    started = time.monotonic()
    received = b""
    while True:
        left = limit - (time.monotonic() - started)
        readable, _, _ = select.select([sock], [], [], max(0.0, left))
        if not readable:
            pytest.fail(f"the connection was still open after {limit} s")
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return time.monotonic() - started, received
        received += chunk


def trickle(sock: socket.socket, limit: float) -> float:
    """Sends one byte every 0.1 s until the service closes ``sock``; the seconds that took."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        try:
            sock.send(b"a")
        except (BrokenPipeError, ConnectionResetError):
            break
        if closed_by_peer(sock, 0.1):
            break
    else:
        pytest.fail(f"the connection was still open after {limit} s of trickling")
    return time.monotonic() - started


def response(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


def exchange(sock: socket.socket, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Sends ``request`` and reads one response with a ``Content-Length``."""
    sock.sendall(request)
    raw = b""
    while b"\r\n\r\n" not in raw:
        chunk = sock.recv(65536)
        assert chunk, f"closed mid-response: {raw!r}"
        raw += chunk
    status, headers, body = response(raw)
    while len(body) < int(headers["content-length"]):
        chunk = sock.recv(65536)
        assert chunk, f"closed mid-body: {raw!r}"
        body += chunk
    return status, headers, body


HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: hw\r\n\r\n"


def test_a_connection_that_sends_nothing_is_closed_at_the_head_timeout(
    service: RunningService,
) -> None:
    with connect(service) as sock:
        elapsed, sent = read_until_closed(sock, HEAD_TIMEOUT + SLACK)
    assert sent == b""
    assert elapsed >= HEAD_TIMEOUT * 0.9


def test_a_trickled_head_is_closed_at_the_limit_though_bytes_keep_coming(
    service: RunningService,
) -> None:
    with connect(service) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: hw\r\nX-Slow: ")
        elapsed = trickle(sock, HEAD_TIMEOUT + SLACK)
    assert elapsed >= HEAD_TIMEOUT * 0.9


def _upgrade(target: str, *extra: str) -> bytes:
    """A WebSocket upgrade request for ``target``, with ``extra`` header lines."""
    lines = [
        f"GET {target} HTTP/1.1",
        "Host: hw",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
        *extra,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


RELAY = "/providers/twilio/relay?interaction=int_x"


@pytest.mark.parametrize(
    ("request_", "status"),
    [
        (_upgrade(RELAY + "&pad=" + "x" * 9000), 431),  # a request line over 8 kB
        (_upgrade(RELAY, "X-Pad: " + "x" * 9000), 431),  # a header line over 8 kB
        (_upgrade(RELAY, *(f"X-Pad-{n}: x" for n in range(130))), 431),  # 136 headers
        (_upgrade(RELAY, "Content-Length: 5") + b"hello", 400),  # a body
        (_upgrade(RELAY).replace(b"GET", b"PUT", 1), 400),  # a method it does not take
    ],
    ids=["request line", "header line", "headers", "body", "method"],
)
def test_a_websocket_upgrade_the_websocket_parser_refuses_is_answered_and_closed(
    service: RunningService, request_: bytes, status: int
) -> None:
    """h11 takes a head of up to 16 kB, then hands an upgrade to the WebSocket protocol,
    which reads it again with its own limits (a line of 8 kB, 128 headers) and refused
    what is past them without a word, the connection left open (for a minute, until
    the client gave up). Answered now, in the service's error shape, and closed within
    the head timeout."""
    with connect(service) as sock:
        sock.sendall(request_)
        _, sent = read_until_closed(sock, HEAD_TIMEOUT + SLACK)
    code, headers, body = response(sent)
    assert code == status
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["error"]["code"] == "invalid_request"
    with connect(service) as sock:  # the service goes on
        assert exchange(sock, HEALTHZ)[0] == 200


def test_a_trickled_body_is_closed_at_the_body_timeout(
    service: RunningService, caplog: pytest.LogCaptureFixture
) -> None:
    key = service.create_account("slow body")
    head = (
        "POST /messages/sms HTTP/1.1\r\nHost: hw\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
        "Content-Length: 1000\r\n\r\n"
    ).encode()
    with caplog.at_level(logging.WARNING), connect(service) as sock:
        sock.sendall(head)
        elapsed = trickle(sock, BODY_TIMEOUT + SLACK)
    # The head was in at once: the body's own limit closed it, not the head's.
    assert elapsed >= BODY_TIMEOUT * 0.9
    # The service goes on, and the request the app was reading ended quietly (a client
    # that went away is no internal error).
    with connect(service) as sock:
        assert exchange(sock, HEALTHZ)[0] == 200
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_a_kept_alive_connection_is_timed_from_the_next_requests_first_byte(
    service: RunningService,
) -> None:
    with connect(service) as sock:
        # A complete request, answered; the connection stays open.
        assert exchange(sock, HEALTHZ)[:1] == (200,)
        # Idle past the head timeout: uvicorn's keep-alive timeout governs the quiet
        # between requests (75 s), not the head timeout.
        assert not closed_by_peer(sock, HEAD_TIMEOUT + 0.5)
        assert exchange(sock, HEALTHZ)[0] == 200
        # The next request's head then has the head timeout from its first byte.
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        elapsed, sent = read_until_closed(sock, HEAD_TIMEOUT + SLACK)
    assert sent == b""
    assert elapsed >= HEAD_TIMEOUT * 0.9


def test_held_requests_and_streams_outlive_the_request_limits(service: RunningService) -> None:
    key = service.create_account("held")
    auth = f"Authorization: Bearer {key}\r\n"
    held = 2 * max(HEAD_TIMEOUT, BODY_TIMEOUT) + 0.5
    with ExitStack() as stack:
        stream = stack.enter_context(connect(service))
        stream.sendall(f"GET /events/stream HTTP/1.1\r\nHost: hw\r\n{auth}\r\n".encode())
        opened = b""
        while b": connected" not in opened:
            chunk = stream.recv(65536)
            assert chunk, opened
            opened += chunk
        assert response(opened)[0] == 200

        # A long-poll held past both limits, answered at its wait.
        poll = stack.enter_context(connect(service))
        started = time.monotonic()
        request = f"GET /events?wait={held:g} HTTP/1.1\r\nHost: hw\r\n{auth}\r\n"
        status, _, body = exchange(poll, request.encode())
        assert status == 200 and json.loads(body)["events"] == []
        assert time.monotonic() - started >= held - 0.1

        # A send held for its waitTime: the body arrived, the answer takes its time.
        send = stack.enter_context(connect(service))
        message = json.dumps({"to": HUMAN, "message": "still there?", "waitTime": held})
        started = time.monotonic()
        status, _, body = exchange(
            send,
            (
                f"POST /messages/sms HTTP/1.1\r\nHost: hw\r\n{auth}"
                f"Content-Type: application/json\r\nContent-Length: {len(message)}\r\n\r\n"
                f"{message}"
            ).encode(),
        )
        assert status == 200, body
        assert json.loads(body)["response"] == NO_RESPONSE
        assert time.monotonic() - started >= held - 0.1

        # The stream, open all along, still carries the events that happened meanwhile.
        streamed = b""
        while b"interaction.ended" not in streamed:
            readable, _, _ = select.select([stream], [], [], 10)
            assert readable, streamed
            chunk = stream.recv(65536)
            assert chunk, f"the stream was closed: {streamed!r}"
            streamed += chunk


@pytest.fixture
def bounded(start_service: StartService) -> RunningService:
    # A head timeout no test reaches: the connections stay open until closed here. No
    # trusted proxies: loopback, where the tests connect from, is one by default.
    return start_service(head_timeout=60.0, max_connections_per_address=3, trusted_proxies=())


@pytest.fixture
def sockets() -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    yield opened
    for sock in opened:
        sock.close()


def test_connections_per_address_are_bounded(
    bounded: RunningService, sockets: list[socket.socket], caplog: pytest.LogCaptureFixture
) -> None:
    sockets += [connect(bounded) for _ in range(3)]
    # One of the three in use, the other two idle: all count.
    assert exchange(sockets[0], HEALTHZ)[0] == 200
    for sock in sockets[1:]:
        assert not closed_by_peer(sock, 0.0)

    # A fourth from the same address is answered 429 at once and closed; so is a fifth.
    with caplog.at_level(logging.WARNING, logger="humanwire"):
        for _ in range(2):
            with connect(bounded) as extra:
                elapsed, sent = read_until_closed(extra, SLACK)
            status, headers, body = response(sent)
            assert status == 429
            assert headers["retry-after"] == "1" and headers["connection"] == "close"
            assert json.loads(body)["error"]["code"] == "rate_limited"
            assert elapsed < 1.0
    # The operator hears of it once (not once per refusal), with the setting to change.
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "127.0.0.1" in warning and "http.max_connections_per_address" in warning
    for sock in sockets:  # the others are untouched
        assert not closed_by_peer(sock, 0.0)
    assert exchange(sockets[1], HEALTHZ)[0] == 200

    # Closing one lets a new one in (once the service has seen it go).
    sockets.pop(0).close()
    deadline = time.monotonic() + 5
    while True:
        sock = connect(bounded)
        sock.sendall(HEALTHZ)
        raw = b""
        while chunk := sock.recv(65536):
            raw += chunk
            if b"\r\n\r\n" in raw:
                break
        if raw and response(raw)[0] == 200:
            sockets.append(sock)
            break
        sock.close()
        assert time.monotonic() < deadline, "a freed place was never given to a new connection"
        time.sleep(0.05)


def test_the_bound_can_be_turned_off(
    start_service: StartService, sockets: list[socket.socket]
) -> None:
    service = start_service(head_timeout=60.0, max_connections_per_address=0, trusted_proxies=())
    sockets += [connect(service) for _ in range(20)]
    for sock in sockets:
        assert exchange(sock, HEALTHZ)[0] == 200


def test_a_trusted_proxy_is_not_bounded(
    start_service: StartService, sockets: list[socket.socket]
) -> None:
    # Behind a proxy every connection is the proxy's; it bounds its own clients.
    service = start_service(
        head_timeout=60.0, max_connections_per_address=3, trusted_proxies=("127.0.0.0/8",)
    )
    sockets += [connect(service) for _ in range(10)]
    for sock in sockets:
        assert exchange(sock, HEALTHZ)[0] == 200


def test_an_upgraded_connection_is_counted_until_it_closes(
    bounded: RunningService, sockets: list[socket.socket]
) -> None:
    """The relay of real-time calls is a WebSocket: the upgraded connection leaves uvicorn's
    HTTP protocol, and its place under the bound is given back when it closes."""
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect as open_websocket

    url = bounded.base_url.replace("http://", "ws://", 1) + "/providers/no-such-socket"
    for _ in range(5):  # more than the bound, one after the other
        with pytest.raises(InvalidStatus) as refused:
            open_websocket(url, open_timeout=5)
        assert refused.value.response.status_code == 403
    time.sleep(0.2)  # the service sees the last one go
    sockets += [connect(bounded) for _ in range(3)]
    for sock in sockets:
        assert exchange(sock, HEALTHZ)[0] == 200
