"""Durable approval: pause a workflow run at an approval, let the process exit, and
resume it when the ``approval.decided`` webhook arrives — in this process or another.

1. The step calls ``request_approval(ctx, ..., watch=False)``.
2. :func:`run_until_approval` drives the run; when the step starts waiting it saves the
   run's context (``Context.to_dict()``) in a :class:`PausedRunStore` under the
   interaction id, stops the run and returns the pause. The process may exit.
3. The webhook receiver calls :func:`resume_from_webhook` with the delivery: the run is
   rebuilt (``Context.from_dict``), the decision is sent in, and the run continues until
   it finishes or pauses at its next approval.
4. :func:`resume_expired` (run it from a scheduler) resumes runs whose approval was
   decided or closed while no webhook reached this store.

The step consumes an approved decision for its action before it goes on
(``request_approval``), so a run resumed twice from the same delivery, in two processes
each holding a copy of the pause, runs the approved action once.

A receiver, in any web framework::

    store = FilePausedRunStore("paused-runs")

    async def on_webhook(raw_body: bytes, headers: Mapping[str, str]) -> None:
        outcome = await resume_from_webhook(
            MyWorkflow(timeout=None), store, raw_body, headers, secret=WEBHOOK_SECRET
        )
        # None: not an approval.decided for a run of ours (or already resumed)

The workflow's steps must be safe to replay: the approval request itself is sent once (its
interaction is kept in the run's state), but other work before ``request_approval`` in
the same step runs again on resume.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from llama_index.core.workflow import Context, Workflow
from workflows.handler import WorkflowHandler

from humanwire._pauses import (
    Answer,
    AwaitedAnswer,
    Delivery,
    FilePlainRecordStore,
    PausedOutcome,
    PauseResumer,
    SavedRecord,
    decision_from_value,
    parse_delivery,
    service_client,
)
from humanwire._pauses import resume as shared
from humanwire.approval import ApprovalDecision
from humanwire.types import Event

from .workflow import (
    RESUME_LLAMA_INDEX,
    ApprovalRequiredEvent,
    ApprovalResponseEvent,
)

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire

__all__ = [
    "DurableOutcome",
    "FilePausedRunStore",
    "PausedRunStore",
    "parse_delivery",
    "resume_approval",
    "resume_expired",
    "resume_from_webhook",
    "run_until_approval",
]


class PausedRunStore(Protocol):
    """Where paused runs wait, keyed by the approval's interaction id."""

    def save(self, interaction_id: str, record: dict[str, Any]) -> None: ...

    def load(self, interaction_id: str) -> dict[str, Any] | None: ...

    def delete(self, interaction_id: str) -> None: ...

    def interaction_ids(self) -> list[str]: ...


class FilePausedRunStore(FilePlainRecordStore):
    """One JSON file per paused run in ``directory``, written atomically (an interaction
    id that cannot name a file is refused on save and found nowhere)."""

    def interaction_ids(self) -> list[str]:
        return self.keys()


@dataclass(frozen=True)
class DurableOutcome(PausedOutcome[Any, ApprovalRequiredEvent]):
    """How a durable drive ended: ``paused`` at an approval (the run is saved and
    stopped), or finished with ``result``."""

    result: Any = None
    paused: ApprovalRequiredEvent | None = None


async def run_until_approval(
    handler: WorkflowHandler,
    store: PausedRunStore,
    *,
    resolved: frozenset[str] = frozenset(),
) -> DurableOutcome:
    """Drive a run until it finishes, or until a step waits for an approval: then save
    the run under the interaction id, stop it and return the pause.

    Use it on ``workflow.run(...)`` for a run whose steps call
    ``request_approval(..., watch=False)``. ``resolved`` lists interactions whose decision
    was already sent in (their announcement may be streamed again on resume).
    """
    async for event in handler.stream_events():
        if isinstance(event, ApprovalRequiredEvent) and event.interaction_id not in resolved:
            record = {
                "context": handler.ctx.to_dict(),
                "pause": event.model_dump(mode="json"),
            }
            store.save(event.interaction_id, record)
            await handler.cancel_run()
            return DurableOutcome(paused=event)
    return DurableOutcome(result=await handler)


def _resumer(
    workflow: Workflow, store: PausedRunStore, client: AsyncHumanWire | None = None
) -> PauseResumer[SavedRecord, DurableOutcome]:
    """This adapter's part of the shared resume (:mod:`humanwire._pauses.resume`): a run
    is saved under the one approval it waits at, and resumed by rebuilding its context
    and sending the decision in. A send without ``metadata[humanwire_resume]`` counts as
    a LlamaIndex pause (older forms carried none)."""

    load = SavedRecord.loader(store.load)

    async def find(delivery: Delivery) -> SavedRecord | None:
        return load(delivery.interaction_id)  # saved by the interaction, not by metadata

    async def resume(saved: SavedRecord, answers: dict[str, Answer]) -> DurableOutcome:
        answer = answers[saved.key]
        decision = answer if isinstance(answer, ApprovalDecision) else decision_from_value(answer)
        ctx = Context.from_dict(workflow, saved.record["context"])
        handler = workflow.run(ctx=ctx)
        handler.ctx.send_event(ApprovalResponseEvent.from_decision(decision))
        resolved = frozenset({saved.key})
        outcome = await run_until_approval(handler, store, resolved=resolved)
        # Kept until the run has moved on, so a crash while resuming can be retried.
        store.delete(saved.key)
        return outcome

    async def reader() -> AsyncHumanWire:
        return service_client(None, client)

    return PauseResumer(
        framework=RESUME_LLAMA_INDEX,
        pending=lambda saved: {saved.key: AwaitedAnswer("approval", saved.key)},
        resume=resume,
        client=reader,
        load=load,
        keys=store.interaction_ids,
        find=find,
        unmarked=True,
    )


async def resume_approval(
    workflow: Workflow,
    store: PausedRunStore,
    decision: ApprovalDecision,
) -> DurableOutcome | None:
    """Resume the run paused at ``decision.interaction_id`` with ``decision``; ``None``
    when no run waits for that interaction (already resumed, or not ours)."""
    interaction_id = decision.interaction_id
    record = store.load(interaction_id)
    if record is None:
        return None
    saved = SavedRecord(interaction_id, record)
    return await _resumer(workflow, store).resume(saved, {interaction_id: decision})


async def resume_from_webhook(
    workflow: Workflow,
    store: PausedRunStore,
    body: bytes | str | Mapping[str, Any] | Event,
    headers: Mapping[str, str] | None = None,
    *,
    secret: str | None = None,
) -> DurableOutcome | None:
    """Resume the run an ``approval.decided`` delivery decides (or an older pause's
    ``form.received``). Returns ``None`` for any other event, or when no run waits for
    that interaction (so a retried delivery is harmless).
    """
    return await shared.resume_from_webhook(_resumer(workflow, store), body, headers, secret=secret)


async def resume_expired(
    workflow: Workflow,
    store: PausedRunStore,
    client: AsyncHumanWire,
) -> list[DurableOutcome]:
    """Resume every saved run whose approval request was decided or closed undecided (a
    webhook that was missed; the timeout decided by the service, as ``onTimeout`` said)."""
    return await shared.resume_expired(_resumer(workflow, store, client))
