"""Durable waits with DBOS (``pip install "humanwire[dbos]"``).

- Once per process, before ``DBOS.launch()``: ``humanwire.dbos.configure(HumanWire(...))``.
- In a ``@DBOS.workflow()``: ``humanwire.dbos.ask(to=..., message=..., timeout=...)``
  returns the reply text, or the no-response text at the timeout (also ``form``, ``call``,
  ``approval`` and ``consume``).
- Beside them: one ``AnswerBridge`` that follows the account's outcome feed and sends
  each answer to the workflow that asked (``DBOS.send`` with the event's id as the
  idempotency key).

Pin ``application_version`` in ``DBOSConfig``: a wait spans deploys. See docs/guides/dbos.md.
"""

from __future__ import annotations

from humanwire._durable_bridge import FileCursor

from ._bridge import AnswerBridge, Sender
from ._steps import SEND_STEP_NAMES, configure, idempotency_key
from ._wire import WORKFLOW_ID_KEY, ApprovalDecision, answer_of, topic_of
from ._workflow import APPROVAL_GRACE, MAX_LISTEN, NO_RESPONSE, approval, ask, call, consume, form

__all__ = [
    "APPROVAL_GRACE",
    "MAX_LISTEN",
    "NO_RESPONSE",
    "SEND_STEP_NAMES",
    "WORKFLOW_ID_KEY",
    "AnswerBridge",
    "ApprovalDecision",
    "FileCursor",
    "Sender",
    "answer_of",
    "approval",
    "ask",
    "call",
    "configure",
    "consume",
    "form",
    "idempotency_key",
    "topic_of",
]
