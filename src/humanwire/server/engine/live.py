"""What waits on the engine for a change, each kept by an object of its own.

- ``Wakeups``: long-polls waiting for one key to change (an interaction's status, an
  account's deliveries or outcome events), each a future woken with the others of its key.
- ``InboxStreams``: the inbox's live streams (server-sent events) per account, each a
  bounded queue: a slow reader loses the oldest notices, never blocks the engine.
- ``KeyedLocks``: one lock per key while anyone holds or waits for it (texts from one
  number pair matched one at a time).

Both are woken by the engine, for a change made here or announced by another replica,
and ended by ``drain``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Hashable
from typing import Any, Generic, TypeVar

from ._common import InboxChange

__all__ = ["InboxStreams", "KeyedLocks", "Wakeups"]

K = TypeVar("K", bound=Hashable)

SUBSCRIBER_QUEUE = 256
"""Notices a live stream keeps for a reader that has not read them yet."""


class Wakeups(Generic[K]):
    """Futures waiting for a change of a key: ``wait`` one, ``wake`` all of a key."""

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: dict[K, set[asyncio.Future[None]]] = {}

    def add(self, key: K) -> asyncio.Future[None]:
        """A future settled at the next ``wake(key)`` (or ``wake_all``)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, set()).add(future)
        return future

    def discard(self, key: K, future: asyncio.Future[None]) -> None:
        """``future`` stops waiting (its request ended first)."""
        futures = self._waiting.get(key)
        if futures is not None:
            futures.discard(future)
            if not futures:
                del self._waiting[key]

    async def wait(self, key: K, timeout: float) -> None:
        """Until the next ``wake(key)``, at most ``timeout`` seconds."""
        future = self.add(key)
        try:
            await asyncio.wait({future}, timeout=max(timeout, 0.0))
        finally:
            self.discard(key, future)

    def wake(self, key: K) -> None:
        for future in self._waiting.pop(key, ()):
            if not future.done():
                future.set_result(None)

    def wake_all(self) -> None:
        """Every waiter looks again (the service stops, or missed notices are re-read)."""
        waiting, self._waiting = self._waiting, {}
        for futures in waiting.values():
            for future in futures:
                if not future.done():
                    future.set_result(None)

    def __len__(self) -> int:
        return sum(len(futures) for futures in self._waiting.values())


class InboxStreams:
    """The inbox's live streams, per account."""

    __slots__ = ("_queues",)

    def __init__(self) -> None:
        self._queues: dict[str, set[asyncio.Queue[InboxChange | None]]] = {}

    def subscribe(
        self, account_id: str, stopping: Callable[[], bool]
    ) -> AsyncIterator[InboxChange]:
        """The account's changes from now on. Registered at once, so nothing between this
        call and the first iteration is lost; it ends when the service stops
        (``stopping()``, ``end_all``). Close the iterator when done."""
        queue: asyncio.Queue[InboxChange | None] = asyncio.Queue(maxsize=SUBSCRIBER_QUEUE)
        queues = self._queues.setdefault(account_id, set())
        queues.add(queue)

        async def changes() -> AsyncIterator[InboxChange]:
            try:
                while not stopping():
                    change = await queue.get()
                    if change is None:  # end_all(): the service is stopping
                        return
                    yield change
            finally:
                queues.discard(queue)

        return changes()

    def notify(self, account_id: str, kind: Any, item_id: str) -> None:
        queues = self._queues.get(account_id)
        if not queues:
            return
        change = InboxChange(account_id=account_id, kind=kind, id=item_id)
        for queue in queues:
            _put_dropping_oldest(queue, change)

    def end_all(self) -> None:
        """Every stream ends (the browser reconnects)."""
        for queues in self._queues.values():
            for queue in queues:
                _put_dropping_oldest(queue, None)


def _put_dropping_oldest(
    queue: asyncio.Queue[InboxChange | None], item: InboxChange | None
) -> None:
    if queue.full():
        with contextlib.suppress(asyncio.QueueEmpty):
            queue.get_nowait()
    queue.put_nowait(item)


class KeyedLocks(Generic[K]):
    """``async with locks.hold(key)``: one holder per key at a time; a key's lock is kept
    only while someone holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[K, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: K) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)
