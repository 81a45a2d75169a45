"""The fake Telnyx's records: numbers, messages, calls, the requests it saw and the
violations it found, as plain data; the published request types it checks against, the
ConversationRelay frames it takes, and Telnyx's error titles. ``FakeTelnyx`` keeps them."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

__all__ = [
    "CALLBACK_TIMEOUT",
    "E164",
    "RELAY_FRAMES",
    "TITLES",
    "FakeCall",
    "FakeMessage",
    "FakeNumber",
    "FakeRequest",
    "Next",
    "Violation",
    "now",
    "page",
    "published_types",
]

CALLBACK_TIMEOUT = 10.0
E164 = re.compile(r"\+[1-9][0-9]{6,14}")


def published_types() -> dict[str, Any]:
    """The published request types, by operation (imported when the fake is built)."""
    from telnyx.types import (
        available_phone_number_list_params,
        message_send_params,
        number_order_create_params,
        phone_number_list_params,
        phone_number_update_params,
    )
    from telnyx.types.phone_numbers import messaging_update_params
    from telnyx.types.texml.accounts import call_calls_params, call_update_params

    return {
        "messages.send": message_send_params.MessageSendParams,
        "numbers.list": phone_number_list_params.PhoneNumberListParams,
        "numbers.update": phone_number_update_params.PhoneNumberUpdateParams,
        "numbers.messaging": messaging_update_params.MessagingUpdateParams,
        "numbers.available": available_phone_number_list_params.AvailablePhoneNumberListParams,
        "numbers.order": number_order_create_params.NumberOrderCreateParams,
        "calls.create": call_calls_params.Body,
        "calls.update": call_update_params.CallUpdateParams,
    }


# -- records ---------------------------------------------------------------------------------
@dataclass
class FakeNumber:
    id: str
    phone_number: str
    connection_id: str | None = None
    messaging_profile_id: str | None = None
    bought: bool = False
    released: bool = False

    def resource(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "record_type": "phone_number",
            "phone_number": self.phone_number,
            "status": "active",
            "connection_id": self.connection_id,
            "messaging_profile_id": self.messaging_profile_id,
        }


@dataclass
class FakeMessage:
    id: str
    params: dict[str, Any]
    status: str = "queued"
    statuses: list[str] = field(default_factory=list)

    @property
    def to(self) -> str:
        return str(self.params.get("to", ""))

    @property
    def from_(self) -> str:
        return str(self.params.get("from", ""))

    @property
    def text(self) -> str:
        return str(self.params.get("text", ""))


@dataclass
class FakeCall:
    sid: str
    params: dict[str, Any]
    direction: str = "outbound-api"
    status: str = "queued"
    statuses: list[str] = field(default_factory=list)
    answered_by: str | None = None
    said: list[str] = field(default_factory=list)
    heard: list[str | None] = field(default_factory=list)
    transferred_to: str | None = None
    relay_messages: list[dict[str, Any]] = field(default_factory=list)
    """Over ConversationRelay: every message the service sent on the socket, in order."""
    interrupted: list[str] = field(default_factory=list)
    """Over ConversationRelay: what the callee had heard of each turn it spoke over."""
    texml: list[str] = field(default_factory=list)
    """Every TeXML document the call ran, in order."""
    errors: list[str] = field(default_factory=list)
    hang_up_requested: bool = False
    ended_by: Literal["api", "callee", "service"] | None = None
    done: bool = False

    @property
    def to(self) -> str:
        return str(self.params.get("To", ""))

    @property
    def from_(self) -> str:
        return str(self.params.get("From", ""))


class FakeRequest(NamedTuple):
    method: str
    path: str
    operation: str
    params: Any


class Violation(NamedTuple):
    method: str
    path: str
    problem: str


class Next(NamedTuple):
    """The next TeXML document a call fetches, and what to post with it."""

    url: str
    extra: Mapping[str, str] = {}


RELAY_FRAMES: dict[str, dict[str, type | tuple[type, ...]]] = {
    "text": {"token": str, "last": bool},
    "play": {"source": str},
    "sendDigits": {"digits": str},
    "language": {"ttsLanguage": str, "transcriptionLanguage": str},
    "end": {},
}
"""The frames a service may send Telnyx's ConversationRelay, with their published fields
(the ConversationRelay WebSocket channel's AsyncAPI description)."""


TITLES = {
    "10004": "Missing required parameter",
    "10005": "Resource not found",
    "10007": "Unexpected error",
    "10009": "Authentication failed",
    "10015": "Bad Request",
    "10016": "Phone number must be in +E.164 format",
    "10017": "Associated resource does not exist",
    "40305": "Invalid 'from' address",
    "40310": "Invalid 'to' address",
    "40300": "Blocked due to STOP message",
}


def page(items: list[dict[str, Any]], params: Mapping[str, Any]) -> dict[str, Any]:
    """One page holding everything (``page[number]`` past 1 is empty), with the ``meta``
    the package's paginator reads to stop."""
    number = int(params.get("page[number]") or 1)
    size = int(params.get("page[size]") or 20)
    return {
        "data": items if number == 1 else [],
        "meta": {
            "page_number": number,
            "page_size": size,
            "total_pages": 1,
            "total_results": len(items),
        },
    }


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000+00:00", time.gmtime())
