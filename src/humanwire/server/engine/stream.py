"""Outcome events of ``GET /events`` as the engine appends them: an interaction's
``interaction.ended``, a respond-async send's ``wait.ended``; each wakes the account's
stream readers and long-polls here, and (through the ``Coordinator``, in the same
transaction) on the other replicas. Reading the stream is ``outcomes``."""

from __future__ import annotations

import time
from typing import Any

from ..store.records import IdempotencyRecord, InteractionRecord
from ._common import (
    OutcomeHandoff,
    _metadata,
)
from .holds import Hold, Release
from .state import OUTCOME_PRUNE_EVERY, OUTCOME_TTL, EngineState


class OutcomeAppends(EngineState):
    async def _ended_outcome(
        self, record: InteractionRecord, event: dict[str, Any] | None, outcome: str | None
    ) -> None:
        await self.append_outcome(
            record.account_id, record.id, self._ended_report(record, event, outcome)
        )

    @staticmethod
    def _ended_report(
        record: InteractionRecord, event: dict[str, Any] | None, outcome: str | None
    ) -> dict[str, Any]:
        """The ``interaction.ended`` outcome event of ``record``."""
        return {
            "interactionId": record.id,
            "eventType": "interaction.ended",
            "result": event,
            "responded": event is not None and outcome != "no_answer",
            "metadata": _metadata(record),
        }

    async def append_outcome(
        self,
        account_id: str,
        interaction_id: str,
        body: dict[str, Any],
        *,
        idempotency: IdempotencyRecord | None = None,
        release: bool = False,
    ) -> int:
        """Stores an outcome event (with ``idempotency``, the result of the send it
        reports; with ``release``, this replica's hold on the interaction let go) and
        wakes the account's ``GET /events`` readers, here and on the other replicas
        (whose notice the write itself publishes)."""
        now = time.time()
        seq, after = await self.coordinator.append_outcome(
            account_id, interaction_id, body, now, idempotency=idempotency, release=release
        )
        await self._outcome_stored(account_id, OutcomeHandoff(after, seq, body), now)
        return seq

    async def _outcome_stored(self, account_id: str, handoff: OutcomeHandoff, now: float) -> None:
        self._outcome_heard(account_id, handoff)
        self._outcomes_appended += 1
        if self._outcomes_appended % OUTCOME_PRUNE_EVERY == 0:
            await self.store.delete_outcomes_before(now - OUTCOME_TTL)

    def _outcome_heard(self, account_id: str, handoff: OutcomeHandoff | None) -> None:
        """An outcome of the account was stored (here or by another replica): handed to
        its stream readers, and its long-polls woken."""
        for collector in self._outcome_collectors.get(account_id, ()):
            collector.add(handoff)
        self._outcome_wakeups.wake(account_id)

    async def append_wait_ended(
        self,
        hold: Hold,
        status: int,
        body: dict[str, Any],
        *,
        idempotency: IdempotencyRecord | None = None,
    ) -> None:
        """The ``wait.ended`` event of a send answered 202: ``status`` and ``body``, what
        its held request would have answered (and the hold let go, if it is left)."""
        release = hold.release is Release.UNRELEASED
        if release:
            hold.let_go()  # in the same transaction as the event
        interaction_id = hold.interaction_id
        await self.append_outcome(
            hold.record.account_id,
            interaction_id,
            wait_ended_event(interaction_id, status, body),
            idempotency=idempotency,
            release=release,
        )


def wait_ended_event(interaction_id: str, status: int, body: dict[str, Any]) -> dict[str, Any]:
    """A send's ``wait.ended`` outcome: ``status`` and ``body``, what its held request
    would have answered."""
    return {
        "interactionId": interaction_id,
        "eventType": "wait.ended",
        "response": body,
        "responded": body.get("responded") is True,
        "metadata": body.get("metadata"),
        "status": status,
    }
