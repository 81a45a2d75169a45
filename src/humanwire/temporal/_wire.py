"""What crosses Temporal's boundaries (activity inputs and results, the answer Signal):
plain dataclasses, so they load in the workflow sandbox and convert with Temporal's
default JSON converter."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "ANSWER_SIGNAL",
    "RUN_ID_KEY",
    "SEND_SMS_ACTIVITY",
    "WORKFLOW_ID_KEY",
    "HumanAnswer",
    "SentAsk",
    "SmsAsk",
]

SEND_SMS_ACTIVITY = "humanwire.send_sms"
"""The activity that sends an SMS ask (``HumanWireActivities.send_sms``)."""
ANSWER_SIGNAL = "humanwire.answer"
"""The Signal that carries an interaction's end into the workflow waiting for it."""
WORKFLOW_ID_KEY = "temporalWorkflowId"
RUN_ID_KEY = "temporalRunId"
"""Metadata keys of every send: the answer bridge finds the waiting run by them."""


@dataclass
class SmsAsk:
    to: str
    message: str
    follow_up_time: float
    """Seconds the service listens for the reply (1 to 60000)."""
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass
class SentAsk:
    interaction_id: str


@dataclass
class HumanAnswer:
    """An interaction's end, delivered once per outcome event."""

    event_id: str
    """The outcome event's id (``GET /events``): a redelivery carries the same one."""
    interaction_id: str
    responded: bool
    text: str | None = None
    """The human's reply (``message.received``'s body); None when nobody responded."""
