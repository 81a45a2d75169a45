"""What an operator sees of a running service, on the HTTP side: request ids in and out,
the HTTP metrics, the access line, and ``GET /metrics``. The parts that know no HTTP
(metrics hooks, structured lines, formatters, redaction) are in
``humanwire.server.telemetry`` and re-exported here.

- **Request ids**: :class:`ObserveMiddleware` (outside every other layer, so even a 500
  carries it) takes a well-formed ``Humanwire-Request-Id`` or makes one, echoes it on
  the response and keeps a :class:`RequestContext` for the request that the pipeline
  and the engine fill in (the account, the interaction).
- **Access lines**: one ``humanwire.access`` line per request.
- **Metrics**: ``GET /metrics`` serves the engine's registry.
"""

from __future__ import annotations

import hmac
import logging
import re
import time
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

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

__all__ = [
    "LOG_FORMATS",
    "LOG_LEVELS",
    "METRICS_EXTRA",
    "REQUEST_ID_HEADER",
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
    "redact_numbers",
]

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
