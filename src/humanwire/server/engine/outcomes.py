"""The respond-async role (``engine.respond_async``): the sends that answer 202 at once
(``Prefer: respond-async``, docs/design.md "Many waits from one client"). The 202's body
(a kind's own where one is registered: ``holding.accepted_bodies``), and the send's answer
appended as ``wait.ended`` once its wait is over (``engine.events``, the outcome stream,
stores it)."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from typing import Any

from humanwire.types import ErrorBody, ErrorDetail

from ..errors import ServiceError
from .events import OutcomeEvents
from .holding import Holding
from .holds import Follow, Hold
from .interactions import Interactions
from .runtime import Runtime, _metadata

__all__ = ["RespondAsync"]

logger = logging.getLogger("humanwire.server")


class RespondAsync:
    """The respond-async role (see the module docstring)."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        holding: Holding,
        events: OutcomeEvents,
        interactions: Interactions,
    ) -> None:
        self._runtime = runtime
        self._holding = holding
        self._events = events
        self._interactions = interactions
        # The tasks of requests answered 202 whose hold goes on (kept from the collector).
        self._async_holds: set[asyncio.Task[Any]] = set()

    async def accepted_body(self, hold: Hold) -> dict[str, Any]:
        """The 202's body: what the send answers without a wait, from its hold (the
        interaction as sent, with the delivery status its delivery wrote): no read; or
        what the builder registered for its kind says (``accepted_bodies``)."""
        builder = self._holding.accepted_bodies.get(hold.record.kind)
        if builder is not None and (built := await builder(hold)) is not None:
            return built
        record = hold.record
        body: dict[str, Any] = {"interactionId": record.id, "status": "pending"}
        if record.delivery_status is not None:
            body["deliveryStatus"] = record.delivery_status
        if record.kind == "form" and record.form_token is not None:
            body["formUrl"] = self._interactions.form_url(record.form_token)
        metadata = _metadata(record)
        if metadata:
            body["metadata"] = metadata
        return body

    def follow_async(self, hold: Hold, task: asyncio.Task[tuple[int, bytes]]) -> None:
        """Once ``task`` (the send's own request, answered 202 already) ends, its answer
        becomes the account's ``wait.ended`` event: once per hold (a retry that joined
        the hold gets the same event)."""
        if hold.followed:
            return
        hold.follow = Follow.FOLLOWED
        self._async_holds.add(task)
        # A bound method with its hold, no closures: kept for as long as the hold lasts.
        task.add_done_callback(functools.partial(self._followed_ended, hold))

    def _followed_ended(self, hold: Hold, task: asyncio.Task[tuple[int, bytes]]) -> None:
        # A done callback cannot await: what it writes runs as a task.
        self._runtime.background.spawn(self._write_followed(hold, task))

    async def _write_followed(self, hold: Hold, task: asyncio.Task[tuple[int, bytes]]) -> None:
        """The followed send's request ended: its answer becomes ``wait.ended``."""
        self._async_holds.discard(task)
        written = hold.follow is Follow.WRITTEN  # with its stored result
        hold.follow = Follow.NONE
        if written:
            return
        if task.cancelled():
            await self._holding.release_unreleased(hold)
            return
        failure = task.exception()
        if isinstance(failure, ServiceError):
            # The error the held request would have answered (a call past its limit,
            # 503 while stopping: the client retries with its key and re-attaches).
            status = failure.status
            body: dict[str, Any] = ErrorBody(
                error=ErrorDetail(
                    code=failure.code,
                    message=failure.message,
                    field=failure.field,
                )
            ).model_dump(mode="json", by_alias=True)
        elif failure is not None:
            logger.error("respond-async hold of %s failed", hold.interaction_id, exc_info=failure)
            await self._holding.release_unreleased(hold)
            return
        else:
            status, content = task.result()
            body = json.loads(content) if content else {}
        await self._events.wait_ended(hold, status, body)
