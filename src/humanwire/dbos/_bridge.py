"""The answer bridge: follows the account's outcome feed (``GET /events``) from a durable
cursor and sends each ended interaction's end to the DBOS workflow that asked, with
``send(workflow_id, message, topic, idempotency_key=<interaction id + event id>)``.

It needs only the system database: pass ``DBOSClient(system_database_url=...)`` to run it
in a process of its own, or the ``DBOS`` class to run it beside the workflows. A message is
stored at once, even while no process runs the workflow; recovery finds it.

Guarantee: exactly once into the workflow. The cursor is saved after each send, so a
crash between the two sends that event again on restart; DBOS keeps one message per
idempotency key, so the redelivery is dropped, and ``recv`` takes it once.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

from dbos import error as dbos_error

from humanwire._client import HumanWire
from humanwire._durable_bridge import Cursor, FileCursor, OutcomeFollower
from humanwire.types import OutcomeEvent

from ._wire import WORKFLOW_ID_KEY, answer_of, topic_of

__all__ = ["AnswerBridge", "Sender"]

log = logging.getLogger(__name__)


class Sender(Protocol):
    """What sends a message to a workflow: ``DBOS`` (the class) or a ``DBOSClient``."""

    def send(
        self,
        destination_id: str,
        message: Any,
        topic: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> None: ...


class AnswerBridge:
    """Reads ``interaction.ended`` events and sends each to the workflow whose step sent
    it (the ``dbosWorkflowId`` metadata); other events are passed over. Run one per
    account: ``bridge.start()`` (a thread) or ``bridge.follower.run(stop)``."""

    def __init__(
        self,
        humanwire: HumanWire,
        dbos: Sender,
        cursor: FileCursor,
        *,
        poll_wait: float = 30.0,
        retry_delay: float = 1.0,
    ) -> None:
        self.dbos = dbos
        self.follower = OutcomeFollower(
            humanwire, cursor, self.deliver, poll_wait=poll_wait, retry_delay=retry_delay
        )
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def cursor(self) -> Cursor:
        return self.follower.cursor

    def start_cursor(self) -> str:
        """The saved cursor, or "now" saved: call it before the first ask."""
        return self.follower.start_cursor()

    def deliver_once(self, wait: float | None = None) -> int:
        return self.follower.deliver_once(wait)

    def deliver(self, event: OutcomeEvent) -> bool:
        workflow_id = (event.metadata or {}).get(WORKFLOW_ID_KEY)
        if workflow_id is None:
            return False
        try:
            self.dbos.send(
                workflow_id,
                answer_of(event),
                topic_of(event.interaction_id),
                idempotency_key=f"humanwire:{event.interaction_id}:{event.id}",
            )
        except dbos_error.DBOSNonExistentWorkflowError:
            # The workflow is gone (its system database reset, or another app's): nothing waits.
            log.info("no workflow %s waits for %s", workflow_id, event.interaction_id)
            return False
        return True

    def start(self) -> threading.Thread:
        """Follows the feed in a daemon thread until ``stop()``."""
        self.start_cursor()
        self._stop.clear()
        thread = threading.Thread(
            target=self.follower.run, args=(self._stop,), name="humanwire-dbos-bridge", daemon=True
        )
        thread.start()
        self._thread = thread
        return thread

    def stop(self, timeout: float | None = None) -> None:
        """Stops the thread (within ``poll_wait``: it finishes the page it holds)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
