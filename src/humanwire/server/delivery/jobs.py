"""Status work a carrier must do even if it is down right now (hanging up a call the
service gave up on, releasing a number bought for an account), for any carrier. Each job
is a step of the engine's schedule (kind: the jobs' ``scope``; ``docs/explanation/
schedule.md``), armed due now and run by whichever replica claims it, retried with
back-off by arming it again later, so a slow or failing carrier delays it but never
loses it (a replica that dies leaves it to another once its claim runs out), and never
holds up a send. Jobs an older version stored in ``provider_state`` are moved onto the
schedule at start. Without a schedule (a provider built on a bare store), a job is a task
of this process, stored in ``provider_state`` and picked up again at the next start."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from ..background.schedule import Schedule
    from ..store.records import StepRecord
    from .port import ProviderState

__all__ = ["CarrierError", "JobKind", "ProviderJobs"]

logger = logging.getLogger("humanwire.providers")

JobKind = Literal["hang_up", "release_number"]


class CarrierError(Protocol):
    """What a carrier's REST error tells the jobs: its HTTP status (0: no answer) and
    how long it asked to wait."""

    status: int
    retry_after: float | None


class ProviderJobs:
    """``do(kind, ref)`` run until it returns, retried on ``error`` (a 400 or 404 means
    gone already, or nothing to do); jobs kept under ``scope``."""

    def __init__(
        self,
        store: ProviderState,
        *,
        scope: str,
        label: str,
        do: Callable[[str, str], Awaitable[None]],
        error: type[Exception],
        schedule: Schedule | None = None,
        first_delay: float = 1.0,
        max_delay: float = 300.0,
        max_attempts: int = 12,
    ) -> None:
        self.store = store
        self.scope = scope
        self.label = label
        self._do = do
        self._error = error
        self.first_delay = first_delay
        self.max_delay = max_delay
        self.max_attempts = max_attempts
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.schedule = schedule
        if schedule is not None:
            schedule.handlers[scope] = self._step

    async def start(self) -> None:
        """Picks up the jobs a previous run left in ``provider_state``: onto the
        schedule (once: any replica starting may move them, arming replaces), or as
        tasks here without one."""
        for key, job in await self.store.provider_states(self.scope):
            if self.schedule is None:
                self._schedule(key, job)
                continue
            await self.schedule.arm(self.scope, key, time.time(), payload=job)
            await self.store.delete_provider_state(self.scope, key)

    async def add(self, kind: JobKind, sid: str) -> None:
        key = f"{kind}:{sid}"
        job: dict[str, Any] = {"kind": kind, "sid": sid, "attempts": 0}
        if self.schedule is not None:
            # Due now: claimed by this replica as it is armed, run at once.
            await self.schedule.arm(self.scope, key, time.time(), payload=job)
            return
        await self.store.put_provider_state(self.scope, key, job, time.time())
        self._schedule(key, job)

    async def _step(self, step: StepRecord) -> None:
        """One try of a job on the schedule; a failure arms it again after its back-off
        (``Retry-After`` honoured), until ``max_attempts``."""
        assert self.schedule is not None
        job = dict(step.payload or {})
        attempts = int(job.get("attempts", 0))
        try:
            await self._do(str(job["kind"]), str(job["sid"]))
        except self._error as exc:
            failure: CarrierError = exc  # type: ignore[assignment]
            if failure.status in (400, 404):  # gone already, or nothing to do
                return
            attempts += 1
            if attempts >= self.max_attempts:
                logger.warning(
                    "gave up on %s job %s after %d attempts", self.label, step.key, attempts
                )
                return
            delay = self._delay(attempts, failure)
            await self.schedule.arm(
                self.scope, step.key, time.time() + delay, payload={**job, "attempts": attempts}
            )

    def _delay(self, attempts: int, failure: CarrierError) -> float:
        delay = min(self.max_delay, self.first_delay * 2.0 ** (attempts - 1))
        if failure.retry_after is not None:
            delay = max(delay, min(failure.retry_after, self.max_delay))
        return delay

    async def pending(self) -> list[str]:
        return [key for key, _job in await self.store.provider_states(self.scope)]

    def _schedule(self, key: str, job: dict[str, Any]) -> None:
        if key in self._tasks and not self._tasks[key].done():
            return
        task = asyncio.get_running_loop().create_task(self._run(key, job))
        self._tasks[key] = task
        task.add_done_callback(functools.partial(self._forget, key))

    def _forget(self, key: str, _task: asyncio.Task[None]) -> None:
        self._tasks.pop(key, None)

    async def _run(self, key: str, job: dict[str, Any]) -> None:
        attempts = int(job.get("attempts", 0))
        while attempts < self.max_attempts:
            try:
                await self._do(str(job["kind"]), str(job["sid"]))
            except self._error as exc:
                failure: CarrierError = exc  # type: ignore[assignment]
                if failure.status in (400, 404):  # gone already, or nothing to do
                    break
                attempts += 1
                await self.store.put_provider_state(
                    self.scope, key, {**job, "attempts": attempts}, time.time()
                )
                await asyncio.sleep(self._delay(attempts, failure))
                continue
            break
        else:
            logger.warning("gave up on %s job %s after %d attempts", self.label, key, attempts)
        await self.store.delete_provider_state(self.scope, key)

    async def aclose(self) -> None:
        for task in list(self._tasks.values()):
            task.cancel()
        for task in list(self._tasks.values()):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
