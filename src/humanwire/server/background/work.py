"""``BackgroundWork``: work a part of the service runs beside the requests (a deadline, a
notice's reads, a provider's edits after its webhook was answered), kept until it ends,
its failure logged, and finished or cancelled when that part closes. One for the engine,
one per provider that answers a webhook before it is done."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

__all__ = ["BackgroundWork"]

logger = logging.getLogger("humanwire.background")


class BackgroundWork:
    """Background work of ``owner`` (named in the log line of a failure)."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop that serves requests (else the one running at ``spawn``)."""
        self.loop = loop

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        loop = self.loop or asyncio.get_running_loop()
        task = loop.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("background work of %s failed", self.owner, exc_info=task.exception())

    async def finish(self, timeout: float) -> None:
        """What is under way finishes within ``timeout`` seconds; the rest is cancelled."""
        running = set(self._tasks)
        if running:
            await asyncio.wait(running, timeout=timeout)
            for work in running:
                work.cancel()

    async def cancel(self, timeout: float = 5.0) -> None:
        """Cancels what is under way and waits (up to ``timeout``) for it to stop."""
        running = set(self._tasks)
        for work in running:
            work.cancel()
        if running:
            await asyncio.wait(running, timeout=timeout)
