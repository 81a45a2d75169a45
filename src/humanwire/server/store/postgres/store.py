"""``PostgresStore``: ``SharedStore`` on PostgreSQL, put together from its parts."""

from __future__ import annotations

from ..base import (
    ACCOUNT_TABLES,
    Duplicate,
    IdempotencyLinkRecord,
    InteractionRecord,
    OutboxRecord,
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
    ) -> None:
        values = (*rows.interaction_values(record), record.owner, record.held_by)
        if link is None:
            await self._run(self.q.insert_interaction, values)
            return
        # One statement (one round trip, atomic): the link is written first and the
        # interaction only if it was. The link replaces one whose interaction failed to
        # deliver, or one older than ``link_stale_before``; any other link means another
        # request with this key (on another replica) got there first: ``Duplicate``,
        # nothing stored.
        linked = (*rows.link_values(link, link_stale_before), *values)
        if not await self._run(self.q.insert_linked_interaction, linked):
            raise Duplicate(f"idempotency key {link.key!r} is linked already")

    async def claim_outbox(self, now: float, limit: int, until: float) -> list[OutboxRecord]:
        found = await self._all(self.q.claim_outbox, (until, now, limit))
        return [rows.outbox(row) for row in found]
