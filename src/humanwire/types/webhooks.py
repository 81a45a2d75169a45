"""Webhook registrations."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from ._base import HttpUrl, RequestModel, ResponseModel, Timestamp, schema_pattern

__all__ = ["EVENT_TYPES", "EventType", "Webhook", "WebhookCreateRequest"]

EventType = Literal["message.received", "form.received", "call.conversation.ended"]
EVENT_TYPES: tuple[str, ...] = ("message.received", "form.received", "call.conversation.ended")

# What an HTTP request can carry (RFC 9110): a token for the name; visible ASCII with
# inner spaces or tabs for the value. Anything else failed every delivery, not the POST.
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEADER_VALUE = re.compile(r"([!-~]+([ \t]+[!-~]+)*)?")

Headers = Annotated[
    dict[str, str],
    Field(
        json_schema_extra={
            "propertyNames": {"pattern": schema_pattern(_HEADER_NAME)},
            "additionalProperties": {"type": "string", "pattern": schema_pattern(_HEADER_VALUE)},
        }
    ),
]


class WebhookCreateRequest(RequestModel):
    url: HttpUrl
    event_types: list[EventType] = Field(min_length=1, json_schema_extra={"uniqueItems": True})
    headers: Headers | None = None
    """Sent with every delivery (the service's own Content-Type and signature win)."""

    @field_validator("event_types")
    @classmethod
    def _unique(cls, value: list[EventType]) -> list[EventType]:
        if len(set(value)) != len(value):
            raise PydanticCustomError("invalid_request", "eventTypes lists an event twice")
        return value

    @field_validator("headers")
    @classmethod
    def _sendable(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for name, item in (value or {}).items():
            if not _HEADER_NAME.fullmatch(name):
                raise PydanticCustomError(
                    "invalid_request",
                    "headers: '{name}' is not an HTTP header name (letters, digits and "
                    "!#$%&'*+-.^_`|~)",
                    {"name": name},
                )
            if not _HEADER_VALUE.fullmatch(item):
                raise PydanticCustomError(
                    "invalid_request",
                    "the value must be printable ASCII, with spaces or tabs only between "
                    "characters",
                    {"field": name},
                )
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
