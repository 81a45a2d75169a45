"""Writes that could not be committed, and writes that commit later.

A store raises ``StoreUnavailable`` when the database could not store a write (its disk
full, the connection lost mid-commit): nothing of it may be taken as done, and the
service answers 503 with ``Retry-After``.

The SQLite store commits a loop turn's writes together (group commit). A write there is
done only once its batch committed: ``PendingCommit`` is that batch, awaited by a send
before it delivers anything; ``Touched`` gathers the batches one request read or wrote
in, so the service can refuse to answer 200 for a request whose batch was rolled back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from contextvars import ContextVar
from typing import Any

__all__ = ["COMMITTED", "TOUCHED", "PendingCommit", "StoreUnavailable", "Touched"]


class StoreUnavailable(Exception):
    """The database could not store a write (``reason`` says why: the disk full, the
    connection lost, a commit that may have failed). Whatever the write was part of
    is not done; the client retries (the same ``Idempotency-Key``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PendingCommit:
    """Writes that commit together later. Await it: it returns once they are committed
    and raises ``StoreUnavailable`` if they were rolled back instead. Settled once, on
    the event loop (by the store's commit); each awaiter waits on a future of its own,
    so a cancelled one leaves the others waiting."""

    __slots__ = ("_on_rollback", "_waiters", "error", "settled")

    def __init__(self) -> None:
        self.settled = False
        self.error: StoreUnavailable | None = None
        self._waiters: list[asyncio.Future[None]] = []
        self._on_rollback: list[Callable[[], None]] = []

    def settle(self, error: StoreUnavailable | None) -> None:
        if self.settled:
            return
        self.settled, self.error = True, error
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
        callbacks, self._on_rollback = self._on_rollback, []
        if error is not None:
            for callback in callbacks:
                callback()

    def on_rollback(self, callback: Callable[[], None]) -> None:
        """Calls ``callback`` if these writes are rolled back (at once if they were)."""
        if not self.settled:
            self._on_rollback.append(callback)
        elif self.error is not None:
            callback()

    def __await__(self) -> Generator[Any, None, None]:
        if not self.settled:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            yield from waiter.__await__()
        if self.error is not None:
            raise StoreUnavailable(self.error.reason)


COMMITTED = PendingCommit()
"""Nothing waits for a commit: what was written is committed already."""
COMMITTED.settle(None)


class Touched:
    """The pending commits one request (and the tasks it starts) read or wrote in. Kept
    short: those that committed are dropped as new ones come."""

    __slots__ = ("_commits",)

    def __init__(self) -> None:
        self._commits: list[PendingCommit] = []

    def add(self, commit: PendingCommit) -> None:
        commits = self._commits
        if commits and commits[-1] is commit:
            return
        if len(commits) >= 8:
            commits[:] = [c for c in commits if not c.settled or c.error is not None]
        commits.append(commit)

    def failure(self) -> StoreUnavailable | None:
        """The error of a commit this request touched that was rolled back, if any."""
        for commit in self._commits:
            if commit.error is not None:
                return commit.error
        return None


TOUCHED: ContextVar[Touched | None] = ContextVar("humanwire_store_touched", default=None)
"""Set by the service for each request; a store that commits later adds to it."""
