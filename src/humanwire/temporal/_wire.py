"""What crosses Temporal's boundaries (activity inputs and results, the answer Signal, the
approval Update): plain dataclasses, so they load in the workflow sandbox and convert with
Temporal's default JSON converter."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ANSWER_SIGNAL",
    "APPROVAL_SIGNAL",
    "APPROVAL_UPDATE",
    "ASK_ID_KEY",
    "CONSUME_APPROVAL_ACTIVITY",
    "PLACE_CALL_ACTIVITY",
    "REQUEST_APPROVAL_ACTIVITY",
    "RUN_ID_KEY",
    "SEND_FORM_ACTIVITY",
    "SEND_SMS_ACTIVITY",
    "WORKFLOW_ID_KEY",
    "ApprovalAsk",
    "ApprovalDecision",
    "ApprovalResult",
    "CallAsk",
    "FormAsk",
    "HumanAnswer",
    "SentApproval",
    "SentAsk",
    "SmsAsk",
]

SEND_SMS_ACTIVITY = "humanwire.send_sms"
"""The activity that sends an SMS ask (``HumanWireActivities.send_sms``)."""
SEND_FORM_ACTIVITY = "humanwire.send_form"
PLACE_CALL_ACTIVITY = "humanwire.place_call"
REQUEST_APPROVAL_ACTIVITY = "humanwire.request_approval"
CONSUME_APPROVAL_ACTIVITY = "humanwire.consume_approval"
ANSWER_SIGNAL = "humanwire.answer"
"""The Signal that carries an interaction's end into the workflow waiting for it."""
APPROVAL_UPDATE = "humanwire.approval"
"""The Update that carries an approval's decision; its validator refuses a duplicate, a
late or a foreign one."""
APPROVAL_SIGNAL = "humanwire.approval_signal"
"""The same decision as a Signal, for when no worker answers the Update in time (a Signal
is stored at once); the handler applies the validator's rules by ignoring, not refusing."""
ASK_ID_KEY = "temporalAskId"
"""Metadata key of an approval request: which of the run's requests a decision is for,
known before the request is sent (so a decision racing the send's result is not foreign)."""
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
class FormAsk:
    channel: str
    """``sms``, ``whatsapp``, ``slack`` or ``email``: the form's link goes out by it."""
    to: str
    title: str
    fields: list[dict[str, Any]]
    """Form fields as the API takes them (``{"id": …, "label": …, "type": …}``)."""
    follow_up_time: float
    message: str | None = None
    description: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass
class CallAsk:
    to: str
    prompt: str
    language: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass
class ApprovalAsk:
    title: str
    approvers: list[dict[str, str]]
    """``[{"channel": "sms", "to": "+1202…"}, …]``."""
    follow_up_time: float
    action: dict[str, Any] | None = None
    """``{"name": …, "arguments": {…}}``: what the decision is about (its digest binds it)."""
    description: str | None = None
    quorum: int = 1
    on_timeout: str = "reject"
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass
class SentAsk:
    interaction_id: str


@dataclass
class SentApproval:
    interaction_id: str
    action_digest: str | None = None


@dataclass
class HumanAnswer:
    """An interaction's end, delivered once per outcome event."""

    event_id: str
    """The outcome event's id (``GET /events``): a redelivery carries the same one."""
    interaction_id: str
    responded: bool
    text: str | None = None
    """The human's reply (``message.received``'s body) or a call's summary; None when
    nobody responded."""
    values: dict[str, str] | None = None
    """A submitted form's values."""


@dataclass
class ApprovalDecision:
    """An approval request settled: the Update's (and the fallback Signal's) argument."""

    event_id: str
    """The outcome event's id, which is also the Update's id."""
    interaction_id: str
    decision: str | None
    """``approved``, ``rejected``, or None (windows closed undecided, ``onTimeout: none``)."""
    ask_id: str | None = None
    """The request's ``temporalAskId`` metadata: which of the run's requests it decides."""
    timed_out: bool = False
    decided_by: list[str] = field(default_factory=list)
    """The approvers whose decisions settled it (``channel:to``)."""
    action_digest: str | None = None
    response: str | None = None
    """The service's text for a model ("Approved by … (2 of 2).")."""


@dataclass
class ApprovalResult:
    """What ``request_approval`` returns in the workflow."""

    interaction_id: str
    approved: bool
    decision: str | None
    """``approved``, ``rejected``, or None: nobody decided before the workflow's timeout
    (or the windows closed undecided with ``onTimeout: none``)."""
    timed_out: bool
    """No decision in time: by the workflow's timeout or by the service's ``onTimeout``."""
    action_digest: str | None = None
    decided_by: list[str] = field(default_factory=list)
    response: str | None = None
