"""Interaction status, as ``GET /interactions/{id}/status`` returns it."""

from __future__ import annotations

from typing import Literal

from ._base import DeliveryStatus, ResponseModel, Timestamp
from .events import Event

__all__ = [
    "MAX_STATUS_WAIT",
    "InteractionChannel",
    "InteractionKind",
    "InteractionState",
    "InteractionStatus",
]

InteractionKind = Literal["message", "form", "call", "approval"]
InteractionChannel = Literal[
    "sms", "whatsapp", "slack", "email", "call", "approval", "telegram", "discord", "teams"
]
"""``approval``: an approval request (``POST /approvals``), which reaches its approvers
over several channels."""
InteractionState = Literal["pending", "ended"]
"""Listening for an answer (or a call under way), or not any more."""

MAX_STATUS_WAIT = 60
"""``?wait=`` holds a status request at most this many seconds."""


class InteractionStatus(ResponseModel):
    """``result`` is the event that reported the response (``{eventType, payload}``),
    present once the interaction completed with one."""

    interaction_id: str
    status: InteractionState
    created_at: Timestamp
    kind: InteractionKind
    channel: InteractionChannel
    result: Event | None = None
    delivery_status: DeliveryStatus | None = None
    metadata: dict[str, str] | None = None

    @property
    def ended(self) -> bool:
        return self.status == "ended"
