"""``PostgresStore``: ``SharedStore`` on PostgreSQL, put together from its parts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..protocol import Duplicate
from ..records import (
    ACCOUNT_TABLES,
    ApprovalRecord,
    ApproverRecord,
    IdempotencyLinkRecord,
    InteractionOutcome,
    InteractionRecord,
    OutboxRecord,
    StepRecord,
)
from ..sql import rows
from .outcomes import PostgresOutcomes
from .replicas import PostgresReplicas

__all__ = ["PostgresStore"]


class PostgresStore(PostgresOutcomes, PostgresReplicas):
    """``Store`` (and ``SharedStore``) on PostgreSQL: ``SQLStore``'s shared methods on
    ``PostgresConnection``'s executor, the outcome stream and the replicas' parts, and
    the methods below, which PostgreSQL runs its own way."""

    account_tables = (*ACCOUNT_TABLES, "rate_hits", "rate_counts", "spam_marks")
    """Every table with an ``account_id`` column (besides ``accounts``): replicas' counts too."""

    async def insert_interaction(
        self,
        record: InteractionRecord,
        link: IdempotencyLinkRecord | None = None,
        *,
        link_stale_before: float = 0.0,
        step: StepRecord | None = None,
        claimed_by: str | None = None,
        claimed_until: float | None = None,
    ) -> None:
        values = (*rows.interaction_values(record), record.owner, record.held_by)
        step_values = rows.step_values(step, claimed_by, claimed_until) if step else ()
        if link is None:
            if step is None:
                await self._run(self.q.insert_interaction, values)
            else:
                await self._run(self.q.insert_scheduled_interaction, (*step_values, *values))
            return
        # One statement (one round trip, atomic): the link is written first and the
        # interaction (and its window step) only if it was. The link replaces one whose
        # interaction failed to deliver, or one older than ``link_stale_before``; any
        # other link means another request with this key (on another replica) got there
        # first: ``Duplicate``, nothing stored.
        linked = (*rows.link_values(link, link_stale_before), *values)
        if step is None:
            written = await self._run(self.q.insert_linked_interaction, linked)
        else:
            # The step's values but its key (the interaction's id, from the insert).
            kind, _key, *rest = step_values
            written = await self._run(
                self.q.insert_linked_scheduled_interaction, (*linked, kind, *rest)
            )
        if not written:
            raise Duplicate(f"idempotency key {link.key!r} is linked already")

    async def insert_approval(
        self, record: ApprovalRecord, approvers: Sequence[ApproverRecord]
    ) -> None:
        # Under the account's lock until the commit: one account's requests commit in
        # the order of their seq, so a cursor of GET /approvals never passes over one
        # that commits later (as the outcome stream's ids). One pipeline, one round trip.
        q = self.q
        async with self._tx(3) as tx:
            await tx.execute(q.lock_account_approvals, (record.account_id,))
            await tx.execute(q.insert_approval, rows.approval_values(record))
            await tx.executemany(q.insert_approver, [rows.approver_values(a) for a in approvers])

    async def end_interaction(
        self,
        interaction_id: str,
        ended_at: float,
        result: dict[str, Any] | None = None,
        outcome: InteractionOutcome | None = None,
    ) -> bool:
        # One statement: the window step goes with the end.
        result_text = rows.dumps_json(result) if result is not None else None
        params = (interaction_id, ended_at, result_text, outcome, interaction_id)
        return await self._run(self.q.end_interaction, params) > 0

    async def claim_outbox(self, now: float, limit: int, until: float) -> list[OutboxRecord]:
        found = await self._all(self.q.claim_outbox, (until, now, limit))
        return [rows.outbox(row) for row in found]
