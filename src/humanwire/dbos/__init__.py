"""Durable waits with DBOS (``pip install "humanwire[dbos]"``).

- Once per process, before ``DBOS.launch()``: ``humanwire.dbos.configure(HumanWire(...))``.
- In a ``@DBOS.workflow()``: ``humanwire.dbos.ask(to=..., message=..., timeout=...)``
  returns the reply text, or the no-response text at the timeout (also ``form``, ``call``,
  ``approval`` and ``consume``); in an ``async def`` workflow, ``await ask_async(...)``
  and the other ``*_async`` twins.
- Beside them: one ``AnswerBridge`` that follows the account's outcome feed and sends
  each answer to the workflow that asked (``DBOS.send`` with the event's id as the
  idempotency key).

Pin ``application_version`` in ``DBOSConfig``: a wait spans deploys. Unpinned, each
helper warns (``UnpinnedVersionWarning``), or refuses with ``configure(...,
require_pinned_version=True)``. See docs/guides/dbos.md.
"""

from __future__ import annotations

from humanwire._durable_bridge import FileCursor

from ._bridge import AnswerBridge, Sender
from ._steps import SEND_STEP_NAMES, configure, idempotency_key
from ._version import UnpinnedVersionError, UnpinnedVersionWarning, version_pinned
from ._wire import WORKFLOW_ID_KEY, ApprovalDecision, answer_of, topic_of
from ._workflow import (
    APPROVAL_GRACE,
    MAX_LISTEN,
    NO_RESPONSE,
    approval,
    approval_async,
    ask,
    ask_async,
    call,
    call_async,
    consume,
    consume_async,
    form,
    form_async,
)

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
    "UnpinnedVersionError",
    "UnpinnedVersionWarning",
    "answer_of",
    "approval",
    "approval_async",
    "ask",
    "ask_async",
    "call",
    "call_async",
    "configure",
    "consume",
    "consume_async",
    "form",
    "form_async",
    "idempotency_key",
    "topic_of",
    "version_pinned",
]
