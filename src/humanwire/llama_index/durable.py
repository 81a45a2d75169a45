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

import json
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from llama_index.core.workflow import Context, Workflow
from workflows.handler import WorkflowHandler

from humanwire._pauses import plain_json
from humanwire.approval import ApprovalDecision, decision_from_approval, decision_from_values
from humanwire.types import (
    ApprovalDecidedEvent,
    Event,
    FormReceivedEvent,
)
from humanwire.webhooks import SIGNATURE_HEADER, parse_event

from .workflow import (
    RESUME_KEY,
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
    "resume_approval",
    "resume_expired",
    "resume_from_webhook",
    "run_until_approval",
]

_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


class PausedRunStore(Protocol):
    """Where paused runs wait, keyed by the approval's interaction id."""

    def save(self, interaction_id: str, record: dict[str, Any]) -> None: ...

    def load(self, interaction_id: str) -> dict[str, Any] | None: ...

    def delete(self, interaction_id: str) -> None: ...

    def interaction_ids(self) -> list[str]: ...


class FilePausedRunStore:
    """One JSON file per paused run in ``directory``, written atomically."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, interaction_id: str) -> Path:
        # The id comes from a webhook body: never let it name another file.
        if not _SAFE_ID.fullmatch(interaction_id):
            raise ValueError(f"not an interaction id: {interaction_id!r}")
        return self.directory / f"{interaction_id}.json"

    def save(self, interaction_id: str, record: dict[str, Any]) -> None:
        path = self._path(interaction_id)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".paused-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(record, file)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def load(self, interaction_id: str) -> dict[str, Any] | None:
        try:
            path = self._path(interaction_id)
        except ValueError:
            return None
        try:
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        return data

    def delete(self, interaction_id: str) -> None:
        self._path(interaction_id).unlink(missing_ok=True)

    def interaction_ids(self) -> list[str]:
        return sorted(p.stem for p in self.directory.glob("*.json"))


@dataclass(frozen=True)
class DurableOutcome:
    """How a durable drive ended: ``paused`` at an approval (the run is saved and
    stopped), or finished with ``result``."""

    result: Any = None
    paused: ApprovalRequiredEvent | None = None

    @property
    def finished(self) -> bool:
        return self.paused is None


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
    ctx = Context.from_dict(workflow, record["context"])
    handler = workflow.run(ctx=ctx)
    handler.ctx.send_event(ApprovalResponseEvent.from_decision(decision))
    outcome = await run_until_approval(handler, store, resolved=frozenset({interaction_id}))
    # Kept until the run has moved on, so a crash while resuming can be retried.
    store.delete(interaction_id)
    return outcome


def parse_delivery(
    body: bytes | str | Mapping[str, Any] | Event,
    headers: Mapping[str, str] | None = None,
    *,
    secret: str | None = None,
) -> Event:
    """The event a webhook delivery carries. With ``secret`` the ``Humanwire-Signature``
    header is verified against the raw body first (``humanwire.webhooks``), and a delivery
    that cannot be trusted raises ``WebhookVerificationError``."""
    if not isinstance(body, (bytes, str, Mapping)):  # an event parsed already
        if secret is not None:
            raise TypeError("verifying a signature needs the raw body (bytes or str)")
        return body
    if isinstance(body, Mapping):
        if secret is not None:
            raise TypeError("verifying a signature needs the raw body (bytes or str)")
        body = json.dumps(dict(body), default=plain_json)
    signature = None
    if secret is not None:
        lowered = {key.lower(): value for key, value in (headers or {}).items()}
        signature = lowered.get(SIGNATURE_HEADER.lower(), "")
    return parse_event(body, signature=signature, secret=secret)


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
    event = parse_delivery(body, headers, secret=secret)
    if not isinstance(event, (ApprovalDecidedEvent, FormReceivedEvent)):
        return None
    payload = event.payload
    kind = (payload.metadata or {}).get(RESUME_KEY)
    if kind is not None and kind != RESUME_LLAMA_INDEX:
        return None  # another framework's pause (a LangGraph approval…): not ours
    if isinstance(event, FormReceivedEvent):
        decision: ApprovalDecision | None = decision_from_values(
            event.payload.values, interaction_id=event.payload.interaction_id
        )
    else:
        decision = decision_from_approval(event.payload)
    if decision is None:
        return None
    return await resume_approval(workflow, store, decision)


async def resume_expired(
    workflow: Workflow,
    store: PausedRunStore,
    client: AsyncHumanWire,
) -> list[DurableOutcome]:
    """Resume every saved run whose approval request was decided or closed undecided (a
    webhook that was missed; the timeout decided by the service, as ``onTimeout`` said)."""
    outcomes: list[DurableOutcome] = []
    for interaction_id in store.interaction_ids():
        record = store.load(interaction_id)
        if record is None:
            continue
        decision = decision_from_approval(await client.approvals.get(interaction_id))
        if decision is None:
            continue
        outcome = await resume_approval(workflow, store, decision)
        if outcome is not None:
            outcomes.append(outcome)
    return outcomes
