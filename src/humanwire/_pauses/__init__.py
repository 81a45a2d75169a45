"""Paused tool calls, written once for every agent framework adapter: a call waits for a
person (an approval request, ``POST /approvals``, or a question sent as a message) without
holding a request; the answer comes back by the long-poll or a webhook
(``approval.decided``, ``message.received``), maybe in another process; and each approval
is used once: consumed on the service (``POST /approvals/{id}/consume`` with the digest of
the call about to run) before the call runs.

One module a seam (each re-exported here):

- :mod:`.keys`: :data:`RESUME_KEY` (which adapter's pause a send belongs to), the
  Idempotency-Keys of sends, metadata values, ids that may name files.
- :mod:`.sending`: sending an approval request or a question without waiting.
- :mod:`.answers`: a paused call's answer, from a webhook's event or the service;
  decisions as JSON; what the model reads when a call does not run.
- :mod:`.delivery`: webhook deliveries, verified, and whether one answers an adapter's
  pause.
- :mod:`.ledger`: each approval used once (on the service, and in an approval ledger).
- :mod:`.store`: paused runs as JSON files, claimed atomically (:func:`resume_once`).
- :mod:`.outcome`: :class:`PausedOutcome`, how a durable drive ended.
- :mod:`.resume`: :func:`resume_from_webhook` and :func:`resume_expired`, written once;
  an adapter registers what is its own (how its pauses are found, what each waits for,
  and the framework's resume step) as a :class:`PauseResumer`.

Framework-neutral: the core client and :mod:`humanwire.approval` only.
"""

from __future__ import annotations

from .answers import (
    Answer,
    AnswerKind,
    Awaited,
    AwaitedAnswer,
    answer_from_event,
    answer_from_status,
    answers_from_service,
    decision_from_status,
    decision_from_value,
    decision_to_dict,
    denial_text,
    read_answer,
    read_decision,
    reply_from_status,
    reply_text,
    settle_approval,
    unrequested_text,
    use_approval,
    wait_for_decision,
)
from .delivery import (
    Delivery,
    delivery_for,
    parse_delivery,
    plain_json,
)
from .keys import (
    DEFAULT_PAUSE_WINDOW,
    RESUME_KEY,
    SAFE_ID,
    action_key,
    check_id,
    idempotency_key,
    metadata_value,
    optional_metadata,
    reuse_parts,
    store_key,
)
from .ledger import (
    ApprovalLedger,
    BlockingApprovalLedger,
    BlockingLedger,
    FileApprovalLedger,
    MemoryApprovalLedger,
    consume_all,
    consume_on_service,
)
from .outcome import (
    PausedOutcome,
)
from .resume import PauseResumer, resume_answered, resume_expired, resume_from_webhook
from .sending import (
    AskingPeople,
    Asks,
    LazyApprover,
    PendingApproval,
    approver_source,
    ask_person,
    ask_question,
    pause_window,
    request_approval,
    send_approval_form,
    send_pending_approval,
    send_question,
    service_client,
)
from .store import (
    FilePlainRecordStore,
    FileRecordStore,
    FileRunStore,
    PausedRecord,
    PauseStore,
    PendingCalls,
    PendingRecord,
    RecordClaims,
    SavedRecord,
    resume_once,
)

__all__ = [
    "DEFAULT_PAUSE_WINDOW",
    "RESUME_KEY",
    "SAFE_ID",
    "Answer",
    "AnswerKind",
    "ApprovalLedger",
    "AskingPeople",
    "Asks",
    "Awaited",
    "AwaitedAnswer",
    "BlockingApprovalLedger",
    "BlockingLedger",
    "Delivery",
    "FileApprovalLedger",
    "FilePlainRecordStore",
    "FileRecordStore",
    "FileRunStore",
    "LazyApprover",
    "MemoryApprovalLedger",
    "PauseResumer",
    "PauseStore",
    "PausedOutcome",
    "PausedRecord",
    "PendingApproval",
    "PendingCalls",
    "PendingRecord",
    "RecordClaims",
    "SavedRecord",
    "action_key",
    "answer_from_event",
    "answer_from_status",
    "answers_from_service",
    "approver_source",
    "ask_person",
    "ask_question",
    "check_id",
    "consume_all",
    "consume_on_service",
    "decision_from_status",
    "decision_from_value",
    "decision_to_dict",
    "delivery_for",
    "denial_text",
    "idempotency_key",
    "metadata_value",
    "optional_metadata",
    "parse_delivery",
    "pause_window",
    "plain_json",
    "read_answer",
    "read_decision",
    "reply_from_status",
    "reply_text",
    "request_approval",
    "resume_answered",
    "resume_expired",
    "resume_from_webhook",
    "resume_once",
    "reuse_parts",
    "send_approval_form",
    "send_pending_approval",
    "send_question",
    "service_client",
    "settle_approval",
    "store_key",
    "unrequested_text",
    "use_approval",
    "wait_for_decision",
]
