"""Long waits under an MCP client's request limit.

MCP clients give up on a request after a while (often 60 s). A wait is therefore planned
against the limit the client is known to have (``client_timeout``): the request holds at
most ``client_timeout - HEADROOM`` seconds; what is left of the wait asked for becomes
follow-up time, so the service keeps listening and the model can fetch the answer later
with the check tool. While a request holds, progress notifications carry the seconds
left (clients that reset their timer on progress keep the request alive with them).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["HEADROOM", "MAX_FOLLOW_UP", "ProgressFn", "WaitPlan", "hold_with_progress", "plan_wait"]

T = TypeVar("T")

HEADROOM = 5.0
"""Seconds kept between the end of a held request and the client's limit."""
MAX_FOLLOW_UP = 60000.0
"""The service's bound on ``followUpTime``."""

ProgressFn = Callable[[float, float | None, str], Awaitable[None]]
"""``(progress, total, message)``: sends one progress notification (a no-op when the
client asked for none)."""


@dataclass(frozen=True)
class WaitPlan:
    """How one wait is sent: ``held`` seconds in the request, ``follow_up`` after it."""

    asked: float
    """The wait asked for (the tool's ``wait_time``)."""
    held: float
    follow_up: float | None

    @property
    def split(self) -> bool:
        """The request holds less than the wait asked for (the client cannot wait longer)."""
        return self.held < self.asked

    @property
    def listening_after(self) -> float | None:
        """Seconds the service keeps listening once the request has returned."""
        return self.follow_up

    def windows(self) -> dict[str, float]:
        windows = {"wait_time": self.held}
        if self.follow_up is not None:
            windows["follow_up_time"] = self.follow_up
        return windows


def held_limit(client_timeout: float | None) -> float | None:
    """The longest a request may hold under the client's limit (``None``: no limit)."""
    if client_timeout is None:
        return None
    return max(1.0, client_timeout - HEADROOM)


def plan_wait(
    wait_time: float, follow_up_time: float | None, client_timeout: float | None
) -> WaitPlan:
    """The request holds ``wait_time``, or as much of it as the client allows; the rest is
    added to the follow-up window (capped at the service's bound)."""
    limit = held_limit(client_timeout)
    if limit is None or wait_time <= limit:
        return WaitPlan(asked=wait_time, held=wait_time, follow_up=follow_up_time)
    rest = (wait_time - limit) + (follow_up_time or 0)
    return WaitPlan(asked=wait_time, held=limit, follow_up=min(MAX_FOLLOW_UP, rest))


def progress_message(what: str, left: float) -> str:
    return f"Waiting for the human's {what}: {max(0, round(left))} s left."


async def hold_with_progress(
    work: Awaitable[T],
    progress: ProgressFn,
    *,
    total: float,
    what: str,
    interval: float,
) -> T:
    """Awaits ``work``, sending a progress notification at once and every ``interval``
    seconds with the time left of ``total``. Cancelling the caller cancels ``work``
    (its HTTP request closes, so the service lets go of the held wait)."""
    started = time.monotonic()

    async def tick() -> None:
        while True:
            elapsed = time.monotonic() - started
            with contextlib.suppress(Exception):  # a progress that fails must not end the wait
                await progress(round(elapsed, 1), total, progress_message(what, total - elapsed))
            await asyncio.sleep(interval)

    ticker = asyncio.ensure_future(tick())
    try:
        return await work
    finally:
        ticker.cancel()
