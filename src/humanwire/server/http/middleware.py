"""What every request passes through, outermost first: below the app, its connection's
guards (in uvicorn's HTTP protocol, ``guarded_protocol``); around its route
(``http.app._Service``): its id, access line and metrics, and the store's commit before
its answer starts (both ``ObserveMiddleware``), and its body's size limit
(``BodyLimitMiddleware``); and the JSON parsing of bodies into the wire models
(``parse_json_body``).

What an operator sees of a running service, on the HTTP side: request ids in and out,
the HTTP metrics, the access line, and ``GET /metrics``. The parts that know no HTTP
(metrics hooks, structured lines, formatters, redaction) are in
``humanwire.server.telemetry`` and re-exported here.

- **Request ids**: :class:`ObserveMiddleware` (outside every other layer, so even a 500
  carries it) takes a well-formed ``Humanwire-Request-Id`` or makes one, echoes it on
  the response and keeps a :class:`RequestContext` for the request that the pipeline
  and the engine fill in (the account, the interaction).
- **Access lines**: one ``humanwire.access`` line per request.
- **Metrics**: ``GET /metrics`` serves the engine's registry.
- **Bodies**: the size limit holds for every route, pages included.

Guards on the service's connections, in uvicorn's HTTP protocol (below the app, where a
connection is made before any request exists):

- **A request must arrive in time.** Its head within ``head_timeout`` seconds of the
  connection opening (on a kept-alive connection: of the next request's first byte; the
  quiet time between requests is uvicorn's keep-alive timeout), its body within
  ``body_timeout`` seconds of the head. Past either the connection is closed. Only the
  request is timed, never the answer: a held send, a long-poll or an event stream goes on
  as long as it needs once its request is in.
- **A WebSocket upgrade's head is bounded as the WebSocket parser bounds it.** h11 takes a
  head of up to 16 kB, but the upgraded protocol (``websockets``) re-reads it with its own
  limits (a line of 8 kB, 128 headers) and, past them, said nothing and left the
  connection open. A head over those limits is answered **431** here and closed; one the
  WebSocket protocol still refuses (a request body, say) **400**. Once upgraded, the
  connection is the WebSocket protocol's: no request limit times it (the body timer that
  h11's state would start cut accepted sockets, relay calls, at ``body_timeout``).
- **One client address holds a bounded number of connections**
  (``max_connections_per_address``; an IPv6 client counts by its /64). Past the bound a
  new connection is answered 429 ``rate_limited`` at once, before anything is read, and
  closed. The address is the TCP peer's; a peer in ``trusted_proxies`` is not bounded
  (behind a proxy every connection is the proxy's: the proxy bounds its clients).

Without them a connection that never finished its request stayed open for ever, and a few
hundred from one client took every descriptor the process had.

``guarded_protocol(config)`` is the protocol class for ``uvicorn.Config(http=...)``: h11's,
the implementation the service runs on (docs/explanation/performance.md: httptools gave nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import logging
import re
import time
import uuid
from collections import Counter
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from pydantic import TypeAdapter, ValidationError
from pydantic_core import from_json
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..config import ServiceConfig
from ..errors import InvalidRequest, PayloadTooLarge
from ..store.commits import TOUCHED, StoreUnavailable, Touched
from ..telemetry import (
    LOG_FORMATS,
    LOG_LEVELS,
    METRICS_EXTRA,
    JsonFormatter,
    Metrics,
    RequestContext,
    TextFormatter,
    access_logger,
    configure_logging,
    current_request,
    enter_request,
    leave_request,
    log_event,
    mask_address,
    metrics_available,
    new_metrics,
    note_account,
    note_interaction,
    redact_numbers,
)
from .errors import error_response, service_error_from_validation, store_unavailable_response

if TYPE_CHECKING:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from ..store import Store

__all__ = [
    "DISCONNECT_EXTENSION",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "METRICS_EXTRA",
    "REQUEST_ID_HEADER",
    "AddressCounts",
    "BodyLimitMiddleware",
    "DisconnectWatch",
    "JsonFormatter",
    "Metrics",
    "ObserveMiddleware",
    "RequestContext",
    "RequestLimits",
    "TextFormatter",
    "address_key",
    "configure_logging",
    "current_request",
    "guarded_protocol",
    "is_trusted",
    "log_event",
    "mask_address",
    "metrics_available",
    "metrics_endpoint",
    "new_metrics",
    "note_account",
    "note_interaction",
    "parse_json_body",
    "redact_numbers",
]

logger = logging.getLogger("humanwire.server")


T = TypeVar("T")


def _too_large(limit: int) -> str:
    return f"request body is larger than {limit} bytes"


class BodyLimitMiddleware:
    """Refuses a declared ``Content-Length`` over the limit before anything is read, and
    counts the bytes actually streamed (chunked bodies declare no length): past the
    limit ``receive`` raises ``PayloadTooLarge``, which the app turns into a 413.

    A function that returns the inner app's coroutine, not a coroutine awaiting it: a
    held request keeps no frame of this layer alive."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        if scope["type"] != "http":
            return self.app(scope, receive, send)
        limit = self.max_body_bytes
        declared = [v for k, v in scope["headers"] if k == b"content-length"]
        if declared:
            try:
                length = int(declared[0])
            except ValueError:
                length = -1
            if length < 0 or len(declared) > 1:
                response = error_response(400, "invalid_request", "invalid Content-Length")
                return response(scope, receive, send)
            if length > limit:
                response = error_response(413, "payload_too_large", _too_large(limit))
                return response(scope, receive, send)
        return self.app(scope, _LimitedReceive(receive, limit), send)


class _LimitedReceive:
    """``receive``, counting the body's bytes against the limit."""

    __slots__ = ("_limit", "_receive", "_received")

    def __init__(self, receive: Receive, limit: int) -> None:
        self._receive = receive
        self._limit = limit
        self._received = 0

    async def __call__(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.request":
            self._received += len(message.get("body", b""))
            if self._received > self._limit:
                raise PayloadTooLarge(_too_large(self._limit))
        return message


def _is_json(content_type: str | None) -> bool:
    if content_type is None:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def _nul_at(value: Any, path: str = "") -> str | None:
    """The path (``fields[0].label``) of the first string, or object key, holding a NUL."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            inner = f"{path}.{key}" if path else str(key)
            if "\x00" in key:
                return path or inner
            found = _nul_at(item, inner)
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _nul_at(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def parse_json_body(raw: bytes, content_type: str | None, adapter: TypeAdapter[T]) -> T:
    """The body validated by its wire model, or the ``ServiceError`` that says why not:
    wrong content type, empty, not JSON, not an object, or failing a rule of the model."""
    if not raw.strip():
        raise InvalidRequest("a JSON object body is required")
    if not _is_json(content_type):
        raise InvalidRequest("Content-Type must be application/json")
    try:
        # pydantic's parser has a nesting limit; the stdlib one would hit RecursionError.
        data: Any = from_json(raw)
    except ValueError as exc:
        raise InvalidRequest(f"body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidRequest("body must be a JSON object")
    if b"\\u0000" in raw:  # rare: only then walk the body
        field = _nul_at(data)
        if field is not None:
            # No channel carries a NUL, and PostgreSQL's text cannot store one.
            raise InvalidRequest(f"{field} must not contain the NUL character", field=field)
    try:
        return adapter.validate_json(raw)
    except ValidationError as exc:
        raise service_error_from_validation(exc) from None


REQUEST_ID_HEADER = "Humanwire-Request-Id"
_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
"""An incoming id is kept when it is this (a UUID, a ULID, ``req-42``…); else a new one."""
UNMATCHED = "<unmatched>"
"""The route label of a request no route matched (keeps the label set bounded)."""


# -- the HTTP side --------------------------------------------------------------------------
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _request_id(scope: Scope) -> str:
    for name, value in scope["headers"]:
        if name == b"humanwire-request-id":
            try:
                given: str = value.decode("ascii")
            except UnicodeDecodeError:
                break
            if _REQUEST_ID.fullmatch(given):
                return given
            break
    return uuid.uuid4().hex


class ObserveMiddleware:
    """The outermost layer: request id in and out, the HTTP metrics, the access line;
    and, given the ``store``, its commit before the answer starts.

    The commit: the SQLite store groups a loop turn's writes into one transaction
    committed on the next turn, and the response would otherwise reach the client first
    (uvicorn writes it at once), uncommitted — invisible to another process, lost if this
    one died then. A response whose request read or wrote in a batch that was rolled back
    (the disk full) is not sent: a 503 with ``Retry-After`` goes out in its place, so
    nothing the database lost is answered as done.

    Both in one layer (they were two): one frame and one ``send`` wrapper a request,
    which a held request keeps alive for as long as it is held."""

    def __init__(
        self,
        app: ASGIApp,
        metrics: Metrics,
        store: Store | None = None,
        retry_after: float = 1.0,
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.store = store
        self.retry_after = retry_after
        """With ``store``: the ``Retry-After`` of the 503 sent in place of a response
        whose writes were rolled back."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        ctx = RequestContext(_request_id(scope))
        touched = Touched() if self.store is not None else None
        answer = _Answer(self, scope, receive, send, ctx, touched)
        token = enter_request(ctx)
        # This request's context, and the tasks it starts: a store that commits later
        # adds its commit to ``touched``.
        touched_token = TOUCHED.set(touched) if touched is not None else None
        try:
            await self.app(scope, receive, answer)
        finally:
            if touched_token is not None:
                TOUCHED.reset(touched_token)
            leave_request(token)
            seconds = time.perf_counter() - started
            status = answer.status
            route = getattr(scope.get("route"), "path", None) or UNMATCHED
            method = scope["method"] if scope["method"] in _METHODS else "OTHER"
            self.metrics.http_request(method, route, status, seconds)
            if access_logger.isEnabledFor(logging.INFO):
                fields: dict[str, Any] = {
                    "method": method,
                    "route": route,
                    "status": status,
                    "duration_ms": round(seconds * 1000, 1),
                    "account_id": ctx.account_id,
                }
                if route == UNMATCHED:
                    # No route, so no capability token in it (those are /f/{token}…).
                    fields["path"] = scope["path"][:200]
                log_event(
                    access_logger,
                    "http.request",
                    interaction_id=ctx.interaction_id,
                    request_id=ctx.request_id,
                    **fields,
                )


class _Answer:
    """The ``send`` of a request under ``ObserveMiddleware``: commits the store as the
    response starts (a response whose writes were rolled back replaced by a 503), echoes
    the request id, and keeps the status."""

    __slots__ = ("_ctx", "_layer", "_receive", "_replaced", "_scope", "_send", "_touched", "status")

    def __init__(
        self,
        layer: ObserveMiddleware,
        scope: Scope,
        receive: Receive,
        send: Send,
        ctx: RequestContext,
        touched: Touched | None,
    ) -> None:
        self._layer = layer
        self._scope = scope
        self._receive = receive
        self._send = send
        self._ctx = ctx
        self._touched = touched
        self._replaced = False
        self.status = 500
        """What the client sees if the app fails before answering."""

    async def __call__(self, message: Message) -> None:
        if self._replaced:
            return  # the handler's body, after its start was replaced
        touched = self._touched
        if touched is not None and message["type"] == "http.response.start":
            store = self._layer.store
            assert store is not None
            with contextlib.suppress(StoreUnavailable):
                store.commit()  # a failure lands in ``touched`` if ours
            if touched.failure() is not None:
                self._replaced = True
                response = store_unavailable_response(self._layer.retry_after)
                await response(self._scope, self._receive, self._forward)
                return
        await self._forward(message)

    async def _forward(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            echoed = (b"humanwire-request-id", self._ctx.request_id.encode("ascii"))
            message = {**message, "headers": [*message.get("headers", ()), echoed]}
        await self._send(message)


def _loopback(scope: Scope) -> bool:
    from ..net import is_loopback

    client = scope.get("client")
    return client is not None and is_loopback(str(client[0]))


async def metrics_endpoint(request: Request) -> Response:
    """``GET /metrics``: the Prometheus text format. With ``metrics_token`` set, only
    ``Authorization: Bearer <metrics_token>`` opens it (from anywhere, loopback too);
    without one, only loopback clients."""
    from ..errors import NotFound, Unauthorized
    from .errors import service_error_response

    token: str | None = request.app.state.config.metrics_token
    if token is not None:
        header = request.headers.get("authorization", "")
        scheme, _, given = header.strip().partition(" ")
        ok = scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode(), token.encode()
        )
        if not ok:
            return service_error_response(
                Unauthorized(
                    "/metrics needs the metrics token: Authorization: Bearer <metrics_token>"
                )
            )
    elif not _loopback(request.scope):
        return service_error_response(
            Unauthorized(
                "/metrics answers loopback clients only; set metrics_token "
                "(HUMANWIRE_METRICS_TOKEN) to scrape it from elsewhere"
            )
        )
    metrics: Metrics = request.app.state.engine.metrics
    if not metrics.enabled:
        return service_error_response(NotFound(f"metrics need prometheus-client: {METRICS_EXTRA}"))
    # The store is read here, where it can be awaited; the collector reads what it found.
    await request.app.state.engine.read_outbox_depth()
    body, content_type = metrics.exposition()
    return Response(body, 200, headers={"Content-Type": content_type})


DISCONNECT_EXTENSION = "humanwire.disconnect"
"""The ASGI scope extension (``scope["extensions"]``) by which the service's own protocol
(``guarded_protocol``) offers a request ``settle_on_disconnect(future)``: the future is
settled when the client's connection is lost before the response completes. A held send
watches its client so, with no task reading ``receive`` for ``http.disconnect`` (a task,
its coroutines and a future: 2 KiB of every held wait, benchmarks/HISTORY.md). Under
another server the pipeline reads ``receive`` as before (``routes._api``)."""


class DisconnectWatch(Protocol):
    def settle_on_disconnect(self, gone: asyncio.Future[None]) -> None: ...


REFUSED_RETRY_AFTER = 1
"""``Retry-After`` of the 429 a connection over the per-address bound gets."""
REFUSAL_WARNING_INTERVAL = 60.0
"""Seconds between two warnings about refused connections (the rest: debug lines)."""


@dataclass(frozen=True)
class RequestLimits:
    head_timeout: float
    body_timeout: float


def address_key(peer: tuple[str, int] | None) -> str | None:
    """What a peer is counted under: its IPv4 address (an IPv4-mapped IPv6 one too), or
    its IPv6 /64 (one client's usual share of addresses); None when there is no IP peer
    (a Unix socket), which is never bounded."""
    if not peer:
        return None
    try:
        address = ipaddress.ip_address(peer[0].split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def is_trusted(
    peer: tuple[str, int] | None,
    proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...],
) -> bool:
    """Whether the TCP peer is one of the trusted proxies (``trusted_proxies``)."""
    if not peer:
        return False
    try:
        address = ipaddress.ip_address(peer[0].split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in network for network in proxies)


class AddressCounts:
    """The connections open per client address, for one server (all on its loop)."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        """Connections one address may hold; 0: no bound."""
        self._open: Counter[str] = Counter()

    def admit(self, address: str) -> bool:
        """Counts a new connection from ``address``; False (not counted) when the address
        already holds ``bound`` of them."""
        if self.bound and self._open[address] >= self.bound:
            return False
        self._open[address] += 1
        return True

    def release(self, address: str) -> None:
        left = self._open[address] - 1
        if left > 0:
            self._open[address] = left
        else:
            del self._open[address]

    def open(self, address: str) -> int:
        return self._open.get(address, 0)


def _answer(status: str, code: str, message: str, *extra_headers: str) -> bytes:
    """A whole closing answer in the service's error shape, written to the transport
    (below the app: no request exists to answer)."""
    body = json.dumps(
        {"error": {"code": code, "message": message, "field": None}},
        separators=(",", ":"),
    ).encode()
    head = "".join(
        [
            f"HTTP/1.1 {status}\r\n",
            "content-type: application/json\r\n",
            f"content-length: {len(body)}\r\n",
            *(f"{header}\r\n" for header in extra_headers),
            "connection: close\r\n\r\n",
        ]
    )
    return head.encode("ascii") + body


def _refusal(bound: int) -> bytes:
    """The whole answer to a connection over the bound."""
    message = (
        f"too many open connections from this address (at most {bound}); retry once one "
        "of them has closed"
    )
    return _answer(
        "429 Too Many Requests", "rate_limited", message, f"retry-after: {REFUSED_RETRY_AFTER}"
    )


def _upgrade_too_large(target: bytes, headers: list[tuple[bytes, bytes]]) -> bytes | None:
    """The 431 answering a WebSocket upgrade whose head the WebSocket parser would refuse
    (a line longer than it reads, more headers than it takes); None when it is within."""
    from websockets import http11

    longest = max(
        [len(target) + len(b"GET  HTTP/1.1\r\n")]
        + [len(name) + len(value) + len(b": \r\n") for name, value in headers]
    )
    if longest <= http11.MAX_LINE_LENGTH and len(headers) <= http11.MAX_NUM_HEADERS:
        return None
    message = (
        f"the WebSocket upgrade's head is too large: a line may be {http11.MAX_LINE_LENGTH} "
        f"bytes, and there may be {http11.MAX_NUM_HEADERS} headers"
    )
    return _answer("431 Request Header Fields Too Large", "invalid_request", message)


_UNREADABLE_UPGRADE = _answer(
    "400 Bad Request", "invalid_request", "the WebSocket upgrade request could not be read"
)


def _upgrade_unreadable(head: bytes) -> bool:
    """Whether the WebSocket parser refuses ``head`` (a body, a method or version it does
    not take): read here with that parser first, so the refusal is answered in the
    service's shape whatever the upgraded protocol would write of its own (uvicorn 0.55
    answers it itself, in text/plain)."""
    from websockets import http11
    from websockets.streams import StreamReader

    reader = StreamReader()
    reader.feed_data(head)
    reader.feed_eof()
    parse = http11.Request.parse(reader.read_line)
    try:
        next(parse)
    except StopIteration:
        return False
    except Exception:  # whatever the parser refuses, with whichever error it raises
        return True
    return True  # it wants more than the whole head: it cannot read it


def guarded_protocol(config: ServiceConfig) -> type[H11Protocol]:
    """uvicorn's h11 protocol with the request time limits and the per-address bound of
    ``config``; one class per server (its connections share the counts). Built on call,
    so importing this module does not import uvicorn."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    limits = RequestLimits(config.head_timeout, config.body_timeout)
    counts = AddressCounts(config.max_connections_per_address)
    proxies = tuple(ipaddress.ip_network(proxy, strict=False) for proxy in config.trusted_proxies)
    refusal = _refusal(counts.bound)

    class GuardedH11Protocol(H11Protocol):
        _quiet_until: ClassVar[float] = float("-inf")
        """Refusals until then are logged at debug level only."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._address: str | None = None
            """The address this connection is counted under, while it is."""
            self._deadline: tuple[str, asyncio.TimerHandle] | None = None
            """What is timed (``"head"`` or ``"body"``) and its timer; None: nothing. One
            attribute for the two: one more on uvicorn's protocol grows every
            connection's attribute table (1.5 KiB, benchmarks/HISTORY.md 2026-12-04)."""
            self._upgraded = False
            """The transport is the WebSocket protocol's: nothing is timed here any more."""
            self._gone: asyncio.Future[None] | None = None
            """Settled if the connection is lost before the current request's response
            completes (``settle_on_disconnect``)."""

        # -- the request's client going away (``DISCONNECT_EXTENSION``) --------------
        def handle_events(self) -> None:
            cycle = self.cycle
            super().handle_events()
            if self.cycle is not cycle and self.cycle is not None:
                # A request's cycle just began (its app task has not run yet).
                self.cycle.scope["extensions"] = {DISCONNECT_EXTENSION: self}

        def settle_on_disconnect(self, gone: asyncio.Future[None]) -> None:
            """``gone`` is settled if the connection is lost before the current
            request's response completes (at once if it was lost already)."""
            if self.cycle is not None and self.cycle.disconnected:
                if not gone.done():
                    gone.set_result(None)
                return
            self._gone = gone

        # -- the connection ---------------------------------------------------------
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            address = None if is_trusted(self.client, proxies) else address_key(self.client)
            if address is not None:
                if not counts.admit(address):
                    self._log_refusal(address)
                    transport.write(refusal)
                    transport.close()
                    return
                self._address = address
            self._start("head", limits.head_timeout)

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop()
            if self._address is not None:
                counts.release(self._address)
                self._address = None
            super().connection_lost(exc)
            gone, self._gone = self._gone, None
            if gone is not None and not gone.done():
                gone.set_result(None)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._follow_request()

        def handle_websocket_upgrade(self, event: h11.Request) -> None:
            # The WebSocket protocol takes the transport over: this connection's count
            # is released when that protocol loses it.
            self._stop()
            too_large = _upgrade_too_large(event.target, self.headers)
            if too_large is not None:
                self.transport.write(too_large)
                self.transport.close()
                return
            head = [event.method, b" ", event.target, b" HTTP/1.1\r\n"]
            for name, value in self.headers:
                head += [name, b": ", value, b"\r\n"]
            if _upgrade_unreadable(b"".join([*head, b"\r\n"])):
                self.transport.write(_UNREADABLE_UPGRADE)
                self.transport.close()
                return
            super().handle_websocket_upgrade(event)
            self._upgraded = True
            upgraded = self.transport.get_protocol()
            if upgraded is not self and not getattr(upgraded, "handshake_initiated", True):
                # It was handed the whole head and refused it without a word: answer.
                self.transport.write(_UNREADABLE_UPGRADE)
                self.transport.close()
            address, self._address = self._address, None
            if address is None or upgraded is self:
                return
            lost = upgraded.connection_lost

            def connection_lost(exc: Exception | None) -> None:
                counts.release(address)
                lost(exc)

            upgraded.connection_lost = connection_lost  # type: ignore[method-assign]

        def on_response_complete(self) -> None:
            self._gone = None  # its request is answered: nobody waits on it any more
            # A pipelined request already buffered is parsed here.
            super().on_response_complete()
            self._follow_request()

        @classmethod
        def _log_refusal(cls, address: str) -> None:
            # A warning an operator sees (a proxy in front makes every client one
            # address), but at most one a minute: refusals may come by the thousand.
            now = time.monotonic()
            if now < cls._quiet_until:
                logger.debug("refused a connection from %s", address)
                return
            cls._quiet_until = now + REFUSAL_WARNING_INTERVAL
            logger.warning(
                "refused a connection from %s: it holds %d, the most one address may "
                "(http.max_connections_per_address; behind a proxy, raise it or set 0)",
                address,
                counts.bound,
            )

        # -- the deadline -----------------------------------------------------------
        def _follow_request(self) -> None:
            """Times whatever part of a request the client owes now."""
            if self._upgraded:
                # h11 never saw the upgrade's end (its state says a body is owed): a
                # body timer would cut the socket at body_timeout, a minute into a call.
                return
            state = self.conn.their_state
            if state is h11.IDLE:
                # Between requests nothing is timed here (the keep-alive timeout is);
                # a next request's first bytes start its head's clock. A fresh
                # connection's clock started when it was made.
                if self._deadline is None and self.conn.trailing_data[0]:
                    self._start("head", limits.head_timeout)
            elif state is h11.SEND_BODY:
                if self._deadline is None or self._deadline[0] != "body":
                    self._start("body", limits.body_timeout)
            else:
                # The request is in (or the connection is done, or switching
                # protocols): the answer takes the time it takes.
                self._stop()

        def _start(self, timing: str, seconds: float) -> None:
            self._stop()
            if self.transport.is_closing():
                return
            self._deadline = (timing, self.loop.call_later(seconds, self._expire, timing, seconds))

        def _stop(self) -> None:
            if self._deadline is not None:
                self._deadline[1].cancel()
                self._deadline = None

        def _expire(self, timing: str, seconds: float) -> None:
            self._deadline = None
            if self.transport.is_closing():
                return
            peer = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
            logger.debug(
                "closed the connection of %s: no request %s within %g s", peer, timing, seconds
            )
            self.transport.close()

    return GuardedH11Protocol
