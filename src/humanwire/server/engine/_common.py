"""Names every part of the engine shares: records handed to the pages, small helpers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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
