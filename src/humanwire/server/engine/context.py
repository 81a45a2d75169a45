"""What a send's request tells the engine besides its body, passed as an argument.

``SendContext`` is built by the HTTP layer for each send (and by ``engine.idempotency.run`` for
the run of an ``Idempotency-Key``): whether the client is still there, whether it asked to
be answered 202 at once, and the key the send runs under. A caller that passes none (a
test, an embedding) gets a send held to its end, answered when it ends, under no key.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from humanwire.types.interactions import InteractionChannel, InteractionKind

from ..store.records import InteractionRecord

if TYPE_CHECKING:
    from .holds import Hold

__all__ = ["HELD_TO_THE_END", "IdempotentRun", "NewInteraction", "Requesters", "SendContext"]


@dataclass
class IdempotentRun:
    """The ``Idempotency-Key`` a send runs under: the interaction it creates is linked to
    the key, or, when ``resume`` names the one a first run created, re-attached to instead
    of sending again."""

    account_id: str
    key: str
    fingerprint: str
    resume: InteractionRecord | None
    used: bool = False
    holding_async: Hold | None = None
    """The hold of the run after answering 202 (its answer will be a ``wait.ended``
    event): a retry under its key joining it is answered 202 too."""


@dataclass(frozen=True, slots=True)
class SendContext:
    """A send's request, as far as the engine must know it."""

    gone: asyncio.Future[None] | None = None
    """Settled when the client's connection closes: a held request whose requester is gone
    lets go of its interaction, so a reply inside ``waitTime`` goes to the webhooks
    instead of to nobody. None: held to the end."""
    accept: asyncio.Future[Hold | None] | None = None
    """``Prefer: respond-async``: settled with the send's ``Hold`` once it starts to hold
    (delivered, waiting); the request is answered 202 at once while the hold goes on."""
    run: IdempotentRun | None = None
    """The ``Idempotency-Key`` run the send belongs to (``engine.idempotency.run`` sets it)."""


@dataclass(frozen=True, slots=True)
class NewInteraction:
    """What a send (an inbound call, an approver's call) asks to be opened: the
    interaction before it has an id (``Interactions.create`` stores it)."""

    kind: InteractionKind
    channel: InteractionChannel
    to: str
    from_addr: str
    request: dict[str, Any]
    """The stored request: the wire body, with the engine's own ``_``-keys."""
    wait_time: float | None = None
    """Seconds the send holds (its ``waitTime``); None: no wait window."""
    follow_up_time: float | None = None
    """Seconds after the wait a late answer still counts (to the webhooks)."""
    form_token: str | None = None
    reply_token: str | None = None
    """A card's reply link, or an email's reply address (made for every email)."""
    card_id: str | None = None


HELD_TO_THE_END = SendContext()
"""No client to watch, no 202, no key."""


class Requesters:
    """The requests waiting for one idempotent run (the first and retries that joined
    it): ``gone`` settles once every one of them has gone; never while one of them
    cannot tell (its ``SendContext.gone`` is None)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.gone: asyncio.Future[None] = loop.create_future()
        self._waiting = 0
        self._untracked = False

    @property
    def untracked(self) -> bool:
        return self._untracked

    def attach(self, left: asyncio.Future[None] | None) -> None:
        if left is None:
            self._untracked = True
            return
        self._waiting += 1
        left.add_done_callback(self._left)

    def _left(self, _future: asyncio.Future[None]) -> None:
        self._waiting -= 1
        if self._waiting <= 0 and not self._untracked and not self.gone.done():
            self.gone.set_result(None)
