"""What differs between a service alone on its store and replicas sharing one.

The engine decides the same way in both; what it must agree on with other processes goes
through its ``Coordinator``:

- ``LocalCoordinator``: one process (SQLite). Rate and spam counts live in memory, an
  answer ends the interaction with one write, nothing is published, no hold is recorded.
- ``ReplicaCoordinator``: several processes on one PostgreSQL database (``Replicas``:
  notices, heartbeats, the sweep of dead replicas' holds). Counts live in the database;
  an answer ends the interaction, appends its outcome and publishes the notice in one
  transaction; a held send is recorded as held by its replica (``interactions.held_by``)
  so an answer arriving elsewhere is handed to it.

``coordinator_for`` picks one from the store. Nothing here knows about holds' futures or
HTTP: the engine passes what a call needs.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from ..background.replicas import Replicas
from ..config import ServiceConfig
from ..limits import RateLimiter, SpamGuard, fingerprint
from ..store import Store
from ..store.protocol import SharedStore, shared_store
from ..store.records import (
    AccountRecord,
    IdempotencyRecord,
    InboundRecord,
    InteractionOutcome,
    InteractionRecord,
    WaitEndedAnswer,
)
from ._common import RateCount

__all__ = [
    "Coordinator",
    "Ending",
    "HeldAnswer",
    "LocalCoordinator",
    "ReplicaCoordinator",
    "ReplicaEvents",
    "coordinator_for",
]

logger = logging.getLogger("humanwire.engine")

_PRUNE_EVERY_TICKS = 30

HeldAnswer = Callable[[], WaitEndedAnswer | None]
"""Builds the ``wait.ended`` of a send held after its 202, for the one that ends it to
write with the end (``held_answers.wait_ended``; None: its holder writes it)."""


@dataclass(frozen=True, slots=True)
class Ending:
    """What ending an interaction with its answer did (``Coordinator.end_answered``)."""

    done: bool
    """This call ended it (False: it had ended already)."""
    holder: str | None = None
    """The replica holding the send once it ended (None: nobody, or one process)."""
    let_go: bool = False
    """The hold asked to be let go was let go in the same statement."""
    reported: tuple[int, int] | None = None
    """The ``interaction.ended`` outcome appended with it: ``(id, previous id)``."""
    inbound_stored: bool = False
    """The inbound text was stored with it (linked if it ended, named in its notice)."""
    published: bool = False
    """The other replicas were told by the write itself."""
    waited: tuple[int, int] | None = None
    """The held send's ``wait.ended`` was written with the end: ``(id, previous id)``;
    its hold was let go in the store, and its holder writes nothing more."""
    answer: WaitEndedAnswer | None = None
    """That ``wait.ended`` (set with ``waited``)."""


@dataclass(frozen=True, slots=True)
class ReplicaEvents:
    """What the engine does when other replicas speak (``Replicas``' callbacks)."""

    on_notice: Callable[[str, str, str, Any], None]
    on_swept: Callable[[list[InteractionRecord]], Awaitable[None]]
    on_tick: Callable[[], None]
    on_resync: Callable[[], Awaitable[None]]


class Coordinator(abc.ABC):
    """What the engine agrees on with other processes; the one-process behaviour where
    it is the same for every store's (``ReplicaCoordinator`` overrides it)."""

    shared: SharedStore | None = None

    def __init__(self, store: Store, config: ServiceConfig) -> None:
        self.store = store
        self.config = config
        self.id = uuid.uuid4().hex[:16]
        """Who claims steps of the schedule (and, with replicas, holds sends)."""

    def attach(self, events: ReplicaEvents) -> None:
        """What the engine does when other processes speak (none speak to one alone)."""
        return None

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    # -- notices ------------------------------------------------------------------------
    def publish(self, kind: str, account_id: str, item_id: str) -> None:
        """Announces a change to the other processes (none here)."""
        return None

    def together(self) -> AbstractContextManager[None]:
        """Notices published inside the block go out together as it ends."""
        return contextlib.nullcontext()

    # -- limits -------------------------------------------------------------------------
    async def account_by_key(
        self, key_hash: str, named: str | None = None
    ) -> tuple[AccountRecord | None, RateCount | None, InteractionRecord | None]:
        """The key's account; the request's rate count when it is counted with the
        lookup (with replicas; None: count it with ``rate_hit``); and the interaction
        ``named`` by the request, read with the key (one round trip with replicas) and
        not checked against its account (the caller checks)."""
        if named is None:
            return await self.store.account_by_key_hash(key_hash), None, None
        account, interaction = await asyncio.gather(
            self.store.account_by_key_hash(key_hash), self.store.get_interaction(named)
        )
        return account, None, interaction

    @abc.abstractmethod
    async def rate_hit(self, account_id: str) -> float | None:
        """Counts a request against the rate limit: None when allowed, else seconds to
        wait."""

    @abc.abstractmethod
    async def spam_hit(self, account_id: str, text: str, to: str) -> bool:
        """Records the send; True when it makes the text spam (``spam_recipients``
        distinct recipients inside ``spam_window``)."""

    @abc.abstractmethod
    async def forget_spam(self, account_id: str) -> None:
        """The account's spam counts are forgotten (a suspension, a reinstatement)."""

    def forget_spam_here(self, account_id: str) -> None:
        """Counts this process keeps of the account are forgotten (it was seen
        suspended: what led there must not suspend it again once reinstated)."""
        return None

    # -- interactions and their holds ----------------------------------------------------
    def stamp(self, record: InteractionRecord, *, held: bool) -> InteractionRecord:
        """A new interaction as this process creates it (replicas: its owner and the
        replica holding its request)."""
        return record

    async def end_answered(
        self,
        record: InteractionRecord,
        now: float,
        event: dict[str, Any],
        outcome: InteractionOutcome | None,
        report: dict[str, Any],
        *,
        release: bool,
        inbound: InboundRecord | None,
        held_answer: HeldAnswer | None = None,
    ) -> Ending:
        """Ends ``record`` with its answer ``event``. ``release``: the request held here
        takes the answer now (replicas let go of its hold in the same statement);
        ``report`` is its ``interaction.ended`` outcome (appended with it where the store
        can); ``inbound`` the text that answered (stored with it where the store can);
        ``held_answer`` builds the answer of a send held after its 202, written with the
        end while it is held (replicas: ``Ending.waited``). One process never builds it:
        its holder is here and writes it as it wakes (no round trip to save)."""
        done = await self.store.end_interaction(record.id, now, result=event, outcome=outcome)
        return Ending(done)

    async def append_outcome(
        self,
        account_id: str,
        interaction_id: str,
        body: dict[str, Any],
        now: float,
        *,
        idempotency: IdempotencyRecord | None = None,
        release: bool = False,
    ) -> tuple[int, int]:
        """Stores an outcome event: ``(its id, the previous id)``. ``release``: the
        interaction's hold here is let go in the same transaction."""
        return await self.store.append_outcome(
            account_id, interaction_id, body, now, idempotency=idempotency
        )

    async def release_hold(
        self, interaction_id: str, *, ended_only: bool = False
    ) -> InteractionRecord | None:
        """Lets go of this process's hold on the send in the store: the interaction when
        it ended while held with an answer handed to this hold (None: nothing recorded,
        or not held here; with ``ended_only``, only once it ended)."""
        return None

    async def take(self, interaction_id: str, *, hold: bool) -> bool:
        """A retry re-attached here: the pending interaction is this process's now.
        False when it ended meanwhile."""
        return True


class LocalCoordinator(Coordinator):
    """One process alone on its store (see the module docstring)."""

    def __init__(self, store: Store, config: ServiceConfig) -> None:
        super().__init__(store, config)
        self._rate = RateLimiter(config.rate_limit_requests, config.rate_limit_window)
        self._spam = SpamGuard(config.spam_recipients, config.spam_window)

    async def rate_hit(self, account_id: str) -> float | None:
        return self._rate.hit(account_id, time.monotonic())

    async def spam_hit(self, account_id: str, text: str, to: str) -> bool:
        return self._spam.would_be_spam(account_id, text, to, time.monotonic())

    async def forget_spam(self, account_id: str) -> None:
        self._spam.forget(account_id)

    def forget_spam_here(self, account_id: str) -> None:
        self._spam.forget(account_id)


class ReplicaCoordinator(Coordinator):
    """Replicas sharing one PostgreSQL database (see the module docstring)."""

    def __init__(self, store: SharedStore, config: ServiceConfig) -> None:
        super().__init__(store, config)
        self.shared = store
        self._replicas: Replicas | None = None
        self._on_tick: Callable[[], None] = lambda: None
        self._ticks = 0
        self._pruning: asyncio.Task[None] | None = None

    @property
    def _shared(self) -> SharedStore:
        assert self.shared is not None
        return self.shared

    @property
    def replicas(self) -> Replicas:
        """This process's part among the replicas (``attach`` made it)."""
        assert self._replicas is not None, "attach() the engine's events first"
        return self._replicas

    def attach(self, events: ReplicaEvents) -> None:
        self._on_tick = events.on_tick
        self._replicas = Replicas(
            self._shared,
            replica_id=self.id,
            lease=self.config.replica_lease,
            on_notice=events.on_notice,
            on_swept=events.on_swept,
            on_tick=self._tick,
            on_resync=events.on_resync,
        )

    async def start(self) -> None:
        """Joins the replicas (their notices, heartbeats; sweeps dead replicas' holds)."""
        await self.replicas.start()

    async def close(self) -> None:
        if self._pruning is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._pruning, 5.0)
        await self.replicas.close()

    def _tick(self) -> None:
        """Every heartbeat: the engine's own, and (every 30th) old counts pruned."""
        self._on_tick()
        self._ticks += 1
        if self._ticks % _PRUNE_EVERY_TICKS == 1 and (
            self._pruning is None or self._pruning.done()
        ):
            self._pruning = asyncio.get_running_loop().create_task(self._prune())

    async def _prune(self) -> None:
        now, config = time.time(), self.config
        try:
            await self._shared.prune_limits(
                now - config.rate_limit_window, now - config.spam_window
            )
            await self._shared.forget_replicas_before(now - 24 * 3600.0)
        except Exception:
            logger.warning("pruning the shared counts failed", exc_info=True)

    # -- notices ------------------------------------------------------------------------
    def publish(self, kind: str, account_id: str, item_id: str) -> None:
        self.replicas.publish(kind, account_id, item_id)

    def together(self) -> AbstractContextManager[None]:
        return self.replicas.together()

    # -- limits, counted in the database -------------------------------------------------
    async def account_by_key(
        self, key_hash: str, named: str | None = None
    ) -> tuple[AccountRecord | None, RateCount | None, InteractionRecord | None]:
        config = self.config
        record, retry_after, interaction = await self._shared.account_by_key_hash_counted(
            key_hash, time.time(), config.rate_limit_requests, config.rate_limit_window, named
        )
        if record is None:
            return None, None, interaction
        return record, (None if record.suspended else RateCount(retry_after)), interaction

    async def rate_hit(self, account_id: str) -> float | None:
        config = self.config
        return await self._shared.rate_hit(
            account_id, time.time(), config.rate_limit_requests, config.rate_limit_window
        )

    async def spam_hit(self, account_id: str, text: str, to: str) -> bool:
        recipients = await self._shared.spam_hit(
            account_id, fingerprint(text), to, time.time(), self.config.spam_window
        )
        return recipients >= self.config.spam_recipients

    async def forget_spam(self, account_id: str) -> None:
        await self._shared.forget_spam(account_id)

    # -- interactions and their holds ----------------------------------------------------
    def stamp(self, record: InteractionRecord, *, held: bool) -> InteractionRecord:
        # Made here, and the request a wait holds is held here.
        return dataclasses.replace(record, owner=self.id, held_by=self.id if held else None)

    async def end_answered(
        self,
        record: InteractionRecord,
        now: float,
        event: dict[str, Any],
        outcome: InteractionOutcome | None,
        report: dict[str, Any],
        *,
        release: bool,
        inbound: InboundRecord | None,
        held_answer: HeldAnswer | None = None,
    ) -> Ending:
        # The end, its interaction.ended outcome and their notice in one transaction: a
        # request held on another replica is answered, and the outcome streams there are
        # handed the event, as soon as it commits. A request held here takes the answer
        # now: its hold is let go in the same statement. A send held after its 202 gets
        # its wait.ended in it too: its holder writes nothing more.
        wait_ended = held_answer() if held_answer is not None else None
        ended = await self._shared.end_and_report(
            record.id,
            record.account_id,
            now,
            event,
            outcome,
            report,
            self.id,
            release=self.id if release else None,
            inbound=inbound,
            wait_ended=wait_ended,
        )
        return Ending(
            ended.done,
            holder=ended.holder,
            let_go=ended.done and release,
            reported=ended.reported,
            waited=ended.waited,
            answer=wait_ended if ended.waited is not None else None,
            # Linked if it ended, named in its notice.
            inbound_stored=inbound is not None,
            published=True,
        )

    async def append_outcome(
        self,
        account_id: str,
        interaction_id: str,
        body: dict[str, Any],
        now: float,
        *,
        idempotency: IdempotencyRecord | None = None,
        release: bool = False,
    ) -> tuple[int, int]:
        # Its notice is published in the same transaction: the other replicas' readers
        # wake as it commits.
        return await self._shared.append_published_outcome(
            account_id,
            interaction_id,
            body,
            now,
            self.id,
            idempotency=idempotency,
            release=release,
        )

    async def release_hold(
        self, interaction_id: str, *, ended_only: bool = False
    ) -> InteractionRecord | None:
        return await self._shared.release_hold(interaction_id, self.id, ended_only=ended_only)

    async def take(self, interaction_id: str, *, hold: bool) -> bool:
        return await self._shared.take_interaction(interaction_id, self.id, hold=hold)


def coordinator_for(store: Store, config: ServiceConfig) -> Coordinator:
    """Replicas when other processes may serve from ``store`` too, else one process.
    The engine ``attach``es its events before it starts."""
    shared = shared_store(store)
    if shared is None:
        return LocalCoordinator(store, config)
    return ReplicaCoordinator(shared, config)
