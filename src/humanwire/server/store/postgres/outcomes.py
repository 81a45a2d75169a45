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

from ..protocol import OUTCOME_NOTICE_BODY
from ..records import (
    EndReport,
    IdempotencyRecord,
    InboundRecord,
    InteractionOutcome,
    WaitEndedAnswer,
)
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
        wait_ended: WaitEndedAnswer | None = None,
    ) -> EndReport:
        # The account's outcome lock first (``_lock_outcomes``), then the end, its
        # outcome, the inbound text that ended it, the held send's wait.ended and one
        # notice naming them, in one transaction.
        text = dumps_json(report)
        waited = dumps_json(wait_ended.event) if wait_ended is not None else ""
        carried = _notice_body(text)
        # The interaction's entry carries how it ended (a holder elsewhere answers from
        # it without reading the row) when it fits in one notice with the outcomes; a
        # wait.ended too large to ride along is read by the readers.
        ending = dumps_json({"endedAt": ended_at, "outcome": outcome, "result": result})
        size = len(ending.encode()) + len((carried or "").encode())
        waited_carried = (
            waited if waited and size + len(waited.encode()) <= ENDING_NOTICE_BYTES else None
        )
        fits = size <= ENDING_NOTICE_BYTES
        params: list[Any] = [interaction_id]
        if wait_ended is None:
            params += [ended_at, dumps_json(result) if result is not None else None]
            params += [outcome, release, interaction_id]
            ended_cte = (
                "ended AS (UPDATE interactions SET status = 'ended', ended_at = %s, "
                "result = %s, outcome = %s, held_by = CASE WHEN held_by = %s THEN NULL "
                "ELSE held_by END WHERE id = %s AND status = 'pending' "
                "RETURNING held_by, delivery_status, FALSE AS answered_held), "
            )
        else:
            # A send held answered 202 (``Prefer: respond-async``): its hold's answer,
            # the wait.ended, is written here with the end, and its hold let go (the
            # answer is out), so its holder writes nothing. Only while it is held: the
            # hold as it was before this statement (``prior``, the row locked).
            params += [interaction_id, ended_at, dumps_json(result) if result is not None else None]
            params += [outcome, release]
            ended_cte = (
                "prior AS (SELECT id, held_by FROM interactions WHERE id = %s "
                "AND status = 'pending' FOR UPDATE), "
                "ended AS (UPDATE interactions i SET status = 'ended', ended_at = %s, "
                "result = %s, outcome = %s, held_by = CASE WHEN prior.held_by IS NOT NULL "
                "THEN NULL ELSE i.held_by END FROM prior WHERE i.id = prior.id "
                "AND i.status = 'pending' RETURNING "
                "CASE WHEN prior.held_by = %s THEN NULL ELSE prior.held_by END AS held_by, "
                "i.delivery_status, prior.held_by IS NOT NULL AS answered_held), "
            )
        received = inbound_notice = ""
        if inbound is not None:
            # Stored whether or not this ended the interaction (a data-modifying WITH
            # always runs), linked to it only if it did.
            received = (
                f"received AS (INSERT INTO inbound ({INBOUND_COLUMNS}) SELECT %s, %s, %s, "
                "%s, %s, %s, %s, (SELECT %s::text FROM ended), %s, %s), "
            )
            params += rows.inbound_values(inbound)
        params += [account_id, interaction_id, text, ended_at, account_id]
        answered = stored = waited_notice = ""
        if wait_ended is not None:
            # After ``added`` (it reads it), so its id follows the interaction.ended's.
            answered = (
                "answered AS (INSERT INTO outcomes (account_id, interaction_id, body, "
                "created_at) SELECT %s, %s, %s, %s FROM ended, added "
                "WHERE ended.answered_held RETURNING id), "
            )
            params += [account_id, interaction_id, waited, ended_at]
            if wait_ended.idempotency is not None:
                stored = (
                    "stored AS (INSERT INTO idempotency (account_id, key, fingerprint, "
                    "status_code, body, created_at) SELECT %s, %s, %s, %s, %s, %s FROM answered "
                    "ON CONFLICT (account_id, key) DO UPDATE SET fingerprint = "
                    "excluded.fingerprint, status_code = excluded.status_code, "
                    "body = excluded.body, created_at = excluded.created_at), "
                )
                params += rows.idempotency_values(wait_ended.idempotency)
        params += [self.channel, replica_id, account_id, interaction_id]
        params += [ending if fits else None, account_id, carried]
        if inbound is not None:
            params += [inbound.account_id, inbound.id]
            inbound_notice = ", (3, json_build_array('inbound', %s::text, %s::text))"
        if wait_ended is not None:
            waited_notice = (
                ", (4, (SELECT json_build_array('outcome', %s::text, answered.id::text, "
                "json_build_object('after', placed.id, 'body', %s::json)) FROM answered))"
            )
            params += [account_id, waited_carried]
        query = (
            # The window step goes with the end (whether or not this ended it).
            "WITH unarmed AS (DELETE FROM schedule WHERE kind = 'window' AND key = %s), "
            + ended_cte
            + received
            + "added AS (INSERT INTO outcomes (account_id, interaction_id, body, created_at) "
            "SELECT %s, %s, %s, %s FROM ended RETURNING id), "
            + _PLACED.rstrip()
            + (", " + answered + stored).rstrip(", ")
            + " SELECT ended.held_by, placed.id, placed.after, "
            + ("(SELECT id FROM answered), " if wait_ended is not None else "NULL, ")
            + "pg_notify(%s, json_build_object('r', %s::text, 'n', (SELECT json_agg(e ORDER "
            "BY i) FROM (VALUES (1, json_build_array('interaction', %s::text, %s::text, "
            "json_build_object('ended', %s::json, 'deliveryStatus', ended.delivery_status, "
            "'waitEnded', ended.answered_held))), "
            f"(2, {_OUTCOME_NOTICE}){inbound_notice}{waited_notice}) AS notices (i, e) "
            "WHERE e IS NOT NULL))::text) FROM ended, placed"
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
            return EndReport(False)
        holder = str(row[0]) if row[0] is not None else None
        answered_id = int(row[3]) if row[3] is not None else None
        return EndReport(
            True,
            holder,
            (int(row[1]), int(row[2])),
            (answered_id, int(row[1])) if answered_id is not None else None,
        )
