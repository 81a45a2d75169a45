"""What every request passes through around its route, outermost first
(``http.app._Service``): its id, access line and metrics (``ObserveMiddleware``), the
store's commit before its answer starts (``CommitBeforeAnswering``), and its body's size
limit (``BodyLimitMiddleware``); and the JSON parsing of bodies into the wire models
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
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import re
import time
import uuid
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import TypeAdapter, ValidationError
from pydantic_core import from_json
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

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
    from ..store import Store

__all__ = [
    "LOG_FORMATS",
    "LOG_LEVELS",
    "METRICS_EXTRA",
    "REQUEST_ID_HEADER",
    "BodyLimitMiddleware",
    "CommitBeforeAnswering",
    "JsonFormatter",
    "Metrics",
    "ObserveMiddleware",
    "RequestContext",
    "TextFormatter",
    "configure_logging",
    "current_request",
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


T = TypeVar("T")


def _too_large(limit: int) -> str:
    return f"request body is larger than {limit} bytes"


class BodyLimitMiddleware:
    """Refuses a declared ``Content-Length`` over the limit before anything is read, and
    counts the bytes actually streamed (chunked bodies declare no length): past the
    limit ``receive`` raises ``PayloadTooLarge``, which the app turns into a 413."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_body_bytes
        declared = [v for k, v in scope["headers"] if k == b"content-length"]
        if declared:
            try:
                length = int(declared[0])
            except ValueError:
                length = -1
            if length < 0 or len(declared) > 1:
                response = error_response(400, "invalid_request", "invalid Content-Length")
                await response(scope, receive, send)
                return
            if length > limit:
                response = error_response(413, "payload_too_large", _too_large(limit))
                await response(scope, receive, send)
                return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise PayloadTooLarge(_too_large(limit))
            return message

        await self.app(scope, limited_receive, send)


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
    """The outermost layer: request id in and out, the HTTP metrics, the access line."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        ctx = RequestContext(_request_id(scope))
        echoed = (b"humanwire-request-id", ctx.request_id.encode("ascii"))
        status = 500  # what the client sees if the app fails before answering

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", ()), echoed]}
            await send(message)

        token = enter_request(ctx)
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            leave_request(token)
            seconds = time.perf_counter() - started
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


class CommitBeforeAnswering:
    """Commits the store's open writes as a response starts: the SQLite store groups a
    loop turn's writes into one transaction committed on the next turn, and the response
    would otherwise reach the client first (uvicorn writes it at once), uncommitted —
    invisible to another process, lost if this one died then.

    A response whose request read or wrote in a batch that was rolled back (the disk
    full) is not sent: a 503 with ``Retry-After`` goes out in its place, so nothing the
    database lost is answered as done."""

    def __init__(self, app: ASGIApp, store: Store, retry_after: float) -> None:
        self.app = app
        self.store = store
        self.retry_after = retry_after
        """The ``Retry-After`` of the 503 sent in place of a response."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        touched = Touched()
        token = TOUCHED.set(touched)  # this request's context, and the tasks it starts
        replaced = False

        async def send_committed(message: Message) -> None:
            nonlocal replaced
            if replaced:
                return  # the handler's body, after its start was replaced
            if message["type"] == "http.response.start":
                with contextlib.suppress(StoreUnavailable):
                    self.store.commit()  # a failure lands in ``touched`` if ours
                if touched.failure() is not None:
                    replaced = True
                    await store_unavailable_response(self.retry_after)(scope, receive, send)
                    return
            await send(message)

        try:
            await self.app(scope, receive, send_committed)
        finally:
            TOUCHED.reset(token)
