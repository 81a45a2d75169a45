"""Durable waits with Temporal (``pip install "humanwire[temporal]"``).

- In a workflow: ``await humanwire.temporal.ask(to=..., message=..., timeout=...)``
  returns the reply text, or the no-response text at the timeout.
- In the worker: ``Worker(..., activities=HumanWireActivities(client).all())``.
- Beside them: one ``AnswerBridge`` that follows the account's outcome feed and signals
  each answer into the run that asked.

Import it in workflow modules through ``workflow.unsafe.imports_passed_through()``.
See docs/guides/temporal.md.
"""

from __future__ import annotations

from ._activities import HumanWireActivities, idempotency_key
from ._bridge import AnswerBridge, FileCursor, answer_of
from ._wire import (
    ANSWER_SIGNAL,
    RUN_ID_KEY,
    SEND_SMS_ACTIVITY,
    WORKFLOW_ID_KEY,
    HumanAnswer,
    SentAsk,
    SmsAsk,
)
from ._workflow import MAX_LISTEN, NO_RESPONSE, ask

__all__ = [
    "ANSWER_SIGNAL",
    "MAX_LISTEN",
    "NO_RESPONSE",
    "RUN_ID_KEY",
    "SEND_SMS_ACTIVITY",
    "WORKFLOW_ID_KEY",
    "AnswerBridge",
    "FileCursor",
    "HumanAnswer",
    "HumanWireActivities",
    "SentAsk",
    "SmsAsk",
    "answer_of",
    "ask",
    "idempotency_key",
]
