"""Following the account's outcome feed (``GET /events``) from a durable cursor, for the
durable-engine adapters: each ended interaction is handed to the run waiting for it.

One flow, driven two ways, as ``humanwire._http`` does for requests: ``FeedFlows`` is the
flow (a generator yielding ``ReadPage``, ``Deliver`` and ``Pause`` and receiving their
results), so where the cursor starts, when it is saved and how a failure is retried exist
once; ``OutcomeFeed`` drives it with awaited I/O (``humanwire.temporal``) and
``OutcomeFollower`` with blocking I/O (``humanwire.dbos``, and the async DBOS helpers'
bridge when it runs in a thread). The drivers know only how to do each action.

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
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from humanwire._client import AsyncHumanWire, HumanWire
from humanwire.types import MAX_EVENTS_WAIT, OutcomeEvent, OutcomePage

__all__ = [
    "Cursor",
    "Deliver",
    "FeedFlows",
    "FileCursor",
    "OutcomeFeed",
    "OutcomeFollower",
    "Pause",
    "ReadPage",
]

log = logging.getLogger(__name__)

T = TypeVar("T")


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


# -- the actions a flow yields -------------------------------------------------------------


@dataclass(frozen=True)
class ReadPage:
    """Read one page of ``GET /events``; the driver answers with the ``OutcomePage`` or
    throws the client's error into the flow. ``after=None``: "now" (no wait, no filter)."""

    after: str | None
    wait: float


@dataclass(frozen=True)
class Deliver:
    """Hand this event to the engine; the driver answers True when a run took it (False:
    none waits for it) or throws the engine's error into the flow."""

    event: OutcomeEvent


@dataclass(frozen=True)
class Pause:
    """Wait before trying again; a driver told to stop ends the flow here."""

    seconds: float


FeedAction = ReadPage | Deliver | Pause
FeedFlow = Generator[FeedAction, Any, T]


class FeedFlows:
    """The bridge's flows, written once: the cursor, one page, and following for good."""

    def __init__(self, cursor: Cursor, *, poll_wait: float, retry_delay: float) -> None:
        self.cursor = cursor
        self.poll_wait = min(poll_wait, float(MAX_EVENTS_WAIT))
        self.retry_delay = retry_delay

    def start_cursor(self) -> FeedFlow[str]:
        """The saved cursor; on the first start, "now" (saved at once, so events from
        here on are not missed even if the bridge stops before reading any)."""
        saved = self.cursor.load()
        if saved is not None:
            return saved
        page: OutcomePage = yield ReadPage(None, 0)
        self.cursor.save(page.cursor)
        return page.cursor

    def deliver_once(self, wait: float | None = None) -> FeedFlow[int]:
        """Reads one page (holding up to ``wait`` seconds for it) and delivers it in
        order, saving the cursor after each event; returns how many a run took. A
        failure stops the page there: that event is read again on the next try."""
        after = yield from self.start_cursor()
        page: OutcomePage = yield ReadPage(after, self.poll_wait if wait is None else wait)
        taken = 0
        for event in page.events:
            if (yield Deliver(event)):
                taken += 1
            self.cursor.save(event.id)
        if page.cursor != after:
            self.cursor.save(page.cursor)
        return taken

    def follow(self) -> FeedFlow[None]:
        """Delivers page after page until the driver stops it; a failure (the service
        or the engine unreachable) is retried after ``retry_delay`` from the saved
        cursor, losing nothing."""
        while True:
            try:
                yield from self.deliver_once()
            except Exception:
                log.exception("outcome feed: delivery failed; retrying")
                yield Pause(self.retry_delay)


# -- the drivers -----------------------------------------------------------------------------


class OutcomeFeed:
    """Drives the feed's flows with awaited I/O: ``deliver`` is a coroutine function.
    ``run()`` follows until cancelled."""

    def __init__(
        self,
        humanwire: AsyncHumanWire,
        cursor: Cursor,
        deliver: Callable[[OutcomeEvent], Awaitable[bool]],
        *,
        poll_wait: float = 30.0,
        retry_delay: float = 1.0,
    ) -> None:
        self.humanwire = humanwire
        self.deliver = deliver
        self.flows = FeedFlows(cursor, poll_wait=poll_wait, retry_delay=retry_delay)

    @property
    def cursor(self) -> Cursor:
        return self.flows.cursor

    async def drive(self, flow: FeedFlow[T]) -> T:
        result: Any = None
        error: BaseException | None = None
        while True:
            try:
                action = flow.throw(error) if error is not None else flow.send(result)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            result, error = None, None
            try:
                if isinstance(action, ReadPage):
                    result = await self._read(action)
                elif isinstance(action, Deliver):
                    result = await self.deliver(action.event)
                else:
                    await asyncio.sleep(action.seconds)
            except asyncio.CancelledError:
                flow.close()
                raise
            except Exception as exc:
                error = exc

    async def _read(self, read: ReadPage) -> OutcomePage:
        if read.after is None:
            return await self.humanwire.interactions.events(wait=0)
        return await self.humanwire.interactions.events(
            after=read.after, wait=read.wait, event_type="interaction.ended"
        )

    async def start_cursor(self) -> str:
        return await self.drive(self.flows.start_cursor())

    async def deliver_once(self, wait: float | None = None) -> int:
        return await self.drive(self.flows.deliver_once(wait))

    async def run(self) -> None:
        await self.drive(self.flows.follow())


class OutcomeFollower:
    """Drives the feed's flows with blocking I/O: ``deliver`` is a plain function.
    ``run(stop)`` follows in the calling thread until ``stop`` is set (seen before each
    page and during a pause: within ``poll_wait``)."""

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
        self.deliver = deliver
        self.flows = FeedFlows(cursor, poll_wait=poll_wait, retry_delay=retry_delay)

    @property
    def cursor(self) -> Cursor:
        return self.flows.cursor

    def drive(self, flow: FeedFlow[T], stop: threading.Event | None = None) -> T | None:
        """Runs ``flow``; None when ``stop`` ended it (between pages, never mid-page)."""
        result: Any = None
        error: BaseException | None = None
        try:
            while True:
                try:
                    action = flow.throw(error) if error is not None else flow.send(result)
                except StopIteration as done:
                    return done.value  # type: ignore[no-any-return]
                result, error = None, None
                if stop is not None and stop.is_set() and not isinstance(action, Deliver):
                    return None
                try:
                    if isinstance(action, ReadPage):
                        result = self._read(action)
                    elif isinstance(action, Deliver):
                        result = self.deliver(action.event)
                    elif stop is not None:
                        stop.wait(action.seconds)
                    else:
                        threading.Event().wait(action.seconds)
                except Exception as exc:
                    error = exc
        finally:
            flow.close()

    def _read(self, read: ReadPage) -> OutcomePage:
        if read.after is None:
            return self.humanwire.interactions.events(wait=0)
        return self.humanwire.interactions.events(
            after=read.after, wait=read.wait, event_type="interaction.ended"
        )

    def start_cursor(self) -> str:
        cursor = self.drive(self.flows.start_cursor())
        assert cursor is not None
        return cursor

    def deliver_once(self, wait: float | None = None) -> int:
        taken = self.drive(self.flows.deliver_once(wait))
        assert taken is not None
        return taken

    def run(self, stop: threading.Event) -> None:
        self.drive(self.flows.follow(), stop)
