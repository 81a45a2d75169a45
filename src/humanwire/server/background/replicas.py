"""Several service processes (replicas) on one PostgreSQL database.

Each replica runs the whole service; what one of them does, the others must hear of:

* **Notices** (LISTEN/NOTIFY on the schema's channel). Every change the engine announces
  locally (an interaction ended or changed, a delivery, an inbound message, an outcome
  event, a number, a card, a webhook) is also published, batched per event-loop turn,
  after its write committed; the writes on the answer's path (an interaction's end, an
  outcome event) publish theirs in their own transaction. The other replicas wake what
  waits for it there: the request held for that interaction, status long-polls, the
  inbox's live streams, the scripted human's and the outcome stream's readers (an
  outcome's notice carries the event and the id before it: a reader that read up to
  that one sends it on without reading). A replica ignores its own.
* **Heartbeats.** Every ``lease / 3`` seconds a replica records that it is alive
  (``replicas.seen_at``). Held sends name their replica (``held_by``): an answer
  arriving elsewhere is handed to it; once its heartbeat is older than the lease (it
  died) or it retired (a graceful stop), what was handed to it goes to the webhooks
  (``sweep_holds``, which reads only held sends: an index of ``held_by``). Nothing here
  reads the open interactions: their windows are steps of the schedule
  (``server/background/schedule.py``), claimed when due by one replica and taken over from a dead
  one when its claims run out. Webhook deliveries are leased rows of the outbox
  (``Store.claim_outbox``).

A lost listening connection is reconnected; what was announced meanwhile is caught up by
re-reading (``on_resync``). The engine wires the callbacks; nothing here knows HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..store.protocol import SharedStore
from ..store.records import InteractionRecord

__all__ = ["NOTIFY_PAYLOAD_BYTES", "Replicas"]

logger = logging.getLogger("humanwire.replicas")

NOTIFY_PAYLOAD_BYTES = 7000
"""Notices are packed into payloads below PostgreSQL's 8,000-byte NOTIFY limit."""

_SWEEP_BATCH = 1000
_RECONNECT_DELAYS = (0.1, 0.5, 1.0, 2.0, 5.0)

Notice = tuple[str, str, str]
"""``(kind, account_id, item_id)``: what changed, as the engine's inbox notices name it."""
_GATHERED: ContextVar[list[Notice] | None] = ContextVar("humanwire_notices", default=None)
"""The notices of a ``Replicas.together`` block, gathered until it ends."""


class Replicas:
    """This process's part among the replicas of one shared store."""

    def __init__(
        self,
        store: SharedStore,
        *,
        replica_id: str | None = None,
        lease: float,
        on_notice: Callable[[str, str, str, Any], None],
        on_swept: Callable[[list[InteractionRecord]], Awaitable[None]],
        on_tick: Callable[[], None],
        on_resync: Callable[[], Awaitable[None]],
    ) -> None:
        self.store = store
        self.lease = lease
        self.id = replica_id or uuid.uuid4().hex[:16]
        self._on_notice = on_notice
        self._on_swept = on_swept
        self._on_tick = on_tick
        self._on_resync = on_resync
        self._pending: list[Notice] = []
        self._flush_scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._listening = asyncio.Event()
        # One publication at a time: notices go out in the order they were published.
        self._flushing = asyncio.Lock()
        self._flushes: set[asyncio.Task[None]] = set()
        self._closed = False

    # -- start and stop -----------------------------------------------------------------
    async def start(self) -> None:
        """Records this replica alive, starts listening (before the first sweep, so
        nothing announced from now on is missed) and sweeps the holds of dead replicas."""
        self._loop = asyncio.get_running_loop()
        await self.store.heartbeat(self.id, time.time())
        self._tasks.append(self._loop.create_task(self._listen(), name="humanwire-listen"))
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._listening.wait(), 10.0)
        await self._sweep()
        self._tasks.append(self._loop.create_task(self._beat(), name="humanwire-heartbeat"))

    async def close(self) -> None:
        """Stops listening and beating and retires: the holds it left are swept by the
        others at once (not after the lease)."""
        if self._closed:
            return
        self._closed = True
        await self._flush()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        try:
            await self.store.retire_replica(self.id)
        except Exception:  # the database may be gone; the lease then runs out instead
            logger.warning("could not retire replica %s", self.id, exc_info=True)

    # -- notices ------------------------------------------------------------------------
    @contextmanager
    def together(self) -> Iterator[None]:
        """Notices this task publishes inside the block go out together as it ends (one
        NOTIFY), however many turns of the loop its store calls take."""
        gathered: list[Notice] = []
        token = _GATHERED.set(gathered)
        try:
            yield
        finally:
            _GATHERED.reset(token)
            for notice in gathered:
                self.publish(*notice)

    def publish(self, kind: str, account_id: str, item_id: str) -> None:
        """Announces a change to the other replicas, once this loop turn's writes are
        done (every store method commits before it returns)."""
        if self._closed:
            return
        gathered = _GATHERED.get()
        if gathered is not None:
            gathered.append((kind, account_id, item_id))
            return
        self._pending.append((kind, account_id, item_id))
        if not self._flush_scheduled and self._loop is not None:
            self._flush_scheduled = True
            # A task runs after the callbacks of this loop turn: its notices go together.
            task = self._loop.create_task(self._flush())
            self._flushes.add(task)
            task.add_done_callback(self._flushes.discard)

    async def _flush(self) -> None:
        async with self._flushing:
            await self._publish()

    async def _publish(self) -> None:
        self._flush_scheduled = False
        notices, self._pending = self._pending, []
        if not notices:
            return
        payloads: list[str] = []
        batch: list[Notice] = []
        size = 0
        for notice in notices:
            cost = sum(len(part) for part in notice) + 10
            if batch and size + cost > NOTIFY_PAYLOAD_BYTES:
                payloads.append(self._payload(batch))
                batch, size = [], 0
            batch.append(notice)
            size += cost
        payloads.append(self._payload(batch))
        try:
            await self.store.notify(payloads)
        except Exception:
            # The others catch up when their long-polls and holds time out; not fatal.
            logger.warning("could not publish %d notices", len(notices), exc_info=True)

    def _payload(self, notices: list[Notice]) -> str:
        return json.dumps({"r": self.id, "n": notices}, separators=(",", ":"))

    def _received(self, payload: str) -> None:
        try:
            message: dict[str, Any] = json.loads(payload)
            if message.get("r") == self.id:
                return
            # [kind, account, item] or, from a store write, [kind, account, item, detail]
            notices = [
                (str(n[0]), str(n[1]), str(n[2]), n[3] if len(n) > 3 else None)
                for n in message["n"]
            ]
        except (ValueError, KeyError, TypeError, IndexError):
            logger.warning("ignored a malformed notice: %.200s", payload)
            return
        for kind, account_id, item_id, detail in notices:
            try:
                self._on_notice(kind, account_id, item_id, detail)
            except Exception:
                logger.exception("handling notice %s %s failed", kind, item_id)

    async def _listen(self) -> None:
        import psycopg
        from psycopg import sql

        attempt = 0
        while not self._closed:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.store.url, autocommit=True, connect_timeout=10
                ) as conn:
                    await conn.execute(
                        sql.SQL("LISTEN {}").format(sql.Identifier(self.store.channel))
                    )
                    if attempt:
                        await self._on_resync()  # announced while the connection was down
                    attempt = 0
                    self._listening.set()
                    async for notify in conn.notifies():
                        self._received(notify.payload)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                delay = _RECONNECT_DELAYS[min(attempt, len(_RECONNECT_DELAYS) - 1)]
                attempt += 1
                logger.warning("listening for notices failed (%s); again in %g s", exc, delay)
                await asyncio.sleep(delay)

    # -- heartbeat and sweeps -----------------------------------------------------------
    async def _beat(self) -> None:
        every = max(self.lease / 3, 0.05)
        while not self._closed:
            await asyncio.sleep(every)
            try:
                await self.store.heartbeat(self.id, time.time())
                await self._sweep()
                self._on_tick()
            except Exception:
                logger.warning("replica heartbeat failed", exc_info=True)

    async def _sweep(self) -> None:
        """The holds of dead replicas let go of, in batches; the answers handed to them
        go on (``on_swept``)."""
        alive_after = time.time() - self.lease
        while True:
            batch = await self.store.sweep_holds(alive_after, _SWEEP_BATCH)
            if batch:
                await self._on_swept(batch)
            if len(batch) < _SWEEP_BATCH:
                break
