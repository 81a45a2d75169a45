"""What an operator sees of a running service, the parts that know no HTTP: metrics
hooks, the request's context for log lines, structured state-change lines and their
formatters, redaction. The engine, the outbox, the providers and the CLI use these; the
HTTP layer (``humanwire.server.http.middleware``) adds the middleware and ``GET /metrics``.

- **Metrics**: every engine has a :class:`Metrics`; the no-op base when
  ``prometheus-client`` is not installed (the ``metrics`` extra), else the Prometheus
  one of ``humanwire.server.telemetry.prom`` with a registry of its own, so several services in
  one process never share (or clash on) a metric.
- **The request's context**: a :class:`RequestContext` in a context variable, set by the
  HTTP layer's middleware for each request and filled in as it is handled (the account,
  the interaction) for its access line; state-change lines carry its request id. It is
  what a log line says, never what the engine decides by.
- **Logs**: one line per state change (``humanwire.engine``, ``humanwire.outbox``), each
  with an ``event`` name and fields; :class:`JsonFormatter` writes them one JSON object a
  line. Nothing here configures logging: only ``humanwire serve`` does
  (:func:`configure_logging`). Message bodies, keys and tokens are never logged;
  addresses only masked (:func:`mask_address`).
"""

from __future__ import annotations

import contextvars
import importlib.util
import json
import logging
import re
import sys
import time
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "LOG_FORMATS",
    "LOG_LEVELS",
    "METRICS_EXTRA",
    "GaugeSource",
    "JsonFormatter",
    "Metrics",
    "RequestContext",
    "TextFormatter",
    "access_logger",
    "configure_logging",
    "current_request",
    "enter_request",
    "leave_request",
    "log_event",
    "mask_address",
    "metrics_available",
    "new_metrics",
    "note_account",
    "note_interaction",
    "redact_numbers",
]

METRICS_EXTRA = 'pip install "humanwire[metrics]"'

access_logger = logging.getLogger("humanwire.access")


# -- the request's context ----------------------------------------------------------------
@dataclass(slots=True)
class RequestContext:
    """What the access line says about a request, filled in as it is handled."""

    request_id: str
    account_id: str | None = None
    interaction_id: str | None = None


_CURRENT: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar(
    "humanwire_request", default=None
)


def enter_request(ctx: RequestContext) -> contextvars.Token[RequestContext | None]:
    """``ctx`` is the request being handled in this context (the HTTP middleware's)."""
    return _CURRENT.set(ctx)


def leave_request(token: contextvars.Token[RequestContext | None]) -> None:
    _CURRENT.reset(token)


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
    extra). ``humanwire.server.telemetry.prom.PrometheusMetrics`` records them."""

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


class GaugeSource(Protocol):
    """What the service's gauges read at scrape time: the engine (``Engine``), named
    by what it offers so this layer imports nothing of the engine."""

    @property
    def held_waits(self) -> int: ...
    @property
    def open_windows(self) -> int: ...
    @property
    def outbox_depth_read(self) -> int: ...


def new_metrics(engine: GaugeSource) -> Metrics:
    """Prometheus metrics of ``engine`` on a registry of their own when
    ``prometheus-client`` is installed, else the no-op :class:`Metrics`."""
    if not metrics_available():
        return Metrics()
    from .prom import PrometheusMetrics

    return PrometheusMetrics(engine)
