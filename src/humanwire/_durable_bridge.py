"""Following the account's outcome feed (``GET /events``) from a durable cursor, for the
durable-engine adapters: each ended interaction is handed to the run waiting for it
(``humanwire.temporal`` with ``OutcomeFeed``, async; ``humanwire.dbos`` with
``OutcomeFollower``, blocking, as DBOS is). One flow, the two drivers beside each other.

Why a feed reader, not a webhook receiver: the feed is ordered and resumable, so a bridge
that was down reads what it missed (events are kept 25 hours) and needs no public URL.

Guarantee: at-least-once. The cursor is saved after each event is handed over, so a crash
between the two hands that event over again on restart; the engine side applies each
event once by its id (a Temporal Update or Signal id, a DBOS idempotency key: the
event's ``id`` is the same on every redelivery).
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol

from humanwire._client import AsyncHumanWire, HumanWire
from humanwire.types import MAX_EVENTS_WAIT, OutcomeEvent

__all__ = ["Cursor", "FileCursor", "OutcomeFeed", "OutcomeFollower"]

log = logging.getLogger(__name__)


class Cursor(Protocol):
    """Where a bridge stands in the feed; kept where a restart finds it."""

    def load(self) -> str | None: ...

    def save(self, cursor: str) -> None: ...


class FileCursor:
    """The bridge's position in the feed, in a file (replaced atomically, fsynced)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def load(self) -> str | None:
        try:
            text = self.path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        return text or None

    def save(self, cursor: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name + ".")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(cursor)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


Deliver = Callable[[OutcomeEvent], Awaitable[bool]]
"""Hands one event to the engine; True when a run took it (False: none waits for it).
Raising stops the page there: the event is read again on the next try."""


class OutcomeFeed:
    """Reads ``interaction.ended`` events past the saved cursor and hands each to
    ``deliver`` in order, saving the cursor after each."""

    def __init__(
        self,
        humanwire: AsyncHumanWire,
        cursor: Cursor,
        deliver: Deliver,
        *,
        poll_wait: float = 30.0,
        retry_delay: float = 1.0,
    ) -> None:
        self.humanwire = humanwire
        self.cursor = cursor
        self.deliver = deliver
        self.poll_wait = min(poll_wait, float(MAX_EVENTS_WAIT))
        self.retry_delay = retry_delay

    async def start_cursor(self) -> str:
        """The saved cursor; on the first start, "now" (saved at once, so events from
        here on are not missed even if the bridge stops before reading any)."""
        saved = self.cursor.load()
        if saved is not None:
            return saved
        page = await self.humanwire.interactions.events(wait=0)
        self.cursor.save(page.cursor)
        return page.cursor

    async def deliver_once(self, wait: float | None = None) -> int:
        """Reads one page (holding up to ``wait`` seconds for it) and delivers it; returns
        how many events a run took."""
        after = await self.start_cursor()
        page = await self.humanwire.interactions.events(
            after=after,
            wait=self.poll_wait if wait is None else wait,
            event_type="interaction.ended",
        )
        taken = 0
        for event in page.events:
            if await self.deliver(event):
                taken += 1
            self.cursor.save(event.id)
        if page.cursor != after:
            self.cursor.save(page.cursor)
        return taken

    async def run(self) -> None:
        """Delivers until cancelled; a failure (the service or the engine unreachable) is
        retried after ``retry_delay`` from the saved cursor, losing nothing."""
        while True:
            try:
                await self.deliver_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("outcome feed: delivery failed; retrying")
                await asyncio.sleep(self.retry_delay)


class OutcomeFollower:
    """Reads the account's ``interaction.ended`` events from ``cursor`` on and calls
    ``deliver(event)`` for each, in order (True: delivered to a waiting run; False:
    nothing waits for it). Blocking: run it in a thread of its own (``run``)."""

    def __init__(
        self,
        humanwire: HumanWire,
        cursor: Cursor,
        deliver: Callable[[OutcomeEvent], bool],
        *,
        poll_wait: float = 30.0,
        retry_delay: float = 1.0,
    ) -> None:
        self.humanwire = humanwire
        self.cursor = cursor
        self.deliver = deliver
        self.poll_wait = min(poll_wait, float(MAX_EVENTS_WAIT))
        self.retry_delay = retry_delay

    def start_cursor(self) -> str:
        """The saved cursor; on the first start, "now" (saved at once, so events from
        here on are not missed even if the follower stops before reading any)."""
        saved = self.cursor.load()
        if saved is not None:
            return saved
        page = self.humanwire.interactions.events(wait=0)
        self.cursor.save(page.cursor)
        return page.cursor

    def deliver_once(self, wait: float | None = None) -> int:
        """Reads one page (holding up to ``wait`` seconds for it) and delivers it; returns
        how many events were delivered to a waiting run."""
        after = self.start_cursor()
        page = self.humanwire.interactions.events(
            after=after,
            wait=self.poll_wait if wait is None else wait,
            event_type="interaction.ended",
        )
        delivered = 0
        for event in page.events:
            if self.deliver(event):
                delivered += 1
            self.cursor.save(event.id)
        if page.cursor != after:
            self.cursor.save(page.cursor)
        return delivered

    def run(self, stop: threading.Event) -> None:
        """Delivers until ``stop`` is set (seen between pages: within ``poll_wait``); a
        failure (service or engine unreachable) is retried after ``retry_delay`` from the
        saved cursor, losing nothing."""
        while not stop.is_set():
            try:
                self.deliver_once()
            except Exception:
                log.exception("answer bridge: delivery failed; retrying")
                stop.wait(self.retry_delay)
