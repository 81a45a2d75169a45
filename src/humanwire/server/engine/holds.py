"""Held requests: one ``Hold`` per send that waits for its answer, and ``Holds``, the
registry of those waiting now.

A send with a ``waitTime`` (or a call awaited to its end) holds its request open until the
human answers, its window closes, the service stops or its client goes away. Everything
that request's wait is made of lives on its ``Hold``:

- ``record``: the interaction as it was sent (kind, request, metadata), so an answer that
  another replica's notice carries can be turned into the ended interaction without a read;
- ``answered``: the future the request awaits (the ended interaction, or None when it ended
  without a response, or stopped waiting for another reason);
- ``state`` (``HoldState``), why it stopped waiting::

      HOLDING ──answer(record)──▶ ANSWERED   the reply, submission or call end
              ──expire()────────▶ EXPIRED    no response: its waitTime passed, it ended
                                             without one (undelivered, a call's limit,
                                             its account deleted), or a retry re-attached
                                             after its window
              ──drain()─────────▶ DRAINED    the service is stopping (503, Retry-After)
              ──leave()─────────▶ LEFT       its requester went away first (503)

  Each is final: the first one wins, later ones do nothing (an answer that reaches a
  request the stop already woke is not handed to it).
- ``release`` (``Release``), its hold in the store (replicas: ``interactions.held_by``
  names the replica holding it, so an answer that arrives elsewhere is handed here)::

      HELD ──let go with the end that answered it (one statement)──▶ LET_GO
           ──let go as the wait ends (``Holding.let_go``)──────────▶ LET_GO
           ──let go by the end that wrote its wait.ended (notice)──▶ LET_GO
           ──answered from another replica's notice──▶ UNRELEASED
      UNRELEASED ──its wait.ended written (same transaction)───────▶ LET_GO
                 ──let go as the wait ends, or its 202 follow ended
                   without a wait.ended──────────────────────────────▶ LET_GO

  In one process nothing is recorded: it stays HELD and letting go does nothing.
- ``follow`` (``Follow``), a send answered 202 at once (``Prefer: respond-async``) whose
  answer becomes the account's ``wait.ended`` event::

      NONE ──follow_async──▶ FOLLOWED ──written with its stored result──▶ WRITTEN
      NONE / FOLLOWED ──written by the end that answered it──────────▶ WRITTEN
      FOLLOWED / WRITTEN ──its request's task done──▶ NONE

  The end that answers a message send held after its 202 writes its ``wait.ended``
  itself, whichever replica it runs on (``events.wait_ended``): the hold is then WRITTEN
  before its request's task ends, and nothing more is written for it.

  An UNRELEASED hold that is FOLLOWED (or WRITTEN) is let go by its ``wait.ended``, not
  when its wait ends.
- ``context``: what its request passed (``SendContext``): the requester-gone future and
  the respond-async acceptance.
- ``timer``: its ``waitTime`` on the loop (a call's limit is its request's own), cancelled
  when it is let go of (``Holds.remove``).

Before these objects the same state was kept in parallel collections of the engine keyed
by interaction id: ``_waiters`` (``answered``), ``_held`` (``record``), ``_let_go_early``
(``release`` LET_GO before the wait ended), ``_unreleased`` (``release`` UNRELEASED),
``_async_followed`` and ``_wait_ended_written`` (``follow``), ``_wait_timers``
(``timer``), and the context variables ``REQUESTER_GONE`` / ``ACCEPT_ASYNC``
(``context``). The window deadline is not the hold's:
it belongs to the interaction (a send without a wait has one too) and lives in
``Windows``.

Nothing here touches the store or the loop's clock: the engine decides, the hold records.

What a send's request tells the engine besides its body, passed as an argument.

``SendContext`` is built by the HTTP layer for each send (and by ``engine.idempotency.run`` for
the run of an ``Idempotency-Key``): whether the client is still there, whether it asked to
be answered 202 at once, and the key the send runs under. A caller that passes none (a
test, an embedding) gets a send held to its end, answered when it ends, under no key.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from humanwire.types.interactions import InteractionChannel, InteractionKind

from ..store.records import InteractionRecord

__all__ = [
    "HELD_TO_THE_END",
    "Follow",
    "Hold",
    "HoldState",
    "Holds",
    "IdempotentRun",
    "NewInteraction",
    "Release",
    "Requesters",
    "SendContext",
]


class HoldState(enum.Enum):
    """Why a held request stopped waiting (``HOLDING`` while it waits)."""

    HOLDING = "holding"
    ANSWERED = "answered"
    EXPIRED = "expired"
    DRAINED = "drained"
    LEFT = "left"


class Release(enum.Enum):
    """Where the hold stands in the store (replicas: ``interactions.held_by``)."""

    HELD = "held"
    """Recorded as held here (one process: nothing recorded, nothing to let go)."""
    LET_GO = "let go"
    """Let go: an answer arriving from now on goes to the webhooks."""
    UNRELEASED = "unreleased"
    """Answered from another replica's notice while still recorded as held here: to let
    go with its ``wait.ended`` (one transaction) or as its wait ends."""


class Follow(enum.Enum):
    """A hold whose request was answered 202 at once (``Prefer: respond-async``)."""

    NONE = "none"
    FOLLOWED = "followed"
    """Its answer becomes a ``wait.ended`` event once its request's task ends."""
    WRITTEN = "written"
    """That ``wait.ended`` was written already, with the send's stored result."""


class Hold:
    """One held request (see the module docstring for its states)."""

    __slots__ = (
        "answered",
        "context",
        "follow",
        "record",
        "release",
        "started",
        "state",
        "timer",
    )

    def __init__(
        self,
        record: InteractionRecord,
        answered: asyncio.Future[InteractionRecord | None],
        context: SendContext,
    ) -> None:
        self.record = record
        self.answered = answered
        self.context = context
        self.state = HoldState.HOLDING
        self.release = Release.HELD
        self.follow = Follow.NONE
        self.timer: asyncio.TimerHandle | None = None
        self.started = False
        """Its request waits on it (its delivery went out): registered before the
        interaction is stored, a hold counts as a held wait only from then on."""

    @property
    def interaction_id(self) -> str:
        return self.record.id

    @property
    def holding(self) -> bool:
        """Still waiting: an answer handed to it now is what its request returns."""
        return self.state is HoldState.HOLDING

    # -- why it stops waiting (the first one wins) ---------------------------------------
    def answer(self, ended: InteractionRecord) -> bool:
        """Hands it the ended interaction; False if it stopped waiting already."""
        return self._stop(HoldState.ANSWERED, ended)

    def expire(self) -> bool:
        """No response will come to it (its window passed, it ended without one)."""
        return self._stop(HoldState.EXPIRED, None)

    def settle(self, ended: InteractionRecord) -> bool:
        """What the interaction became: answered when it carries a result, else expired."""
        return self.answer(ended) if ended.result is not None else self.expire()

    def drain(self) -> bool:
        """The service is stopping: it answers 503 (unless it was answered first)."""
        return self._stop(HoldState.DRAINED, None)

    def leave(self) -> bool:
        """Its requester went away before anything came."""
        return self._stop(HoldState.LEFT, None)

    def _stop(self, state: HoldState, ended: InteractionRecord | None) -> bool:
        if self.state is not HoldState.HOLDING:
            return False
        self.state = state
        if not self.answered.done():
            self.answered.set_result(ended)
        return True

    async def wait(self) -> InteractionRecord | None:
        """Until it stops waiting: the ended interaction when ANSWERED, else None (LEFT
        when its requester went away first)."""
        gone = self.context.gone
        if gone is None:
            return await self.answered
        # A callback on ``gone`` that settles ``answered``, not an ``asyncio.wait`` of the
        # two (a set, a waiter future and two callbacks a held request).
        if gone.done():
            self.leave()  # gone already: left, unless something came first
            return await self.answered
        gone.add_done_callback(self._requester_gone)
        try:
            return await self.answered
        finally:
            gone.remove_done_callback(self._requester_gone)

    def _requester_gone(self, _gone: asyncio.Future[None]) -> None:
        self.leave()

    # -- its hold in the store ---------------------------------------------------------
    def let_go(self) -> None:
        """Recorded as let go (the engine did, or is about to, in the store)."""
        self.release = Release.LET_GO

    def unreleased(self) -> None:
        """Answered from another replica's notice: still recorded as held here."""
        self.release = Release.UNRELEASED

    @property
    def followed(self) -> bool:
        """Answered 202: its ``wait.ended`` lets it go (not the end of its wait)."""
        return self.follow is not Follow.NONE

    def __repr__(self) -> str:
        return (
            f"Hold({self.interaction_id!r}, {self.state.value}, {self.release.value}, "
            f"follow={self.follow.value})"
        )


class Holds:
    """The requests held here right now, by interaction id. A hold is added before its
    interaction is stored (so even an instant reply finds it), counted (``started``) once
    its request waits on it, and removed when its wait ends; a hold that outlives that
    (followed, unreleased) is kept by whoever follows it."""

    __slots__ = ("_holding", "_started")

    def __init__(self) -> None:
        self._holding: dict[str, Hold] = {}
        self._started = 0

    def add(self, hold: Hold) -> None:
        replaced = self._holding.get(hold.interaction_id)
        if replaced is not None and replaced.started:
            self._started -= 1  # a retry's hold takes its place: no longer counted
        self._holding[hold.interaction_id] = hold

    def start(self, hold: Hold) -> None:
        """``hold``'s request waits on it from now on (``started``)."""
        if not hold.started and self._holding.get(hold.interaction_id) is hold:
            hold.started = True
            self._started += 1

    @property
    def started(self) -> int:
        """Registered holds whose request waits on them."""
        return self._started

    def remove(self, hold: Hold) -> None:
        """Removes ``hold`` (its timer stopped) if it is the one registered for its
        interaction."""
        if hold.timer is not None:
            hold.timer.cancel()
            hold.timer = None
        if self._holding.get(hold.interaction_id) is hold:
            del self._holding[hold.interaction_id]
            if hold.started:
                self._started -= 1

    def get(self, interaction_id: str) -> Hold | None:
        return self._holding.get(interaction_id)

    def waiting(self, interaction_id: str) -> Hold | None:
        """The hold of ``interaction_id`` if it still waits (an answer now is its)."""
        hold = self._holding.get(interaction_id)
        return hold if hold is not None and hold.holding else None

    def clear(self) -> None:
        self._holding.clear()
        self._started = 0

    def stop_timers(self) -> None:
        """Every hold's ``waitTime`` timer is cancelled (the service stops)."""
        for hold in self._holding.values():
            if hold.timer is not None:
                hold.timer.cancel()
                hold.timer = None

    def timed(self) -> int:
        """Holds whose ``waitTime`` timer runs."""
        return sum(1 for hold in self._holding.values() if hold.timer is not None)

    def __len__(self) -> int:
        return len(self._holding)

    def __iter__(self) -> Iterator[Hold]:
        return iter(list(self._holding.values()))


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
