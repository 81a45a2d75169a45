"""The holding role (``engine.holding``), held requests: a ``Hold`` registered before its
delivery goes out (so even an instant reply finds it), awaited by its request, and
answered (``answer``), expired, drained or left; with replicas its hold in the store is
let go of as it ends (``Coordinator``).

The deadlines role (``engine.deadlines``, ``Deadlines``), windows closing. An
interaction's last window is a step of the schedule (``WINDOW_STEP``), run when due by
whichever replica claimed it; a held request's ``waitTime`` is its hold's own timer
(``holding``). Both end here: the interaction ends with no response (unless a follow-up
window is still open), its held request expires.
A deadline whose writes the store could not take runs again shortly: ``Windows``, one
``loop.call_at`` timer per interaction; the step stays in the store meanwhile, so a
process that dies before the retry leaves it to the schedule.

A call's window step is its limit (``call_window``): its end comes from the carrier, and
a call still pending well past the longest the carrier lets it last lost that end (its
callback never came, or the replica it came to died before storing it). It is ended as
``timeout`` and hung up, on whichever replica the step falls to.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from ..config import ServiceConfig
from ..errors import ServiceUnavailable
from ..store.commits import StoreUnavailable
from ..store.records import (
    WINDOW_STEP,
    InboundRecord,
    InteractionOutcome,
    InteractionRecord,
    StepRecord,
)
from ..telemetry import log_event
from .events import OutcomeEvents, OutcomeHandoff, wait_ended
from .holds import Follow, Hold, Holds, HoldState, Release, SendContext
from .runtime import Runtime

logger = logging.getLogger("humanwire.engine")


WINDOW_MOVED = 0.001
"""Seconds an interaction's last window may be past its step's due time before the step
counts as armed for an older deadline (and moves) rather than due."""

CALL_LONGEST = 4 * 3600.0
"""Seconds a call placed by ``POST /calls`` lasts at most: the carriers' own cap (Twilio's
and Telnyx's default time limit is four hours)."""
CALL_LIMIT_AFTER = 90.0
"""Seconds a call's step waits past the end the carrier puts to it (for ``/phone/call``,
its ``Time-Limit``: ``phone_call_limit`` and 30 s) for the callback that ends it."""


def call_window(config: ServiceConfig, request: dict[str, Any]) -> float:
    """Seconds from a call's placing to its window step (see the module docstring)."""
    longest = config.phone_call_limit + 30 if request.get("_phone") else CALL_LONGEST
    return longest + CALL_LIMIT_AFTER


WindowCloser = Callable[[InteractionRecord], Awaitable[bool]]
"""Closes an interaction of its kind whose last window passed with no response, in place
of the plain end: True when it did (False: the plain end applies)."""


Phase = Literal["wait", "close"]


class Windows:
    """One deadline timer per open interaction."""

    __slots__ = ("_loop", "_on_deadline", "_timers")

    def __init__(self, on_deadline: Callable[[str, Phase], None]) -> None:
        self._on_deadline = on_deadline
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop the timers run on (else the running loop of the first ``arm``)."""
        self._loop = loop

    def arm(self, interaction_id: str, at: float, phase: Phase) -> None:
        """``phase`` of ``interaction_id`` passes at Unix time ``at`` (replacing the one
        armed before)."""
        loop = self._loop or asyncio.get_running_loop()
        old = self._timers.pop(interaction_id, None)
        if old is not None:
            old.cancel()
        when = loop.time() + (at - time.time())
        # A context of its own: the timer is no part of the request that armed it (its
        # log lines carry no request id) and keeps none of its state alive.
        self._timers[interaction_id] = loop.call_at(
            when, self._fire, interaction_id, phase, context=contextvars.Context()
        )

    def disarm(self, interaction_id: str) -> None:
        handle = self._timers.pop(interaction_id, None)
        if handle is not None:
            handle.cancel()

    def armed(self, interaction_id: str) -> bool:
        return interaction_id in self._timers

    def close(self) -> None:
        """Cancels every timer (the service stops; the windows stay open in the store)."""
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    def __len__(self) -> int:
        return len(self._timers)

    def _fire(self, interaction_id: str, phase: Phase) -> None:
        self._timers.pop(interaction_id, None)
        self._on_deadline(interaction_id, phase)


class Deadlines:
    """The deadlines role (``engine.deadlines``): windows closing (see the module
    docstring). It reads the held requests (``holds``) to expire the one a window ends."""

    def __init__(self, runtime: Runtime, holds: Holds, events: OutcomeEvents) -> None:
        self._runtime = runtime
        self._store = runtime.store
        self._config = runtime.config
        self._schedule = runtime.schedule
        self._holds = holds
        self._events = events
        self._windows = Windows(self.on_deadline)
        # A held request's wait timer and its window's step may fall due together.
        self._deadlines_running: dict[tuple[str, Phase], asyncio.Future[bool]] = {}
        self._schedule.handlers[WINDOW_STEP] = self._window_due
        self.closers: dict[str, WindowCloser] = {}
        """By interaction kind: what closes one whose last window passed with no response
        (``end``; approvals register theirs, ``ApprovalAccess.__init__``)."""

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """The window timers run on ``loop`` (the engine's)."""
        self._windows.start(loop)

    def close(self) -> None:
        self._windows.close()

    def __len__(self) -> int:
        """Window timers in memory (deadlines to run again included)."""
        return len(self._windows)

    def _arm(self, interaction_id: str, at: float, phase: Phase) -> None:
        """A deadline run again in memory (``_retry_deadline``)."""
        self._windows.arm(interaction_id, at, phase)

    def disarm(self, interaction_id: str) -> None:
        """The interaction ended: nothing of its windows is left in memory (the store
        dropped its step with the end)."""
        self._windows.disarm(interaction_id)
        self._schedule.forget(WINDOW_STEP, interaction_id)

    async def _window_due(self, step: StepRecord) -> None:
        """The schedule's handler of ``WINDOW_STEP``: the interaction's last window
        closes, if it really did (steps run at least once: read it first). Raises when the
        store could not take the end (the schedule runs it again)."""
        record = await self._store.get_interaction(step.key)
        if record is None or record.status != "pending":
            if record is None and (hold := self._holds.get(step.key)) is not None:
                hold.expire()  # its account was deleted
            return
        if record.kind == "call":
            await self._call_window_passed(record)
            return
        close = record.close_deadline
        if close is not None and close > step.due_at + WINDOW_MOVED:
            # Its window is later than this step was armed for: the step moves there.
            # (Compared with the step's time, not this replica's clock: a clock a little
            # behind the one that armed it must not arm it again at the same time.)
            await self._schedule.arm(WINDOW_STEP, record.id, close, account_id=record.account_id)
            return
        # Without a follow-up window, the last window is the wait: it passes as the
        # held request's own timer would have it (``interaction.wait_expired``).
        phase: Phase = "close" if record.follow_up_deadline is not None else "wait"
        await self._deadline_passed(record.id, phase, record)
        # What it wrote (the end, its outcome) may yet be rolled back with its batch.
        self._store.committed().on_rollback(
            functools.partial(self._retry_deadline, record.id, phase)
        )

    async def _call_window_passed(self, record: InteractionRecord) -> None:
        """A call still pending past its limit: its end was lost. Ended as ``timeout``
        (its held request, if any, answered so) and hung up, in case it still runs."""
        log_event(
            logger,
            "call.limit_passed",
            interaction_id=record.id,
            account_id=record.account_id,
            level=logging.WARNING,
        )
        await self.give_up_call(record)

    async def give_up_call(self, record: InteractionRecord) -> None:
        """Ends the call as ``timeout`` (its held request answered so) and hangs it up,
        in case it still runs (a stored job, retried until the carrier takes it)."""
        await self.end(record, outcome="timeout")
        if record.provider_ref is not None:
            await self._runtime.carriers.by_channel["call"].hang_up(record.provider_ref)

    def on_deadline(self, interaction_id: str, phase: Phase) -> None:
        """A window's timer fired: what it does reads and writes the store, so it runs
        as a task of its own (the timer callback cannot await)."""
        if not self._runtime.lifecycle.closed:
            self._runtime.background.spawn(self._deadline(interaction_id, phase))

    async def _deadline(self, interaction_id: str, phase: Phase) -> None:
        if self._runtime.lifecycle.closed:
            return
        retry = functools.partial(self._retry_deadline, interaction_id, phase)
        try:
            await self._deadline_passed(interaction_id, phase)
        except StoreUnavailable:
            retry()
            return
        # What it wrote (the end, its outcome) may yet be rolled back with its batch.
        self._store.committed().on_rollback(retry)

    def _retry_deadline(self, interaction_id: str, phase: Phase) -> None:
        """The database could not store what a deadline did: it runs again shortly (the
        window stays open in the store until then), so no restart is needed."""
        if not self._runtime.lifecycle.closed and not self._windows.armed(interaction_id):
            at = time.time() + self._config.unavailable_retry_after
            self._arm(interaction_id, at, phase)

    async def _deadline_passed(
        self, interaction_id: str, phase: Phase, record: InteractionRecord | None = None
    ) -> None:
        """What a passed deadline does. The held request's wait timer and the window's
        step may fall due together (a wait without a follow-up): the second waits for
        the first here and does it again only if the first failed."""
        running = self._deadlines_running.get((interaction_id, phase))
        if running is not None and await asyncio.shield(running):
            return
        done = asyncio.get_running_loop().create_future()
        self._deadlines_running[(interaction_id, phase)] = done
        ok = False
        try:
            await self._deadline_passed_now(interaction_id, phase, record)
            ok = True
        finally:
            if self._deadlines_running.get((interaction_id, phase)) is done:
                del self._deadlines_running[(interaction_id, phase)]
            done.set_result(ok)

    async def _deadline_passed_now(
        self, interaction_id: str, phase: Phase, record: InteractionRecord | None
    ) -> None:
        if record is None:
            record = await self._store.get_interaction(interaction_id)
        hold = self._holds.get(interaction_id)
        if record is None:
            # Its account was deleted: a request held for it ends now (401, ``_current``).
            if hold is not None:
                hold.expire()
            return
        if record.status != "pending":
            return
        if phase == "wait":
            log_event(
                logger,
                "interaction.wait_expired",
                interaction_id=interaction_id,
                account_id=record.account_id,
                held=hold is not None,
                follow_up=record.follow_up_deadline is not None,
            )
            if record.follow_up_deadline is not None:
                # The follow-up window's end is the interaction's step (armed with it).
                if hold is not None:
                    hold.expire()
                return
        await self.end(record)
        if hold is not None:
            # After the end is stored (an awaited write): the request it wakes reads
            # the interaction ended, as when the deadline ran without a pause.
            hold.expire()

    async def end(
        self, record: InteractionRecord, outcome: InteractionOutcome | None = None
    ) -> None:
        """Ends an interaction without a response: its last window closed (``outcome``
        None: the closer registered for its kind, if any, closes it), or it failed."""
        closer = self.closers.get(record.kind) if outcome is None else None
        if closer is not None and await closer(record):
            return
        self.disarm(record.id)
        if await self._store.end_interaction(record.id, time.time(), outcome=outcome):
            hold = self._holds.get(record.id)
            if hold is not None:
                hold.expire()
            label = outcome or "no_response"
            self._runtime.metrics.ended(record.kind, record.channel, label)
            log_event(
                logger,
                "interaction.expired" if outcome is None else "interaction.ended",
                interaction_id=record.id,
                account_id=record.account_id,
                kind=record.kind,
                channel=record.channel,
                outcome=label,
            )
            await self._events.ended(record, None, outcome)
            self._runtime.notices.changed(record)


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
