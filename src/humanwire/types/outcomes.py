"""The account's outcome stream (docs/design.md "Many waits from one client"): ``GET /events``
(long-poll) and ``GET /events/stream`` (server-sent events).

Two kinds, in the order they happened:

- ``interaction.ended``: an interaction of the account ended; ``result`` is what its
  status's ``result`` is (the event that reported the response, or null), ``responded``
  whether a human answered.
- ``wait.ended`` (an extension): a send made with ``Prefer: respond-async`` finished its
  wait; ``response`` is exactly the body the held send would have returned (the reply, or
  the no-response text), so a client can hand it to its caller as if it had waited.
"""

from __future__ import annotations

from typing import Any, Literal

from ._base import ResponseModel
from .events import Event

__all__ = ["MAX_EVENTS_WAIT", "OutcomeEvent", "OutcomeEventType", "OutcomePage"]

OutcomeEventType = Literal["interaction.ended", "wait.ended"]
MAX_EVENTS_WAIT = 60
"""``GET /events?wait=`` holds at most this many seconds."""


class OutcomeEvent(ResponseModel):
    id: str
    """The cursor: pass it as ``after`` (or ``Last-Event-ID``) to read what follows."""
    interaction_id: str
    event_type: OutcomeEventType
    result: Event | None = None
    response: dict[str, Any] | None = None
    status: int | None = None
    """``wait.ended``: the HTTP status the held send would have answered (200, or the
    error's: ``response`` is then the error body)."""
    responded: bool = False
    metadata: dict[str, str] | None = None


class OutcomePage(ResponseModel):
    """``GET /events``: the events past ``after`` (oldest first, at most 500) and the
    cursor to continue from (the last event's id, or ``after`` when none came)."""

    events: list[OutcomeEvent]
    cursor: str
