"""LangGraph approval checkpoint: a node that sends an approval request and pauses the graph.

::

    checkpoint = ApprovalCheckpoint(
        lambda state: ApprovalRequest("publish", {"post": state["draft"]}),
        to="+14155550123", wait_time=60, follow_up_time=86400,
    )
    builder.add_node("approve", checkpoint)
    builder.add_conditional_edges("approve", checkpoint.route,
                                  {"approved": "publish", "rejected": END})
    graph = builder.compile(checkpointer=InMemorySaver())   # interrupt needs one

The node sends an approval request (``POST /approvals``, the action bound by
``{"name", "arguments"}``) and holds it for ``wait_time``. Decided in that window, the
node returns the decision at once. Otherwise it calls ``interrupt()`` and the graph
pauses; a decision inside the follow-up window reaches the account's webhooks as
``approval.decided``, and ``checkpoint.resume_from_event(graph, event)`` maps its
interaction id back to the thread (by the request's ``metadata``) and resumes the graph
with ``Command(resume=...)``. Without a webhook, ``checkpoint.poll(graph, config)``
(``apoll`` on the async client) asks the service instead. Run the graph with
``ainvoke``? Add ``checkpoint.anode`` as the node and use ``aresume_from_event`` /
``apoll``.

LangGraph re-runs the node from its start on resume, so the send must not repeat: its
Idempotency-Key derives from the thread id and the node's task (checkpoint namespace,
which names the node and the step), and the service answers the same key and body with
the first response instead of asking again.

**Used once.** An approved decision is consumed in the node (``POST
/approvals/{id}/consume`` with the action's digest) before the node returns, so the
gated node after it runs at most once per approval: a graph resumed twice (the same
webhook delivered twice, two processes racing) gets ``decision="consumed"`` the second
time, not approved, and routes to ``"rejected"``. (A crash between the consume and the
gated node leaves the action not run: at most once, never twice.)

The decision goes into the state under ``output_key`` (default ``"approval"``) as a plain
dict (``ApprovalDecision`` fields), so any checkpointer can store it;
``ApprovalCheckpoint.decision(state)`` reads it back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, Interrupt, interrupt

from humanwire.approval import (
    ApprovalDecision,
    ApprovalRequest,
    Approver,
    decision_from_approval,
    decision_from_values,
    timeout_decision,
)
from humanwire.types import (
    METADATA_MAX_VALUE_LENGTH,
    ApprovalDecidedEvent,
    Event,
    FormReceivedEvent,
    event_adapter,
)
from humanwire.types.approvals import Approval

__all__ = ["INTERRUPT_TYPE", "ApprovalCheckpoint"]

INTERRUPT_TYPE = "humanwire_approval"
"""``interrupt()`` value's ``type``: tells this checkpoint's pauses from others."""

RequestBuilder = ApprovalRequest | Callable[[Any], ApprovalRequest]

RESUME_KEY = "humanwire_resume"
RESUME_LANGGRAPH = "langgraph"
THREAD_KEY = "langgraph_thread_id"
NAMESPACE_KEY = "langgraph_checkpoint_ns"
"""The approval request's metadata keys: a webhook names the thread to resume by itself."""


class ApprovalCheckpoint:
    """A LangGraph node asking a human to approve, durable across long waits.

    ``request``: an ``ApprovalRequest``, or a function of the state returning one (it
    must return the same request when the node re-runs on resume, or the service
    refuses the repeated key with another body). ``approver`` or its options say whom
    to ask (``to`` / ``channel``, or ``approvers`` with ``quorum``, ``escalation``,
    ``remind_every``), how long to hold the request (``wait_time``, 1-600 s), keep it
    open (``follow_up_time``, up to 60000 s) and what a timeout decides
    (``on_timeout``). The request carries the thread id in its
    metadata, so ``resume_from_event`` resumes the right thread in any process that has
    the graph on the same (persistent) checkpointer, with no registry; ``registry``
    (interaction id → thread id) is still consulted first, for thread ids longer than
    metadata allows.
    """

    def __init__(
        self,
        request: RequestBuilder,
        approver: Approver | None = None,
        *,
        output_key: str = "approval",
        registry: MutableMapping[str, str] | None = None,
        **approver_options: Any,
    ) -> None:
        if approver is not None and approver_options:
            raise TypeError("give either approver= or approver options, not both")
        self.request = request
        self.approver = approver if approver is not None else Approver(**approver_options)
        self.output_key = output_key
        self.registry: MutableMapping[str, str] = registry if registry is not None else {}

    # -- the node ------------------------------------------------------------------------------
    def _build(self, state: Any) -> ApprovalRequest:
        return self.request if isinstance(self.request, ApprovalRequest) else self.request(state)

    @staticmethod
    def idempotency_key(config: RunnableConfig) -> str | None:
        """The form's key for this node run: the same when the node re-runs on resume,
        another for the next run of the node in the thread."""
        configurable = config.get("configurable") or {}
        thread_id = configurable.get("thread_id")
        if thread_id is None:
            return None
        task = configurable.get("checkpoint_ns") or (config.get("metadata") or {}).get(
            "langgraph_checkpoint_ns", ""
        )
        return f"humanwire-approval:{thread_id}:{task}"

    def _pause_value(
        self, request: ApprovalRequest, response: Approval, thread_id: str | None
    ) -> dict[str, Any]:
        return {
            "type": INTERRUPT_TYPE,
            "interaction_id": response.interaction_id,
            "form_url": response.approval_url,
            "thread_id": thread_id,
            "action": request.action,
            "arguments": request.arguments,
            "description": request.description,
        }

    def _decided(self, response: Approval, resumed: Any | None) -> ApprovalDecision:
        decision = decision_from_approval(response)
        if decision is None:
            decision = self._decision_from_resume(resumed, response.interaction_id)
        return decision

    def _output(self, decision: ApprovalDecision) -> dict[str, Any]:
        return {self.output_key: dataclasses.asdict(decision)}

    def _decision_from_resume(self, resumed: Any, interaction_id: str) -> ApprovalDecision:
        if isinstance(resumed, ApprovalDecision):
            return resumed
        if isinstance(resumed, Mapping) and isinstance(resumed.get("approval"), Mapping):
            record = Approval.model_validate(dict(resumed["approval"]))
            found = decision_from_approval(record)
            if found is not None:
                return found
        if isinstance(resumed, Mapping):
            if resumed.get("timed_out"):
                return timeout_decision(
                    self.approver.default_on_timeout, interaction_id=interaction_id
                )
            values = resumed.get("values")
            if isinstance(values, Mapping):
                return decision_from_values(
                    {str(k): str(v) for k, v in values.items()}, interaction_id=interaction_id
                )
        raise ValueError(
            "resume an approval checkpoint with {'approval': {...}} (the decided request, "
            "as GET /approvals gives it) or {'timed_out': True}"
        )

    def _after_send(
        self, request: ApprovalRequest, response: Approval, config: RunnableConfig
    ) -> ApprovalDecision:
        """The decision, made in the window; else pause until resumed with it."""
        resumed = None
        if decision_from_approval(response) is None:
            thread_id = _thread_id(config)
            if thread_id is not None:
                self.registry[response.interaction_id] = thread_id
            resumed = interrupt(self._pause_value(request, response, thread_id))
        return self._decided(response, resumed)

    @staticmethod
    def resume_metadata(config: RunnableConfig) -> dict[str, str]:
        """What the form carries so any process can resume the thread from the webhook
        alone (docs/design.md "Metadata"): the thread id and checkpoint namespace."""
        thread_id = _thread_id(config)
        if thread_id is None or len(thread_id) > METADATA_MAX_VALUE_LENGTH:
            return {}  # no thread to resume, or one only a registry can name
        configurable = config.get("configurable") or {}
        namespace = str(
            configurable.get("checkpoint_ns")
            or (config.get("metadata") or {}).get("langgraph_checkpoint_ns", "")
        )
        metadata = {RESUME_KEY: RESUME_LANGGRAPH, THREAD_KEY: thread_id}
        if namespace and len(namespace) <= METADATA_MAX_VALUE_LENGTH:
            metadata[NAMESPACE_KEY] = namespace
        return metadata

    def __call__(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        request = self._build(state)
        response = self.approver.send(
            request,
            idempotency_key=self.idempotency_key(config),
            metadata=self.resume_metadata(config),
        )
        decision = self._after_send(request, response, config)
        return self._output(self.approver.consume(decision, request))

    async def anode(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        """The node on the async client, for graphs run with ``ainvoke``."""
        request = self._build(state)
        response = await self.approver.asend(
            request,
            idempotency_key=self.idempotency_key(config),
            metadata=self.resume_metadata(config),
        )
        decision = self._after_send(request, response, config)
        return self._output(await self.approver.aconsume(decision, request))

    # -- reading the result --------------------------------------------------------------------
    def decision(self, state: Mapping[str, Any]) -> ApprovalDecision | None:
        stored = state.get(self.output_key)
        if stored is None:
            return None
        return stored if isinstance(stored, ApprovalDecision) else ApprovalDecision(**stored)

    def route(self, state: Mapping[str, Any]) -> Literal["approved", "rejected"]:
        """For ``add_conditional_edges``: ``"approved"`` or ``"rejected"`` (a timeout
        follows ``on_timeout``; an approval used already is ``"rejected"``)."""
        decision = self.decision(state)
        return "approved" if decision is not None and decision.approved else "rejected"

    # -- resuming ------------------------------------------------------------------------------
    @staticmethod
    def _command(
        interrupts: Iterable[Interrupt], interaction_id: str, value: dict[str, Any]
    ) -> Command[Any] | None:
        """The resume command of this checkpoint's pause on ``interaction_id``, if the
        thread is still paused there."""
        for pending in interrupts:
            if _is_ours(pending) and pending.value.get("interaction_id") == interaction_id:
                return Command(resume={pending.id: {"interaction_id": interaction_id, **value}})
        return None

    def thread_config(self, interaction_id: str, thread_id: str | None = None) -> RunnableConfig:
        """The graph config of the thread paused on ``interaction_id``."""
        thread = thread_id or self.registry.get(interaction_id)
        if thread is None:
            raise KeyError(f"no thread is known for interaction {interaction_id}")
        return {"configurable": {"thread_id": thread}}

    def _event_target(
        self, event: Event | Mapping[str, Any] | bytes | str, thread_id: str | None
    ) -> tuple[RunnableConfig, str, dict[str, Any]] | None:
        """The thread, interaction and resume value an ``approval.decided`` event (or an
        older pause's ``form.received``) decides; ``None`` for another event or an
        interaction this checkpoint does not know."""
        parsed = _parse(event)
        if not isinstance(parsed, (ApprovalDecidedEvent, FormReceivedEvent)):
            return None
        interaction_id = parsed.payload.interaction_id or ""
        if thread_id is None and interaction_id not in self.registry:
            # A process that never saw the pause: the form's metadata names the thread.
            metadata = parsed.payload.metadata or {}
            if metadata.get(RESUME_KEY) != RESUME_LANGGRAPH or not metadata.get(THREAD_KEY):
                return None
            thread_id = metadata[THREAD_KEY]
        config = self.thread_config(interaction_id, thread_id)
        if isinstance(parsed, FormReceivedEvent):
            return config, interaction_id, {"values": parsed.payload.values}
        return config, interaction_id, {"approval": parsed.payload.to_wire()}

    def resume_from_event(
        self,
        graph: Any,
        event: Event | Mapping[str, Any] | bytes | str,
        *,
        thread_id: str | None = None,
    ) -> Any:
        """Resume the thread an ``approval.decided`` event answers; the graph's result, or
        ``None`` when the event is not for a pause of this checkpoint (another event
        type, an unknown interaction, or a thread already resumed: deliveries may repeat).
        """
        target = self._event_target(event, thread_id)
        if target is None:
            return None
        config, interaction_id, value = target
        command = self._command(graph.get_state(config).interrupts, interaction_id, value)
        return None if command is None else graph.invoke(command, config)

    async def aresume_from_event(
        self,
        graph: Any,
        event: Event | Mapping[str, Any] | bytes | str,
        *,
        thread_id: str | None = None,
    ) -> Any:
        """:meth:`resume_from_event` with ``graph.ainvoke``."""
        target = self._event_target(event, thread_id)
        if target is None:
            return None
        config, interaction_id, value = target
        state = await graph.aget_state(config)
        command = self._command(state.interrupts, interaction_id, value)
        return None if command is None else await graph.ainvoke(command, config)

    @staticmethod
    def _paused_on(interrupts: Iterable[Interrupt]) -> list[str]:
        return [str(i.value["interaction_id"]) for i in interrupts if _is_ours(i)]

    @staticmethod
    def _polled_value(approval: Approval) -> dict[str, Any] | None:
        if decision_from_approval(approval) is None:
            return None
        return {"approval": approval.to_wire()}

    def poll(self, graph: Any, config: RunnableConfig, *, wait: float | None = None) -> Any:
        """Without webhooks: resume the thread's paused approval if it was decided (or its
        windows closed); ``None`` while it is still open. ``wait`` holds the request up to
        that many seconds for the decision."""
        interrupts = graph.get_state(config).interrupts
        for interaction_id in self._paused_on(interrupts):
            approvals = self.approver.client.approvals
            record = approvals.wait(interaction_id, timeout=wait) if wait else None
            value = self._polled_value(record or approvals.get(interaction_id))
            command = None if value is None else self._command(interrupts, interaction_id, value)
            if command is not None:
                return graph.invoke(command, config)
        return None

    async def apoll(self, graph: Any, config: RunnableConfig, *, wait: float | None = None) -> Any:
        """:meth:`poll` on the async client, resuming with ``graph.ainvoke``."""
        interrupts = (await graph.aget_state(config)).interrupts
        for interaction_id in self._paused_on(interrupts):
            approvals = self.approver.async_client.approvals
            record = await (
                approvals.wait(interaction_id, timeout=wait)
                if wait
                else approvals.get(interaction_id)
            )
            value = self._polled_value(record)
            command = None if value is None else self._command(interrupts, interaction_id, value)
            if command is not None:
                return await graph.ainvoke(command, config)
        return None


def _is_ours(pending: Interrupt) -> bool:
    value = pending.value
    return isinstance(value, Mapping) and value.get("type") == INTERRUPT_TYPE


def _parse(event: Event | Mapping[str, Any] | bytes | str) -> Event:
    if isinstance(event, (bytes, str)):
        return event_adapter.validate_json(event)
    if isinstance(event, Mapping):
        return event_adapter.validate_python(dict(event))
    return event


def _thread_id(config: RunnableConfig) -> str | None:
    thread_id = (config.get("configurable") or {}).get("thread_id")
    return str(thread_id) if thread_id is not None else None
