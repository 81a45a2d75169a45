"""Durable waits with Temporal (``pip install "humanwire[temporal]"``).

- In a workflow: ``await humanwire.temporal.ask(to=..., message=..., timeout=...)``
  returns the reply text, or the no-response text at the timeout; ``ask_form``, ``call``
  and ``request_approval`` (then ``consume``) likewise.
- In the worker: ``Worker(..., activities=HumanWireActivities(client).all())``.
- Beside them: one ``AnswerBridge`` that follows the account's outcome feed and hands
  each answer (a Signal) and each decision (an Update) to the run that asked.

Import it in workflow modules through ``workflow.unsafe.imports_passed_through()``.
See docs/guides/temporal.md.
"""

from __future__ import annotations

from ._activities import HumanWireActivities, idempotency_key
from ._bridge import AnswerBridge, FileCursor, answer_of, decision_of
from ._wire import (
    ANSWER_SIGNAL,
    APPROVAL_SIGNAL,
    APPROVAL_UPDATE,
    ASK_ID_KEY,
    CONSUME_APPROVAL_ACTIVITY,
    PLACE_CALL_ACTIVITY,
    REQUEST_APPROVAL_ACTIVITY,
    RUN_ID_KEY,
    SEND_FORM_ACTIVITY,
    SEND_SMS_ACTIVITY,
    WORKFLOW_ID_KEY,
    ApprovalAsk,
    ApprovalDecision,
    ApprovalResult,
    CallAsk,
    FormAsk,
    HumanAnswer,
    SentApproval,
    SentAsk,
    SmsAsk,
)
from ._workflow import (
    MAX_LISTEN,
    NO_RESPONSE,
    ask,
    ask_form,
    call,
    consume,
    request_approval,
)

__all__ = [
    "ANSWER_SIGNAL",
    "APPROVAL_SIGNAL",
    "APPROVAL_UPDATE",
    "ASK_ID_KEY",
    "CONSUME_APPROVAL_ACTIVITY",
    "MAX_LISTEN",
    "NO_RESPONSE",
    "PLACE_CALL_ACTIVITY",
    "REQUEST_APPROVAL_ACTIVITY",
    "RUN_ID_KEY",
    "SEND_FORM_ACTIVITY",
    "SEND_SMS_ACTIVITY",
    "WORKFLOW_ID_KEY",
    "AnswerBridge",
    "ApprovalAsk",
    "ApprovalDecision",
    "ApprovalResult",
    "CallAsk",
    "FileCursor",
    "FormAsk",
    "HumanAnswer",
    "HumanWireActivities",
    "SentApproval",
    "SentAsk",
    "SmsAsk",
    "answer_of",
    "ask",
    "ask_form",
    "call",
    "consume",
    "decision_of",
    "idempotency_key",
    "request_approval",
]
