"""Webhook registrations."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, WithJsonSchema, field_validator
from pydantic_core import PydanticCustomError

from ._base import HttpUrl, RequestModel, ResponseModel, Timestamp

__all__ = [
    "EVENT_TYPES",
    "RESERVED_HEADERS",
    "EventType",
    "Webhook",
    "WebhookCreateRequest",
    "WebhookHeaders",
    "webhook_header_problem",
]

EventType = Literal[
    "message.received",
    "form.received",
    "call.conversation.ended",
    "approval.decided",
    "audit.checkpoint",
]
EVENT_TYPES: tuple[str, ...] = (
    "message.received",
    "form.received",
    "call.conversation.ended",
    "approval.decided",
    "audit.checkpoint",
)

RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "upgrade",
        "te",
        "trailer",
        "keep-alive",
    }
)
"""Header names a registration cannot set (lowercase), besides the ``Proxy-`` and
``Humanwire-`` prefixes: framing and hop-by-hop headers are the HTTP client's (a
``Transfer-Encoding`` beside the ``Content-Length`` it sends is a request-smuggling
shape), ``Humanwire-*`` the service's own (the signature, the event id)."""

_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
"""An HTTP header name: a token (RFC 9110, section 5.6.2)."""
_VISIBLE = r"([!-~]+([ \t]+[!-~]+)*)?"
"""A header value (RFC 9110 field-value): visible ASCII, with spaces or tabs only between
visible characters (a receiver strips them at the ends; no CR, LF, NUL or other control)."""


def webhook_header_problem(name: str, value: str) -> str | None:
    """Why ``name: value`` cannot be sent with a delivery (None: it can)."""
    if not re.fullmatch(_TOKEN, name):
        return f"{name!r} is not a header name (an HTTP token: letters, digits and !#$%&'*+-.^_`|~)"
    lower = name.lower()
    if lower.startswith("humanwire-"):
        return f"{name} cannot be registered: Humanwire-* headers are the service's own"
    if lower in RESERVED_HEADERS or lower.startswith("proxy-"):
        return (
            f"{name} cannot be registered: framing and hop-by-hop headers are the HTTP "
            "client's to set"
        )
    if not re.fullmatch(_VISIBLE, value):
        return (
            "the value must be visible ASCII, with spaces or tabs only between characters "
            "(no CR, LF or other control character)"
        )
    return None


def _check_headers(headers: dict[str, str]) -> dict[str, str]:
    seen: dict[str, str] = {}
    for name, value in headers.items():
        problem = webhook_header_problem(name, value)
        if problem is None and name.lower() in seen:
            problem = f"{name} is given twice ({seen[name.lower()]}): header names ignore case"
        if problem is not None:
            raise PydanticCustomError("invalid_request", problem, {"field": name})
        seen[name.lower()] = name
    return headers


WebhookHeaders = Annotated[
    dict[str, str],
    AfterValidator(_check_headers),
    WithJsonSchema(
        {
            "type": "object",
            "propertyNames": {"pattern": f"^{_TOKEN}$"},
            "additionalProperties": {"type": "string", "pattern": f"^{_VISIBLE}$"},
            "description": "Sent with every delivery. Names are HTTP tokens, values visible "
            "ASCII; Host, Content-Length, Transfer-Encoding, Connection, Upgrade, TE, Trailer, "
            "Keep-Alive, Proxy-* and Humanwire-* are refused (400 naming the header).",
        }
    ),
]
"""Headers sent with every delivery (an ``Authorization`` for the receiver, say)."""


class WebhookCreateRequest(RequestModel):
    url: HttpUrl
    event_types: list[EventType] = Field(min_length=1, json_schema_extra={"uniqueItems": True})
    headers: WebhookHeaders | None = None

    @field_validator("event_types")
    @classmethod
    def _unique(cls, value: list[EventType]) -> list[EventType]:
        if len(set(value)) != len(value):
            raise PydanticCustomError("invalid_request", "eventTypes lists an event twice")
        return value


class Webhook(ResponseModel):
    """A registration. ``secret`` signs deliveries; it is shown in full only at creation,
    and header values are masked when listed."""

    id: str
    url: str
    event_types: list[EventType]
    headers: dict[str, str] = Field(default_factory=dict)
    created_at: Timestamp
    secret: str | None = None
