"""Paused tool calls, written once for every agent framework adapter: a call waits for a
person (an approval request, ``POST /approvals``, or a question sent as a message) without
holding a request; the answer comes back by the long-poll or a webhook
(``approval.decided``, ``message.received``), maybe in another process; and each approval
is used once: consumed on the service (``POST /approvals/{id}/consume`` with the digest of
the call about to run, :func:`consume_on_service`) before the call runs.

- Keys: :data:`RESUME_KEY` (which adapter's pause a send belongs to), :func:`metadata_value`
  (a key a resume needs, checked) and :func:`optional_metadata` (keys that only inform),
  :func:`idempotency_key` (one send per run and call), :func:`check_id` /
  :func:`store_key` (ids that may name files).
- Sending without waiting: :func:`send_approval_form` (an approval request, whatever its
  older name says), :func:`send_pending_approval` (a :class:`PendingApproval`),
  :func:`send_question`, open for :func:`pause_window`.
- Answers: :func:`decision_from_status`, :func:`reply_from_status`,
  :func:`answer_from_event`, :func:`answer_from_status`, :func:`read_answer`,
  :func:`wait_for_decision`, :func:`decisions_from_service`; decisions as JSON
  (:func:`decision_to_dict`, :func:`decision_from_value`) for a framework that keeps the
  answer in its own state; :func:`denial_text`, what the model reads when a call does not
  run.
- Webhooks: :func:`parse_delivery` (verified), :func:`delivery_for` (an answer to one of
  this adapter's pauses, or ``None``).
- Used once: :func:`consume_on_service` consumes a pause's approved calls on the service,
  bound to each call's action; an :class:`ApprovalLedger` also consumes an approval's
  interaction id exactly once on the adapter's side (:class:`MemoryApprovalLedger` in one
  process, :class:`FileApprovalLedger` across processes sharing a directory), which marks
  a pause resumed; :func:`consume_all` takes a whole pause's.
- :class:`FileRecordStore`: paused runs as JSON files, claimed by an atomic rename, so of
  two deliveries resuming the same run only one gets it; :class:`FileRunStore`, the same
  holding an adapter's own pause type; :func:`resume_once` resumes a claimed run and gives
  it back when the resume fails; :class:`PausedOutcome`, how a durable drive ended.

Framework-neutral: the core client and :mod:`humanwire.approval` only.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import tempfile
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, cast, runtime_checkable

from humanwire.approval import (
    ApprovalDecision,
    ApprovalRequest,
    Approver,
    action_digest_of,
    decision_from_approval,
    decision_from_values,
    timeout_decision,
)
from humanwire.types import (
    DEFAULT_NO_RESPONSE_TEMPLATE,
    METADATA_MAX_VALUE_LENGTH,
    ApprovalDecidedEvent,
    Event,
    FormReceivedEvent,
    InteractionStatus,
    MessageReceivedEvent,
    MessageResponse,
)
from humanwire.webhooks import SIGNATURE_HEADER, parse_event

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire
    from humanwire.types.approvals import Approval

__all__ = [
    "DEFAULT_PAUSE_WINDOW",
    "RESUME_KEY",
    "Answer",
    "AnswerKind",
    "ApprovalLedger",
    "Awaited",
    "BlockingApprovalLedger",
    "BlockingLedger",
    "Delivery",
    "FileApprovalLedger",
    "FileRecordStore",
    "FileRunStore",
    "MemoryApprovalLedger",
    "PausedOutcome",
    "PausedRecord",
    "PendingApproval",
    "RecordClaims",
    "answer_from_event",
    "answer_from_status",
    "answers_from_service",
    "approver_source",
    "check_id",
    "consume_all",
    "consume_on_service",
    "decision_from_status",
    "decision_from_value",
    "decision_to_dict",
    "decisions_from_service",
    "delivery_for",
    "denial_text",
    "idempotency_key",
    "metadata_value",
    "optional_metadata",
    "parse_delivery",
    "pause_window",
    "read_answer",
    "read_decision",
    "reply_from_status",
    "reply_text",
    "resume_once",
    "reuse_parts",
    "send_approval_form",
    "send_pending_approval",
    "send_question",
    "service_client",
    "store_key",
    "unrequested_text",
    "wait_for_decision",
]

RESUME_KEY = "humanwire_resume"
"""A paused call's send carries ``metadata[humanwire_resume]`` = the adapter
(``langgraph``, ``openai_agents``, ``pydantic_ai``, ``google_adk``, ``strands``...): each
webhook receiver resumes its own pauses and leaves the others' deliveries alone."""

DEFAULT_PAUSE_WINDOW = 3600.0
"""Seconds a paused call's form or question stays open when the approver sets no
``follow_up_time``: a paused run can wait longer than a held request."""

AnswerKind = Literal["approval", "question"]
"""What a paused call waits for: an approval request, or the reply to a question."""

Answer = ApprovalDecision | str
"""An approval's decision, or a question's answer (the text the model reads)."""

_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
_MAX_IDEMPOTENCY_KEY = 255


# --- keys -------------------------------------------------------------------------------


def check_id(value: str, what: str) -> str:
    """``value`` when it can name a file; ``ValueError`` otherwise (ids come from webhook
    bodies and saved state: never let one name another file)."""
    if not _SAFE_ID.fullmatch(value):
        raise ValueError(f"not {what}: {value!r}")
    return value


def store_key(run_id: str) -> str:
    """A paused run's file-safe key: the id itself when it can name a file, else a digest."""
    if _SAFE_ID.fullmatch(run_id):
        return run_id
    return "run-" + hashlib.sha256(run_id.encode()).hexdigest()[:40]


def idempotency_key(kind: str, framework: str, *parts: str | int) -> str:
    """``humanwire-<kind>:<framework>:<part>:…``: one send per run and call, however often
    a step repeats (the service answers a repeated key and body with the first response).
    A digest of the parts instead when that is too long or not printable ASCII, or when a
    part before the last holds a ``:`` (two calls must never read as one)."""
    texts = [str(part) for part in parts]
    key = f"humanwire-{kind}:{framework}:" + ":".join(texts)
    readable = not any(":" in text for text in texts[:-1])
    if readable and len(key) <= _MAX_IDEMPOTENCY_KEY and key.isascii() and key.isprintable():
        return key
    digest = hashlib.sha256(json.dumps(texts).encode()).hexdigest()
    return f"humanwire-{kind}:{framework}:{digest}"


def reuse_parts(call_ids: Iterable[str], call_id: str) -> tuple[str, ...]:
    """The key parts that tell apart the calls of a conversation that share ``call_id``
    (models and fakes reuse ids like ``call_1`` from turn to turn): none for its first
    call, so a repeated or resumed step gets the first key again, and ``use-<n>`` for the
    n-th, so a later call under a reused id is asked afresh (not answered "ran before").
    ``call_ids``: every call id of the conversation so far, this call's included."""
    uses = sum(1 for seen in call_ids if seen == call_id)
    return () if uses <= 1 else (f"use-{uses}",)


def metadata_value(what: str, value: str) -> str:
    """``value`` when it can travel as a metadata value, else a ``ValueError`` naming
    ``what`` (a run id, a session id...): a key a resume needs must not be left out."""
    if not value or len(value) > METADATA_MAX_VALUE_LENGTH:
        raise ValueError(
            f"the {what} must be 1 to {METADATA_MAX_VALUE_LENGTH} characters to travel "
            f"in a send's metadata, got {len(value)}"
        )
    return value


def optional_metadata(keys: Mapping[str, str | None]) -> dict[str, str]:
    """Keys that only inform (the run and call a send belongs to), each left out when
    empty or longer than the service allows."""
    return {
        key: value
        for key, value in keys.items()
        if value and len(value) <= METADATA_MAX_VALUE_LENGTH
    }


# --- sending without waiting --------------------------------------------------------------


def pause_window(approver: Approver, window: float | None = None) -> float:
    """Seconds a paused call's approval or question stays open: ``window``, else the
    approver's ``follow_up_time``, else :data:`DEFAULT_PAUSE_WINDOW`."""
    return float(window or approver.follow_up_time or DEFAULT_PAUSE_WINDOW)


async def send_approval_form(
    approver: Approver,
    request: ApprovalRequest,
    *,
    idempotency_key: str,
    metadata: Mapping[str, str],
    window: float | None = None,
    allow_edit: bool | None = None,
    client: AsyncHumanWire | None = None,
) -> Approval:
    """Send ``request``'s approval request (``POST /approvals``; the name is older than
    it) without holding the request (the answer comes by the long-poll or the
    ``approval.decided`` webhook), open for :func:`pause_window`, on ``client`` (else the
    approver's). The same ``idempotency_key`` gets the same request back. ``allow_edit``
    is refused: an approval is about the action as asked."""
    if allow_edit:
        raise ValueError("an approval request offers no edit: it is about the action as asked")
    kwargs = approver.approval_kwargs(
        request,
        wait=False,
        window=pause_window(approver, window),
        idempotency_key=idempotency_key,
        metadata=metadata,
    )
    sender = client if client is not None else approver.async_client
    return await sender.approvals.create(**kwargs)


async def send_question(
    approver: Approver,
    question: str,
    *,
    idempotency_key: str,
    metadata: Mapping[str, str],
    window: float | None = None,
    client: AsyncHumanWire | None = None,
) -> MessageResponse:
    """Send ``question`` to the approver's person on its channel without holding the
    request, open for :func:`pause_window`; the reply comes by the status or the webhook."""
    sender = client if client is not None else approver.async_client
    send = getattr(sender.messages, approver.channel)
    response = await send(
        to=approver.to,
        message=question,
        follow_up_time=pause_window(approver, window),
        metadata=dict(metadata),
        idempotency_key=idempotency_key,
    )
    return cast(MessageResponse, response)


@dataclass(frozen=True)
class PendingApproval:
    """A tool call waiting for a person's approval: what it is and where its approval
    page is (``form_url``, the name it had when approvals were forms)."""

    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    interaction_id: str
    form_url: str | None = None
    default_on_timeout: Literal["approve", "reject"] = "reject"

    @property
    def request(self) -> ApprovalRequest:
        """The call as an approval request: what its approval is bound to."""
        return ApprovalRequest(self.tool_name, self.arguments)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PendingApproval:
        return cls(**dict(data))


async def send_pending_approval(
    approver: Approver,
    *,
    call_id: str,
    tool_name: str,
    arguments: dict[str, Any],
    idempotency_key: str,
    metadata: Mapping[str, str],
    description: str | None = None,
    client: AsyncHumanWire | None = None,
) -> PendingApproval:
    """Send one paused call's approval request (:func:`send_approval_form`), for a
    framework that runs a paused call with its own arguments or not at all; returns its
    :class:`PendingApproval`."""
    response = await send_approval_form(
        approver,
        ApprovalRequest(tool_name, arguments, description),
        idempotency_key=idempotency_key,
        metadata=metadata,
        client=client,
    )
    return PendingApproval(
        call_id=call_id,
        tool_name=tool_name,
        arguments=arguments,
        interaction_id=response.interaction_id,
        form_url=response.approval_url,
        default_on_timeout=approver.default_on_timeout,
    )


def approver_source(approver: Approver | None = None, **options: Any) -> Callable[[], Approver]:
    """Who is asked: ``approver``, else one built from ``options`` (``Approver``'s keyword
    arguments; none: from the environment) on first use, so a gate made at import time
    resolves nothing yet. Both is a ``TypeError``."""
    if approver is not None and options:
        raise TypeError("give either approver= or approver options, not both")
    holder: list[Approver] = [approver] if approver is not None else []

    def get() -> Approver:
        if not holder:
            holder.append(Approver(**options))
        return holder[0]

    return get


def service_client(approver: Approver | None, client: AsyncHumanWire | None) -> AsyncHumanWire:
    """``client``, else the approver's, else one from the environment."""
    if client is not None:
        return client
    if approver is not None:
        return approver.async_client
    from humanwire._client import AsyncHumanWire

    return AsyncHumanWire()


# --- answers ----------------------------------------------------------------------------


def reply_text(body: str) -> str:
    """A question's answer as the model reads it (the message tools say the same)."""
    return f"Human response: {body}"


def decision_from_status(
    status: InteractionStatus, default_on_timeout: Literal["approve", "reject"] = "reject"
) -> ApprovalDecision | None:
    """The decision an approval *form*'s status holds (forms sent before approval
    requests); the timeout default once it ended unanswered; ``None`` while it is open.
    An approval request's decision is in its record: :func:`read_decision`."""
    if isinstance(status.result, FormReceivedEvent):
        return decision_from_values(
            status.result.payload.values, interaction_id=status.interaction_id
        )
    if status.ended:
        return timeout_decision(default_on_timeout, interaction_id=status.interaction_id)
    return None


def reply_from_status(status: InteractionStatus) -> str | None:
    """A question's reply (as the model reads it); the no-response text once it ended
    unanswered; ``None`` while it is open."""
    if isinstance(status.result, MessageReceivedEvent):
        return reply_text(status.result.payload.body)
    if status.ended:
        return DEFAULT_NO_RESPONSE_TEMPLATE
    return None


def answer_from_event(kind: AnswerKind, event: Event) -> Answer | None:
    """The answer ``event`` carries for a paused call of ``kind``: an approval's decision
    (``approval.decided``; a submitted form of an older pause too), or the reply to a
    question; ``None`` for anything else."""
    if kind == "approval" and isinstance(event, ApprovalDecidedEvent):
        return decision_from_approval(event.payload)
    if kind == "approval" and isinstance(event, FormReceivedEvent):
        return decision_from_values(
            event.payload.values, interaction_id=event.payload.interaction_id
        )
    if kind == "question" and isinstance(event, MessageReceivedEvent):
        return reply_text(event.payload.body)
    return None


def answer_from_status(
    kind: AnswerKind,
    status: InteractionStatus,
    default_on_timeout: Literal["approve", "reject"] = "reject",
) -> Answer | None:
    """The answer the service holds for a paused call of ``kind``; the timeout default
    (approval) or the no-response text (question) once it ended unanswered; ``None``
    while it is open."""
    if kind == "approval":
        return decision_from_status(status, default_on_timeout)
    return reply_from_status(status)


async def read_answer(
    client: AsyncHumanWire,
    kind: AnswerKind,
    interaction_id: str,
    default_on_timeout: Literal["approve", "reject"] = "reject",
    *,
    timeout: float | None = None,
) -> Answer | None:
    """The answer of a paused call from the service: waits for it (the long-poll, at most
    ``timeout`` seconds; ``None``: until the interaction ends), or looks once
    (``timeout=0``). ``None`` while it is still open."""
    if kind == "approval":
        return await read_decision(client, interaction_id, timeout=timeout)
    if timeout == 0:
        status = await client.interactions.status(interaction_id)
    else:
        status = await client.interactions.wait(interaction_id, timeout=timeout)
    return answer_from_status(kind, status, default_on_timeout)


class Awaited(Protocol):
    """A paused call as far as its answer goes: what it waits for, and on which
    interaction."""

    @property
    def kind(self) -> AnswerKind: ...

    @property
    def interaction_id(self) -> str: ...


async def answers_from_service(
    client: AsyncHumanWire,
    pending: Mapping[str, Awaited],
    known: Mapping[str, Answer],
    default_on_timeout: Literal["approve", "reject"] = "reject",
    *,
    timeout: float | None = None,
) -> dict[str, Answer] | None:
    """``known`` (answers by call key) completed with the other paused calls' answers
    from the service (:func:`read_answer`, all at once); ``None`` while any of them is
    still open (then its own answer resumes the run)."""
    answers = dict(known)
    missing = [(key, call) for key, call in pending.items() if key not in answers]
    found = await asyncio.gather(
        *(
            read_answer(client, call.kind, call.interaction_id, default_on_timeout, timeout=timeout)
            for _, call in missing
        )
    )
    for (key, _), answer in zip(missing, found, strict=True):
        if answer is None:
            return None
        answers[key] = answer
    return answers


async def read_decision(
    client: AsyncHumanWire, interaction_id: str, *, timeout: float | None = 0
) -> ApprovalDecision | None:
    """An approval request's decision from the service: looks once (``timeout=0``) or
    waits (``client.approvals.wait``, at most ``timeout`` seconds; ``None``: until it is
    decided or its windows close). ``None`` while it is pending."""
    if timeout == 0:
        approval = await client.approvals.get(interaction_id)
    else:
        approval = await client.approvals.wait(interaction_id, timeout=timeout)
    return decision_from_approval(approval)


async def wait_for_decision(client: AsyncHumanWire, pending: PendingApproval) -> ApprovalDecision:
    """Hold on the service (60 s a request) until the approval is decided or its windows
    close."""
    decision = await read_decision(client, pending.interaction_id, timeout=None)
    assert decision is not None  # wait() returns once it ended
    return decision


async def decisions_from_service(
    pending: Mapping[str, PendingApproval],
    known: Mapping[str, ApprovalDecision],
    client: AsyncHumanWire,
) -> dict[str, ApprovalDecision] | None:
    """``known`` (decisions by call id) completed with the other paused calls' decisions
    as the service has them; ``None`` while any of them is still open."""
    decisions = dict(known)
    for call_id, approval in pending.items():
        if call_id in decisions:
            continue
        decision = await read_decision(client, approval.interaction_id)
        if decision is None:
            return None
        decisions[call_id] = decision
    return decisions


def denial_text(action: str, decision: ApprovalDecision) -> str:
    """What the model reads instead of the tool's output when the call does not run: why,
    with the human's comment (LangChain's ``ApprovalRejected`` says the same)."""
    if decision.timed_out:
        return (
            f"{action} was not run: no approval decision arrived in time "
            "(timeout; rejected by default)."
        )
    if decision.decision == "consumed":
        return (
            f"{action} was not run again: its approval was used already, so it ran before "
            "(a repeated or resumed step)."
        )
    if decision.decision == "respond":
        return f"{action} was not run. The human answered instead: {decision.comment or ''}".strip()
    if decision.approved:  # approved with edited arguments: a paused call cannot take them
        return f"{action} was not run: the approver changed its arguments; call it again with them."
    reason = f" Reason: {decision.comment}" if decision.comment else ""
    return f"{action} was not run: a human rejected it.{reason}"


def unrequested_text(action: str, error: Exception) -> str:
    """What the model reads when the call does not run because its approval could not be
    asked for (fails closed: an approval nobody could be asked for is no approval)."""
    return f"{action} was not run: its approval could not be requested (humanwire: {error})."


# --- decisions as JSON ------------------------------------------------------------------


def decision_to_dict(decision: ApprovalDecision) -> dict[str, Any]:
    """The decision as plain JSON, for a framework's own saved state."""
    return {
        "approved": decision.approved,
        "decision": decision.decision,
        "comment": decision.comment,
        "timed_out": decision.timed_out,
        "arguments": decision.arguments,
        "interaction_id": decision.interaction_id,
        "action_digest": decision.action_digest,
    }


_KINDS = ("approve", "reject", "edit", "respond", "timeout", "consumed")


def decision_from_value(value: Any) -> ApprovalDecision:
    """A decision back from :func:`decision_to_dict`, or from what a host answered by hand:
    ``True`` / ``False``, ``"approve"`` / ``"reject"`` (read as a form's ``decision``), or
    ``{"decision": ..., "comment": ...}``. Anything else is a rejection that says so:
    approval fails closed."""
    if value is True or value is False:
        return ApprovalDecision(value, "approve" if value else "reject")
    if isinstance(value, str):
        return decision_from_values({"decision": value})
    if isinstance(value, Mapping):
        kind = value.get("decision")
        arguments = value.get("arguments")
        interaction_id = str(value.get("interaction_id") or "")
        comment = value.get("comment")
        comment = str(comment) if comment else None
        if "approved" in value and kind in _KINDS:
            # Approved only when the kind agrees: a "reject" marked approved is a rejection.
            agrees = kind in ("approve", "edit", "timeout")
            digest = value.get("action_digest")
            return ApprovalDecision(
                approved=value["approved"] is True and agrees,
                decision=kind,
                comment=comment,
                timed_out=value.get("timed_out") is True,
                arguments=dict(arguments) if isinstance(arguments, Mapping) else None,
                interaction_id=interaction_id,
                action_digest=digest if isinstance(digest, str) else None,
            )
        values = {key: str(item) for key, item in value.items() if isinstance(item, str)}
        if isinstance(arguments, Mapping):
            values["arguments"] = json.dumps(dict(arguments))
        return decision_from_values(values, interaction_id=interaction_id)
    note = f"Unreadable decision {value!r}; treated as a rejection."
    return ApprovalDecision(False, "reject", note)


# --- webhooks ---------------------------------------------------------------------------


def plain_json(value: Any) -> Any:
    """A value ``json`` cannot write, as its wire form: an event dumped without
    ``mode="json"`` holds datetimes (an approval's decisions), written as ISO 8601."""
    isoformat = getattr(value, "isoformat", None)
    if callable(isoformat):
        return isoformat()
    raise TypeError(f"not JSON: {type(value).__name__}")


def parse_delivery(
    body: bytes | str | Mapping[str, Any] | Event,
    headers: Mapping[str, str] | None = None,
    *,
    secret: str | None = None,
) -> Event:
    """The event a webhook delivery carries. With ``secret`` the ``Humanwire-Signature``
    header is verified against the raw body first, and a delivery that cannot be trusted
    raises ``WebhookVerificationError``. An event or a mapping (already parsed JSON) is
    taken as given, without a secret only."""
    if not isinstance(body, (bytes, str)):
        if secret is not None:
            raise TypeError("verifying a signature needs the raw body (bytes or str)")
        if not isinstance(body, Mapping):
            return body
        body = json.dumps(dict(body), default=plain_json)
    signature = None
    if secret is not None:
        lowered = {key.lower(): value for key, value in (headers or {}).items()}
        signature = lowered.get(SIGNATURE_HEADER.lower(), "")
    return parse_event(body, signature=signature, secret=secret)


@dataclass(frozen=True)
class Delivery:
    """An answer a webhook brings to one of an adapter's pauses: the event, and the keys
    its send carried (``metadata``)."""

    event: ApprovalDecidedEvent | FormReceivedEvent | MessageReceivedEvent
    metadata: dict[str, str]

    @property
    def interaction_id(self) -> str:
        return self.event.payload.interaction_id or ""


def delivery_for(
    framework: str,
    body: bytes | str | Mapping[str, Any] | Event,
    headers: Mapping[str, str] | None = None,
    *,
    secret: str | None = None,
    questions: bool = False,
) -> Delivery | None:
    """The delivery (:func:`parse_delivery`, verified with ``secret``) when it answers a
    pause of ``framework`` (its ``metadata[humanwire_resume]``): an ``approval.decided``
    (or the ``form.received`` of a pause older than approval requests), or with
    ``questions`` a ``message.received`` too; ``None`` for any other event and for
    another adapter's sends."""
    event = parse_delivery(body, headers, secret=secret)
    if isinstance(event, MessageReceivedEvent) and not questions:
        return None
    if not isinstance(event, (ApprovalDecidedEvent, FormReceivedEvent, MessageReceivedEvent)):
        return None
    metadata = dict(event.payload.metadata or {})
    if metadata.get(RESUME_KEY) != framework:
        return None
    return Delivery(event, metadata)


# --- used once --------------------------------------------------------------------------


@runtime_checkable
class ApprovalLedger(Protocol):
    """Where approvals are consumed: ``consume`` is true the first time for an
    interaction id and false after that, across every process sharing the ledger (atomic:
    of two processes consuming at once, exactly one succeeds)."""

    async def consume(self, interaction_id: str) -> bool: ...


@runtime_checkable
class BlockingApprovalLedger(Protocol):
    """An :class:`ApprovalLedger` for blocking code (CrewAI's hooks and flows): the same
    promise, ``consume`` returning at once."""

    def consume(self, interaction_id: str) -> bool: ...


class BlockingLedger:
    """The blocking face of :class:`MemoryApprovalLedger` or :class:`FileApprovalLedger`
    (their ``consume_now``): one ledger whichever face consumes, so an async and a
    blocking caller sharing it still consume each approval once."""

    def __init__(self, ledger: MemoryApprovalLedger | FileApprovalLedger) -> None:
        self.ledger = ledger

    def consume(self, interaction_id: str) -> bool:
        return self.ledger.consume_now(interaction_id)


class MemoryApprovalLedger:
    """Consumed approvals of this process."""

    def __init__(self) -> None:
        self._consumed: set[str] = set()
        self._lock = threading.Lock()

    def consume_now(self, interaction_id: str) -> bool:
        """``consume`` for blocking code (a framework whose hooks block: CrewAI)."""
        with self._lock:
            if interaction_id in self._consumed:
                return False
            self._consumed.add(interaction_id)
            return True

    async def consume(self, interaction_id: str) -> bool:
        return self.consume_now(interaction_id)


class FileApprovalLedger:
    """Consumed approvals as files in ``directory``, one per interaction id (named by its
    SHA-256, so no id names another file), created with ``O_CREAT | O_EXCL``: atomic
    across processes on one machine or a shared volume."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def consume_now(self, interaction_id: str) -> bool:
        """``consume`` for blocking code (one file created: no event loop is held up)."""
        path = self.directory / f"{hashlib.sha256(interaction_id.encode()).hexdigest()}.consumed"
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            return False
        os.close(fd)
        return True

    async def consume(self, interaction_id: str) -> bool:
        return self.consume_now(interaction_id)


async def consume_on_service(
    client: AsyncHumanWire, approved: Mapping[str, ApprovalRequest]
) -> bool:
    """Consume on the service each approved call's approval (interaction id → the call
    as asked: its digest is presented), in a fixed order, before any of them runs:
    ``False`` (run none) at the first one used already (``already_consumed``: the pause
    was resumed before) or refused as not approved."""
    from humanwire.errors import AlreadyConsumedError, NotApprovedError

    for interaction_id in sorted(approved):
        try:
            await client.approvals.consume(
                interaction_id, action_digest=action_digest_of(approved[interaction_id])
            )
        except (AlreadyConsumedError, NotApprovedError):
            return False
    return True


async def consume_all(ledger: ApprovalLedger, interaction_ids: Iterable[str]) -> bool:
    """Consume every approval of a pause before anything of it runs, in a fixed order, so
    two resumes racing for the same pause cannot each win a part: ``False`` (stop) at the
    first one consumed already."""
    for interaction_id in sorted(interaction_ids):
        if not await ledger.consume(interaction_id):
            return False
    return True


# --- paused runs on disk ----------------------------------------------------------------

_Record = TypeVar("_Record")
_Record_co = TypeVar("_Record_co", covariant=True)
_Outcome = TypeVar("_Outcome")


class RecordClaims(Protocol[_Record_co]):
    """A store of paused runs as far as resuming goes: ``claim`` takes one atomically
    (``None`` when someone else has it), ``release`` puts it back, ``finish`` drops it."""

    def claim(self, key: str, /) -> _Record_co | None: ...

    def release(self, key: str, /) -> None: ...

    def finish(self, key: str, /) -> None: ...


async def resume_once(
    store: RecordClaims[_Record],
    key: str,
    resume: Callable[[_Record], Awaitable[_Outcome]],
    *,
    expected: _Record | None = None,
) -> _Outcome | None:
    """Run ``resume`` on the paused run saved under ``key``, once: claimed first, so of two
    deliveries only one resumes it; put back when ``resume`` fails (a retried delivery can
    resume it; the approvals it consumed stay consumed, so their actions do not run
    twice); dropped once it ran (a pause saved meanwhile, the run's next, stays). ``None``
    when someone else has it, or when the saved pause is no longer ``expected`` (the run
    paused again since the answers were read: they are not its answers)."""
    claimed = store.claim(key)
    if claimed is None:
        return None
    if expected is not None and claimed != expected:
        store.release(key)
        return None
    try:
        outcome = await resume(claimed)
    except BaseException:
        store.release(key)
        raise
    store.finish(key)
    return outcome


class FileRecordStore:
    """Paused runs as JSON objects, one file per key in ``directory`` (written atomically;
    claimed by renaming it, which only one process can do), and the consumed approvals
    under ``directory/consumed`` (it is an :class:`ApprovalLedger`).

    ``claim_record`` takes a record and hides it from ``load_record``; ``release`` puts a
    claimed record back; ``finish`` drops a claimed record (a record saved again under the
    same key meanwhile, the run's next pause, stays); ``delete`` drops a key's record,
    claimed or not. Keys come from webhook bodies: one that cannot name a file is refused
    on save and found nowhere.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._ledger = FileApprovalLedger(self.directory / "consumed")

    def _path(self, key: str, suffix: str = ".json") -> Path:
        return self.directory / f"{check_id(key, 'a paused run key')}{suffix}"

    def save_record(self, key: str, record: Mapping[str, Any]) -> None:
        path = self._path(key)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".paused-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(dict(record), file)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @staticmethod
    def _read(path: Path) -> dict[str, Any] | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        if not isinstance(data, dict):
            raise ValueError(f"{path} does not hold a paused run")
        return data

    def load_record(self, key: str) -> dict[str, Any] | None:
        if not _SAFE_ID.fullmatch(key):
            return None
        return self._read(self._path(key))

    def claim_record(self, key: str) -> dict[str, Any] | None:
        if not _SAFE_ID.fullmatch(key):
            return None
        claimed = self._path(key, ".claimed")
        try:
            os.rename(self._path(key), claimed)
        except FileNotFoundError:
            return None  # resumed, or being resumed, by someone else
        return self._read(claimed)

    def release(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            # Not over a record saved since (the run paused again): that one is newer.
            if not self._path(key).exists():
                os.rename(self._path(key, ".claimed"), self._path(key))

    def finish(self, key: str) -> None:
        self._path(key, ".claimed").unlink(missing_ok=True)

    def delete(self, key: str) -> None:
        self._path(key, ".claimed").unlink(missing_ok=True)
        self._path(key).unlink(missing_ok=True)

    def keys(self) -> list[str]:
        return sorted(path.stem for path in self.directory.glob("*.json"))

    async def consume(self, interaction_id: str) -> bool:
        """Consume an approval: true only the first time, in any process."""
        return await self._ledger.consume(interaction_id)


class PausedRecord(Protocol):
    """An adapter's paused run as it is saved: plain JSON."""

    def to_dict(self) -> dict[str, Any]: ...


_Paused = TypeVar("_Paused", bound=PausedRecord)
_Result = TypeVar("_Result")


class FileRunStore(FileRecordStore, Generic[_Paused]):
    """A :class:`FileRecordStore` of one adapter's pauses: ``save`` writes a pause under
    its key (``key_of``; a key that cannot name a file is stored under its digest,
    :func:`store_key`), ``load`` and ``claim`` read one back (``read``); ``release`` and
    ``finish`` take the same key."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        read: Callable[[Mapping[str, Any]], _Paused],
        key_of: Callable[[_Paused], str],
    ) -> None:
        super().__init__(directory)
        self._read_pause = read
        self._key_of = key_of

    def save(self, run: _Paused) -> None:
        self.save_record(store_key(self._key_of(run)), run.to_dict())

    def load(self, key: str) -> _Paused | None:
        record = self.load_record(store_key(key))
        return self._read_pause(record) if record is not None else None

    def claim(self, key: str) -> _Paused | None:
        record = self.claim_record(store_key(key))
        return self._read_pause(record) if record is not None else None

    def release(self, key: str) -> None:
        super().release(store_key(key))

    def finish(self, key: str) -> None:
        super().finish(store_key(key))

    def pauses(self) -> list[_Paused]:
        """Every pause waiting (not claimed)."""
        found = (self.load_record(key) for key in self.keys())
        return [self._read_pause(record) for record in found if record is not None]


@dataclass(frozen=True)
class PausedOutcome(Generic[_Result, _Paused]):
    """How a durable drive ended: finished with the framework's ``result``, or ``paused``
    again (the pause saved, its approvals and questions sent)."""

    result: _Result
    paused: _Paused | None = None

    @property
    def finished(self) -> bool:
        return self.paused is None
