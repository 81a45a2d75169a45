"""Names every part of the engine shares: records handed to the pages, small helpers."""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from humanwire.types import (
    DeliveryChannel,
    EmailFormRequest,
    EmailMessageRequest,
    Form,
    SlackFormRequest,
    SlackMessageRequest,
    SMSFormRequest,
    SMSMessageRequest,
    WhatsAppMessageRequest,
    WhatsAppOwnNumberFormRequest,
    WhatsAppSharedFormRequest,
)

from ..delivery.channels import ChatForm, ChatMessage

MessageRequest = (
    SMSMessageRequest
    | WhatsAppMessageRequest
    | SlackMessageRequest
    | EmailMessageRequest
    | ChatMessage
)
"""A message request: one of the built-in channels', or a registered chat channel's."""
FormRequest = (
    SMSFormRequest
    | SlackFormRequest
    | EmailFormRequest
    | WhatsAppSharedFormRequest
    | WhatsAppOwnNumberFormRequest
    | ChatForm
)
"""A form request: one of the built-in channels', or a registered chat channel's."""
FormState = Literal["open", "submitted", "expired"]
ReplyLinkState = Literal["open", "answered", "expired"]
Channel = DeliveryChannel

SPAM_MESSAGE = "this account was shut down automatically for sending bulk or promotional texts"
SUSPENDED_MESSAGE = (
    "this account is suspended (accounts sending bulk or promotional texts are shut down "
    "automatically, and an operator may suspend one); the service's operator can reinstate it"
)
DELETED_MESSAGE = "the account of this API key was deleted"
CALL_NOT_ANSWERED = "human did not respond"
_SUBSCRIBER_QUEUE = 256
_FORM_KEYS = frozenset(info.alias or name for name, info in Form.model_fields.items())


@dataclass(frozen=True)
class Account:
    id: str
    name: str
    suspended: bool = False


@dataclass(frozen=True)
class OutcomeHandoff:
    """An outcome event just stored, handed to the account's stream readers: ``after``
    is the id of the account's event before it."""

    after: int
    id: int
    body: dict[str, Any]


class OutcomeCollector:
    """What a stream reader heard appended since it last looked: the events handed to
    it, in the order heard (None: one it must read, its body not carried)."""

    LIMIT = 500

    def __init__(self) -> None:
        self.heard: list[OutcomeHandoff | None] = []

    def add(self, handoff: OutcomeHandoff | None) -> None:
        if len(self.heard) >= self.LIMIT:
            self.heard = [None]  # a reader that fell behind reads instead
        self.heard.append(handoff)

    def take(self, position: int) -> list[tuple[int, dict[str, Any]]] | None:
        """The events past ``position`` heard, if they follow it without a gap and
        nothing heard is left out; None: read them. Clears what was heard."""
        heard, self.heard = self.heard, []
        events = [handoff for handoff in heard if handoff is not None]
        if not events or len(events) < len(heard):
            return None
        chain: list[tuple[int, dict[str, Any]]] = []
        for handoff in sorted(events, key=lambda h: h.id):
            if handoff.id <= position:
                continue  # sent on already
            if handoff.after != position:
                return None  # one between them was not heard (yet)
            chain.append((handoff.id, handoff.body))
            position = handoff.id
        return chain


@dataclass(frozen=True)
class RateCount:
    """A request already counted against the rate limit (``authenticate_request``):
    ``retry_after`` None when it is allowed, else seconds to wait."""

    retry_after: float | None


@dataclass(frozen=True)
class FormView:
    """What the form page needs to render a form reached by its token."""

    token: str
    interaction_id: str
    account_id: str
    form: Form
    state: FormState
    wait_deadline: float | None
    """Unix time the ``waitTime`` window closes (countdown target); None without one."""
    follow_up_deadline: float
    """Unix time after which the form is expired."""
    values: dict[str, str] | None
    """The submitted values, once submitted."""


@dataclass(frozen=True)
class ReplyLinkView:
    """What the reply page (``/r/<token>``) of a channel card with ``replyLink`` shows."""

    token: str
    interaction_id: str
    account_id: str
    channel: str
    to: str
    """The recipient (the person replying)."""
    from_: str
    text: str
    """The message as delivered (without the link)."""
    state: ReplyLinkState
    wait_deadline: float | None
    close_deadline: float | None
    """Unix time after which the link no longer takes a reply."""
    reply: str | None


@dataclass(frozen=True)
class InboxChange:
    """A notice for live inbox pages: something of this account changed."""

    account_id: str
    kind: Literal["delivery", "interaction", "webhook", "number", "channel", "inbound", "approval"]
    id: str


def _hash_key(api_key: str) -> str:
    return hashlib.sha256(api_key.encode()).hexdigest()


def _timestamp(unix: float) -> datetime:
    return datetime.fromtimestamp(unix, tz=timezone.utc)


def _iso(unix: float | None) -> str | None:
    if unix is None:
        return None
    return _timestamp(unix).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _metadata(record: Any) -> dict[str, str] | None:
    """The ``metadata`` an interaction was sent with (None: none)."""
    if record is None:
        return None
    value = record.request.get("metadata")
    return dict(value) if value else None


def _event_dict(event: Any) -> dict[str, Any]:
    data: dict[str, Any] = event.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data


def _settle(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _mask(value: str) -> str:
    return f"{value[:4]}…" if len(value) > 4 else "…"


def wire_json(data: Any) -> bytes:
    """A JSON body as the service writes it (compact, UTF-8): what an HTTP answer carries
    and what an idempotency key stores of it."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
