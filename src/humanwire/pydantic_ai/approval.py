"""Human approval on Pydantic AI's own seam: deferred tool calls.

A tool marked ``requires_approval=True`` (or wrapped in ``ApprovalRequiredToolset``, or
raising ``ApprovalRequired``) is not run when the model calls it: the call is deferred.
:class:`HumanApprovals` is a capability that answers deferred calls inline, in the run:

- each call awaiting **approval** is sent to a person as an approval form (the tool name
  and its arguments shown readably, approve / reject, an optional comment), and the run
  waits for the decision: approve runs the tool (``ToolApproved``, with the edited
  arguments when the approver allows edits); reject answers the model with
  ``ToolDenied(<the reason, with the human's comment>)``;
- each call deferred with ``CallDeferred(kind="question")`` is asked as a text message on
  the approver's channel, and the reply (or the no-response text) is the call's result;
- other deferred calls (external work) are left alone: they bubble up as
  ``DeferredToolRequests``.

Runs that must survive the wait in another process use ``humanwire.pydantic_ai.durable``.

**An approved action runs once.** The decision travels with the approved call
(``DeferredToolResults.metadata[call_id]["humanwire_approval"]`` = the approval's
interaction id), and :class:`ApprovalGuard` (which :class:`HumanApprovals` is) consumes
that interaction in an :class:`ApprovalLedger` just before the tool runs. A second run of
the same approved call (a retried step, a history resumed twice, a duplicate webhook) finds
it consumed and gets ``ToolFailed`` instead of running the tool again. The ledger must be
shared by every process that may resume the run: :class:`FileApprovalLedger` (one file
per consumed approval, created exclusively) or the durable store; the default
:class:`MemoryApprovalLedger` covers one process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic_ai import (
    DeferredToolRequests,
    DeferredToolResults,
    RunContext,
    ToolApproved,
    ToolDenied,
)
from pydantic_ai.capabilities import (
    AbstractCapability,
    ValidatedToolArgs,
    WrapToolExecuteHandler,
)
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.tools import ToolDefinition

from humanwire._pauses import (
    ApprovalLedger,
    FileApprovalLedger,
    MemoryApprovalLedger,
    approver_source,
    denial_text,
    idempotency_key,
    optional_metadata,
    reuse_parts,
)
from humanwire._tooling import message_text
from humanwire.approval import (
    ApprovalDecision,
    ApprovalRequest,
    Approver,
    consume_approval,
    format_arguments,
)
from humanwire.errors import HumanWireError

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire

__all__ = [
    "APPROVAL_METADATA_KEY",
    "ApprovalGuard",
    "ApprovalLedger",
    "Describe",
    "FileApprovalLedger",
    "HumanApprovals",
    "MemoryApprovalLedger",
    "approval_request",
    "approval_result",
    "denial_text",
    "question_text",
]

APPROVAL_METADATA_KEY = "humanwire_approval"
"""The key, in an approved call's ``DeferredToolResults.metadata``, of the approval's
interaction id: what :class:`ApprovalGuard` consumes before the tool runs."""

RUN_KEY = "pydantic_ai_run_id"
CALL_KEY = "pydantic_ai_tool_call_id"
"""The sends' metadata keys: the run and the tool call a form or a question belongs to."""

Describe = Callable[[str, dict[str, Any]], str | None]
"""``(tool name, arguments) -> the approval form's subtitle`` (``None``: the default)."""


# --- what is asked, what is answered ------------------------------------------------------


def approval_request(call: ToolCallPart, describe: Describe | None = None) -> ApprovalRequest:
    """The approval a deferred call asks for: the tool's name and arguments."""
    arguments = call.args_as_dict()
    description = describe(call.tool_name, arguments) if describe is not None else None
    return ApprovalRequest(call.tool_name, arguments, description)


def question_text(call: ToolCallPart, metadata: Mapping[str, Any] | None = None) -> str:
    """The text of a question a call deferred with ``CallDeferred(kind="question")``:
    ``metadata["question"]``, else its ``question`` / ``message`` / ``prompt`` argument,
    else the call itself, readably."""
    if metadata is not None and isinstance(metadata.get("question"), str):
        return str(metadata["question"])
    arguments = call.args_as_dict()
    for name in ("question", "message", "prompt"):
        value = arguments.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return f"An AI agent asks ({call.tool_name}):\n{format_arguments(arguments)}"


def approval_result(action: str, decision: ApprovalDecision) -> ToolApproved | ToolDenied:
    """The decision in Pydantic AI's terms: ``ToolApproved`` (with the edited arguments
    when the human edited them) or ``ToolDenied`` with :func:`denial_text`."""
    if decision.approved:
        return ToolApproved(override_args=decision.arguments)
    return ToolDenied(denial_text(action, decision))


def approval_metadata(interaction_id: str, tool_call_id: str) -> dict[str, str]:
    """The approved call's ``DeferredToolResults.metadata``: what the guard consumes."""
    return {APPROVAL_METADATA_KEY: interaction_id, CALL_KEY: tool_call_id}


def send_metadata(run_id: str | None, tool_call_id: str) -> dict[str, str]:
    """The run's keys on a send (left out when longer than the service allows)."""
    return optional_metadata({RUN_KEY: run_id, CALL_KEY: tool_call_id})


def call_ids_of(messages: Iterable[ModelMessage]) -> list[str]:
    """Every tool call id of a conversation, in order (a reused id stands more than once)."""
    return [
        part.tool_call_id
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    ]


def send_key(
    kind: str, run_id: str | None, tool_call_id: str, messages: Iterable[ModelMessage] = ()
) -> str:
    """One send per run and tool call, however often the step is retried; a later call
    of the conversation (``messages``) under a reused id is another send."""
    reuse = reuse_parts(call_ids_of(messages), tool_call_id)
    return idempotency_key(kind, "pydantic-ai", run_id or "", tool_call_id, *reuse)


class ApprovalGuard(AbstractCapability[Any]):
    """Consumes a call's approval before the tool runs: on the service (``POST
    /approvals/{id}/consume`` with the digest of the call about to run, through
    ``client``) and in ``ledger``; an approval already consumed stops the call with
    ``ToolFailed`` (the model reads that it ran before), and so does one the service
    says is not approved.

    Only calls approved through humanwire are guarded (their results carry
    ``humanwire_approval`` metadata); every other call runs untouched.
    """

    def __init__(
        self,
        ledger: ApprovalLedger | None = None,
        *,
        client: AsyncHumanWire | Callable[[], AsyncHumanWire] | None = None,
    ) -> None:
        self.ledger: ApprovalLedger = ledger if ledger is not None else MemoryApprovalLedger()
        self._client = client

    def _service(self) -> AsyncHumanWire | None:
        client = self._client
        return client() if callable(client) else client

    # The base class is a dataclass without fields of ours: equal would mean "same class".
    # Two guards are the same guard only when they are one object (they hold state).
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a ledger (and clients): not built from an agent spec

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: ValidatedToolArgs,
        handler: WrapToolExecuteHandler,
    ) -> Any:
        metadata = ctx.tool_call_metadata
        if ctx.tool_call_approved and isinstance(metadata, Mapping):
            interaction_id = metadata.get(APPROVAL_METADATA_KEY)
            if isinstance(interaction_id, str):
                approved_call = metadata.get(CALL_KEY)
                if approved_call is not None and approved_call != call.tool_call_id:
                    raise ToolFailed(
                        f"{call.tool_name} was not run: approval {interaction_id} was given "
                        f"for another call ({approved_call})."
                    )
                service = self._service()
                if service is not None:
                    used = await consume_approval(
                        service,
                        ApprovalDecision(True, "approve", interaction_id=interaction_id),
                        approval_request(call),
                    )
                    if used.decision == "consumed":
                        raise ToolFailed(denial_text(call.tool_name, used))
                    if not used.approved:
                        raise ToolFailed(f"{call.tool_name} was not run: {used.comment}")
                if not await self.ledger.consume(interaction_id):
                    raise ToolFailed(
                        f"{call.tool_name} was not run again: its approval (interaction "
                        f"{interaction_id}) was already used, so the action ran before."
                    )
        return await handler(args)


# --- answered in the run ------------------------------------------------------------------


class HumanApprovals(ApprovalGuard):
    """Answers deferred tool calls in the run: approvals by form, questions by message,
    through one :class:`~humanwire.approval.Approver` (its channel, recipient and
    ``wait_time``; give one, or its options: ``to``, ``channel``, ``wait_time``,
    ``follow_up_time``, ``default_on_timeout``, ``allow_edit``, ``client``).

    ::

        agent = Agent(model, tools=[Tool(wire_money, requires_approval=True)],
                      capabilities=[HumanApprovals(to="+14155550123", wait_time=300)])

    Several calls deferred in one step are asked at once. A timeout follows
    ``default_on_timeout`` ("reject" unless told otherwise) and says it was a timeout;
    an approval that cannot be sent (service unreachable, bad key) is denied, with the
    reason, so the tool never runs unapproved. ``describe(name, arguments)`` may give
    the form's subtitle. ``ledger`` (default: this process) is where approvals are
    consumed (see :class:`ApprovalGuard`).
    """

    def __init__(
        self,
        approver: Approver | None = None,
        *,
        describe: Describe | None = None,
        questions: bool = True,
        ledger: ApprovalLedger | None = None,
        **approver_options: Any,
    ) -> None:
        self.approver = approver_source(approver, **approver_options)()
        super().__init__(ledger, client=lambda: self.approver.async_client)
        self.describe = describe
        self.questions = questions
        self.decisions: list[ApprovalDecision] = []
        """Every decision this capability received, in order (for logs and tests)."""

    async def handle_deferred_tool_calls(
        self, ctx: RunContext[Any], *, requests: DeferredToolRequests
    ) -> DeferredToolResults | None:
        questions = [
            call
            for call in requests.calls
            if self.questions and requests.kind(call.tool_call_id) == "question"
        ]
        if not requests.approvals and not questions:
            return None  # external work: not ours to answer
        asked = await asyncio.gather(
            *(self._approve(ctx, call) for call in requests.approvals),
            *(self._ask(ctx, call, requests.metadata.get(call.tool_call_id)) for call in questions),
        )
        approvals: dict[str, ToolApproved | ToolDenied] = {}
        calls: dict[str, Any] = {}
        metadata: dict[str, dict[str, Any]] = {}
        for call, (result, interaction_id) in zip(
            [*requests.approvals, *questions], asked, strict=True
        ):
            if isinstance(result, (ToolApproved, ToolDenied)):
                approvals[call.tool_call_id] = result
                if isinstance(result, ToolApproved) and interaction_id:
                    metadata[call.tool_call_id] = approval_metadata(
                        interaction_id, call.tool_call_id
                    )
            else:
                calls[call.tool_call_id] = result
        answered_by = f"{self.approver.channel}:{self.approver.to}"
        return requests.build_results(
            approvals=approvals,
            calls=calls,
            metadata=metadata,
            answered_by={call_id: answered_by for call_id in [*approvals, *calls]},
        )

    async def _approve(
        self, ctx: RunContext[Any], call: ToolCallPart
    ) -> tuple[ToolApproved | ToolDenied, str | None]:
        request = approval_request(call, self.describe)
        try:
            response = await self.approver.asend(
                request,
                idempotency_key=send_key("approval", ctx.run_id, call.tool_call_id, ctx.messages),
                metadata=send_metadata(ctx.run_id, call.tool_call_id),
            )
        except HumanWireError as exc:
            # Fail closed: an approval nobody could be asked for is no approval.
            denied = f"{call.tool_name} was not run: its approval could not be requested "
            return ToolDenied(f"{denied}(humanwire: {exc})."), None
        decision = await self.approver.adecided(response)
        self.decisions.append(decision)
        return approval_result(call.tool_name, decision), response.interaction_id

    async def _ask(
        self, ctx: RunContext[Any], call: ToolCallPart, metadata: Mapping[str, Any] | None
    ) -> tuple[Any, str | None]:
        approver = self.approver
        send = getattr(approver.async_client.messages, approver.channel)
        windows: dict[str, float] = {"wait_time": approver.wait_time}
        if approver.follow_up_time is not None:
            windows["follow_up_time"] = approver.follow_up_time
        try:
            response = await send(
                to=approver.to,
                message=question_text(call, metadata),
                metadata=send_metadata(ctx.run_id, call.tool_call_id),
                idempotency_key=send_key("question", ctx.run_id, call.tool_call_id, ctx.messages),
                **windows,
            )
        except HumanWireError as exc:
            return ToolFailed(f"humanwire: {exc}"), None
        return message_text(response), response.interaction_id
