"""Human approval inside a LlamaIndex workflow, driven by the humanwire service.

A step calls :func:`request_approval`: it sends the approval request (``POST
/approvals``, once, even though the step is replayed), announces it with an
:class:`ApprovalRequiredEvent` (an ``InputRequiredEvent`` carrying the approval page's
link) and waits, with no timeout of its own, for the matching
:class:`ApprovalResponseEvent` (a ``HumanResponseEvent``). The service produces that
event: a watcher long-polls the request and sends the decision into the run — or, for a
durable run (``watch=False``), the ``approval.decided`` webhook does it through
:mod:`humanwire.llama_index.durable`. Anyone else may send an ``ApprovalResponseEvent``
for the same interaction with ``handler.ctx.send_event``, but an approval only counts
once the service lets it be consumed: before ``request_approval`` returns an approved
decision it consumes it for the request's action (``already_consumed``: the decision
comes back of kind ``consumed``, not approved: the step ran the action before).
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import logging
import os
import weakref
from typing import TYPE_CHECKING, Any, Literal

from llama_index.core.workflow import Context, HumanResponseEvent, InputRequiredEvent
from pydantic import Field

from humanwire._pauses import decision_from_status as form_decision_from_status
from humanwire.approval import (
    ApprovalDecision,
    ApprovalRequest,
    Approver,
    DecisionKind,
    consume_approval,
    decision_from_approval,
)
from humanwire.errors import HumanWireError
from humanwire.types import METADATA_MAX_VALUE_LENGTH, InteractionStatus

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire

__all__ = [
    "DEFAULT_APPROVAL_WINDOW",
    "ApprovalError",
    "ApprovalRequiredEvent",
    "ApprovalResponseEvent",
    "decision_from_status",
    "request_approval",
    "watch_approval",
]

logger = logging.getLogger("humanwire.llama_index")

DEFAULT_APPROVAL_WINDOW = 3600
"""Seconds the approval form stays open when the approver does not set
``follow_up_time``: a workflow can wait longer than a held HTTP request."""

_STATE_ROOT = "humanwire_approvals"
_WATCH_SLICE = 60.0
"""Each long-poll of the interaction status is at most this long (the service's cap)."""
_WATCH_RETRY_DELAYS = (1.0, 2.0, 4.0, 8.0)

# interaction id -> watcher task; one watcher per interaction although the step replays.
_watchers: dict[str, asyncio.Task[None]] = {}
_FORGET_AFTER = 300.0
_default_approvers: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[str, str], Approver]
] = weakref.WeakKeyDictionary()


class ApprovalError(RuntimeError):
    """The decision could not be read from the service (the approval did not fail closed
    silently: the step raises instead of guessing)."""


class ApprovalRequiredEvent(InputRequiredEvent):
    """Streamed once when a step starts waiting for an approval: where the form is and
    what it is about. ``key`` is the step's name for this approval."""

    interaction_id: str
    form_url: str | None = None
    action: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    description: str | None = None
    key: str
    default_on_timeout: Literal["approve", "reject"] = "reject"


class ApprovalResponseEvent(HumanResponseEvent):
    """The decision, sent into the run by the watcher, a webhook or any caller."""

    interaction_id: str
    approved: bool
    decision: DecisionKind
    comment: str | None = None
    timed_out: bool = False
    arguments: dict[str, Any] | None = None
    error: str | None = None

    @classmethod
    def from_decision(cls, decision: ApprovalDecision) -> ApprovalResponseEvent:
        return cls(
            interaction_id=decision.interaction_id,
            approved=decision.approved,
            decision=decision.decision,
            comment=decision.comment,
            timed_out=decision.timed_out,
            arguments=decision.arguments,
            response=decision.text,
        )

    def to_decision(self) -> ApprovalDecision:
        return ApprovalDecision(
            approved=self.approved,
            decision=self.decision,
            comment=self.comment,
            timed_out=self.timed_out,
            arguments=self.arguments,
            interaction_id=self.interaction_id,
        )


def decision_from_status(
    status: InteractionStatus, *, default_on_timeout: Literal["approve", "reject"] = "reject"
) -> ApprovalDecision | None:
    """The decision an approval *form*'s status carries (forms sent before approval
    requests); the timeout default once it ended without a submission; ``None`` while it
    is still open. An approval request's decision: ``decision_from_approval``."""
    return form_decision_from_status(status, default_on_timeout)


async def watch_approval(
    client: AsyncHumanWire,
    interaction_id: str,
    *,
    default_on_timeout: Literal["approve", "reject"] = "reject",
) -> ApprovalDecision:
    """Wait on the service until the approval request is decided or its windows close.

    Long-polls (``client.approvals.wait``) in slices, so it waits past any single
    request's limit without busy polling; a failed poll is retried a few times before it
    gives up with :class:`ApprovalError`. (``default_on_timeout`` is kept for
    compatibility: the service decides a timeout, as the request's ``onTimeout`` says.)
    """
    failures = 0
    while True:
        try:
            approval = await client.approvals.wait(interaction_id, timeout=_WATCH_SLICE)
        except HumanWireError as exc:
            if failures >= len(_WATCH_RETRY_DELAYS):
                raise ApprovalError(f"could not read approval {interaction_id}: {exc}") from exc
            await asyncio.sleep(_WATCH_RETRY_DELAYS[failures])
            failures += 1
            continue
        failures = 0
        decision = decision_from_approval(approval)
        if decision is not None:
            return decision


async def _watch_and_send(ctx: Context[Any], approver: Approver, interaction_id: str) -> None:
    try:
        decision = await watch_approval(
            approver_async_client(approver),
            interaction_id,
            default_on_timeout=approver.default_on_timeout,
        )
        event = ApprovalResponseEvent.from_decision(decision)
    except ApprovalError as exc:
        event = ApprovalResponseEvent(
            interaction_id=interaction_id,
            approved=False,
            decision="reject",
            error=str(exc),
            response=str(exc),
        )
    try:
        ctx.send_event(event)
    except Exception:  # the run ended or was cancelled meanwhile: nobody to tell
        logger.info("approval %s decided after its run stopped", interaction_id)


def _ensure_watcher(ctx: Context[Any], approver: Approver, interaction_id: str) -> None:
    if interaction_id in _watchers:
        return
    # Created inside an empty contextvars context: the watcher outlives this step attempt,
    # so it must not carry the step's worker state into send_event.
    loop = asyncio.get_running_loop()
    task = contextvars.Context().run(
        loop.create_task, _watch_and_send(ctx, approver, interaction_id)
    )
    _watchers[interaction_id] = task

    def forget_later(_: asyncio.Task[None]) -> None:
        # Normally the step's replay forgets it at once; this covers a run that was
        # stopped before it could (the entry must outlive the task until that replay).
        loop.call_later(_FORGET_AFTER, _watchers.pop, interaction_id, None)

    task.add_done_callback(forget_later)


def _default_approver() -> Approver:
    """One approver from the environment per configuration and event loop: a step that
    replays must not build a new client each time, and an async client must not be
    shared across event loops."""
    per_loop = _default_approvers.setdefault(asyncio.get_running_loop(), {})
    key = (os.environ.get("HUMANWIRE_BASE_URL", ""), os.environ.get("HUMANWIRE_API_KEY", ""))
    approver = per_loop.get(key)
    if approver is None:
        approver = Approver(follow_up_time=DEFAULT_APPROVAL_WINDOW)
        per_loop[key] = approver
    return approver


def approver_async_client(approver: Approver) -> AsyncHumanWire:
    """The async client an approval in a workflow uses: the approver's own, or one on the
    service and account of the sync client it was given (``Approver.async_client``)."""
    return approver.async_client


def _state_path(key: str) -> str:
    # The state store reads dots as nesting: a digest keeps any key one level deep.
    return f"{_STATE_ROOT}.k{hashlib.sha256(key.encode()).hexdigest()[:24]}"


async def _save_record(ctx: Context[Any], path: str, record: dict[str, Any]) -> None:
    try:
        await ctx.store.set(path, record)
    except ValueError as exc:
        raise ValueError(
            f"request_approval keeps its form in the run's state under {_STATE_ROOT!r}, "
            f"which this workflow's state model refuses ({exc}): add the field "
            f"`{_STATE_ROOT}: dict[str, Any] = {{}}` to it"
        ) from exc


def _workflow_timeout(ctx: Context[Any]) -> float | None:
    # Best effort, through private attributes: only to explain a timeout before it bites.
    workflow = getattr(getattr(ctx, "_face", None), "_workflow", None)
    timeout = getattr(workflow, "_timeout", None)
    return float(timeout) if isinstance(timeout, (int, float)) else None


def approval_window(approver: Approver) -> float:
    """Seconds the form stays open in a workflow: the approver's ``follow_up_time``, else
    :data:`DEFAULT_APPROVAL_WINDOW`."""
    return float(approver.follow_up_time or DEFAULT_APPROVAL_WINDOW)


def approval_key(action: str, arguments: dict[str, Any]) -> str:
    """A key naming one approval of ``action`` with these arguments in a run."""
    digest = hashlib.sha256(
        json.dumps(arguments, sort_keys=True, default=str).encode()
    ).hexdigest()[:16]
    return f"{action}:{digest}"


RESUME_KEY = "humanwire_resume"
RESUME_LLAMA_INDEX = "llama_index"
APPROVAL_KEY = "llama_index_approval_key"


def resume_metadata(key: str) -> dict[str, str]:
    """The approval form's metadata: tells a webhook receiver the form pauses a LlamaIndex
    run (``durable.resume_from_webhook`` leaves other forms alone) and which approval."""
    metadata = {RESUME_KEY: RESUME_LLAMA_INDEX}
    if len(key) <= METADATA_MAX_VALUE_LENGTH:
        metadata[APPROVAL_KEY] = key
    return metadata


async def request_approval(
    ctx: Context[Any],
    request: ApprovalRequest,
    *,
    approver: Approver | None = None,
    key: str | None = None,
    watch: bool = True,
) -> ApprovalDecision:
    """Ask a person to approve ``request`` and wait, inside a workflow step, for the answer.

    The form goes out once per ``key`` (default: the action and its arguments) even though
    the step replays; it stays open for the approver's ``follow_up_time`` (default one
    hour). ``watch=True`` has the service drive the run: the decision, or the timeout
    default when the form expires, arrives as an ``ApprovalResponseEvent``. ``watch=False``
    leaves that to a webhook (see ``humanwire.llama_index.durable``) or to the caller.

    The step waits with no timeout of its own; the workflow must not time out first: make
    it with ``timeout=None`` (a ``ValueError`` says so when its timeout is shorter than
    the window). A timeout is a decision (``timed_out``), not an exception.
    """
    approver = approver or _default_approver()
    key = key or approval_key(request.action, request.arguments)
    path = _state_path(key)
    record: dict[str, Any] | None = await ctx.store.get(path, default=None)
    if record is None or not record.get("interaction_id"):
        window = approval_window(approver)
        timeout = _workflow_timeout(ctx)
        if watch and timeout is not None and timeout < window:
            raise ValueError(
                f"this workflow times out after {timeout:g} s, but the approval may take up "
                f"to {window:g} s: create the workflow with timeout=None"
            )
        # Written before sending: a state model that refuses it fails before anyone is asked.
        await _save_record(ctx, path, {"key": key})
        kwargs = approver.approval_kwargs(
            request, wait=False, window=window, metadata=resume_metadata(key)
        )
        response = await approver_async_client(approver).approvals.create(**kwargs)
        record = {
            "key": key,
            "interaction_id": response.interaction_id,
            "form_url": response.approval_url,
        }
        await _save_record(ctx, path, record)
    interaction_id: str = record["interaction_id"]
    if watch:
        _ensure_watcher(ctx, approver, interaction_id)
    waiter = ApprovalRequiredEvent(
        interaction_id=interaction_id,
        form_url=record.get("form_url"),
        action=request.action,
        arguments=request.arguments,
        description=request.description,
        key=key,
        default_on_timeout=approver.default_on_timeout,
        prefix=f"Waiting for approval of {request.action}: {record.get('form_url')}",
    )
    event = await ctx.wait_for_event(
        ApprovalResponseEvent,
        waiter_event=waiter,
        waiter_id=f"humanwire-approval:{interaction_id}",
        requirements={"interaction_id": interaction_id},
        timeout=None,
    )
    # Decided: the same key asks afresh if the run needs this approval again.
    await ctx.store.set(path, None)
    _watchers.pop(interaction_id, None)
    if event.error:
        raise ApprovalError(event.error)
    # Used once: consumed for this action before the step goes on to run it.
    return await consume_approval(approver_async_client(approver), event.to_decision(), request)
