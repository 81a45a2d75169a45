"""Human approval of tool calls on the SDK's own seam: ``needs_approval`` and the run's
interruptions.

- :class:`ApprovalGate` is a ``needs_approval`` policy ``(context, params, call_id) ->
  bool``. The SDK calls it once per tool call; when the call needs approval, the gate
  sends the approval form at once (without holding the request) and returns ``True``,
  so the run stops with a ``ToolApprovalItem`` for that call.
- :func:`require_approval` returns a copy of any ``FunctionTool`` gated that way.
- :func:`run_with_approvals` is the in-process loop: run, collect each interruption's
  decision from the service, ``state.approve`` / ``state.reject(rejection_message=...)``,
  run again, until the run finishes.

The form goes out at most once per call: its Idempotency-Key derives from the run id and
the call id, so a host that sends for an interruption the gate already asked about gets
the first form back. The form's metadata carries the run id and the call id, so a webhook
receiver in another process can resume the run (``humanwire.openai_agents.durable``).
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import inspect
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast, overload

from agents import Agent, FunctionTool, RunContextWrapper, Runner, RunResult, RunState
from agents.items import ToolApprovalItem

from humanwire._pauses import DEFAULT_PAUSE_WINDOW as DEFAULT_APPROVAL_WINDOW
from humanwire._pauses import (
    RESUME_KEY,
    LazyApprover,
    PendingApproval,
    approver_source,
    decision_from_status,
    idempotency_key,
    metadata_value,
    send_pending_approval,
    unrequested_text,
    wait_for_decision,
)
from humanwire._pauses import denial_text as rejection_message
from humanwire.approval import ApprovalDecision, Approver, consume_approval
from humanwire.errors import HumanWireError

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire

__all__ = [
    "CALL_KEY",
    "DEFAULT_APPROVAL_WINDOW",
    "RESUME_KEY",
    "RESUME_OPENAI_AGENTS",
    "RUN_KEY",
    "ApprovalGate",
    "PendingApproval",
    "apply_decision",
    "decision_from_status",
    "rejection_message",
    "require_approval",
    "run_with_approvals",
    "wait_for_decision",
]

logger = logging.getLogger("humanwire.openai_agents")

RESUME_OPENAI_AGENTS = "openai_agents"
RUN_KEY = "openai_agents_run_id"
CALL_KEY = "openai_agents_call_id"
"""The approval form's metadata keys: a webhook names the run and the call by itself."""

Policy = Callable[[RunContextWrapper[Any], dict[str, Any], str], bool | Awaitable[bool]]
"""``needs_approval``'s callable form: ``(context, params, call_id) -> bool``."""


# --- one approval form ------------------------------------------------------------------


def approval_key(run_id: str, round: int, call_id: str) -> str:
    """The approval form's Idempotency-Key: one form per call of a run's pause, however
    often the gate or a host asks. The round (how many pauses the run has had) keeps a
    call id that a model reuses in a later turn from replaying an earlier form."""
    return idempotency_key("approval", "openai-agents", run_id, round, call_id)


def resume_metadata(run_id: str, call_id: str) -> dict[str, str]:
    """The approval form's metadata: a webhook receiver in any process finds the run and
    the call from the event alone."""
    return {
        RESUME_KEY: RESUME_OPENAI_AGENTS,
        RUN_KEY: metadata_value("run id", run_id),
        CALL_KEY: metadata_value("call id", call_id),
    }


async def send_approval(
    approver: Approver,
    *,
    run_id: str,
    round: int,
    call_id: str,
    tool_name: str,
    arguments: dict[str, Any],
    description: str | None = None,
) -> PendingApproval:
    """Send the approval form of one tool call without holding the request (the answer
    comes by the status long-poll or the webhook). Idempotent per run and call."""
    return await send_pending_approval(
        approver,
        call_id=call_id,
        tool_name=tool_name,
        arguments=arguments,
        description=description,
        idempotency_key=approval_key(run_id, round, call_id),
        metadata=resume_metadata(run_id, call_id),
    )


# --- the run a host helper drives -------------------------------------------------------


@dataclass
class ApprovalRun:
    """The run :func:`run_with_approvals` or the durable helpers drive: its id (in every
    form's Idempotency-Key and metadata), the approver for interruptions no
    :class:`ApprovalGate` asked about, and the forms sent so far, by call id."""

    run_id: str
    approver: Callable[[], Approver]
    round: int = 0
    """How many times the run has paused and been answered: part of each form's key."""
    sent: dict[str, PendingApproval] = field(default_factory=dict)

    def next_round(self) -> None:
        """The pause was answered: the next pause asks afresh."""
        self.round += 1
        self.sent = {}

    @contextmanager
    def active(self) -> Iterator[ApprovalRun]:
        """Make this the run the gates see while ``Runner.run`` runs (a context variable:
        the SDK evaluates ``needs_approval`` inside the run's own tasks)."""
        token = _ACTIVE_RUN.set(self)
        try:
            yield self
        finally:
            _ACTIVE_RUN.reset(token)

    def approver_of(self, item: ToolApprovalItem) -> Approver:
        """Who is asked about ``item``: its tool's gate's approver, else the run's."""
        gate = gate_of(item)
        return gate.approver if gate is not None else self.approver()

    async def pending_for(self, items: list[ToolApprovalItem]) -> list[PendingApproval]:
        """The approval of each interruption: the one its gate sent, else one sent now
        (through the tool's gate when it has one, else through the run's approver)."""
        pending: list[PendingApproval] = []
        for item in items:
            call_id = interruption_call_id(item)
            known = self.sent.get(call_id)
            if known is None:
                gate = gate_of(item)
                known = await send_approval(
                    self.approver_of(item),
                    run_id=self.run_id,
                    round=self.round,
                    call_id=call_id,
                    tool_name=item.tool_name or item.name or "tool",
                    arguments=interruption_arguments(item),
                    description=gate.description if gate is not None else None,
                )
                self.sent[call_id] = known
            pending.append(known)
        return pending


_ACTIVE_RUN: contextvars.ContextVar[ApprovalRun | None] = contextvars.ContextVar(
    "humanwire_openai_agents_run", default=None
)


def new_run_id() -> str:
    return uuid.uuid4().hex


def interruption_call_id(item: ToolApprovalItem) -> str:
    call_id = item.call_id
    if not call_id:
        raise ValueError(f"the approval of {item.tool_name!r} has no call id to key it by")
    return call_id


def interruption_arguments(item: ToolApprovalItem) -> dict[str, Any]:
    """The call's arguments as a dict (as the gate got them), the raw text otherwise."""
    raw = item.arguments
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {"arguments": raw}
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}


def gate_of(item: ToolApprovalItem) -> ApprovalGate | None:
    """The :class:`ApprovalGate` of the interrupted tool, if humanwire gates it."""
    agent = item.agent
    for tool in getattr(agent, "tools", None) or []:
        if isinstance(tool, FunctionTool) and tool.name == item.tool_name:
            gate = tool.needs_approval
            return gate if isinstance(gate, ApprovalGate) else None
    return None


# --- the gate ---------------------------------------------------------------------------


class ApprovalGate(LazyApprover):
    """A ``needs_approval`` policy that asks a person.

    ``when`` (the SDK's own policy signature, sync or async) narrows it to some calls;
    left out, every call needs approval. For a call that needs it, inside a run driven by
    :func:`run_with_approvals` or ``durable.run_until_approval`` / ``resume_*``, the gate
    sends the approval form at once (its window is the approver's ``follow_up_time``,
    default one hour) and the run stops with the call's ``ToolApprovalItem``. Outside
    such a run it only says "needs approval" and the host asks. A failed send is logged
    and still answers "needs approval": approval fails closed, and the host sends again
    under the same Idempotency-Key.

    ``approver`` or its options (``to``, ``channel``, ``follow_up_time``,
    ``default_on_timeout``, ``client``...) say whom to ask; it is built on first use, so a
    gate made at import time resolves nothing yet. ``description`` is the form's subtitle.
    """

    def __init__(
        self,
        action: str,
        approver: Approver | None = None,
        *,
        when: Policy | None = None,
        description: str | None = None,
        **approver_options: Any,
    ) -> None:
        self.action = action
        self.when = when
        self.description = description
        self._approver = approver_source(approver, **approver_options)

    async def __call__(
        self, context: RunContextWrapper[Any], params: dict[str, Any], call_id: str
    ) -> bool:
        if self.when is not None:
            needed = self.when(context, params, call_id)
            if inspect.isawaitable(needed):
                needed = await needed
            if not needed:
                return False
        run = _ACTIVE_RUN.get()
        if run is not None and call_id not in run.sent:
            try:
                run.sent[call_id] = await send_approval(
                    self.approver,
                    run_id=run.run_id,
                    round=run.round,
                    call_id=call_id,
                    tool_name=self.action,
                    arguments=dict(params),
                    description=self.description,
                )
            except HumanWireError as exc:
                logger.warning("approval of %s (%s) not sent yet: %s", self.action, call_id, exc)
        return True

    def __repr__(self) -> str:
        return f"ApprovalGate({self.action!r})"


@overload
def require_approval(
    tool: FunctionTool,
    approver: Approver | None = None,
    *,
    when: Policy | None = None,
    description: str | None = None,
    **approver_options: Any,
) -> FunctionTool: ...
@overload
def require_approval(
    tool: None = None,
    approver: Approver | None = None,
    *,
    when: Policy | None = None,
    description: str | None = None,
    **approver_options: Any,
) -> Callable[[FunctionTool], FunctionTool]: ...
def require_approval(
    tool: FunctionTool | None = None,
    approver: Approver | None = None,
    *,
    when: Policy | None = None,
    description: str | None = None,
    **approver_options: Any,
) -> FunctionTool | Callable[[FunctionTool], FunctionTool]:
    """A copy of ``tool`` whose calls wait for a person's approval (the original stays
    ungated). Works on any ``FunctionTool`` (``@function_tool`` functions, humanwire's own
    tools) and as a decorator over ``@function_tool``. A callable ``needs_approval`` the
    tool already has becomes ``when``, unless ``when`` is given."""

    def gate(target: FunctionTool) -> FunctionTool:
        if not isinstance(target, FunctionTool):
            raise TypeError(f"require_approval gates a FunctionTool, not {target!r}")
        policy = when
        if policy is None and callable(target.needs_approval):
            policy = cast(Policy, target.needs_approval)
        gated = copy.copy(target)
        gated.needs_approval = ApprovalGate(
            target.name, approver, when=policy, description=description, **approver_options
        )
        return gated

    return gate(tool) if tool is not None else gate


# --- decisions --------------------------------------------------------------------------


def apply_decision(
    state: RunState[Any], item: ToolApprovalItem, decision: ApprovalDecision
) -> None:
    """Answer the SDK: ``approve`` the call, or ``reject`` it with the reason (the human's
    comment) as the text the model gets."""
    if decision.approved and decision.arguments is None:
        state.approve(item)
    else:
        state.reject(item, rejection_message=rejection_message(_action(item), decision))


# --- in process ---------------------------------------------------------------------------


async def _decided_and_consumed(
    client: AsyncHumanWire, pending: PendingApproval
) -> ApprovalDecision:
    """The call's decision, its approval consumed for the call as asked before the SDK is
    told to run it (used already: kind ``consumed``, the call is rejected saying so)."""
    decision = await wait_for_decision(client, pending)
    return await consume_approval(client, decision, pending.request)


def _action(item: ToolApprovalItem) -> str:
    return item.tool_name or item.name or "tool"


async def _answer(run: ApprovalRun, item: ToolApprovalItem) -> ApprovalDecision | HumanWireError:
    """The call's decision (consumed when approved), or the service error that kept it
    from being asked for or read."""
    try:
        (pending,) = await run.pending_for([item])
        return await _decided_and_consumed(run.approver_of(item).async_client, pending)
    except HumanWireError as exc:
        return exc


async def run_with_approvals(
    agent: Agent[Any],
    input: Any,
    *,
    approver: Approver | None = None,
    run_id: str | None = None,
    **run_kwargs: Any,
) -> RunResult:
    """``Runner.run`` that answers every approval interruption through humanwire, in this
    process: each paused call's form (sent by its :class:`ApprovalGate`, or now through
    ``approver`` for tools gated with ``needs_approval=True``) is awaited on the service;
    the call is approved, or rejected with the reason as the model's text (also when its
    approval could not be requested or read: a service error, told to the model, never
    runs the call); the run goes on until it finishes. ``run_kwargs`` go to
    ``Runner.run`` (``context``, ``max_turns``, ``run_config``...). Returns the SDK's ``RunResult``.
    """
    run = ApprovalRun(run_id or new_run_id(), approver_source(approver))
    current: Any = input
    while True:
        with run.active():
            result = await Runner.run(agent, current, **run_kwargs)
        if not result.interruptions:
            return result
        state = result.to_state()
        items = state.get_interruptions()
        answers = await asyncio.gather(*(_answer(run, item) for item in items))
        for item, answer in zip(items, answers, strict=True):
            if isinstance(answer, ApprovalDecision):
                logger.info("approval of %s (%s): %s", item.tool_name, item.call_id, answer.text)
                apply_decision(state, item, answer)
            else:  # fails closed: the call does not run, and the model reads why
                logger.warning(
                    "approval of %s (%s) failed: %s", item.tool_name, item.call_id, answer
                )
                state.reject(item, rejection_message=unrequested_text(_action(item), answer))
        run.next_round()
        current = state
