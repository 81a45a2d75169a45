"""Webhook registrations."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from ._base import HttpUrl, RequestModel, ResponseModel, Timestamp

__all__ = ["EVENT_TYPES", "EventType", "Webhook", "WebhookCreateRequest"]

EventType = Literal["message.received", "form.received", "call.conversation.ended"]
EVENT_TYPES: tuple[str, ...] = ("message.received", "form.received", "call.conversation.ended")


class WebhookCreateRequest(RequestModel):
    url: HttpUrl
    event_types: list[EventType] = Field(min_length=1, json_schema_extra={"uniqueItems": True})
    headers: dict[str, str] | None = None

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
