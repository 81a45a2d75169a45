"""``Idempotency-Key``: a send runs at most once per key; a retry gets the stored result,
joins the run still holding, or re-attaches to the interaction a first run created before
a restart."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable

from ..errors import (
    Conflict,
)
from ..store.commits import StoreUnavailable
from ..store.records import IdempotencyRecord, InteractionRecord
from ._common import Account
from .context import HELD_TO_THE_END, IdempotentRun, Requesters, SendContext
from .core import EngineCore
from .holds import Follow

logger = logging.getLogger("humanwire.engine")


class Idempotency(EngineCore):
    async def idempotent(
        self,
        account: Account,
        key: str,
        fingerprint: str,
        run: Callable[[SendContext], Awaitable[tuple[int, bytes]]],
        context: SendContext = HELD_TO_THE_END,
    ) -> tuple[int, bytes]:
        """Runs ``run`` (which produces the HTTP status and body) at most once per
        ``(account, key)`` within ``config.idempotency_ttl``: a later call with the same
        key and ``fingerprint`` (method, path and a hash of the body) returns the stored
        result; one arriving while the first is still held waits for it; a different
        fingerprint raises ``Conflict``. Results are stored, so a restart keeps them.

        ``run`` gets the ``SendContext`` its send must be made with: ``context`` (the
        request's) with the key's run, held until every request waiting for it is gone.

        A send run under a key stores a link key → interaction with the interaction it
        creates, before anything is delivered. A retry whose first run never finished
        (no stored result and none running here: the service restarted while it was
        held) runs ``run`` again with that interaction to re-attach to: nothing is
        delivered again, the retry waits for what is left of the first run's window (or
        gets what the interaction became) and answers in the same shape. An interaction
        whose delivery failed is not re-attached to (nothing reached the human).

        The run is its own task, shielded from the caller: a client that gives up and
        retries finds the first run still holding, not cancelled. Results with status
        429 or 5xx are not stored (a retry may succeed); an exception is not stored."""
        slot = (account.id, key)
        # Another request with this key is reading the store for it (its reads are
        # awaited): this one waits, then joins the run it starts or finds what it stored.
        while (looking := self._idempotent_lookups.get(slot)) is not None:
            await asyncio.shield(looking)
        running = self._idempotent_runs.get(slot)
        if running is not None:
            if running[0] != fingerprint:
                raise self._idempotency_conflict()
            accept = context.accept
            if accept is not None and running[3].holding_async and not accept.done():
                # A respond-async retry of a send holding after its 202 (the first answer
                # was lost on the way): 202 again, and one ``wait.ended`` for both.
                accept.set_result(running[3].holding_async)
            running[2].attach(context.gone)
            return await asyncio.shield(running[1])
        lookup: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._idempotent_lookups[slot] = lookup
        try:
            now = time.time()
            stored, link = await self.store.get_idempotency_state(account.id, key)
            if stored is not None and stored.created_at + self.config.idempotency_ttl > now:
                if stored.fingerprint != fingerprint:
                    raise self._idempotency_conflict()
                return stored.status_code, stored.body
            resume: InteractionRecord | None = None
            if link is not None and link.created_at + self.config.idempotency_ttl > now:
                if link.fingerprint != fingerprint:
                    raise self._idempotency_conflict()
                first = await self.store.get_interaction(link.interaction_id)
                if (
                    first is not None
                    and first.account_id == account.id
                    and first.outcome != "failed"
                ):
                    resume = first
            state = IdempotentRun(account.id, key, fingerprint, resume)
            loop = asyncio.get_running_loop()
            requesters = Requesters(loop)
            requesters.attach(context.gone)
            # Held until every joined request left (not tracked: until the end).
            gone = None if requesters.untracked else requesters.gone
            given = SendContext(gone=gone, accept=context.accept, run=state)

            async def call() -> tuple[int, bytes]:
                me = asyncio.current_task()
                try:
                    status, body = await run(given)
                    if not self._closed:
                        # Stored before the run ends: a retry under the key finds it the
                        # moment the run is no longer in ``_idempotent_runs``. The answer
                        # stands even if this fails (as when a done callback stored it).
                        try:
                            await self._idempotent_done(slot, fingerprint, status, body, state)
                        except Exception:
                            logger.exception("storing the result of an idempotent request failed")
                    return status, body
                finally:
                    running = self._idempotent_runs.get(slot)
                    if running is not None and running[1] is me:
                        del self._idempotent_runs[slot]

            task = loop.create_task(call())
            self._idempotent_runs[slot] = (fingerprint, task, requesters, state)
        finally:
            del self._idempotent_lookups[slot]
            lookup.set_result(None)
        return await asyncio.shield(task)

    @staticmethod
    def _idempotency_conflict() -> Conflict:
        return Conflict(
            "this Idempotency-Key was already used with a different request",
            field="Idempotency-Key",
        )

    async def _idempotent_done(
        self, slot: tuple[str, str], fingerprint: str, status: int, body: bytes, run: IdempotentRun
    ) -> None:
        if status >= 500 or status == 429:
            return
        followed = run.holding_async
        if followed is not None and followed.follow is Follow.WRITTEN:
            return  # written with its wait.ended, by the end that answered it
        record = IdempotencyRecord(
            account_id=slot[0],
            key=slot[1],
            fingerprint=fingerprint,
            status_code=status,
            body=body,
            created_at=time.time(),
        )
        if followed is not None and followed.followed:
            # Answered 202: its answer goes out as ``wait.ended`` (``follow_async``),
            # written here with the stored result, in one transaction: one round trip
            # fewer before a replica's reader hears it, and no moment when one is
            # stored without the other.
            await self.append_wait_ended(
                followed, status, json.loads(body) if body else {}, idempotency=record
            )
            followed.follow = Follow.WRITTEN
            return
        try:
            await self.store.put_idempotency(record)
        except StoreUnavailable:
            # Answered all the same: a retry under the key re-attaches to the stored
            # interaction (its link) and answers the same.
            logger.warning("the result of an idempotent request could not be stored")
