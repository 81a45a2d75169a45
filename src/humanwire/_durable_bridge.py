"""What every durable-engine adapter's answer bridge shares: a cursor kept in a file, and a
follower of the account's outcome feed (``GET /events``) that hands each ended
interaction to an engine-specific ``deliver``.

Why a feed reader, not a webhook receiver: the feed is ordered and resumable, so a
follower that was down reads what it missed (events are kept 25 hours) and needs no
public URL.

The follower saves the cursor after each event is delivered, so a crash between the two
delivers that event again on restart: at-least-once. The engine side makes it exactly
once (DBOS: the event's id is the message's idempotency key).
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from humanwire._client import HumanWire
from humanwire.types import MAX_EVENTS_WAIT, OutcomeEvent

__all__ = ["FileCursor", "OutcomeFollower"]

log = logging.getLogger(__name__)


class FileCursor:
    """A follower's position in the feed, in a file (replaced atomically, fsynced)."""

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


class OutcomeFollower:
    """Reads the account's ``interaction.ended`` events from ``cursor`` on and calls
    ``deliver(event)`` for each, in order (True: delivered to a waiting run; False:
    nothing waits for it). Blocking: run it in a thread of its own (``run``)."""

    def __init__(
        self,
        humanwire: HumanWire,
        cursor: FileCursor,
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
