"""Durable approval: pause a run at its approvals, let the process exit, and resume it
when the ``form.received`` webhook arrives, in this process or another.

1. :func:`run_until_approval` runs the agent. When calls need approval, their forms are
   sent (by the tools' :class:`~humanwire.openai_agents.ApprovalGate`, or now), the
   run's state (``RunState.to_json()``) is saved in a :class:`PausedRunStore` under a
   run id, and the pause is returned. The process may exit.
2. The webhook receiver calls :func:`resume_from_webhook` with the delivery: the form's
   metadata names the run and the call; once every paused call of the run is decided
   (the others' decisions are read from the service), the state is loaded
   (``RunState.from_json``), each call approved or rejected with the human's reason, and
   the run continues until it finishes or pauses at its next approvals.
3. A form that expires sends no webhook: :func:`resume_expired` (from a scheduler)
   resumes runs whose forms have all closed, expired ones with the timeout default.

Each approval is used once: before a resume runs anything, it consumes every decided
interaction in the store (``consume``, atomic), and a resume that finds one consumed does
nothing. A retried or duplicated webhook, or ``resume_expired`` racing the webhook,
therefore never runs an approved call twice.

A receiver, in any web framework::

    store = FilePausedRunStore("paused-runs")

    async def on_webhook(raw_body: bytes, headers: Mapping[str, str]) -> None:
        outcome = await resume_from_webhook(agent, store, raw_body, headers, secret=SECRET)
        # None: not one of our approvals, the run still waits for another, or done already

The resuming process builds the same agent (same name, same tools) as the one that
paused; the SDK refuses a state whose agent or tools it cannot find.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from agents import Agent, Runner, RunResult, RunState

from humanwire._pauses import (
    Answer,
    FilePlainRecordStore,
    PausedOutcome,
    PauseResumer,
    PendingApproval,
    SavedRecord,
    approver_source,
    consume_all,
    consume_on_service,
    decision_from_value,
    service_client,
)
from humanwire._pauses import resume as shared
from humanwire.approval import ApprovalDecision, Approver
from humanwire.types import Event

from .approval import (
    CALL_KEY,
    RESUME_OPENAI_AGENTS,
    RUN_KEY,
    ApprovalRun,
    apply_decision,
    new_run_id,
)

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire

__all__ = [
    "DurableOutcome",
    "FilePausedRunStore",
    "PausedRunStore",
    "pause_run",
    "resume_expired",
    "resume_from_webhook",
    "resume_run",
    "run_until_approval",
]


class PausedRunStore(Protocol):
    """Where paused runs wait, by run id, and which approvals were used.

    ``consume(interaction_id)`` must be atomic across processes: ``True`` for the first
    caller, ``False`` for every later one (the guard that runs an approved call once).
    """

    def save(self, run_id: str, record: dict[str, Any]) -> None: ...

    def load(self, run_id: str) -> dict[str, Any] | None: ...

    def delete(self, key: str) -> None: ...

    def run_ids(self) -> list[str]: ...

    async def consume(self, interaction_id: str) -> bool: ...


class FilePausedRunStore(FilePlainRecordStore):
    """One JSON file per paused run in ``directory`` (written atomically; a run id that
    cannot name a file is refused), and one file per consumed approval in
    ``directory/consumed`` (created exclusively)."""

    def run_ids(self) -> list[str]:
        return self.keys()


@dataclass(frozen=True)
class DurableOutcome(PausedOutcome["RunResult | None", "tuple[PendingApproval, ...]"]):
    """How a durable drive ended: ``paused`` at approvals (the run is saved under
    ``run_id``; the process may exit), or finished with the SDK's ``result``."""

    result: RunResult | None = None
    paused: tuple[PendingApproval, ...] = ()
    run_id: str = field(default="", kw_only=True)

    @property
    def final_output(self) -> Any:
        return None if self.result is None else self.result.final_output


# --- pausing ----------------------------------------------------------------------------


async def pause_run(
    result: RunResult,
    store: PausedRunStore,
    *,
    run: ApprovalRun | None = None,
    approver: Approver | None = None,
) -> DurableOutcome:
    """Save ``result``'s pause, sending the approval form of each interruption not asked
    about yet; or, when the run finished, forget it. For a ``RunResult`` from your own
    ``Runner.run`` call: give ``approver`` for tools without an ``ApprovalGate``."""
    run = run or ApprovalRun(new_run_id(), approver_source(approver))
    if not result.interruptions:
        store.delete(run.run_id)
        return DurableOutcome(result, run_id=run.run_id)
    state = result.to_state()
    pending = await run.pending_for(state.get_interruptions())
    store.save(
        run.run_id,
        {
            "run_id": run.run_id,
            "round": run.round,
            "state": state.to_json(),
            "approvals": [approval.to_dict() for approval in pending],
        },
    )
    return DurableOutcome(result, tuple(pending), run_id=run.run_id)


async def run_until_approval(
    agent: Agent[Any],
    input: Any,
    store: PausedRunStore,
    *,
    approver: Approver | None = None,
    run_id: str | None = None,
    **run_kwargs: Any,
) -> DurableOutcome:
    """Run ``agent`` until it finishes, or until calls need approval: then send their
    forms, save the run under its id (``run_id``, or a new one) and return the pause.
    ``approver`` asks about tools gated without an ``ApprovalGate``
    (``needs_approval=True``); ``run_kwargs`` go to ``Runner.run``."""
    run = ApprovalRun(run_id or new_run_id(), approver_source(approver))
    with run.active():
        result = await Runner.run(agent, input, **run_kwargs)
    return await pause_run(result, store, run=run)


# --- resuming ---------------------------------------------------------------------------


def _pending_of(record: Mapping[str, Any]) -> dict[str, PendingApproval]:
    approvals = [PendingApproval.from_dict(data) for data in record.get("approvals", [])]
    return {approval.call_id: approval for approval in approvals}


async def resume_run(
    agent: Agent[Any],
    store: PausedRunStore,
    run_id: str,
    decisions: Mapping[str, ApprovalDecision],
    *,
    approver: Approver | None = None,
    client: AsyncHumanWire | None = None,
    **run_kwargs: Any,
) -> DurableOutcome | None:
    """Resume the run paused under ``run_id`` with a decision per paused call id.

    ``None`` when there is nothing to do: no such run, a paused call without a decision
    (it still waits), or an approval already used (another resume ran, or runs, it: the
    service answered ``already_consumed``, or the store's ledger had it). Otherwise the
    run goes on until it finishes or pauses again (saved again). ``client`` (else the
    ``approver``'s, else one from the environment) consumes the approvals.
    """
    resumer = _resumer(agent, store, approver, client, run_kwargs)
    saved = resumer.load(run_id) if resumer.load is not None else None
    return None if saved is None else await resumer.resume(saved, dict(decisions))


def _resumer(
    agent: Agent[Any],
    store: PausedRunStore,
    approver: Approver | None,
    client: AsyncHumanWire | None,
    run_kwargs: Mapping[str, Any],
) -> PauseResumer[SavedRecord, DurableOutcome]:
    """This adapter's part of the shared resume (:mod:`humanwire._pauses.resume`): runs
    found by the run id a form carries, waiting on their approvals, resumed from their
    ``RunState`` once every approval is consumed."""

    async def resume(saved: SavedRecord, decisions: dict[str, Answer]) -> DurableOutcome | None:
        pending = _pending_of(saved.record)
        if not pending or any(call_id not in decisions for call_id in pending):
            return None
        # Approvals only: an answer that is not a decision (none should be) is read as one.
        chosen = {
            call_id: answer if isinstance(answer, ApprovalDecision) else decision_from_value(answer)
            for call_id, answer in ((call_id, decisions[call_id]) for call_id in pending)
        }
        # Used once: consume every approval before anything runs, on the service (bound
        # to the call as asked), then in the store's ledger (which also marks a pause
        # resumed).
        approved = {
            approval.interaction_id: approval.request
            for call_id, approval in pending.items()
            if chosen[call_id].approved
        }
        if not await consume_on_service(service_client(approver, client), approved):
            return None
        if not await consume_all(store, [approval.interaction_id for approval in pending.values()]):
            return None
        state = await RunState.from_json(agent, saved.record["state"])
        for item in state.get_interruptions():
            decision = chosen.get(item.call_id or "")
            if decision is not None:
                apply_decision(state, item, decision)
        round_ = int(saved.record.get("round", 0)) + 1
        run = ApprovalRun(saved.key, approver_source(approver), round=round_)
        with run.active():
            result = await Runner.run(agent, state, **run_kwargs)
        return await pause_run(result, store, run=run)

    async def reader() -> AsyncHumanWire:
        return service_client(approver, client)

    return PauseResumer(
        framework=RESUME_OPENAI_AGENTS,
        pending=lambda saved: _pending_of(saved.record),
        resume=resume,
        client=reader,
        load=SavedRecord.loader(store.load),
        keys=store.run_ids,
        pause_key=RUN_KEY,
        call_key=CALL_KEY,
    )


async def resume_from_webhook(
    agent: Agent[Any],
    store: PausedRunStore,
    body: bytes | str | Mapping[str, Any] | Event,
    headers: Mapping[str, str] | None = None,
    *,
    secret: str | None = None,
    approver: Approver | None = None,
    client: AsyncHumanWire | None = None,
    **run_kwargs: Any,
) -> DurableOutcome | None:
    """Resume the run an ``approval.decided`` delivery decides (its metadata names the
    run and the call). ``None`` for any other event or another framework's request, for a run
    this store does not hold (or holds at a later pause), while another call of the run
    is still undecided, and for a delivery already acted on. ``client`` (else the
    ``approver``'s, else one from the environment) reads the other calls' decisions."""
    resumer = _resumer(agent, store, approver, client, run_kwargs)
    return await shared.resume_from_webhook(resumer, body, headers, secret=secret)


async def resume_expired(
    agent: Agent[Any],
    store: PausedRunStore,
    *,
    approver: Approver | None = None,
    client: AsyncHumanWire | None = None,
    **run_kwargs: Any,
) -> list[DurableOutcome]:
    """Resume every saved run whose approval forms have all closed: submitted (a webhook
    that was missed) or expired unanswered (the timeout default each form was sent
    with)."""
    return await shared.resume_expired(_resumer(agent, store, approver, client, run_kwargs))
