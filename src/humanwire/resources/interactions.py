"""Interaction status: ``GET /interactions/{id}/status``, waiting on it, and ending it."""

from __future__ import annotations

import math

from humanwire._constants import MIN_POLL_INTERVAL
from humanwire._http import Flow, RequestSpec, Sleep, parse_as
from humanwire.errors import invalid_request
from humanwire.types import (
    MAX_EVENTS_WAIT,
    MAX_STATUS_WAIT,
    InteractionStatus,
    OutcomeEventType,
    OutcomePage,
    format_seconds,
)

from ._base import ModeT, Resource, endpoint, path_id

__all__ = ["Interactions"]


def _seconds(value: object, wire_name: str, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise invalid_request(f"{wire_name} must be a number of seconds", field=wire_name)
    if value < 0 or (high is not None and value > high):
        bounds = f"from 0 to {high:g}" if high is not None else "0 or more"
        raise invalid_request(
            f"{wire_name} must be {bounds} seconds, got {value:g}", field=wire_name
        )
    return float(value)


class Interactions(Resource[ModeT]):
    def _status(self, interaction_id: str, wait: float | None) -> Flow[InteractionStatus]:
        params = {"wait": format_seconds(wait)} if wait is not None else None
        return self._get(
            f"/interactions/{path_id(interaction_id, 'interactionId')}/status",
            InteractionStatus,
            params=params,
            wait=wait,
        )

    @endpoint
    def status(self, interaction_id: str, *, wait: float | None = None) -> Flow[InteractionStatus]:
        """The interaction's status. With ``wait`` (at most 60 s) the service holds the
        request until the status changes or ``wait`` seconds pass."""
        if wait is not None:
            wait = _seconds(wait, "wait", MAX_STATUS_WAIT)
        return self._status(interaction_id, wait)

    @endpoint
    def cancel(self, interaction_id: str) -> Flow[InteractionStatus]:
        """``POST /interactions/{interactionId}/cancel``: stop listening for the answer
        now; the interaction ends without a response (an approval's ``onTimeout`` does
        not apply). Returns its status. ``ConflictError`` for a call under way."""
        return self._request(
            RequestSpec(
                "POST",
                f"/interactions/{path_id(interaction_id, 'interactionId')}/cancel",
                parse_as(InteractionStatus),
            )
        )

    @endpoint
    def events(
        self,
        *,
        after: str | None = None,
        wait: float | None = None,
        event_type: OutcomeEventType | None = None,
    ) -> Flow[OutcomePage]:
        """``GET /events``: the account's outcome events after the cursor ``after`` (left
        out: from now), oldest first; with ``wait`` (at most 60 s) the service holds the
        request until one comes. Continue from the page's ``cursor``."""
        params: dict[str, str | int | float | None] = {}
        if after is not None:
            params["after"] = after
        if wait is not None:
            wait = _seconds(wait, "wait", MAX_EVENTS_WAIT)
            params["wait"] = format_seconds(wait)
        if event_type is not None:
            params["eventType"] = event_type
        return self._get("/events", OutcomePage, params=params or None, wait=wait)

    @endpoint
    def wait(self, interaction_id: str, *, timeout: float | None = None) -> Flow[InteractionStatus]:
        """Wait until the interaction has ``ended``, or ``timeout`` seconds pass (None: no
        limit). Repeats the 60 s long-poll, so it waits past the 600 s ``waitTime`` limit.
        A timeout is not an error: the last status, still ``pending``, comes back."""
        if timeout is not None:
            timeout = _seconds(timeout, "timeout")
        path_id(interaction_id, "interactionId")  # refuse a bad id before any wait
        return self._wait(interaction_id, timeout)

    def _wait(self, interaction_id: str, timeout: float | None) -> Flow[InteractionStatus]:
        clock = self._client._options.clock
        deadline = None if timeout is None else clock() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - clock())
            hold = float(MAX_STATUS_WAIT)
            if remaining is not None:
                hold = min(hold, round(remaining, 3))
            started = clock()
            status = yield from self._status(interaction_id, hold)
            if status.ended:
                return status
            now = clock()
            if deadline is not None and now >= deadline:
                return status
            # A service that answers a long-poll early while still pending must not be
            # hammered in a tight loop.
            elapsed = now - started
            if elapsed < MIN_POLL_INTERVAL:
                pause = MIN_POLL_INTERVAL - elapsed
                if deadline is not None:
                    pause = min(pause, deadline - now)
                yield Sleep(pause)
