"""The events a webhook receives, as one discriminated union on ``eventType``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, TypeAdapter

from ._base import ResponseModel
from .approvals import Approval

__all__ = [
    "ApprovalDecidedEvent",
    "AuditCheckpoint",
    "AuditCheckpointEvent",
    "CallConversationEndedEvent",
    "CallConversationEndedPayload",
    "Event",
    "FormReceivedEvent",
    "FormReceivedPayload",
    "Medium",
    "MessageReceivedEvent",
    "MessageReceivedPayload",
    "Speaker",
    "TranscriptTurn",
    "event_adapter",
]

Medium = Literal["sms", "whatsapp", "slack", "email", "telegram", "discord", "teams"]
Speaker = Literal["agent", "human"]
"""Who spoke a turn of a call: the voice agent or the human."""


class MessageReceivedPayload(ResponseModel):
    """An inbound message; ``interaction_id`` is set when it replies to an interaction."""

    interaction_id: str | None = None
    medium: Medium
    from_: str = Field(alias="from")
    to: str
    body: str
    """An email: what the person wrote, without the quoted history and the signature."""
    media_urls: list[str] = Field(default_factory=list)
    """An email: its attachments, as expiring signed links of the service."""
    subject: str | None = None
    """An email's subject (absent for the other media)."""
    metadata: dict[str, str] | None = None


class FormReceivedPayload(ResponseModel):
    interaction_id: str
    values: dict[str, str]
    metadata: dict[str, str] | None = None


class TranscriptTurn(ResponseModel):
    """One turn of a call: who spoke (the voice ``agent`` or the ``human``) and what."""

    speaker: Speaker
    text: str


class CallConversationEndedPayload(ResponseModel):
    interaction_id: str
    summary: str
    from_: str = Field(alias="from")
    to: str
    transcript: list[TranscriptTurn] | None = None
    metadata: dict[str, str] | None = None
    """Extension: the call turn by turn, when a voice agent ran it (not on the sandbox)."""


class MessageReceivedEvent(ResponseModel):
    event_type: Literal["message.received"] = "message.received"
    payload: MessageReceivedPayload


class FormReceivedEvent(ResponseModel):
    event_type: Literal["form.received"] = "form.received"
    payload: FormReceivedPayload


class CallConversationEndedEvent(ResponseModel):
    event_type: Literal["call.conversation.ended"] = "call.conversation.ended"
    payload: CallConversationEndedPayload


class ApprovalDecidedEvent(ResponseModel):
    """An approval request settled (decided, or its windows closed undecided) while no
    request held it: ``payload`` is the approval as ``GET /approvals/{interactionId}``
    reads it."""

    event_type: Literal["approval.decided"] = "approval.decided"
    payload: Approval


class AuditCheckpoint(ResponseModel):
    """The account's audit log as the service signed it: its head (``sequence``,
    ``hash``) at ``at``. ``signature`` is the base64 Ed25519 signature, by ``publicKey``,
    of ``humanwire.audit.checkpoint`` and a newline followed by the canonical JSON (RFC
    8785) of ``accountId``, ``sequence``, ``hash`` and ``at``; ``humanwire audit verify
    --checkpoints`` checks the log against copies kept like this one."""

    account_id: str
    sequence: int
    hash: str
    at: str
    """UTC to the millisecond, as signed (``2026-03-01T12:00:00.000Z``)."""
    public_key: str
    signature: str


class AuditCheckpointEvent(ResponseModel):
    """A signed checkpoint of the account's audit log (the service's ``[audit]
    signing_key``): kept outside the service's database, it shows any entry up to it
    edited, re-hashed, reordered or removed there."""

    event_type: Literal["audit.checkpoint"] = "audit.checkpoint"
    payload: AuditCheckpoint


Event = Annotated[
    MessageReceivedEvent
    | FormReceivedEvent
    | CallConversationEndedEvent
    | ApprovalDecidedEvent
    | AuditCheckpointEvent,
    Field(discriminator="event_type"),
]

# Built on first use, like the models (``defer_build``): not at ``import humanwire``.
event_adapter: TypeAdapter[Event] = TypeAdapter(Event, config=ConfigDict(defer_build=True))
"""``event_adapter.validate_json(body)`` parses any delivery into its typed event."""
