"""The sandbox API: the human's side of the embedded service."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ._base import RequestModel, ResponseModel, Timestamp
from .calls import CallOutcome
from .events import Medium

__all__ = [
    "DEFAULT_HUMAN_DISCORD",
    "DEFAULT_HUMAN_EMAIL",
    "DEFAULT_HUMAN_PHONE",
    "DEFAULT_HUMAN_SLACK",
    "DEFAULT_HUMAN_TEAMS",
    "DEFAULT_HUMAN_TELEGRAM",
    "DeliveryChannel",
    "DeliveryKind",
    "SandboxCallOutcomeRequest",
    "SandboxDelivery",
    "SandboxInboundCallRequest",
    "SandboxReplyRequest",
]

DEFAULT_HUMAN_PHONE = "+12025550100"
"""The inbox's default human on the embedded service; never handed out as reservable."""
DEFAULT_HUMAN_SLACK = "U0HUMAN0001"
"""The same human's Slack member id."""
DEFAULT_HUMAN_EMAIL = "human@example.com"
"""The same human's email address."""
DEFAULT_HUMAN_TELEGRAM = "100000001"
"""The same human's chat with the sandbox's Telegram bot."""
DEFAULT_HUMAN_TEAMS = "29:humanwire-inbox-human"
"""The same human's Teams user id (their chat with the sandbox's Teams bot)."""
DEFAULT_HUMAN_DISCORD = "1100000000000000100"
"""The same human's Discord user id (DMs from the sandbox's Discord bot)."""

DeliveryKind = Literal["message", "form", "call"]
DeliveryChannel = Literal[
    "sms", "whatsapp", "slack", "email", "call", "telegram", "discord", "teams"
]
"""The channel something was delivered on (an approval reaches its approvers on these)."""
_NOT_BLANK = r"[^\s\x1c-\x1f\x85\ufeff]"


class SandboxDelivery(ResponseModel):
    """What reached a recipient, ``text`` exactly as they see it (templates applied)."""

    id: str
    interaction_id: str | None = None
    channel: DeliveryChannel
    kind: DeliveryKind
    from_: str | None = Field(default=None, alias="from")
    to: str
    text: str
    form_url: str | None = None
    created_at: Timestamp


class SandboxReplyRequest(RequestModel):
    """The human texts back: ``from`` is the human, ``to`` the number or workspace that
    sent the message. For slack, ``interactionId`` means "in that message's thread"; for
    email, "a reply to that email" (without it: to the newest open email from ``to``)."""

    channel: Medium
    from_: str = Field(alias="from")
    to: str
    body: str
    interaction_id: str | None = None
    media_urls: list[str] | None = None


class SandboxCallOutcomeRequest(RequestModel):
    """The callee ends an outbound call."""

    outcome: CallOutcome
    summary: str | None = None


class SandboxInboundCallRequest(RequestModel):
    """Someone calls a reserved number and leaves a message."""

    # Not blank (the service strips it): one character that is a space neither to Python
    # nor to JSON Schema's regular expressions (their \s differ).
    from_: str = Field(alias="from", json_schema_extra={"pattern": _NOT_BLANK})
    to: str
    summary: str
