"""The schedule: every future step of the service as a row with a due time.

A step (``StepRecord``: a ``kind``, a ``key``, a due time) is armed in the store and runs
once it is due, by the handler registered for its kind, on whichever replica claimed it.
What one replica holds in memory is only what falls due within ``horizon`` seconds: a
tick claims those rows (``Store.claim_steps``: bounded batches, earliest first, ``FOR
UPDATE SKIP LOCKED`` on PostgreSQL) and sets a timer for each. A tick's work is
proportional to what is due, not to what is armed: a million windows closing next month
cost nothing today.

A claim lasts until ``lease`` seconds past the step's due time. A replica that dies
holding steps leaves them to the others once the claim runs out; a replica that stops
gracefully gives them up at once (``release_steps``). A step armed by this process and
due within the horizon is claimed as it is armed (no round trip later) and its timer set
at once.

A step runs at least once: a replica killed after its handler ran but before the row was
removed leaves it to run again, and a step armed again or cancelled while another replica
held it in memory may still run there. Handlers therefore check what the store says
before they act (a window that closes reads the interaction first). A handler that raises
is retried with back-off (``retry_step``), up to ``max_attempts``.

Nothing here knows HTTP or the engine: the engine registers handlers by kind.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ..store.protocol import Store
from ..store.records import StepRecord

__all__ = ["Handler", "Schedule"]

logger = logging.getLogger("humanwire.schedule")

Handler = Callable[[StepRecord], Awaitable[None]]
"""Runs one due step of its kind."""


class Schedule:
    """This process's part of the schedule in ``store``.

    ``owner``: this replica's id (what its claims name). ``handlers``: one per kind.
    ``horizon``: seconds ahead a tick claims (and holds in memory). ``lease``: seconds a
    claim outlives its step's due time. ``batch``: steps claimed per query; a tick
    claims again at once while batches come back full. ``concurrency``: handlers running
    at once (a burst of due steps waits its turn, none is dropped).
    """

    def __init__(
        self,
        store: Store,
        *,
        owner: str,
        handlers: Mapping[str, Handler],
        horizon: float = 5.0,
        lease: float = 30.0,
        batch: int = 500,
        concurrency: int = 64,
        max_attempts: int = 10,
        retry_delay: float = 1.0,
        max_retry_delay: float = 300.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if horizon <= 0 or lease <= horizon:
            raise ValueError("the horizon must be above 0 and below the lease")
        self.store = store
        self.owner = owner
        self.handlers = dict(handlers)
        self.horizon = horizon
        self.lease = lease
        self.batch = batch
        self.max_attempts = max_attempts
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        self.clock = clock
        self._timers: dict[tuple[str, str], tuple[StepRecord, asyncio.TimerHandle]] = {}
        self._running: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(concurrency)
        self._wake = asyncio.Event()
        self._ticker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    # -- start and stop -----------------------------------------------------------------
    def start(self) -> None:
        """Starts ticking on the running loop (the first tick claims at once)."""
        self._loop = asyncio.get_running_loop()
        self._ticker = self._loop.create_task(self._tick_forever(), name="humanwire-schedule")

    async def close(self, *, release: bool = True) -> None:
        """Stops ticking and lets the steps held in memory go: given up to the other
        replicas at once (``release``), or left to run out their claims."""
        if self._closed:
            return
        self._closed = True
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        for _, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        for task in list(self._running):
            task.cancel()
        for task in list(self._running):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if release:
            try:
                await self.store.release_steps(self.owner)
            except Exception:  # the database may be gone; the claims then run out
                logger.warning("could not release the schedule's steps", exc_info=True)

    # -- arming -------------------------------------------------------------------------
    async def arm(
        self,
        kind: str,
        key: str,
        due_at: float,
        *,
        account_id: str = "",
        payload: dict[str, Any] | None = None,
    ) -> StepRecord:
        """Arms a step (replacing the one of that kind and key). Due within the horizon,
        it is claimed by this replica as it is written and its timer set now."""
        step = StepRecord(kind, key, float(due_at), account_id, payload)
        await self.arm_many([step])
        return step

    async def arm_many(self, steps: Sequence[StepRecord]) -> None:
        """Arms several steps, in one round trip where the store can."""
        if kind := next((s.kind for s in steps if s.kind not in self.handlers), None):
            raise ValueError(f"no handler for steps of kind {kind!r}")
        now = self.clock()
        soon = [s for s in steps if s.due_at <= now + self.horizon]
        later = [s for s in steps if s.due_at > now + self.horizon]
        for step in later:  # armed again further off: this replica no longer holds it
            self._forget(step.kind, step.key)
        if later:
            await self.store.put_steps(later, None, None)
        if soon:
            until = max(max(s.due_at for s in soon), now) + self.lease
            await self.store.put_steps(soon, self.owner, until)
            for step in soon:
                self._hold(step)

    def claim(self, step: StepRecord) -> tuple[str | None, float | None]:
        """``(claimed_by, claimed_until)`` to write ``step`` with, when another write
        arms it (``Store.insert_interaction``): claimed by this replica when due within
        the horizon. Call ``armed`` once it is written."""
        if step.kind not in self.handlers:
            raise ValueError(f"no handler for steps of kind {step.kind!r}")
        now = self.clock()
        if step.due_at > now + self.horizon:
            return None, None
        return self.owner, max(step.due_at, now) + self.lease

    def armed(self, step: StepRecord, claimed_by: str | None) -> None:
        """``step`` was written as ``claim`` said: its timer is set now if it is this
        replica's, else forgotten here (armed again further off)."""
        if claimed_by == self.owner:
            self._hold(step)
        else:
            self._forget(step.kind, step.key)

    async def cancel(self, kind: str, key: str) -> None:
        """Drops the step, armed or held."""
        self._forget(kind, key)
        await self.store.cancel_step(kind, key)

    def forget(self, kind: str, key: str) -> None:
        """Drops the step from memory only (the store removed it with another write)."""
        self._forget(kind, key)

    def held(self, kind: str | None = None) -> int:
        """Steps held in memory (due within the horizon, not yet run), of ``kind`` or
        of any."""
        if kind is None:
            return len(self._timers)
        return sum(1 for held_kind, _ in self._timers if held_kind == kind)

    def wake(self) -> None:
        """Ticks now (another process armed a step due soon)."""
        self._wake.set()

    # -- ticking ------------------------------------------------------------------------
    async def tick(self) -> int:
        """Claims what falls due within the horizon, a batch at a time; returns how many
        steps it claimed."""
        claimed = 0
        while not self._closed:
            now = self.clock()
            steps = await self.store.claim_steps(
                self.owner,
                due_before=now + self.horizon,
                now=now,
                lease=self.lease,
                limit=self.batch,
            )
            for step in steps:
                self._hold(step)
            claimed += len(steps)
            if len(steps) < self.batch:
                break
        return claimed

    async def _tick_forever(self) -> None:
        # Every half horizon: a step is claimed at least half a horizon before it is due.
        interval = self.horizon / 2
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:  # the database away for a moment: the next tick tries again
                logger.warning("the schedule could not claim due steps", exc_info=True)
            self._wake.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), interval)

    # -- running ------------------------------------------------------------------------
    def _hold(self, step: StepRecord) -> None:
        loop = self._loop or asyncio.get_running_loop()
        self._forget(step.kind, step.key)
        when = loop.time() + (step.due_at - self.clock())
        # A context of its own: the step is no part of the request that armed it.
        handle = loop.call_at(when, self._due, step, context=contextvars.Context())
        self._timers[(step.kind, step.key)] = (step, handle)

    def _forget(self, kind: str, key: str) -> None:
        held = self._timers.pop((kind, key), None)
        if held is not None:
            held[1].cancel()

    def _due(self, step: StepRecord) -> None:
        held = self._timers.get((step.kind, step.key))
        if held is None or held[0] is not step:
            return
        del self._timers[(step.kind, step.key)]
        loop = self._loop or asyncio.get_running_loop()
        task = loop.create_task(self._run(step), name=f"humanwire-step-{step.kind}")
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _run(self, step: StepRecord) -> None:
        async with self._slots:
            try:
                await self.handlers[step.kind](step)
            except asyncio.CancelledError:
                raise
            except Exception:
                await self._failed(step)
                return
            try:
                await self.store.finish_step(step)
            except Exception:  # it ran; left in the store, it runs again (at least once)
                logger.warning("could not remove a step that ran (%s)", step.kind, exc_info=True)

    async def _failed(self, step: StepRecord) -> None:
        attempts = step.attempts + 1
        if attempts >= self.max_attempts:
            logger.error(
                "a %s step failed %d times; dropped (%s)",
                step.kind,
                attempts,
                step.key,
                exc_info=True,
            )
            with contextlib.suppress(Exception):
                await self.store.finish_step(step)
            return
        delay = min(self.max_retry_delay, self.retry_delay * 2 ** (attempts - 1))
        logger.warning(
            "a %s step failed (attempt %d); again in %g s",
            step.kind,
            attempts,
            delay,
            exc_info=True,
        )
        try:
            await self.store.retry_step(step, self.clock() + delay)
        except Exception:  # the claim runs out; another tick takes it
            logger.warning("could not put a failed step back", exc_info=True)
