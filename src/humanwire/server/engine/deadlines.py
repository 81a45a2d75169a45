"""Windows closing. An interaction's last window is a step of the schedule
(``WINDOW_STEP``), run when due by whichever replica claimed it; a held request's
``waitTime`` is its hold's own timer (``holding``). Both end here: the interaction ends
with no response (unless a follow-up window is still open), its held request expires.
A deadline whose writes the store could not take runs again shortly: ``Windows``, one
``loop.call_at`` timer per interaction; the step stays in the store meanwhile, so a
process that dies before the retry leaves it to the schedule.

A call's window step is its limit (``call_window``): its end comes from the carrier, and
a call still pending well past the longest the carrier lets it last lost that end (its
callback never came, or the replica it came to died before storing it). It is ended as
``timeout`` and hung up, on whichever replica the step falls to."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from ..config import ServiceConfig
from ..store.commits import StoreUnavailable
from ..store.records import WINDOW_STEP, InteractionOutcome, InteractionRecord, StepRecord
from ..telemetry import log_event
from .events import OutcomeEvents
from .holds import Holds
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
