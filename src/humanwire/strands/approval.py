"""Human approval on Strands' own seams: a ``BeforeToolCallEvent`` hook and interrupts.

:class:`HumanWireApprovals` is a ``HookProvider``. Before a gated tool runs it asks a
person by approval form (the tool name and its arguments shown readably, approve /
reject, an optional comment), in one of two ways:

- **in the run** (the default): the hook sends the form and waits for the decision
  (``wait_time``, a held request); approved, the tool runs; rejected, the hook sets
  ``event.cancel_tool`` to the reason with the human's comment, which Strands hands the
  model as the tool's error result;
- **paused** (``pause=True``, or any run :class:`~humanwire.strands.PausedRuns` drives):
  the hook raises a Strands interrupt (``event.interrupt("humanwire:approval", reason=…)``)
  and the run stops with ``stop_reason == "interrupt"``; the host sends the form
  (``PausedRuns``) and resumes the agent with the decision as the interrupt's response,
  in this process or another. On resume the hook runs again and reads the decision from
  the interrupt.

:class:`PausingAskHuman` (``ask_human``) is a tool that pauses the same way, for a
question: ``tool_context.interrupt("humanwire:question", reason=…)``; the host sends the
question and answers the interrupt with the reply. On resume the tool runs again and
returns it; nothing is sent from inside the tool, so running it twice sends nothing twice.
:func:`pause_for_answer` does the same from your own ``@tool(context=True)`` function.

**An approved action runs once.** Before letting an approved call run, the hook
*consumes* the approval (its interaction id) in an :class:`~humanwire._pauses.ApprovalLedger`;
an approval consumed already cancels the call ("was not run again"). A replayed resume, a
retried tool or a second process answering the same interrupt therefore never runs the
action twice. The ledger must be shared by every process that may resume the run:
``PausedRuns`` hands its own (the store, by default) to the hook through the run's
``invocation_state``; otherwise give ``ledger=``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import ValidationError
from strands.hooks import BeforeInvocationEvent, BeforeToolCallEvent, HookProvider, HookRegistry
from strands.types.events import ToolResultEvent
from strands.types.tools import AgentTool, ToolContext, ToolGenerator, ToolUse

from humanwire._pauses import (
    ApprovalLedger,
    MemoryApprovalLedger,
    approver_source,
    decision_from_value,
    idempotency_key,
    optional_metadata,
    reuse_parts,
    use_approval,
)
from humanwire._tool_clients import ToolClients
from humanwire._tool_schemas import MessageInput
from humanwire._tooling import NO_ANSWER
from humanwire.approval import (
    ApprovalDecision,
    ApprovalRequest,
    Approver,
)
from humanwire.errors import HumanWireError

from .tools import SpecTool, error_result, error_text, text_result

__all__ = [
    "APPROVAL_INTERRUPT",
    "LEDGER_STATE",
    "PAUSE_STATE",
    "QUESTION_INTERRUPT",
    "Describe",
    "HumanWireApprovals",
    "PausingAskHuman",
    "approval_reason",
    "pause_for_answer",
    "question_reason",
]

APPROVAL_INTERRUPT = "humanwire:approval"
QUESTION_INTERRUPT = "humanwire:question"
"""The names of humanwire's interrupts (``Interrupt.name``): what a host answers."""

PAUSE_STATE = "humanwire_pause"
LEDGER_STATE = "humanwire_ledger"
CLIENTS_STATE = "humanwire_clients"
RUN_STATE = "humanwire_run_id"
"""Keys in a run's ``invocation_state``: pause instead of waiting; the ledger approvals
are consumed in; the clients (``ToolClients``) that consume them on the service; the
run's id (in the in-run requests' Idempotency-Key)."""

RUN_KEY = "strands_run_id"
TOOL_USE_KEY = "strands_tool_use_id"
"""An in-run approval form's metadata keys: the run and the tool use it asks about."""

Describe = Callable[[str, dict[str, Any]], str | None]
"""``(tool name, arguments) -> the approval form's subtitle`` (``None``: the default)."""

ASK_HUMAN_DESCRIPTION = (
    "Ask a human a question and get their answer. The run pauses until they reply, which "
    "may take hours, so use it for a decision, a fact or a confirmation only a person can "
    f"give. Returns 'Human response: <their reply>'. {NO_ANSWER}"
)


# --- what an interrupt carries --------------------------------------------------------------


def approval_reason(
    tool_name: str, arguments: dict[str, Any], description: str | None = None
) -> dict[str, Any]:
    """The ``reason`` of an approval interrupt (JSON: Strands saves it with the session)."""
    return {
        "humanwire": "approval",
        "tool": tool_name,
        "arguments": arguments,
        "description": description,
    }


def question_reason(question: str, tool_name: str = "ask_human") -> dict[str, Any]:
    """The ``reason`` of a question interrupt."""
    return {"humanwire": "question", "tool": tool_name, "question": question}


def pause_for_answer(tool_context: ToolContext[Any], question: str) -> str:
    """From a ``@tool(context=True)`` function: pause the run until a person answers
    ``question`` (the host sends it: :class:`~humanwire.strands.PausedRuns`), then return
    the answer. Raises Strands' interrupt the first time; returns the answer when the
    tool runs again on resume. Put no side effect before it: the tool runs twice."""
    name = str(tool_context.tool_use.get("name") or "ask_human")
    answer = tool_context.interrupt(QUESTION_INTERRUPT, reason=question_reason(question, name))
    return str(answer)


def _arguments(tool_use: ToolUse) -> dict[str, Any]:
    given = tool_use.get("input")
    return dict(given) if isinstance(given, Mapping) else {}


# --- the hook -------------------------------------------------------------------------------


class HumanWireApprovals(HookProvider):
    """Asks a person before each call of ``tools`` (names, or the tools themselves)
    runs, by approval form, through one :class:`~humanwire.approval.Approver` (give one,
    or its options: ``to``, ``channel``, ``wait_time``, ``follow_up_time``,
    ``default_on_timeout``, ``client``).

    ::

        agent = Agent(model, tools=[send_payment],
                      hooks=[HumanWireApprovals(["send_payment"], to="+14155550123")])

    ``when(name, arguments)`` narrows the gate (``lambda name, args: args["amount"] >
    100``). ``pause=True`` pauses every run at its approvals (a Strands interrupt) instead
    of waiting in the run; runs driven by :class:`~humanwire.strands.PausedRuns` pause
    anyway, and send their forms through that object's approver. A timeout follows
    ``default_on_timeout`` ("reject" unless told otherwise) and says it was a timeout; a
    form that cannot be sent (service unreachable, bad key) cancels the call with the
    reason: the tool never runs unapproved. An approval is about the call as asked
    (``allow_edit=True`` is refused). ``describe(name, arguments)`` may
    give the form's subtitle. ``ledger`` is where approvals are consumed (this process's
    memory unless given; a run's ``invocation_state`` may carry another).
    """

    def __init__(
        self,
        tools: Iterable[str | AgentTool],
        approver: Approver | None = None,
        *,
        when: Callable[[str, dict[str, Any]], bool] | None = None,
        pause: bool = False,
        describe: Describe | None = None,
        ledger: ApprovalLedger | None = None,
        **approver_options: Any,
    ) -> None:
        names = {tool if isinstance(tool, str) else tool.tool_name for tool in tools}
        if not names:
            raise ValueError("tools: name at least one tool that needs approval")
        self.tools = frozenset(names)
        self.when = when
        self.pause = pause
        self.describe = describe
        self.ledger: ApprovalLedger = ledger if ledger is not None else MemoryApprovalLedger()
        source = approver_source(approver, **approver_options)
        # A pausing gate sends nothing itself: its approver is only built when given.
        given = approver is not None or bool(approver_options)
        self.approver: Approver | None = source() if given or not pause else None
        # Strands' sync agent(...) runs each call on an event loop of its own: the forms go
        # out on an async client per loop (the approver's, when it was given one).
        self.clients = ToolClients.of(self.approver) if self.approver is not None else None
        self.decisions: list[ApprovalDecision] = []
        """Every decision this hook acted on, in order (for logs and tests)."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeInvocationEvent, self._start_run)
        registry.add_callback(BeforeToolCallEvent, self._gate)

    def gates(self, tool_name: str, arguments: dict[str, Any]) -> bool:
        """Whether this call needs a person's approval."""
        if tool_name not in self.tools:
            return False
        return self.when is None or bool(self.when(tool_name, arguments))

    @staticmethod
    def _start_run(event: BeforeInvocationEvent) -> None:
        # The run's id, for the in-run forms' Idempotency-Key: a tool use id a model
        # repeats in a later run must not bring back an earlier run's form and decision.
        event.invocation_state.setdefault(RUN_STATE, uuid.uuid4().hex)

    async def _gate(self, event: BeforeToolCallEvent) -> None:
        tool_use = event.tool_use
        name, arguments = tool_use["name"], _arguments(tool_use)
        if not self.gates(name, arguments):
            return
        state = event.invocation_state
        description = self.describe(name, arguments) if self.describe is not None else None
        if self.pause or state.get(PAUSE_STATE):
            # Raises the first time (the run stops); returns the host's answer on resume.
            answer = event.interrupt(
                APPROVAL_INTERRUPT, reason=approval_reason(name, arguments, description)
            )
            decision = decision_from_value(answer)
        else:
            asked = await self._ask(event, name, arguments, description)
            if isinstance(asked, str):
                event.cancel_tool = asked
                return
            decision = asked
        self.decisions.append(decision)
        ledger = state.get(LEDGER_STATE)
        clients = state.get(CLIENTS_STATE)
        await self._apply(
            event,
            decision,
            ApprovalRequest(name, arguments),
            ledger if isinstance(ledger, ApprovalLedger) else None,
            clients if isinstance(clients, ToolClients) else self.clients,
        )

    async def _ask(
        self,
        event: BeforeToolCallEvent,
        name: str,
        arguments: dict[str, Any],
        description: str | None,
    ) -> ApprovalDecision | str:
        """Send the approval request and wait: the decision, or why none could be asked
        for."""
        approver, clients = self.approver, self.clients
        if approver is None or clients is None:
            return f"{name} was not run: no approver is configured to ask in the run."
        tool_use_id = str(event.tool_use["toolUseId"])
        run_id = str(event.invocation_state.get(RUN_STATE) or "")
        try:
            kwargs = approver.approval_kwargs(
                ApprovalRequest(name, arguments, description),
                idempotency_key=idempotency_key(
                    "approval",
                    "strands",
                    run_id,
                    tool_use_id,
                    *reuse_parts(_tool_use_ids(event.agent.messages), tool_use_id),
                ),
                metadata=optional_metadata({RUN_KEY: run_id, TOOL_USE_KEY: tool_use_id}),
            )
            client = await clients.get()
            response = await client.approvals.create(**kwargs)
        except HumanWireError as exc:
            # Fail closed: an approval nobody could be asked for is no approval.
            return f"{name} was not run: its approval could not be requested (humanwire: {exc})."
        return await approver.adecided(response, client)

    async def _apply(
        self,
        event: BeforeToolCallEvent,
        decision: ApprovalDecision,
        request: ApprovalRequest,
        ledger: ApprovalLedger | None,
        clients: ToolClients | None,
    ) -> None:
        name = event.tool_use["name"]
        # Consumed on the service for this call as asked, before it runs.
        used, refusal = await use_approval(
            None if clients is None else clients.get, decision, request
        )
        if used is None or not used.approved:
            event.cancel_tool = refusal
            return
        decision = used
        interaction_id = decision.interaction_id
        # Consumed before the tool runs: of every run that reaches here with this
        # approval (a replayed resume, a retried tool), only the first runs the action.
        if interaction_id and not await (ledger or self.ledger).consume(interaction_id):
            event.cancel_tool = (
                f"{name} was not run again: its approval (interaction {interaction_id}) was "
                "already used, so the action ran before."
            )
            return
        if decision.arguments is not None:
            event.tool_use = {**event.tool_use, "input": decision.arguments}


def _tool_use_ids(messages: Any) -> list[str]:
    """Every tool use id of the agent's conversation, in order (a reused id stands more
    than once)."""
    return [
        str(block["toolUse"].get("toolUseId"))
        for message in messages or []
        for block in message.get("content") or []
        if isinstance(block, Mapping) and isinstance(block.get("toolUse"), Mapping)
    ]


# --- a question that pauses the run -------------------------------------------------------


class PausingAskHuman(SpecTool):
    """``ask_human``: a question whose answer may take hours. The run pauses at it (a
    Strands interrupt, ``humanwire:question``); the host sends the question
    (:class:`~humanwire.strands.PausedRuns`, on its approver's channel) and resumes the
    run with the reply, in any process. Its argument is the message tools' ``message``.
    For an answer within minutes, in the run, use ``AskHumanSMS`` and its siblings."""

    def __init__(self, *, name: str = "ask_human", description: str = ASK_HUMAN_DESCRIPTION):
        super().__init__(name=name, description=description, spec_model=MessageInput)

    async def stream(
        self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any
    ) -> ToolGenerator:
        try:
            question = MessageInput.model_validate(tool_use.get("input") or {}).message
        except ValidationError as exc:
            yield ToolResultEvent(error_result(tool_use, error_text(exc)), exception=exc)
            return
        context: ToolContext[Any] = ToolContext(
            tool_use=tool_use, agent=invocation_state["agent"], invocation_state=invocation_state
        )
        # Strands stops the run on the interrupt this raises, and on resume returns the
        # host's answer here: nothing before it has a side effect.
        answer = context.interrupt(QUESTION_INTERRUPT, reason=question_reason(question, self._name))
        yield ToolResultEvent(text_result(tool_use, str(answer)))
