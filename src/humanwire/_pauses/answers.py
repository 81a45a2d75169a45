"""A paused call's answer: from a webhook's event (:func:`answer_from_event`) or the
service (:func:`read_answer`, :func:`answers_from_service`, :func:`read_decision`);
decisions as JSON for a framework that keeps the answer in its own state
(:func:`decision_to_dict`, :func:`decision_from_value`); what the model reads when a call
does not run (:func:`denial_text`, :func:`unrequested_text`), and the last step of every
gate, an approval used for its call (:func:`use_approval`; from whatever the gate holds,
an error or no decision too: :func:`settle_approval`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from humanwire.approval import (
    ApprovalDecision,
    ApprovalRequest,
    consume_approval,
    decision_from_approval,
    decision_from_values,
    timeout_decision,
)
from humanwire.errors import HumanWireError
from humanwire.types import (
    DEFAULT_NO_RESPONSE_TEMPLATE,
    ApprovalDecidedEvent,
    Event,
    FormReceivedEvent,
    InteractionStatus,
    MessageReceivedEvent,
)

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire

    from .sending import PendingApproval

AnswerKind = Literal["approval", "question"]
"""What a paused call waits for: an approval request, or the reply to a question."""

Answer = ApprovalDecision | str
"""An approval's decision, or a question's answer (the text the model reads)."""


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


@dataclass(frozen=True)
class AwaitedAnswer:
    """An :class:`Awaited` of its own, for an adapter whose pause keeps no call record."""

    kind: AnswerKind
    interaction_id: str


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


async def use_approval(
    client: AsyncHumanWire | Callable[[], Awaitable[AsyncHumanWire]] | None,
    decision: ApprovalDecision,
    request: ApprovalRequest,
) -> tuple[ApprovalDecision | None, str]:
    """A decision made usable for the call about to run, the step every gate takes last:
    an approval is consumed on the service for the call as asked (``client``, or the
    async function that gives it, called only then; ``None``: not on the service), so a
    repeated or resumed step finds it used. Returns the decision as it stands then and,
    when the call must not run, what the model reads instead (``""`` when it may run):
    :func:`denial_text`, or, with ``None`` for the decision, that the approval could not
    be used (the service failed: fails closed)."""
    if decision.approved and client is not None:
        try:
            service = client if not callable(client) else await client()
            decision = await consume_approval(service, decision, request)
        except HumanWireError as exc:
            return None, f"{request.action} was not run: its approval could not be used ({exc})."
    return decision, "" if decision.approved else denial_text(request.action, decision)


async def settle_approval(
    client: AsyncHumanWire | Callable[[], Awaitable[AsyncHumanWire]] | None,
    answer: ApprovalDecision | HumanWireError | None,
    request: ApprovalRequest,
) -> tuple[ApprovalDecision | None, str]:
    """:func:`use_approval` over whatever a gate holds for the call: a decision (used for
    the call as asked), the error that kept its approval from being requested or read
    (:func:`unrequested_text`), or nothing (no decision). The decision as it stands and,
    when the call must not run, what the model reads (``""`` when it may); ``None`` for
    the decision when there is none to act on (fails closed)."""
    if isinstance(answer, HumanWireError):
        return None, unrequested_text(request.action, answer)
    if answer is None:
        return None, f"{request.action} was not run: it has no decision."
    return await use_approval(client, answer, request)


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
