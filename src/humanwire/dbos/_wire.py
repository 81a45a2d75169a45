"""What crosses DBOS's boundaries: the metadata key that names the waiting workflow, the
topic a workflow receives an interaction's end on, the message the bridge sends (a plain
dict, so any serializer and a ``DBOSClient`` in another process read it alike), and the
decision an approval wait returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from humanwire.types import OutcomeEvent

__all__ = [
    "TOPIC_PREFIX",
    "WORKFLOW_ID_KEY",
    "ApprovalDecision",
    "answer_of",
    "topic_of",
]

WORKFLOW_ID_KEY = "dbosWorkflowId"
"""Metadata key of every send made by a step: the bridge finds the waiting workflow by it."""
TOPIC_PREFIX = "humanwire:"


def topic_of(interaction_id: str) -> str:
    """The ``DBOS.recv`` topic an interaction's end is delivered on: one per interaction,
    so a workflow that asks twice never takes one answer for the other."""
    return TOPIC_PREFIX + interaction_id


def answer_of(event: OutcomeEvent) -> dict[str, Any]:
    """The message for an ``interaction.ended`` event: ``eventId``, ``interactionId``,
    ``responded``, ``eventType`` (``message.received``, ``form.received``,
    ``call.conversation.ended``, ``approval.decided``; None for the no-response end) and
    ``payload`` (that event's payload, as the service sends it)."""
    result = event.result
    return {
        "eventId": event.id,
        "interactionId": event.interaction_id,
        "responded": event.responded,
        "eventType": None if result is None else result.event_type,
        "payload": None
        if result is None
        else result.payload.model_dump(mode="json", by_alias=True, exclude_none=True),
    }


@dataclass(frozen=True)
class ApprovalDecision:
    """What ``humanwire.dbos.approval`` returns: the request's id, its decision
    (None when nobody decided in time and ``on_timeout`` decided nothing), and the text
    for a model (the service's response, or the no-response text)."""

    interaction_id: str
    decision: Literal["approved", "rejected"] | None
    text: str
    action_digest: str | None = None
    timed_out: bool = False
    """Nobody decided in time: ``on_timeout`` made the decision."""

    @property
    def approved(self) -> bool:
        return self.decision == "approved"
