"""Status work a carrier must do even if it is down right now (hanging up a call the
service gave up on, releasing a number bought for an account), for any carrier. Each job
is stored (``provider_state``) before it is tried, retried with back-off, and picked up
again at the next start, so a slow or failing carrier delays it but never loses it, and
never holds up a send."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from ..store.base import Store

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
        store: Store,
        *,
        scope: str,
        label: str,
        do: Callable[[str, str], Awaitable[None]],
        error: type[Exception],
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

    async def start(self) -> None:
        """Picks up the jobs a previous run left."""
        for key, job in await self.store.provider_states(self.scope):
            self._schedule(key, job)

    async def add(self, kind: JobKind, sid: str) -> None:
        key = f"{kind}:{sid}"
        job: dict[str, Any] = {"kind": kind, "sid": sid, "attempts": 0}
        await self.store.put_provider_state(self.scope, key, job, time.time())
        self._schedule(key, job)

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
                delay = min(self.max_delay, self.first_delay * 2 ** (attempts - 1))
                if failure.retry_after is not None:
                    delay = max(delay, min(failure.retry_after, self.max_delay))
                await asyncio.sleep(delay)
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
