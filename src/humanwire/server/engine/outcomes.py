"""The account's outcome stream (``GET /events``, ``/events/stream``) and the sends that
answer 202 at once (``Prefer: respond-async``): docs/design.md "Many waits from one client".

Every interaction that ends appends ``interaction.ended`` (``core``); a respond-async send
appends ``wait.ended`` with the body its held request would have returned once its wait
is over. Ids increase (one sequence for the service), so ``after=<id>`` reads exactly what
followed; a reader holds on a future of its account, settled by the next append.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from humanwire.types import ErrorBody, ErrorDetail, OutcomeEvent, OutcomePage

from ..errors import InvalidRequest, ServiceError
from ._common import Account, OutcomeCollector, _metadata
from .core import EngineCore
from .holds import Follow, Hold

__all__ = ["CURSOR", "EVENT_TYPES", "Outcomes", "PassedOver", "parse_cursor", "parse_event_type"]

logger = logging.getLogger("humanwire.server")

PAGE_SIZE = 500
"""Events one ``GET /events`` returns at most (the cursor continues)."""


CURSOR = re.compile(r"[0-9]{1,18}")
"""An event id, as ``after`` and ``Last-Event-ID`` take it (ASCII digits: ``isdigit``
also takes ``²``, which ``int`` refuses)."""


def parse_cursor(value: str | None, name: str = "after") -> int | None:
    """``after`` / ``Last-Event-ID`` (``name``): an event id, or None when not given (from
    now). Given empty it is refused: it names no event, and "from now" or "from the
    start" would be a guess."""
    if value is None:
        return None
    if not CURSOR.fullmatch(value):
        raise InvalidRequest(f"{name} must be an event id from an earlier answer", field=name)
    return int(value)


EVENT_TYPES = ("interaction.ended", "wait.ended")
"""The outcome stream's event types (``eventType`` picks one)."""


def parse_event_type(value: str | None) -> str | None:
    """``eventType``: one of ``EVENT_TYPES``, or None (all of them)."""
    if value is None:
        return None
    if value not in EVENT_TYPES:
        raise InvalidRequest(
            f"eventType must be one of {', '.join(EVENT_TYPES)}", field="eventType"
        )
    return value


@dataclass(frozen=True)
class PassedOver:
    """A keepalive of a stream that left events out (``only``) since the last one it
    sent: ``cursor`` is the last of them. Written as an ``id:`` line with no data, it
    moves the reader's ``Last-Event-ID`` past them, so a reconnect does not read them
    again; no event is dispatched."""

    cursor: int


class Outcomes(EngineCore):
    def _outcome_waiter(self, account: Account) -> asyncio.Future[None]:
        return self._outcome_wakeups.add(account.id)

    def _drop_waiter(self, account: Account, waiter: asyncio.Future[None]) -> None:
        self._outcome_wakeups.discard(account.id, waiter)

    async def _page(self, account: Account, after: int) -> list[tuple[int, dict[str, Any]]]:
        return await self.store.outcomes_after(account.id, after, PAGE_SIZE)

    async def outcomes(
        self,
        account: Account,
        after: int | None,
        wait: float | None,
        only: str | None = None,
    ) -> OutcomePage:
        """The account's events past ``after`` (None: from now), holding up to ``wait``
        seconds for the first one; ``only``: the events of that type (the cursor passes
        the others)."""
        position = await self.store.last_outcome_id() if after is None else after
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (wait or 0.0)
        while True:
            # Registered before the read, so an event appended in between still wakes us.
            waiter = self._outcome_waiter(account)
            try:
                found = await self._page(account, position)
                if found:
                    position = found[-1][0]
                kept = [(seq, body) for seq, body in found if _wanted(body, only)]
                remaining = deadline - loop.time()
                if kept or len(found) == PAGE_SIZE or remaining <= 0 or self._draining:
                    break
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(waiter, remaining)
            finally:
                self._drop_waiter(account, waiter)
        events = [_event(seq, body) for seq, body in kept]
        return OutcomePage(events=events, cursor=str(position))

    async def outcome_stream(
        self, account: Account, after: int | None, keepalive: float, only: str | None = None
    ) -> AsyncIterator[OutcomeEvent | PassedOver | None]:
        """Events past ``after`` as they come (None every ``keepalive`` seconds of quiet,
        for a comment line that keeps proxies from closing the stream); ``only``: the
        events of that type. Left out, the others cost the client nothing: a client
        waiting on ``wait.ended`` is not woken by every ``interaction.ended``; its
        keepalive is then ``PassedOver``, the last id left out, at most once a
        ``keepalive``."""
        # Collects what is appended from before the first read on: events that follow
        # the last one sent are sent on without reading the store.
        collector = OutcomeCollector()
        collectors = self._outcome_collectors.setdefault(account.id, set())
        collectors.add(collector)
        position = await self.store.last_outcome_id() if after is None else after
        found: list[tuple[int, dict[str, Any]]] | None = None
        loop = asyncio.get_running_loop()
        sent_at = loop.time()
        told = position  # the last id the reader was given (an event's, or passed over)
        try:
            while not self._draining:
                # Registered before the read, and kept while the events are sent on:
                # any append from then on wakes us. A read that caught up is not
                # repeated before the next append (each append costs every reader one
                # read, not two), and none is needed for appends heard in full.
                waiter = self._outcome_waiter(account)
                try:
                    if found is None:
                        collector.take(position)  # what the read below sees
                        found = await self._page(account, position)
                    for seq, body in found:
                        position = seq
                        if _wanted(body, only):
                            sent_at, told = loop.time(), seq
                            yield _event(seq, body)
                    if len(found) == PAGE_SIZE:
                        found = None
                        continue  # more past this page: read on at once
                    try:
                        await asyncio.wait_for(waiter, keepalive)
                        # Busy with events ``only`` leaves out: the line still comes.
                        due = loop.time() - sent_at >= keepalive
                    except asyncio.TimeoutError:
                        due = True
                    if due:
                        sent_at = loop.time()
                        yield PassedOver(position) if position > told else None
                        told = position
                    found = collector.take(position)
                finally:
                    self._drop_waiter(account, waiter)
        finally:
            collectors.discard(collector)
            if not collectors:
                self._outcome_collectors.pop(account.id, None)

    # -- Prefer: respond-async ---------------------------------------------------------
    async def accepted_body(self, hold: Hold) -> dict[str, Any]:
        """The 202's body: what the send answers without a wait, from its hold (the
        interaction as sent, with the delivery status its delivery wrote): no read; or
        what the builder registered for its kind says (``accepted_bodies``)."""
        builder = self.accepted_bodies.get(hold.record.kind)
        if builder is not None and (built := await builder(hold)) is not None:
            return built
        record = hold.record
        body: dict[str, Any] = {"interactionId": record.id, "status": "pending"}
        if record.delivery_status is not None:
            body["deliveryStatus"] = record.delivery_status
        if record.kind == "form" and record.form_token is not None:
            body["formUrl"] = self.form_url(record.form_token)
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

        async def done(task: asyncio.Task[tuple[int, bytes]]) -> None:
            self._async_holds.discard(task)
            written = hold.follow is Follow.WRITTEN  # with its stored result
            hold.follow = Follow.NONE
            if written:
                return
            if task.cancelled():
                await self._release_unreleased(hold)
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
                logger.error(
                    "respond-async hold of %s failed", hold.interaction_id, exc_info=failure
                )
                await self._release_unreleased(hold)
                return
            else:
                status, content = task.result()
                body = json.loads(content) if content else {}
            await self.append_wait_ended(hold, status, body)

        # A done callback cannot await: what it writes runs as a task.
        task.add_done_callback(lambda ended: self._spawn(done(ended)))


def _wanted(body: dict[str, Any], only: str | None) -> bool:
    return only is None or body.get("eventType") == only


def _event(seq: int, body: dict[str, Any]) -> OutcomeEvent:
    return OutcomeEvent.model_validate({**body, "id": str(seq)})
