"""``Idempotency-Key``: a send runs at most once per key; a retry gets the stored result,
joins the run still holding, or re-attaches to the interaction a first run created before
a restart.

The idempotency role: ``engine.idempotency``; a send's answer given 202 is written as
``wait.ended`` through the events role."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..errors import (
    Conflict,
)
from ..store.commits import StoreUnavailable
from ..store.records import IdempotencyRecord, InteractionRecord
from ._common import Account
from .context import HELD_TO_THE_END, IdempotentRun, Requesters, SendContext
from .events import OutcomeEvents
from .holds import Follow
from .runtime import Runtime

logger = logging.getLogger("humanwire.engine")


@dataclass(frozen=True)
class RunInFlight:
    """A run under an ``Idempotency-Key`` going on in this process: retries with the
    same key join it."""

    fingerprint: str
    task: asyncio.Task[tuple[int, bytes]]
    requesters: Requesters
    """The requests waiting for it: held until every one of them has gone."""
    run: IdempotentRun


class Idempotency:
    """Runs a send at most once per ``(account, key)``."""

    def __init__(self, runtime: Runtime, events: OutcomeEvents) -> None:
        self._runtime = runtime
        self._events = events
        self._runs: dict[tuple[str, str], RunInFlight] = {}
        # Keys whose stored result and link one request is reading (``run``).
        self._lookups: dict[tuple[str, str], asyncio.Future[None]] = {}

    def tasks(self) -> list[asyncio.Task[tuple[int, bytes]]]:
        """The runs going on here (``Engine.close`` waits for them, then cancels)."""
        return [running.task for running in self._runs.values()]

    async def run(
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
        while (looking := self._lookups.get(slot)) is not None:
            await asyncio.shield(looking)
        running = self._runs.get(slot)
        if running is not None:
            if running.fingerprint != fingerprint:
                raise self._conflict()
            accept = context.accept
            if accept is not None and running.run.holding_async and not accept.done():
                # A respond-async retry of a send holding after its 202 (the first answer
                # was lost on the way): 202 again, and one ``wait.ended`` for both.
                accept.set_result(running.run.holding_async)
            running.requesters.attach(context.gone)
            return await asyncio.shield(running.task)
        lookup: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._lookups[slot] = lookup
        try:
            now = self._runtime.clock()
            stored, link = await self._runtime.store.get_idempotency_state(account.id, key)
            if (
                stored is not None
                and stored.created_at + self._runtime.config.idempotency_ttl > now
            ):
                if stored.fingerprint != fingerprint:
                    raise self._conflict()
                return stored.status_code, stored.body
            resume: InteractionRecord | None = None
            if link is not None and link.created_at + self._runtime.config.idempotency_ttl > now:
                if link.fingerprint != fingerprint:
                    raise self._conflict()
                first = await self._runtime.store.get_interaction(link.interaction_id)
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
                    if not self._runtime.lifecycle.closed:
                        # Stored before the run ends: a retry under the key finds it the
                        # moment the run is no longer in ``_runs``. The answer
                        # stands even if this fails (as when a done callback stored it).
                        try:
                            await self._done(slot, fingerprint, status, body, state)
                        except Exception:
                            logger.exception("storing the result of an idempotent request failed")
                    return status, body
                finally:
                    running = self._runs.get(slot)
                    if running is not None and running.task is me:
                        del self._runs[slot]

            task = loop.create_task(call())
            self._runs[slot] = RunInFlight(fingerprint, task, requesters, state)
        finally:
            del self._lookups[slot]
            lookup.set_result(None)
        return await asyncio.shield(task)

    @staticmethod
    def _conflict() -> Conflict:
        return Conflict(
            "this Idempotency-Key was already used with a different request",
            field="Idempotency-Key",
        )

    async def _done(
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
            created_at=self._runtime.clock(),
        )
        if followed is not None and followed.followed:
            # Answered 202: its answer goes out as ``wait.ended`` (``follow_async``),
            # written here with the stored result, in one transaction: one round trip
            # fewer before a replica's reader hears it, and no moment when one is
            # stored without the other.
            await self._events.wait_ended(
                followed, status, json.loads(body) if body else {}, idempotency=record
            )
            followed.follow = Follow.WRITTEN
            return
        try:
            await self._runtime.store.put_idempotency(record)
        except StoreUnavailable:
            # Answered all the same: a retry under the key re-attaches to the stored
            # interaction (its link) and answers the same.
            logger.warning("the result of an idempotent request could not be stored")
