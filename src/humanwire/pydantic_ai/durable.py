"""Durable runs: pause a Pydantic AI run at its deferred calls, let the process exit, and
resume it when the person answers, from the webhook, in this process or another.

1. The agent's ``output_type`` includes ``DeferredToolRequests``; a run whose model calls
   a tool that needs approval (``requires_approval=True``, ``ApprovalRequired``) or asks a
   question (``CallDeferred(kind="question")``) ends with those requests as its output.
2. :meth:`PausedRuns.pause` (or :meth:`PausedRuns.run`, which runs and pauses) sends one
   approval request per call awaiting approval and one text message per question, without
   waiting, each carrying the run's keys in its ``metadata`` (``humanwire_resume:
   pydantic_ai``, ``pydantic_ai_run_id``, ``pydantic_ai_tool_call_id``), and saves the
   run (its message history as ``ModelMessagesTypeAdapter`` JSON, and which interaction
   answers which call) in a :class:`PausedRunStore`. The process may exit.
3. The webhook receiver calls :meth:`PausedRuns.resume_from_webhook` with the delivery
   (``approval.decided`` for an approval, ``message.received`` for a question): the run is
   found from the event's metadata alone, and once every call of the step is answered
   (the others are read from the service) it resumes with ``DeferredToolResults``:
   ``ToolApproved`` / ``ToolDenied(<reason and comment>)`` for approvals, the reply (or
   the no-response text) for questions. A run that defers again is paused again.
4. Without webhooks, :meth:`PausedRuns.resume` waits on the service for the answers;
   :meth:`PausedRuns.resume_decided` resumes every saved run whose calls are all answered
   or expired (an expired approval is the approver's timeout default; an expired question
   the no-response text).

**Runs once.** A paused run is *claimed* (taken from the store atomically) before it
resumes, so a repeated or concurrent delivery finds nothing to resume. If the resumed
run fails, the claim is given back so a retried delivery can resume it; the approved
action is still protected: each approval is consumed in the ledger (the store itself by
default) just before its tool runs (``ApprovalGuard``), so a second resume reports that
the action already ran instead of running it again.

A receiver, in any web framework::

    runs = PausedRuns(FilePausedRunStore("paused-runs"), to="+14155550123")

    async def on_webhook(raw_body: bytes, headers: Mapping[str, str]) -> None:
        outcome = await runs.resume_from_webhook(agent, raw_body, headers, secret=SECRET)
        # None: not an answer for a run of ours, another call still open, or resumed already

The agent given to a resume must have the same tools as the one that paused (a new
``Agent(...)`` in the receiving process); pass its ``deps`` and other run options as
keyword arguments.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic_ai import (
    AgentRunResult,
    DeferredToolRequests,
    DeferredToolResults,
    ModelMessagesTypeAdapter,
    ToolApproved,
)
from pydantic_ai.messages import ModelMessage, ToolCallPart

from humanwire._pauses import (
    DEFAULT_PAUSE_WINDOW,
    RESUME_KEY,
    Answer,
    AnswerKind,
    ApprovalLedger,
    AskingPeople,
    FileRunStore,
    PausedOutcome,
    PauseResumer,
    PauseStore,
    PendingCalls,
    PendingRecord,
    ask_question,
    parse_delivery,
    request_approval,
    resume_once,
    store_key,
)
from humanwire._pauses import resume as shared
from humanwire.approval import ApprovalDecision, Approver
from humanwire.types import Event

from .approval import (
    CALL_KEY,
    RUN_KEY,
    ApprovalGuard,
    Describe,
    approval_metadata,
    approval_request,
    approval_result,
    question_text,
    send_key,
    send_metadata,
)

if TYPE_CHECKING:
    from pydantic_ai.agent import AbstractAgent

    from humanwire._client import AsyncHumanWire

__all__ = [
    "DEFAULT_PAUSE_WINDOW",
    "RESUME_KEY",
    "RESUME_PYDANTIC_AI",
    "DurableOutcome",
    "FilePausedRunStore",
    "PausedRun",
    "PausedRunStore",
    "PausedRuns",
    "PendingCall",
    "parse_delivery",
]

RESUME_PYDANTIC_AI = "pydantic_ai"
"""A send's ``metadata[humanwire_resume]``: tells this receiver's deliveries from those of
LangGraph or LlamaIndex pauses (each leaves the others' alone)."""


# --- what a paused run is -------------------------------------------------------------


@dataclass(frozen=True)
class PendingCall(PendingRecord):
    """A deferred call of a paused run and the interaction that answers it."""

    tool_call_id: str
    tool_name: str
    kind: AnswerKind
    interaction_id: str


@dataclass(frozen=True)
class PausedRun(PendingCalls[PendingCall]):
    """What a resume needs, and all it needs: the message history (JSON), the calls the
    run waits for and the interactions answering them, and the timeout default."""

    run_id: str
    """The store's key for this pause (the Pydantic AI run id when it can name a file)."""
    messages: str
    """``ModelMessagesTypeAdapter`` JSON of the run's history."""
    pending: tuple[PendingCall, ...]
    conversation_id: str | None = None
    default_on_timeout: Literal["approve", "reject"] = "reject"

    def history(self) -> list[ModelMessage]:
        return ModelMessagesTypeAdapter.validate_json(self.messages)

    def call_for(self, interaction_id: str) -> PendingCall | None:
        return self.pending_for(interaction_id)

    def to_dict(self) -> dict[str, Any]:
        return self.record(
            run_id=self.run_id, conversation_id=self.conversation_id, messages=self.messages
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PausedRun:
        return cls(
            run_id=str(data["run_id"]),
            messages=str(data["messages"]),
            pending=tuple(PendingCall.from_dict(item) for item in data["pending"]),
            conversation_id=data.get("conversation_id"),
            default_on_timeout=cls.timeout_default(data),
        )


class DurableOutcome(PausedOutcome[AgentRunResult[Any], PausedRun]):
    """How a durable drive ended: finished with ``result``, or ``paused`` again (the run
    is saved, its forms and questions sent)."""

    @property
    def output(self) -> Any:
        return self.result.output


# --- where paused runs wait -------------------------------------------------------------


class PausedRunStore(PauseStore[PausedRun], Protocol):
    """Where paused runs wait, keyed by :attr:`PausedRun.run_id` (a
    :class:`~humanwire._pauses.PauseStore`), and which are waiting."""

    def run_ids(self) -> list[str]: ...


class FilePausedRunStore(FileRunStore[PausedRun]):
    """One JSON file per paused run in ``directory`` (written atomically; claimed by
    renaming it, which only one process can do), and the consumed approvals in
    ``directory/consumed`` (it is an :class:`~humanwire.pydantic_ai.ApprovalLedger`)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        super().__init__(directory, read=PausedRun.from_dict, key_of=lambda run: run.run_id)

    def run_ids(self) -> list[str]:
        return self.keys()


# --- answers --------------------------------------------------------------------------------


def deferred_results(paused: PausedRun, answers: Mapping[str, Answer]) -> DeferredToolResults:
    """The ``DeferredToolResults`` of a paused run's answers (keyed by tool call id):
    ``ToolApproved`` / ``ToolDenied`` for approvals (an approval's interaction id goes in
    the call's metadata, for the guard to consume), the text for questions."""
    results = DeferredToolResults()
    for call in paused.pending:
        answer = answers[call.tool_call_id]
        if isinstance(answer, ApprovalDecision):
            decided = approval_result(call.tool_name, answer)
            results.approvals[call.tool_call_id] = decided
            if isinstance(decided, ToolApproved):
                results.metadata[call.tool_call_id] = approval_metadata(
                    call.interaction_id, call.tool_call_id
                )
        else:
            results.calls[call.tool_call_id] = answer
    return results


# --- pausing and resuming -----------------------------------------------------------------


class PausedRuns(AskingPeople):
    """Pauses runs at their deferred calls and resumes them when answered.

    ``store`` keeps the paused runs; ``approver`` (or its options: ``to``, ``channel``,
    or ``approvers`` with ``quorum``, ``escalation``, ``remind_every``;
    ``follow_up_time``, ``on_timeout``, ``client``) says whom to ask. The approval
    requests and questions stay open for ``window`` seconds (default: the approver's
    ``follow_up_time``, else :data:`DEFAULT_PAUSE_WINDOW`). Approvals are consumed
    before their tool runs, on the service (bound to the call) and in ``ledger``: by
    default the store when it is one (``FilePausedRunStore`` is), else this process's
    memory.
    """

    def __init__(
        self,
        store: PausedRunStore,
        approver: Approver | None = None,
        *,
        window: float | None = None,
        describe: Describe | None = None,
        ledger: ApprovalLedger | None = None,
        **approver_options: Any,
    ) -> None:
        super().__init__(approver, window=window, **approver_options)
        self.store = store
        self.describe = describe
        if ledger is None and isinstance(store, ApprovalLedger):
            ledger = store
        self.guard = ApprovalGuard(ledger, client=lambda: self.approver.async_client)

    @property
    def client(self) -> AsyncHumanWire:
        return self.approver.async_client

    # -- pausing ---------------------------------------------------------------------------
    async def run(
        self, agent: AbstractAgent[Any, Any], user_prompt: Any = None, **run_options: Any
    ) -> DurableOutcome:
        """``agent.run(...)``, then :meth:`pause` if it ended on deferred calls."""
        result = await agent.run(user_prompt, **self._with_guard(run_options))
        return DurableOutcome(result, await self.pause(result))

    async def pause(self, result: AgentRunResult[Any]) -> PausedRun | None:
        """Ask for what the run waits for and save it; ``None`` when the run finished.

        Sending again for the same run sends nothing new (the keys derive from the run and
        the tool call). Deferred calls that are neither approvals nor questions (external
        work) are not a person's to answer: a ``ValueError`` names them, before anything
        is sent.
        """
        requests = result.output
        if not isinstance(requests, DeferredToolRequests):
            return None
        questions = [c for c in requests.calls if requests.kind(c.tool_call_id) == "question"]
        external = [c.tool_name for c in requests.calls if c not in questions]
        if external:
            raise ValueError(
                f"the run waits for external results of {external}: humanwire answers "
                "approvals and questions only"
            )
        run_id = store_key(result.run_id)
        messages = result.all_messages()
        pending = await asyncio.gather(
            *(self._send_approval(run_id, call, messages) for call in requests.approvals),
            *(
                self._send_question(
                    run_id, call, requests.metadata.get(call.tool_call_id), messages
                )
                for call in questions
            ),
        )
        paused = PausedRun(
            run_id=run_id,
            messages=result.all_messages_json().decode(),
            pending=tuple(pending),
            conversation_id=result.conversation_id,
            default_on_timeout=self.approver.default_on_timeout,
        )
        self.store.save(paused)
        return paused

    def _metadata(self, run_id: str, tool_call_id: str) -> dict[str, str]:
        return {RESUME_KEY: RESUME_PYDANTIC_AI, **send_metadata(run_id, tool_call_id)}

    async def _send_approval(
        self, run_id: str, call: ToolCallPart, messages: Sequence[ModelMessage]
    ) -> PendingCall:
        response = await request_approval(
            self,
            approval_request(call, self.describe),
            key=send_key("approval", run_id, call.tool_call_id, messages),
            metadata=self._metadata(run_id, call.tool_call_id),
            client=self.client,
        )
        return PendingCall(call.tool_call_id, call.tool_name, "approval", response.interaction_id)

    async def _send_question(
        self,
        run_id: str,
        call: ToolCallPart,
        metadata: Mapping[str, Any] | None,
        messages: Sequence[ModelMessage],
    ) -> PendingCall:
        response = await ask_question(
            self,
            question_text(call, metadata),
            key=send_key("question", run_id, call.tool_call_id, messages),
            metadata=self._metadata(run_id, call.tool_call_id),
            client=self.client,
        )
        return PendingCall(call.tool_call_id, call.tool_name, "question", response.interaction_id)

    # -- resuming --------------------------------------------------------------------------
    def resumer(
        self, agent: AbstractAgent[Any, Any], run_options: Mapping[str, Any]
    ) -> PauseResumer[PausedRun, DurableOutcome]:
        """This adapter's part of the shared resume (:mod:`humanwire._pauses.resume`):
        pauses found by the run id a send carries, waiting on their deferred calls, and
        resumed with ``DeferredToolResults``, once (claimed from the store)."""

        async def resume(paused: PausedRun, answers: dict[str, Answer]) -> DurableOutcome | None:
            async def run(claimed: PausedRun) -> DurableOutcome:
                result = await agent.run(
                    message_history=claimed.history(),
                    deferred_tool_results=deferred_results(claimed, answers),
                    **self._with_guard(dict(run_options)),
                )
                return DurableOutcome(result, await self.pause(result))

            return await resume_once(self.store, paused.run_id, run, expected=paused)

        async def client() -> AsyncHumanWire:
            return self.client

        return PauseResumer(
            framework=RESUME_PYDANTIC_AI,
            pending=lambda paused: {call.tool_call_id: call for call in paused.pending},
            resume=resume,
            client=client,
            load=self.store.load,
            keys=self.store.run_ids,
            pause_key=RUN_KEY,
            call_key=CALL_KEY,
            questions=True,
        )

    async def resume_from_webhook(
        self,
        agent: AbstractAgent[Any, Any],
        body: bytes | str | Mapping[str, Any] | Event,
        headers: Mapping[str, str] | None = None,
        *,
        secret: str | None = None,
        **run_options: Any,
    ) -> DurableOutcome | None:
        """Resume the run a delivery answers (``approval.decided`` for an approval,
        ``message.received`` for a question). ``None`` for any other event, a send that
        is not a paused Pydantic AI run's, a run with another call still open (its answer
        resumes it), or a run already resumed (so a repeated delivery is harmless).
        With ``secret`` the signature is verified first."""
        return await shared.resume_from_webhook(
            self.resumer(agent, run_options), body, headers, secret=secret
        )

    async def resume(
        self,
        agent: AbstractAgent[Any, Any],
        run_id: str,
        *,
        timeout: float | None = None,
        **run_options: Any,
    ) -> DurableOutcome | None:
        """Wait on the service until every call of the paused run is answered (or its
        window closed), then resume it. ``timeout`` bounds the wait per call (``0``:
        look once); ``None`` when it is still open then, or no such run is saved."""
        paused = self.store.load(run_id)
        if paused is None:
            return None
        return await shared.resume_answered(
            self.resumer(agent, run_options), paused, timeout=timeout
        )

    async def resume_decided(
        self, agent: AbstractAgent[Any, Any], **run_options: Any
    ) -> list[DurableOutcome]:
        """Resume every saved run whose calls are all answered or expired (a webhook
        missed, or a window that closed unanswered: it sends none). Run it from a
        scheduler when relying on webhooks."""
        return await shared.resume_expired(self.resumer(agent, run_options))

    def _with_guard(self, run_options: dict[str, Any]) -> dict[str, Any]:
        capabilities: Sequence[Any] = run_options.get("capabilities") or ()
        return {**run_options, "capabilities": [*capabilities, self.guard]}
