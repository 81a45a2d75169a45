"""The outcome stream on PostgreSQL, and the notices that carry it to every replica.

An outcome's id comes from a sequence, taken and committed under the account's advisory
lock, so one account's ids commit in order and paging with ``outcomes_after`` never skips
one. An append is one pipeline (one round trip): the lock, then the insert, which also
reads the id of the account's outcome before it (exact: its snapshot is taken after the
lock) and, for a replica, publishes the notice (``pg_notify``, delivered on commit).
"""

from __future__ import annotations

from typing import Any

import psycopg

from ..base import OUTCOME_NOTICE_BODY, IdempotencyRecord, InboundRecord, InteractionOutcome
from ..sql import INBOUND_COLUMNS, rows
from ..sql.rows import dumps_json
from .connection import PostgresConnection

__all__ = ["ENDING_NOTICE_BYTES", "PostgresOutcomes"]

_PLACED = (
    "placed AS (SELECT added.id, COALESCE((SELECT MAX(o.id) FROM outcomes o "
    "WHERE o.account_id = %s AND o.id < added.id), 0) AS after FROM added) "
)
"""The new outcome (CTE ``added``) with the id of its account's outcome before it."""
_OUTCOME_NOTICE = (
    "json_build_array('outcome', %s::text, placed.id::text, "
    "json_build_object('after', placed.after, 'body', %s::json))"
)
"""An outcome's entry in a notice as ``Replicas`` reads it ([kind, account, item,
detail]): the event and the id before it."""


ENDING_NOTICE_BYTES = 7200
"""An ended interaction's notice entry carries its ending while it and the outcome body
carried beside it stay under this (the whole payload under NOTIFY's 8,000 bytes)."""


def _notice_body(text: str) -> str | None:
    """An outcome body a notice can carry (None: too large, its readers read it)."""
    return text if len(text.encode()) <= OUTCOME_NOTICE_BODY else None


class PostgresOutcomes(PostgresConnection):
    """``append_outcome`` and, for replicas, ``append_published_outcome`` and
    ``end_and_report``."""

    async def append_outcome(
        self,
        account_id: str,
        interaction_id: str,
        body: dict[str, Any],
        created_at: float,
        *,
        idempotency: IdempotencyRecord | None = None,
    ) -> tuple[int, int]:
        return await self._append_outcome(account_id, interaction_id, body, created_at, idempotency)

    async def append_published_outcome(
        self,
        account_id: str,
        interaction_id: str,
        body: dict[str, Any],
        created_at: float,
        replica_id: str,
        *,
        idempotency: IdempotencyRecord | None = None,
        release: bool = False,
    ) -> tuple[int, int]:
        return await self._append_outcome(
            account_id, interaction_id, body, created_at, idempotency, replica_id, release
        )

    async def _append_outcome(
        self,
        account_id: str,
        interaction_id: str,
        body: dict[str, Any],
        created_at: float,
        idempotency: IdempotencyRecord | None,
        replica_id: str | None = None,
        release: bool = False,
    ) -> tuple[int, int]:
        # One transaction, one round trip (a pipeline ending in one Sync). Ids come from
        # a sequence, taken and committed under the account's lock, so one account's ids
        # commit in order and a reader paging with ``outcomes_after`` never passes one
        # that commits later. The lock is its own statement: the insert's snapshot,
        # taken after it, sees every earlier outcome of the account, so the previous id
        # it returns is exact.
        text = dumps_json(body)
        insert = (
            "WITH added AS (INSERT INTO outcomes (account_id, interaction_id, body, "
            "created_at) VALUES (%s, %s, %s, %s) RETURNING id), " + _PLACED
        )
        params: tuple[Any, ...] = (account_id, interaction_id, text, created_at, account_id)
        if replica_id is None:
            query = insert + "SELECT id, after FROM placed"
        else:
            # The notice ({"r": replica, "n": [entry]}), delivered when this commits.
            query = insert + (
                "SELECT id, after, pg_notify(%s, json_build_object('r', %s::text, 'n', "
                f"json_build_array({_OUTCOME_NOTICE}))::text) FROM placed"
            )
            params = (*params, self.channel, replica_id, account_id, _notice_body(text))
        async with self._connection() as conn:
            async with conn.pipeline():
                self.transactions += 1
                self.round_trips += 1
                self.statements += 2 + (idempotency is not None) + release
                await self._lock_outcomes(conn, account_id)
                if idempotency is not None:
                    await conn.execute(
                        self.q.put_idempotency.encode(), rows.idempotency_values(idempotency)
                    )
                if release:
                    await conn.execute(
                        b"UPDATE interactions SET held_by = NULL WHERE id = %s AND held_by = %s",
                        (interaction_id, replica_id),
                    )
                cursor = await conn.execute(query.encode(), params)
            row = await cursor.fetchone()  # after the pipeline's Sync: see ``_tx``
        assert row is not None
        return int(row[0]), int(row[1])

    @staticmethod
    async def _lock_outcomes(conn: psycopg.AsyncConnection[Any], account_id: str) -> None:
        """The account's outcome lock, until the transaction ends: in a statement of its
        own, so the next statement's snapshot sees every earlier outcome of the account
        (the previous id ``_PLACED`` reads is exact)."""
        await conn.execute(
            b"SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            (f"humanwire.outcomes:{account_id}",),
        )

    async def end_and_report(
        self,
        interaction_id: str,
        account_id: str,
        ended_at: float,
        result: dict[str, Any] | None,
        outcome: InteractionOutcome | None,
        report: dict[str, Any],
        replica_id: str,
        *,
        release: str | None = None,
        inbound: InboundRecord | None = None,
    ) -> tuple[bool, str | None, tuple[int, int] | None]:
        # The account's outcome lock first (``_lock_outcomes``), then the end, its
        # outcome, the inbound text that ended it and one notice naming them, in one
        # transaction.
        text = dumps_json(report)
        carried = _notice_body(text)
        # The interaction's entry carries how it ended (a holder elsewhere answers from
        # it without reading the row) when both fit in one notice.
        ending = dumps_json({"endedAt": ended_at, "outcome": outcome, "result": result})
        fits = len(ending.encode()) + len((carried or "").encode()) <= ENDING_NOTICE_BYTES
        params: list[Any] = [
            interaction_id,
            ended_at,
            dumps_json(result) if result is not None else None,
            outcome,
            release,
            interaction_id,
        ]
        received = inbound_notice = ""
        if inbound is not None:
            # Stored whether or not this ended the interaction (a data-modifying WITH
            # always runs), linked to it only if it did.
            received = (
                f"received AS (INSERT INTO inbound ({INBOUND_COLUMNS}) SELECT %s, %s, %s, "
                "%s, %s, %s, %s, (SELECT %s::text FROM ended), %s, %s), "
            )
            params += rows.inbound_values(inbound)
            inbound_notice = ", json_build_array('inbound', %s::text, %s::text)"
        params += [account_id, interaction_id, text, ended_at, account_id]
        params += [self.channel, replica_id, account_id, interaction_id]
        params += [ending if fits else None, account_id, carried]
        if inbound is not None:
            params += [inbound.account_id, inbound.id]
        query = (
            # The window step goes with the end (whether or not this ended it).
            "WITH unarmed AS (DELETE FROM schedule WHERE kind = 'window' AND key = %s), "
            "ended AS (UPDATE interactions SET status = 'ended', ended_at = %s, "
            "result = %s, outcome = %s, held_by = CASE WHEN held_by = %s THEN NULL "
            "ELSE held_by END WHERE id = %s AND status = 'pending' "
            "RETURNING held_by, delivery_status), "
            + received
            + "added AS (INSERT INTO outcomes (account_id, interaction_id, body, created_at) "
            "SELECT %s, %s, %s, %s FROM ended RETURNING id), " + _PLACED + "SELECT "
            "ended.held_by, placed.id, placed.after, pg_notify(%s, json_build_object('r', "
            "%s::text, 'n', json_build_array(json_build_array('interaction', %s::text, "
            "%s::text, json_build_object('ended', %s::json, 'deliveryStatus', "
            f"ended.delivery_status)), {_OUTCOME_NOTICE}{inbound_notice}))::text) "
            "FROM ended, placed"
        )
        async with self._connection() as conn:
            async with conn.pipeline():
                self.transactions += 1
                self.round_trips += 1
                self.statements += 2
                await self._lock_outcomes(conn, account_id)
                cursor = await conn.execute(query.encode(), params)
            row = await cursor.fetchone()  # after the pipeline's Sync: see ``_tx``
        if row is None:
            return False, None, None
        holder = str(row[0]) if row[0] is not None else None
        return True, holder, (int(row[1]), int(row[2]))
