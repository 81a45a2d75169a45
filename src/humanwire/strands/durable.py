"""Paused runs: stop a Strands agent at its approvals and questions, let the process exit,
and resume it when the person answers, from the webhook, in this process or another.

1. The agent is built per session by a function you give, ``agent_for(session_id)``, the
   same in every process: its tools, a :class:`~humanwire.strands.HumanWireApprovals`
   hook for the gated tools (and/or :class:`~humanwire.strands.PausingAskHuman`), and a
   session manager on that id (``FileSessionManager(session_id, storage_dir=...)``, or any
   that keeps the agent's state where every process finds it).
2. :meth:`PausedRuns.run` invokes it with ``invocation_state`` telling the hook to pause:
   the run stops on Strands interrupts (``stop_reason == "interrupt"``).
   :meth:`PausedRuns.pause` sends one approval request per ``humanwire:approval`` interrupt
   and one text message per ``humanwire:question``, without waiting, each carrying the
   run's keys in its ``metadata`` (``humanwire_resume: strands``, ``strands_session_id``,
   ``strands_interrupt_id``), and saves which interaction answers which interrupt in a
   :class:`PausedRunStore`. The session manager has saved the agent. The process may exit.
3. The webhook receiver calls :meth:`PausedRuns.resume_from_webhook` with the delivery
   (``approval.decided`` for an approval, ``message.received`` for a question): the session
   is found from the event's metadata alone, and once every interrupt of the pause is
   answered (the others are read from the service), the agent is rebuilt for the session
   and invoked with ``[{"interruptResponse": {"interruptId": ..., "response": ...}}]``:
   the decision (a JSON object) for an approval, the reply text for a question. A run that
   stops again is paused again.
4. Without webhooks, :meth:`PausedRuns.resume` waits on the service for the answers;
   :meth:`PausedRuns.resume_decided` resumes every saved pause whose answers are all in or
   expired (an expired approval is the timeout default, an expired question the
   no-response text).

**Runs once.** A pause is *claimed* (taken from the store atomically) before the agent
resumes, so a repeated or concurrent delivery finds nothing to resume. If the resumed run
fails, the claim is given back for a retried delivery; the approved action is still
protected: the hook consumes each approval in the ledger (the store, by default) before
its tool runs, so a second resume cancels the call ("was not run again").
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from strands import Agent
from strands.agent.agent_result import AgentResult
from strands.interrupt import Interrupt

from humanwire._pauses import (
    DEFAULT_PAUSE_WINDOW,
    RESUME_KEY,
    Answer,
    AnswerKind,
    ApprovalLedger,
    AskingPeople,
    FileRunStore,
    MemoryApprovalLedger,
    PausedOutcome,
    PauseResumer,
    PauseStore,
    PendingCalls,
    PendingRecord,
    ask_question,
    decision_to_dict,
    idempotency_key,
    metadata_value,
    request_approval,
    resume_once,
)
from humanwire._pauses import resume as shared
from humanwire.approval import ApprovalDecision, ApprovalRequest, Approver
from humanwire.types import Event

from .approval import (
    APPROVAL_INTERRUPT,
    CLIENTS_STATE,
    LEDGER_STATE,
    PAUSE_STATE,
    QUESTION_INTERRUPT,
)

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire

__all__ = [
    "DEFAULT_PAUSE_WINDOW",
    "INTERRUPT_KEY",
    "RESUME_STRANDS",
    "SESSION_KEY",
    "DurableOutcome",
    "FilePausedRunStore",
    "PausedRun",
    "PausedRunStore",
    "PausedRuns",
    "PendingInterrupt",
    "interrupt_responses",
]

RESUME_STRANDS = "strands"
SESSION_KEY = "strands_session_id"
INTERRUPT_KEY = "strands_interrupt_id"
"""A paused run's sends' metadata: ``humanwire_resume: strands``, the session and the
interrupt the send answers."""

_KIND_OF: dict[str, AnswerKind] = {APPROVAL_INTERRUPT: "approval", QUESTION_INTERRUPT: "question"}


# --- what a pause is ------------------------------------------------------------------------


@dataclass(frozen=True)
class PendingInterrupt(PendingRecord):
    """An interrupt of a paused run and the interaction that answers it."""

    what = "interrupt"

    interrupt_id: str
    kind: AnswerKind
    tool_name: str
    interaction_id: str


@dataclass(frozen=True)
class PausedRun(PendingCalls[PendingInterrupt]):
    """What a resume needs besides the agent's session: the session id, the interrupts the
    run waits for and the interactions answering them, and the timeout default."""

    session_id: str
    round: int
    """How far the session had got when it paused (its message count): part of each
    send's Idempotency-Key, so a later pause of the same session asks afresh."""
    pending: tuple[PendingInterrupt, ...]
    default_on_timeout: Literal["approve", "reject"] = "reject"

    def for_interaction(self, interaction_id: str) -> PendingInterrupt | None:
        return self.pending_for(interaction_id)

    def to_dict(self) -> dict[str, Any]:
        return self.record(session_id=self.session_id, round=self.round)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PausedRun:
        return cls(
            session_id=str(data["session_id"]),
            round=int(data["round"]),
            pending=tuple(PendingInterrupt.from_dict(item) for item in data["pending"]),
            default_on_timeout=cls.timeout_default(data),
        )


class DurableOutcome(PausedOutcome[AgentResult, PausedRun]):
    """How a durable drive ended: finished with ``result``, or ``paused`` again (the
    forms and questions are out, the pause saved)."""

    @property
    def text(self) -> str:
        """The agent's final text (``str(result)``, without the trailing newline)."""
        return str(self.result).strip()


# --- where pauses wait ----------------------------------------------------------------------


class PausedRunStore(PauseStore[PausedRun], Protocol):
    """Where pauses wait, one per session (a :class:`~humanwire._pauses.PauseStore` keyed
    by the session id), and which sessions are waiting."""

    def session_ids(self) -> list[str]: ...


class FilePausedRunStore(FileRunStore[PausedRun]):
    """One JSON file per paused session in ``directory`` (written atomically, claimed by
    renaming it, which only one process can do), and the consumed approvals in
    ``directory/consumed`` (it is an :class:`~humanwire._pauses.ApprovalLedger`). Keep the
    agents' sessions elsewhere (a ``FileSessionManager`` ``storage_dir`` of their own)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        super().__init__(directory, read=PausedRun.from_dict, key_of=lambda run: run.session_id)

    def session_ids(self) -> list[str]:
        return [run.session_id for run in self.pauses()]


# --- answers --------------------------------------------------------------------------------

Response = dict[str, Any] | str
"""An interrupt's response: a decision (JSON) for an approval, the reply text for a question."""


def interrupt_response(answer: Answer) -> Response:
    """What an interrupt is answered with: the decision as JSON (the hook reads it back
    with ``decision_from_value``), or the reply text."""
    return decision_to_dict(answer) if isinstance(answer, ApprovalDecision) else answer


def interrupt_responses(answers: Mapping[str, Response]) -> list[dict[str, Any]]:
    """The prompt that resumes an interrupted agent: one ``interruptResponse`` per answer,
    keyed by interrupt id."""
    return [
        {"interruptResponse": {"interruptId": interrupt_id, "response": answer}}
        for interrupt_id, answer in answers.items()
    ]


# --- pausing and resuming -------------------------------------------------------------------


class PausedRuns(AskingPeople):
    """Pauses Strands runs at humanwire's interrupts and resumes them when answered.

    ``store`` keeps the pauses; ``agent_for(session_id)`` builds the agent of a session
    (the same tools and hooks in every process, and a session manager on that id);
    ``approver`` (or its options: ``to``, ``channel``, ``follow_up_time``,
    ``default_on_timeout``, ``client``; ``allow_edit`` is refused: an approval is about
    the call as asked) says whom the forms and questions go to. They stay open
    ``window`` seconds (default: the approver's ``follow_up_time``, else
    :data:`DEFAULT_PAUSE_WINDOW`). ``ledger`` is where approvals are consumed before
    their tool runs: by default the store when it is one (``FilePausedRunStore`` is), else
    this process's memory.
    """

    def __init__(
        self,
        store: PausedRunStore,
        agent_for: Callable[[str], Agent],
        approver: Approver | None = None,
        *,
        window: float | None = None,
        ledger: ApprovalLedger | None = None,
        **approver_options: Any,
    ) -> None:
        super().__init__(approver, window=window, **approver_options)
        self.store = store
        self.agent_for = agent_for
        if ledger is None:
            ledger = store if isinstance(store, ApprovalLedger) else MemoryApprovalLedger()
        self.ledger = ledger

    async def client(self) -> AsyncHumanWire:
        """The async client of the running event loop (see ``ToolClients``)."""
        return await self.clients.get()

    def invocation_state(self, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """A run's ``invocation_state``: the hook pauses, and consumes on the service
        (these clients) and in this ledger."""
        return {
            **(given or {}),
            PAUSE_STATE: True,
            LEDGER_STATE: self.ledger,
            CLIENTS_STATE: self.clients,
        }

    # -- pausing ---------------------------------------------------------------------------
    async def run(
        self, session_id: str, prompt: Any = None, **invoke_options: Any
    ) -> DurableOutcome:
        """Build the session's agent, invoke it, and :meth:`pause` it if it stopped on
        interrupts. Other keyword arguments go to ``agent.invoke_async``."""
        agent = self.agent_for(session_id)
        result = await self._invoke(agent, prompt, invoke_options)
        return DurableOutcome(result, await self.pause(session_id, agent, result))

    async def pause(self, session_id: str, agent: Agent, result: AgentResult) -> PausedRun | None:
        """Send what the run waits for and save the pause; ``None`` when it did not stop
        on interrupts.

        Sending again for the same pause sends nothing new (the keys derive from the
        session, its message count and the interrupt). An interrupt that is not
        humanwire's (another hook's) is not a person's to answer here: a ``ValueError``
        names it, before anything is sent.
        """
        if result.stop_reason != "interrupt" or not result.interrupts:
            return None
        interrupts = list(result.interrupts)
        foreign = [item.name for item in interrupts if item.name not in _KIND_OF]
        if foreign:
            raise ValueError(
                f"the run waits for interrupts {foreign}: humanwire answers "
                f"{APPROVAL_INTERRUPT!r} and {QUESTION_INTERRUPT!r} only"
            )
        # The keys a resume needs, checked before anything is sent.
        metadata_value("session id", session_id)
        for item in interrupts:
            metadata_value("interrupt id", item.id)
        round_ = len(agent.messages)
        pending = await asyncio.gather(
            *(self._send(session_id, round_, item) for item in interrupts)
        )
        paused = PausedRun(
            session_id=session_id,
            round=round_,
            pending=tuple(pending),
            default_on_timeout=self.approver.default_on_timeout,
        )
        self.store.save(paused)
        return paused

    def _metadata(self, session_id: str, interrupt_id: str) -> dict[str, str]:
        return {RESUME_KEY: RESUME_STRANDS, SESSION_KEY: session_id, INTERRUPT_KEY: interrupt_id}

    async def _send(self, session_id: str, round_: int, interrupt: Interrupt) -> PendingInterrupt:
        reason = interrupt.reason if isinstance(interrupt.reason, Mapping) else {}
        tool_name = str(reason.get("tool") or "tool")
        kind = _KIND_OF[interrupt.name]
        key = idempotency_key(kind, "strands", session_id, round_, interrupt.id)
        metadata = self._metadata(session_id, interrupt.id)
        client = await self.client()
        if kind == "approval":
            arguments, description = reason.get("arguments"), reason.get("description")
            request = ApprovalRequest(
                tool_name,
                dict(arguments) if isinstance(arguments, Mapping) else {},
                str(description) if description else None,
            )
            form = await request_approval(self, request, key=key, metadata=metadata, client=client)
            interaction_id = form.interaction_id
        else:
            question = reason.get("question")
            message = await ask_question(
                self,
                str(question) if question else str(interrupt.reason),
                key=key,
                metadata=metadata,
                client=client,
            )
            interaction_id = message.interaction_id
        return PendingInterrupt(interrupt.id, kind, tool_name, interaction_id)

    # -- resuming --------------------------------------------------------------------------
    def resumer(self, invoke_options: Mapping[str, Any]) -> PauseResumer[PausedRun, DurableOutcome]:
        """This adapter's part of the shared resume (:mod:`humanwire._pauses.resume`):
        pauses found by the session a send carries, waiting on their interrupts, resumed
        by rebuilding the session's agent and answering every interrupt, once (claimed
        from the store)."""

        async def resume(paused: PausedRun, answers: dict[str, Answer]) -> DurableOutcome | None:
            async def run(claimed: PausedRun) -> DurableOutcome:
                agent = self.agent_for(claimed.session_id)
                ordered = {
                    p.interrupt_id: interrupt_response(answers[p.interrupt_id])
                    for p in claimed.pending
                }
                prompt = interrupt_responses(ordered)
                result = await self._invoke(agent, prompt, dict(invoke_options))
                return DurableOutcome(result, await self.pause(claimed.session_id, agent, result))

            return await resume_once(self.store, paused.session_id, run, expected=paused)

        return PauseResumer(
            framework=RESUME_STRANDS,
            pending=lambda paused: {p.interrupt_id: p for p in paused.pending},
            resume=resume,
            client=self.client,
            load=self.store.load,
            keys=self.store.session_ids,
            pause_key=SESSION_KEY,
            call_key=INTERRUPT_KEY,
            questions=True,
        )

    async def resume_from_webhook(
        self,
        body: bytes | str | Mapping[str, Any] | Event,
        headers: Mapping[str, str] | None = None,
        *,
        secret: str | None = None,
        **invoke_options: Any,
    ) -> DurableOutcome | None:
        """Resume the run a delivery answers (``approval.decided`` for an approval,
        ``message.received`` for a question). ``None`` for any other event, a send that
        is not a paused Strands run's, a pause with another interrupt still open (its
        answer resumes the run), or a pause resumed already (so a repeated delivery is
        harmless). With ``secret`` the signature is verified first."""
        return await shared.resume_from_webhook(
            self.resumer(invoke_options), body, headers, secret=secret
        )

    async def resume(
        self, session_id: str, *, timeout: float | None = None, **invoke_options: Any
    ) -> DurableOutcome | None:
        """Wait on the service until every interrupt of the session's pause is answered
        (or its window closed), then resume it. ``timeout`` bounds the wait per
        interaction (``0``: look once); ``None`` when one is still open then, or no pause
        is saved for the session."""
        paused = self.store.load(session_id)
        if paused is None:
            return None
        return await shared.resume_answered(self.resumer(invoke_options), paused, timeout=timeout)

    async def resume_decided(self, **invoke_options: Any) -> list[DurableOutcome]:
        """Resume every saved pause whose answers are all in or expired (a webhook missed,
        or a window that closed unanswered: it sends none). Run it from a scheduler when
        relying on webhooks."""
        return await shared.resume_expired(self.resumer(invoke_options))

    async def _invoke(self, agent: Agent, prompt: Any, options: dict[str, Any]) -> AgentResult:
        state = self.invocation_state(options.pop("invocation_state", None))
        return await agent.invoke_async(prompt, invocation_state=state, **options)
