"""What replicas share on one PostgreSQL database (``SharedStore``,
``server/background/replicas.py``): the replicas' heartbeats, held sends handed over and let
go (and those of dead replicas swept, ``FOR UPDATE SKIP LOCKED``), notices (LISTEN/NOTIFY),
and the rate limit's and spam guard's counts (PL/pgSQL functions under advisory locks,
committed without waiting for the disk)."""

from __future__ import annotations

from typing import Any

from ..records import InteractionOutcome, InteractionRecord, KeyCheck
from ..sql import rows
from ..sql.rows import dumps_json
from .connection import PostgresConnection
from .statements import INTERACTION_COLUMNS_SHARED

__all__ = ["PostgresReplicas"]


class PostgresReplicas(PostgresConnection):
    """The ``SharedStore`` methods but those of the outcome stream (``outcomes.py``)."""

    shared = True
    """Other processes may serve from this database (see ``SharedStore``)."""

    async def heartbeat(self, replica_id: str, now: float) -> None:
        await self._run(
            "INSERT INTO replicas (id, started_at, seen_at) VALUES (%s, %s, %s) "
            "ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at",
            (replica_id, now, now),
        )

    async def retire_replica(self, replica_id: str) -> None:
        await self._run("DELETE FROM replicas WHERE id = %s", (replica_id,))

    async def forget_replicas_before(self, cutoff: float) -> None:
        await self._run("DELETE FROM replicas WHERE seen_at < %s", (cutoff,))

    async def take_interaction(self, interaction_id: str, replica_id: str, *, hold: bool) -> bool:
        return (
            await self._run(
                "UPDATE interactions SET owner = %s, held_by = CASE WHEN %s THEN %s "
                "ELSE held_by END WHERE id = %s AND status = 'pending'",
                (replica_id, hold, replica_id, interaction_id),
            )
            > 0
        )

    async def end_held_interaction(
        self,
        interaction_id: str,
        ended_at: float,
        result: dict[str, Any] | None = None,
        outcome: InteractionOutcome | None = None,
        *,
        release: str | None = None,
    ) -> tuple[bool, str | None]:
        row = await self._one(
            "WITH unarmed AS (DELETE FROM schedule WHERE kind = 'window' AND key = %s) "
            "UPDATE interactions SET status = 'ended', ended_at = %s, result = %s, outcome = %s, "
            "held_by = CASE WHEN held_by = %s THEN NULL ELSE held_by END "
            "WHERE id = %s AND status = 'pending' RETURNING held_by",
            (
                interaction_id,
                ended_at,
                dumps_json(result) if result is not None else None,
                outcome,
                release,
                interaction_id,
            ),
        )
        return (row is not None, str(row[0]) if row and row[0] is not None else None)

    async def release_hold(
        self, interaction_id: str, replica_id: str, *, ended_only: bool = False
    ) -> InteractionRecord | None:
        row = await self._one(
            "UPDATE interactions SET held_by = NULL WHERE id = %s AND held_by = %s "
            + ("AND status <> 'pending' " if ended_only else "")
            + f"RETURNING {INTERACTION_COLUMNS_SHARED}",
            (interaction_id, replica_id),
        )
        return rows.interaction(row) if row else None

    async def sweep_holds(self, alive_after: float, limit: int) -> list[InteractionRecord]:
        found = await self._all(
            "UPDATE interactions SET held_by = NULL WHERE id IN (SELECT i.id FROM "
            "interactions i WHERE i.held_by IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "
            "replicas r WHERE r.id = i.held_by AND r.seen_at > %s) "
            "LIMIT %s FOR UPDATE SKIP LOCKED) "
            f"RETURNING {INTERACTION_COLUMNS_SHARED}",
            (alive_after, limit),
        )
        return [rows.interaction(row) for row in found]

    async def notify(self, payloads: list[str]) -> None:
        if not payloads:
            return
        # One statement: delivered together, in order, when it commits.
        await self._run(
            "SELECT pg_notify(%s, payload) FROM unnest(%s::text[]) AS payload",
            (self.channel, payloads),
        )

    async def rate_hit(
        self, account_id: str, now: float, limit: int, window: float
    ) -> float | None:
        row = await self._counted(
            "SELECT humanwire_rate_hit(%s, %s, %s, %s)", (account_id, now, window, limit)
        )
        return float(row[0]) if row and row[0] is not None else None

    async def spam_hit(
        self, account_id: str, fingerprint: str, to: str, now: float, window: float
    ) -> int:
        row = await self._counted(
            "SELECT humanwire_spam_hit(%s, %s, %s, %s, %s)",
            (account_id, fingerprint, to, now, window),
        )
        return int(row[0]) if row else 0

    async def account_by_key_hash_counted(
        self,
        key_hash: str,
        now: float,
        limit: int,
        window: float,
        named: str | None = None,
    ) -> KeyCheck:
        # The named interaction is read in the count's transaction, after it: one
        # connection and one round trip for both (two at once would wake two server
        # processes and this one twice, and start the second read late).
        account, interaction = await self._counted_reading(
            "SELECT id, name, key_hash, suspended, created_at, CASE WHEN suspended THEN NULL "
            "ELSE humanwire_rate_hit(id, %s, %s, %s) END FROM accounts WHERE key_hash = %s",
            (now, window, limit, key_hash),
            named,
        )
        if account is None:
            return KeyCheck(None, named=rows.interaction(interaction) if interaction else None)
        return KeyCheck(
            rows.account(account),
            float(account[5]) if account[5] is not None else None,
            rows.interaction(interaction) if interaction else None,
        )

    async def _counted(self, query: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """A rate or spam count (its row): committed without waiting for the disk (a count
        lost to a crash of the database server only forgets a few requests, as a restart
        of one SQLite service forgets all of them), so a send does not wait on two more
        WAL flushes. One transaction, one round trip."""
        row, _ = await self._counted_reading(query, params, None)
        return row

    async def _counted_reading(
        self, query: str, params: tuple[Any, ...], named: str | None
    ) -> tuple[tuple[Any, ...] | None, tuple[Any, ...] | None]:
        """``_counted``, and the row of the interaction ``named`` (if given) read after the
        count in the same transaction and round trip."""
        async with self._connection() as conn:
            async with conn.pipeline():
                self.transactions += 1
                self.round_trips += 1
                self.statements += 2 + (named is not None)
                await conn.execute(b"SELECT set_config('synchronous_commit', 'off', true)")
                cursor = await conn.execute(query.encode(), params)
                read = None
                if named is not None:
                    read = await conn.execute(self.q.get_interaction.encode(), (named,))
            # After the pipeline's Sync: see ``_tx``.
            return await cursor.fetchone(), (await read.fetchone() if read is not None else None)

    async def forget_spam(self, account_id: str) -> None:
        await self._run("DELETE FROM spam_marks WHERE account_id = %s", (account_id,))

    async def prune_limits(self, rate_before: float, spam_before: float) -> None:
        async with self._tx(2) as conn:
            # Only hits counted out of their account's window (``rate_counts``): the
            # next hit subtracts the rest itself.
            await conn.execute(
                "DELETE FROM rate_hits h WHERE h.at <= %s AND h.at <= COALESCE((SELECT "
                "c.counted_to FROM rate_counts c WHERE c.account_id = h.account_id), %s)",
                (rate_before, rate_before),
            )
            await conn.execute("DELETE FROM spam_marks WHERE at <= %s", (spam_before,))
