"""The answer bridge: follows the account's outcome feed (``GET /events``) from a durable
cursor and signals each ended interaction's end into the Temporal run that asked.

Why a feed reader, not a webhook receiver: the feed is ordered and resumable, so a bridge
that was down reads what it missed (events are kept 25 hours) and needs no public URL;
a Signal is stored by Temporal even while no worker runs.

Guarantee: at-least-once delivery to the run. The cursor is saved after each event is
signalled, so a crash between the two signals that event again on restart; the workflow
keeps the first answer per interaction (``ask``), so each is applied exactly once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
from pathlib import Path

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from humanwire._client import AsyncHumanWire
from humanwire.types import MAX_EVENTS_WAIT, OutcomeEvent

from ._wire import ANSWER_SIGNAL, RUN_ID_KEY, WORKFLOW_ID_KEY, HumanAnswer

__all__ = ["AnswerBridge", "FileCursor", "answer_of"]

log = logging.getLogger(__name__)


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


def answer_of(event: OutcomeEvent) -> HumanAnswer:
    """The Signal's payload for an ``interaction.ended`` event."""
    text: str | None = None
    if event.responded and event.result is not None:
        body = getattr(event.result.payload, "body", None)
        text = body if isinstance(body, str) else None
    return HumanAnswer(
        event_id=event.id,
        interaction_id=event.interaction_id,
        responded=event.responded and text is not None,
        text=text,
    )


class AnswerBridge:
    """Reads ``interaction.ended`` events and signals the runs whose sends carry the
    ``temporalWorkflowId`` metadata (set by ``HumanWireActivities``); other events are
    passed over. Run one per account: ``await bridge.run()``."""

    def __init__(
        self,
        humanwire: AsyncHumanWire,
        temporal: Client,
        cursor: FileCursor,
        *,
        poll_wait: float = 30.0,
        retry_delay: float = 1.0,
    ) -> None:
        self.humanwire = humanwire
        self.temporal = temporal
        self.cursor = cursor
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
        how many runs were signalled."""
        after = await self.start_cursor()
        page = await self.humanwire.interactions.events(
            after=after,
            wait=self.poll_wait if wait is None else wait,
            event_type="interaction.ended",
        )
        signalled = 0
        for event in page.events:
            if await self.deliver(event):
                signalled += 1
            self.cursor.save(event.id)
        if page.cursor != after:
            self.cursor.save(page.cursor)
        return signalled

    async def deliver(self, event: OutcomeEvent) -> bool:
        metadata = event.metadata or {}
        workflow_id = metadata.get(WORKFLOW_ID_KEY)
        if workflow_id is None:
            return False
        handle = self.temporal.get_workflow_handle(workflow_id, run_id=metadata.get(RUN_ID_KEY))
        try:
            await handle.signal(ANSWER_SIGNAL, answer_of(event))
        except RPCError as error:
            # The run is gone (completed by its timeout, terminated): nothing waits.
            if error.status == RPCStatusCode.NOT_FOUND:
                log.info("no run %s waits for %s", workflow_id, event.interaction_id)
                return False
            raise
        return True

    async def run(self) -> None:
        """Delivers until cancelled; a failure (service or Temporal unreachable) is
        retried after ``retry_delay`` from the saved cursor, losing nothing."""
        while True:
            try:
                await self.deliver_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("answer bridge: delivery failed; retrying")
                await asyncio.sleep(self.retry_delay)
