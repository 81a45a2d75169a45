"""Held requests: a ``Hold`` registered before its delivery goes out (so even an instant
reply finds it), awaited by its request, and answered (``answer``), expired, drained or
left; with replicas its hold in the store is let go of as it ends (``Coordinator``)."""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import ServiceUnavailable
from ..store.records import InboundRecord, InteractionOutcome, InteractionRecord
from ..telemetry import log_event
from ._common import OutcomeHandoff
from .context import SendContext
from .deadlines import Deadlines
from .events import OutcomeEvents
from .held_answers import wait_ended
from .holds import Follow, Hold, Holds, HoldState, Release
from .runtime import Runtime

logger = logging.getLogger("humanwire.engine")

AcceptedBody = Callable[[Hold], Awaitable[dict[str, Any] | None]]
"""The 202 of a send of its kind held after ``Prefer: respond-async`` (None: the body of
any send, ``RespondAsync.accepted_body``)."""


class Holding:
    """The holding role (``engine.holding``): held requests, registered before their
    delivery, answered, expired or let go. ``held`` is every request held here."""

    def __init__(
        self, runtime: Runtime, held: Holds, deadlines: Deadlines, events: OutcomeEvents
    ) -> None:
        self._runtime = runtime
        self._store = runtime.store
        self._coordinator = runtime.coordinator
        self._outbox = runtime.outbox
        self._lifecycle = runtime.lifecycle
        self.held = held
        self._deadlines = deadlines
        self._events = events
        self.accepted_bodies: dict[str, AcceptedBody] = {}
        """By interaction kind: the 202's body of a send held after answering it
        (approvals register theirs, ``ApprovalAccess.__init__``)."""

    def register(self, record: InteractionRecord, context: SendContext) -> Hold:
        # Registered before the delivery goes out, so even an instant reply finds it.
        loop = asyncio.get_running_loop()
        hold = Hold(record, loop.create_future(), context)
        self.held.add(hold)
        if record.kind != "call" and record.wait_deadline is not None:
            # Its waitTime: a timer here, the request's own (a call's is ``limit``). A
            # context of its own: no part of the request that armed it.
            when = loop.time() + (record.wait_deadline - time.time())
            hold.timer = loop.call_at(when, self._wait_passed, hold, context=contextvars.Context())
        return hold

    def unregister(self, hold: Hold) -> None:
        self.held.remove(hold)

    def _wait_passed(self, hold: Hold) -> None:
        """A held request's ``waitTime`` passed (its timer, on the replica holding it)."""
        hold.timer = None
        if self.held.get(hold.interaction_id) is hold:
            self._deadlines.on_deadline(hold.interaction_id, "wait")

    async def hold(self, hold: Hold, limit: float | None = None) -> InteractionRecord | None:
        """Awaits the response (the ended record) or None when the window closed first.
        ``limit`` (seconds) is for calls, which have no window timer of their own."""
        self.held.start(hold)
        accept = hold.context.accept
        if accept is not None and not accept.done():
            accept.set_result(hold)  # Prefer: respond-async: 202 now, hold on
            run = hold.context.run
            if run is not None:
                run.holding_async = hold  # a retry under its key gets 202 too
        handle: asyncio.TimerHandle | None = None
        if limit is not None:
            handle = asyncio.get_running_loop().call_later(limit, hold.expire)
        if self._lifecycle.draining:
            hold.drain()  # registered after drain() woke the others
        answered: InteractionRecord | None = None
        try:
            answered = await hold.wait()
        finally:
            if handle is not None:
                handle.cancel()
            handed = await self.let_go(hold)
            self.unregister(hold)
        left = hold.state is HoldState.LEFT
        if answered is None and handed is not None:
            if not left:
                answered = handed
            elif handed.kind != "call":  # a call's end always goes to the webhooks
                await self._outbox.emit(handed.account_id, handed.result or {}, handed.id)
        if left:
            # Nobody to answer: unregistered (above), a reply inside waitTime goes to
            # the webhooks; the window and the idempotency link stay.
            raise ServiceUnavailable(
                "the held request was closed by the client; retry",
                retry_after=self._runtime.config.unavailable_retry_after,
            )
        if answered is None and self._lifecycle.draining:
            # Stopping: 503, the interaction stays open for the retry to re-attach to.
            raise self._runtime.unavailable()
        return answered

    async def let_go(self, hold: Hold) -> InteractionRecord | None:
        """Ends this process's hold on the send (from now on an answer goes to the
        webhooks; in one process nothing is recorded). Returns the interaction when it
        ended while held here with an answer nobody else sent on (its ender left it to
        this hold)."""
        if self._lifecycle.closed:
            return None
        if hold.release is Release.LET_GO:
            return None  # let go when it ended with the answer this hold took
        if hold.release is Release.UNRELEASED and hold.followed:
            return None  # let go as its wait.ended is written (``events.wait_ended``)
        hold.let_go()
        interaction_id = hold.interaction_id
        try:
            released = await self._coordinator.release_hold(interaction_id)
        except Exception:  # the sweep of a dead holder covers it; never hide the answer
            logger.warning("could not let go of the hold on %s", interaction_id, exc_info=True)
            return None
        if released is None or released.status == "pending" or released.result is None:
            return None
        return released

    async def release_unreleased(self, hold: Hold) -> None:
        """A hold answered from a notice (``Release.UNRELEASED``) whose ``wait.ended``
        will not be written: let go now, so a sweep never sends its answer again."""
        if hold.release is not Release.UNRELEASED:
            return
        hold.let_go()
        if self._lifecycle.closed:
            return
        try:
            await self._coordinator.release_hold(hold.interaction_id)
        except Exception:
            logger.warning("could not let go of the hold on %s", hold.interaction_id, exc_info=True)

    async def answer(
        self,
        record: InteractionRecord,
        event: dict[str, Any],
        *,
        outcome: InteractionOutcome | None = None,
        always_emit: bool = False,
        inbound: InboundRecord | None = None,
    ) -> InteractionRecord | None:
        """Ends ``record`` with its response ``event``: the held request gets it, else
        (or with ``always_emit``) it goes to the webhooks. None if it had ended already.
        ``inbound``, the text that answered (linked to ``record``), is stored and
        announced too: with the end, or without the link if it had ended already."""
        now = time.time()
        report = self._events.ended_report(record, event, outcome)
        hold = self.held.waiting(record.id)
        handed_over = hold is not None
        # A request held here takes the answer now: with replicas its hold is let go in
        # the same statement (not in one more when it wakes, ``let_go``).
        ending = await self._coordinator.end_answered(
            record,
            now,
            event,
            outcome,
            report,
            release=handed_over,
            inbound=inbound,
            held_answer=functools.partial(wait_ended, record, event, outcome, now),
        )
        done, published = ending.done, ending.published
        if ending.let_go and hold is not None:
            hold.let_go()  # with the end, in the same statement
        if inbound is not None and not ending.inbound_stored:
            if not done:
                inbound = dataclasses.replace(inbound, interaction_id=None)
            await self._store.insert_inbound(inbound)
        if not done:
            if inbound is not None:
                self._runtime.notices.notify(inbound.account_id, "inbound", inbound.id)
            return None
        self._deadlines.disarm(record.id)
        ended = dataclasses.replace(
            record, status="ended", result=event, outcome=outcome, ended_at=now
        )
        if hold is not None:
            if ending.waited is not None:
                hold.follow = Follow.WRITTEN  # its wait.ended went with the end
            hold.answer(ended)
        # With replicas, a send held when it ended is its holder's to hand over: another
        # replica's gets it from the notice ``_changed`` publishes; this one's, whose
        # hold is just ending, takes it when it lets go (``let_go``).
        webhook = always_emit or (not handed_over and ending.holder is None)
        if webhook:
            await self._outbox.emit(record.account_id, event, record.id)
        seconds = now - record.created_at
        self._runtime.metrics.ended(record.kind, record.channel, outcome or "answered")
        if outcome != "no_answer":
            self._runtime.metrics.answered(record.kind, record.channel, seconds)
        log_event(
            logger,
            "interaction.answered",
            interaction_id=record.id,
            account_id=record.account_id,
            kind=record.kind,
            channel=record.channel,
            outcome=outcome or "answered",
            after_s=round(seconds, 3),
            handed_to="held_request" if handed_over else "webhooks" if webhook else "holder",
        )
        if ending.reported is not None:
            seq, after = ending.reported
            await self._events.stored(record.account_id, OutcomeHandoff(after, seq, report), now)
        else:
            await self._events.append(record.account_id, record.id, report)
        if ending.waited is not None and ending.answer is not None:
            seq, after = ending.waited
            await self._events.stored(
                record.account_id, OutcomeHandoff(after, seq, ending.answer.event), now
            )
        self._runtime.notices.changed(record, published=published)
        if inbound is not None:
            self._runtime.notices.notify(
                inbound.account_id, "inbound", inbound.id, publish=not published
            )
        return ended
