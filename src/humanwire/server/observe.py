"""What an operator sees of a running service: metrics, request ids, structured logs.

- **Metrics**: every engine has a :class:`Metrics`; the no-op base when
  ``prometheus-client`` is not installed (the ``metrics`` extra), else the Prometheus
  one of ``humanwire.server.prom`` with a registry of its own, so several services in
  one process never share (or clash on) a metric. ``GET /metrics`` serves it.
- **Request ids**: :class:`ObserveMiddleware` (outside every other layer, so even a 500
  carries it) takes a well-formed ``Humanwire-Request-Id`` or makes one, echoes it on
  the response and keeps a :class:`RequestContext` in a context variable that the
  pipeline and the engine fill in (the account, the interaction).
- **Logs**: one ``humanwire.access`` line per request and one line per state change
  (``humanwire.engine``, ``humanwire.outbox``), each with an ``event`` name and fields;
  :class:`JsonFormatter` writes them one JSON object a line. Nothing here configures
  logging: only ``humanwire serve`` does (:func:`configure_logging`). Message bodies,
  keys and tokens are never logged; addresses only masked (:func:`mask_address`).
"""

from __future__ import annotations

import contextvars
import hmac
import importlib.util
import json
import logging
import re
import sys
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from .engine.core import EngineCore

__all__ = [
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
    "metrics_endpoint",
    "new_metrics",
    "redact_numbers",
]

REQUEST_ID_HEADER = "Humanwire-Request-Id"
_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
"""An incoming id is kept when it is this (a UUID, a ULID, ``req-42``…); else a new one."""
UNMATCHED = "<unmatched>"
"""The route label of a request no route matched (keeps the label set bounded)."""
METRICS_EXTRA = 'pip install "humanwire[metrics]"'

access_logger = logging.getLogger("humanwire.access")


# -- the request's context ----------------------------------------------------------------
@dataclass
class RequestContext:
    """What the access line says about a request, filled in as it is handled."""

    request_id: str
    account_id: str | None = None
    interaction_id: str | None = None


_CURRENT: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar(
    "humanwire_request", default=None
)


def current_request() -> RequestContext | None:
    """The request being handled (None outside one: timers, the outbox worker)."""
    return _CURRENT.get()


def note_account(account_id: str) -> None:
    ctx = _CURRENT.get()
    if ctx is not None:
        ctx.account_id = account_id


def note_interaction(interaction_id: str) -> None:
    """The first interaction a request touches is the one its access line names."""
    ctx = _CURRENT.get()
    if ctx is not None and ctx.interaction_id is None:
        ctx.interaction_id = interaction_id


# -- redaction ------------------------------------------------------------------------------
def mask_address(address: str | None) -> str | None:
    """A phone number (or any recipient address) fit for a log: the first four
    characters and the last two, the rest as ``•••`` (``+12025550100`` → ``+120•••00``);
    enough to tell a country and two recipients apart, not to dial anyone. Addresses of
    six characters or fewer are masked whole."""
    if address is None:
        return None
    if address.startswith("whatsapp:"):
        address = address[len("whatsapp:") :]
    if len(address) <= 6:
        return "•••"
    return f"{address[:4]}•••{address[-2:]}"


_NUMBER = re.compile(r"\+?\d[\d ().-]{5,}\d")


def redact_numbers(text: str) -> str:
    """``text`` with anything that looks like a phone number masked (a provider's error
    message may quote the recipient)."""
    return _NUMBER.sub(lambda m: mask_address(m.group()) or "", text)


# -- state-change lines ---------------------------------------------------------------------
def log_event(
    logger: logging.Logger,
    event: str,
    *,
    interaction_id: str | None = None,
    request_id: str | bool | None = True,
    level: int = logging.INFO,
    **fields: Any,
) -> None:
    """One structured line: ``event`` (``interaction.opened``…) and ``fields``, never a
    body or a secret (callers pass only ids, kinds, statuses, masked addresses).
    ``request_id`` True: the current request's, if any; False: none (a timer's line)."""
    if not logger.isEnabledFor(level):
        return
    if request_id is True:
        ctx = _CURRENT.get()
        request_id = ctx.request_id if ctx is not None else None
    elif request_id is False:
        request_id = None
    data = {"event": event, "request_id": request_id, "interaction_id": interaction_id}
    data.update(fields)
    logger.log(level, "%s", _TextFields(data), extra={"hw": data})


class _TextFields:
    """``event key=value …`` rendered only when a handler formats the record."""

    __slots__ = ("data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def __str__(self) -> str:
        return _text_line(self.data)


def _text_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if text == "" or any(c.isspace() or c in '"=' for c in text):
        return json.dumps(text, ensure_ascii=False)
    return text


def _text_line(data: dict[str, Any]) -> str:
    parts = [str(data.get("event"))]
    parts += [f"{k}={_text_value(v)}" for k, v in data.items() if k != "event" and v is not None]
    return " ".join(parts)


# -- formatters -----------------------------------------------------------------------------
_last_second: tuple[int, str] = (-1, "")


def _timestamp(created: float) -> str:
    """``2025-01-02T03:04:05.678Z`` (UTC); the seconds part is formatted once a second
    (strftime is most of a line's cost)."""
    global _last_second
    second = int(created)
    cached, text = _last_second
    if second != cached:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _last_second = (second, text)
    return f"{text}.{int((created - second) * 1000):03d}Z"


class TextFormatter(logging.Formatter):
    """``2025-01-02T03:04:05.678Z INFO humanwire.access http.request method=GET …``"""

    def format(self, record: logging.LogRecord) -> str:
        stamp = _timestamp(record.created)
        line = f"{stamp} {record.levelname} {record.name} {record.getMessage()}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


_JSON = json.JSONEncoder(ensure_ascii=False, default=str)


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``ts``, ``level``, ``logger``, ``event``, ``request_id``,
    ``interaction_id``, then the event's own fields; a record that is no event (a
    warning, another library's line) has ``event`` null and its text as ``message``."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": _timestamp(record.created),
            "level": record.levelname,
            "logger": record.name,
        }
        fields = getattr(record, "hw", None)
        if isinstance(fields, dict):
            data.update(fields)
        else:
            data.update(event=None, request_id=None, interaction_id=None)
            data["message"] = record.getMessage()
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return _JSON.encode(data)


LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("debug", "info", "warning", "error")


def configure_logging(log_format: str = "text", level: str = "info") -> logging.Handler:
    """``humanwire serve``'s logging: one stderr handler on the root logger with the
    chosen format; humanwire's loggers at ``level``, everyone else's at WARNING (httpx
    logs every request URL at INFO). Returns the handler (to remove it again)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("humanwire").setLevel(level.upper())
    return handler


# -- metrics --------------------------------------------------------------------------------
class Metrics:
    """The metric hooks the service calls; this base does nothing (no ``metrics``
    extra). ``humanwire.server.prom.PrometheusMetrics`` records them."""

    enabled = False

    def opened(self, kind: str, channel: str) -> None:
        pass

    def sent(self, kind: str, channel: str, outcome: str) -> None:
        pass

    def ended(self, kind: str, channel: str, outcome: str) -> None:
        pass

    def answered(self, kind: str, channel: str, seconds: float) -> None:
        pass

    def reply(self, channel: str, matched: bool) -> None:
        pass

    def webhook_attempt(self, result: str, seconds: float) -> None:
        pass

    def provider_request(
        self, provider: str, operation: str, seconds: float, error: str | None
    ) -> None:
        pass

    def http_request(self, method: str, route: str, status: int, seconds: float) -> None:
        pass

    def exposition(self) -> tuple[bytes, str]:
        raise NotImplementedError


def metrics_available() -> bool:
    return importlib.util.find_spec("prometheus_client") is not None


def new_metrics(engine: EngineCore) -> Metrics:
    """Prometheus metrics of ``engine`` on a registry of their own when
    ``prometheus-client`` is installed, else the no-op :class:`Metrics`."""
    if not metrics_available():
        return Metrics()
    from .prom import PrometheusMetrics

    return PrometheusMetrics(engine)


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

        token = _CURRENT.set(ctx)
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            _CURRENT.reset(token)
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
    from .runner import is_loopback

    client = scope.get("client")
    return client is not None and is_loopback(str(client[0]))


async def metrics_endpoint(request: Request) -> Response:
    """``GET /metrics``: the Prometheus text format. With ``metrics_token`` set, only
    ``Authorization: Bearer <metrics_token>`` opens it (from anywhere, loopback too);
    without one, only loopback clients."""
    from .errors import NotFound, Unauthorized
    from .http_errors import service_error_response

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
    body, content_type = metrics.exposition()
    return Response(body, 200, headers={"Content-Type": content_type})
