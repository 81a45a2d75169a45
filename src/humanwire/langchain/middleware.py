"""A humanwire approver for ``langchain.agents.middleware.HumanInTheLoopMiddleware``.

The middleware pauses the agent with ``interrupt()``; :class:`HumanInTheLoopApprover`
turns each pending action request into an approval request (``POST /approvals``, the
action bound by its name and arguments; approve, or reject with a comment), waits for the
decision, consumes an approval before the agent resumes to run the tool, and turns it
into the resume decisions::

    agent = create_agent(model, tools, middleware=[HumanInTheLoopMiddleware(
        interrupt_on={"send_email": {"allowed_decisions": ["approve", "edit", "reject"]}})],
        checkpointer=InMemorySaver())
    approver = HumanInTheLoopApprover(to="+14155550123", wait_time=300)
    result = approver.invoke(agent, {"messages": [...]}, config)  # runs until done

Both interrupt modes are handled: ``batched`` (one ``HITLRequest`` per model turn,
answered with ``{"decisions": [...]}``) and ``per_call`` (one ``tool_approval``
interrupt per call, answered with a single decision keyed by interrupt id). A timeout
applies the approver's ``on_timeout``: a rejection whose message says it was a timeout,
or an approval when ``on_timeout="approve"``. Each request's Idempotency-Key derives
from the thread, the interrupt and the action, so re-running the driver after a crash
replays the decision instead of asking again, and the replayed approval, consumed
already, is answered as a rejection saying the tool ran before (never run twice).

"edit" and "respond" (``allowed_decisions``) are not offered any more: an approval is
about the action as asked. A tool that allows them is asked approve / reject.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, Interrupt

from humanwire.approval import ApprovalDecision, ApprovalRequest, Approver

__all__ = ["HumanInTheLoopApprover", "hitl_decision"]

_DECISION_TYPES = ("approve", "edit", "reject", "respond")


class _Question(NamedTuple):
    """One action to ask about, as ``decide`` takes it."""

    name: str
    args: Mapping[str, Any]
    description: str | None
    allowed: Sequence[str]
    idempotency_key: str | None


def hitl_decision(name: str, decision: ApprovalDecision, *, wait_time: float) -> dict[str, Any]:
    """An :class:`ApprovalDecision` as the middleware's decision dict."""
    if decision.decision == "consumed":
        return {
            "type": "reject",
            "message": (
                f"`{name}` was not run again: its approval was used already, so it ran "
                "before (a repeated or resumed step)."
            ),
        }
    if decision.timed_out:
        if decision.approved:
            return {"type": "approve"}
        return {
            "type": "reject",
            "message": (
                f"No approval decision arrived within {wait_time:g} s (timeout), so "
                f"`{name}` was not run. This was not a human rejection."
            ),
        }
    if decision.decision == "approve" or (decision.decision == "edit" and not decision.arguments):
        return {"type": "approve"}
    if decision.decision == "edit":
        return {"type": "edit", "edited_action": {"name": name, "args": decision.arguments}}
    if decision.decision == "respond":
        return {"type": "respond", "message": decision.comment or ""}
    rejected: dict[str, Any] = {"type": "reject"}
    if decision.comment:
        rejected["message"] = decision.comment
    return rejected


def _allowed_from_schema(schema: Any) -> list[str]:
    """The decision types a per-call interrupt's ``response_schema`` (JSON schema) lists."""
    found: list[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            type_schema = (node.get("properties") or {}).get("type")
            if isinstance(type_schema, dict):
                values = type_schema.get("enum") or [type_schema.get("const")]
                found.extend(v for v in values if v in _DECISION_TYPES and v not in found)
            for child in node.values():
                visit(child)
        elif isinstance(node, list):
            for child in node:
                visit(child)

    visit(schema)
    return found


def _is_batched(value: Any) -> bool:
    return isinstance(value, Mapping) and "action_requests" in value


def _is_per_call(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("type") == "tool_approval"


class HumanInTheLoopApprover:
    """Answers ``HumanInTheLoopMiddleware`` interrupts with humanwire approval forms.

    Give an ``Approver`` or its options (``to``, ``channel``, or ``approvers`` with
    ``quorum``, ``escalation``, ``remind_every``; ``wait_time``, ``follow_up_time``,
    ``on_timeout``, ``client``).
    """

    def __init__(self, approver: Approver | None = None, **approver_options: Any) -> None:
        if approver is not None and approver_options:
            raise TypeError("give either approver= or approver options, not both")
        self.approver = approver if approver is not None else Approver(**approver_options)

    # -- one action --------------------------------------------------------------------------
    @staticmethod
    def _ask(name: str, args: Mapping[str, Any], description: str | None) -> ApprovalRequest:
        return ApprovalRequest(name, dict(args), description or None)

    def decide(
        self,
        name: str,
        args: Mapping[str, Any],
        *,
        description: str | None = None,
        allowed: Sequence[str] = ("approve", "reject"),
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Ask about one action (``allowed`` is read for compatibility: only approve /
        reject are offered); the middleware decision dict. Approved, the approval is
        consumed before the agent resumes and runs the tool."""
        request = self._ask(name, args, description)
        decision = self.approver.request(request, idempotency_key=idempotency_key)
        return hitl_decision(name, decision, wait_time=self.approver.wait_time)

    async def adecide(
        self,
        name: str,
        args: Mapping[str, Any],
        *,
        description: str | None = None,
        allowed: Sequence[str] = ("approve", "reject"),
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        request = self._ask(name, args, description)
        decision = await self.approver.arequest(request, idempotency_key=idempotency_key)
        return hitl_decision(name, decision, wait_time=self.approver.wait_time)

    # -- interrupts ----------------------------------------------------------------------------
    def _questions(self, interrupt: Interrupt, thread_id: str | None) -> list[_Question]:
        """One question per action of an interrupt, with its idempotency key."""
        value = interrupt.value
        questions: list[_Question] = []
        if _is_batched(value):
            configs = list(value.get("review_configs") or [])
            by_name = {c.get("action_name"): c for c in configs}
            for index, action in enumerate(value["action_requests"]):
                config = configs[index] if index < len(configs) else by_name.get(action["name"])
                allowed = list((config or {}).get("allowed_decisions") or ["approve", "reject"])
                questions.append(
                    _Question(
                        action["name"],
                        action.get("args") or {},
                        action.get("description"),
                        allowed,
                        self._key(thread_id, interrupt.id, index),
                    )
                )
        elif _is_per_call(value):
            allowed = _allowed_from_schema(interrupt.response_schema) or ["approve", "reject"]
            questions.append(
                _Question(
                    value["name"],
                    value.get("args") or {},
                    value.get("description"),
                    allowed,
                    self._key(thread_id, interrupt.id, 0),
                )
            )
        return questions

    def _plan(
        self, interrupts: Iterable[Interrupt], config: RunnableConfig | None
    ) -> list[tuple[Interrupt, list[_Question]]]:
        """The questions of every interrupt this approver handles (they do not depend on
        each other's answers, so both drivers ask them in order and assemble once)."""
        thread_id = _thread_id(config)
        return [(i, self._questions(i, thread_id)) for i in interrupts if self.handles(i)]

    @staticmethod
    def _resume_command(
        plan: list[tuple[Interrupt, list[_Question]]], decisions: list[dict[str, Any]]
    ) -> Command[Any]:
        answers: dict[str, Any] = {}
        remaining = iter(decisions)
        for interrupt, questions in plan:
            mine = [next(remaining) for _ in questions]
            answers[interrupt.id] = {"decisions": mine} if _is_batched(interrupt.value) else mine[0]
        return Command(resume=answers)

    @staticmethod
    def _key(thread_id: str | None, interrupt_id: str, index: int) -> str | None:
        if not thread_id:
            return None  # the client still sets its own key for retries
        return f"humanwire-hitl:{thread_id}:{interrupt_id}:{index}"

    @staticmethod
    def handles(interrupt: Interrupt) -> bool:
        """Whether an interrupt comes from ``HumanInTheLoopMiddleware``."""
        return _is_batched(interrupt.value) or _is_per_call(interrupt.value)

    def resume(
        self, interrupts: Iterable[Interrupt], config: RunnableConfig | None = None
    ) -> Command[Any]:
        """Ask about every action of the middleware's pending interrupts, then the
        ``Command`` that resumes the agent with the decisions."""
        plan = self._plan(interrupts, config)
        decisions = [self.decide(**q._asdict()) for _, questions in plan for q in questions]
        return self._resume_command(plan, decisions)

    async def aresume(
        self, interrupts: Iterable[Interrupt], config: RunnableConfig | None = None
    ) -> Command[Any]:
        plan = self._plan(interrupts, config)
        decisions = [await self.adecide(**q._asdict()) for _, qs in plan for q in qs]
        return self._resume_command(plan, decisions)

    # -- driving an agent ----------------------------------------------------------------------
    def invoke(self, agent: Any, input: Any, config: RunnableConfig, **kwargs: Any) -> Any:
        """``agent.invoke`` until it finishes, answering the middleware's interrupts with
        forms. Stops (returning the paused result) at an interrupt it does not handle."""
        result = agent.invoke(input, config, **kwargs)
        while True:
            pending = [i for i in agent.get_state(config).interrupts if self.handles(i)]
            if not pending:
                return result
            result = agent.invoke(self.resume(pending, config), config, **kwargs)

    async def ainvoke(self, agent: Any, input: Any, config: RunnableConfig, **kwargs: Any) -> Any:
        result = await agent.ainvoke(input, config, **kwargs)
        while True:
            state = await agent.aget_state(config)
            pending = [i for i in state.interrupts if self.handles(i)]
            if not pending:
                return result
            result = await agent.ainvoke(await self.aresume(pending, config), config, **kwargs)


def _thread_id(config: RunnableConfig | None) -> str | None:
    configurable = (config or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id")
    return str(thread_id) if thread_id is not None else None
