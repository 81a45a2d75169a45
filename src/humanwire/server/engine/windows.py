"""Window deadlines run again in memory.

An interaction's last window is a step of the schedule (``WINDOW_STEP``) and a held
request's ``waitTime`` a timer of its own (``EngineCore._register``). What is left here:
a deadline whose writes the store could not take (full, rolled back) is run again
shortly (``EngineCore._retry_deadline``), as a ``loop.call_at`` timer per interaction that
calls ``on_deadline(interaction_id, phase)``; re-arming replaces the timer. The step
stays in the store meanwhile, so a process that dies before the retry leaves it to the
schedule.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable
from typing import Literal

__all__ = ["Phase", "Windows"]

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
