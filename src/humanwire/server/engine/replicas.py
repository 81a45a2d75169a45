"""The engine with replicas: what it agrees on with the other processes sharing its
PostgreSQL database (``ReplicaCoordinator``, the runtime's ``Coordinator`` there: see
``runtime``), and what they announce (``ReplicaNotices``, ``engine.replica_notices``): a
change that happened elsewhere wakes what waits for it here, as it would have had it
happened here: an outcome for the outcome stream's readers, an interaction a request
held here waits on (its answer, or "no response"), a delivery, an inbox change. A
replica that died leaves its holds to be swept; a notice connection that was down has
what it missed re-read.

Waiting is event-driven: each held request is a ``Hold`` (``holds``) registered in
``Holds`` (``engine.holding.held``); the reply, submission or call end answers it. No
polling loops and no task per wait."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ..background.replicas import Replicas
from ..config import ServiceConfig
from ..literals import DELIVERY_STATUS
from ..store.protocol import SharedStore
from ..store.records import (
    INTERACTION_OUTCOME,
    AccountRecord,
    IdempotencyRecord,
    InboundRecord,
    InteractionOutcome,
    InteractionRecord,
)
from ._common import RateCount
from .events import HELD_ANSWER, OutcomeEvents, OutcomeHandoff
from .holding import Deadlines, Holding
from .holds import Follow
from .runtime import Coordinator, Ending, HeldAnswer, ReplicaEvents, Runtime, fingerprint

__all__ = ["ReplicaCoordinator", "ReplicaNotices"]

logger = logging.getLogger("humanwire.engine")


_PRUNE_EVERY_TICKS = 30


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


class ReplicaNotices:
    """Listens to the other replicas (see the module docstring): built once, it attaches
    itself to the runtime's coordinator."""

    def __init__(
        self, runtime: Runtime, holding: Holding, deadlines: Deadlines, events: OutcomeEvents
    ) -> None:
        self._runtime = runtime
        self._store = runtime.store
        self._holding = holding
        self._deadlines = deadlines
        self._events = events
        runtime.coordinator.attach(
            ReplicaEvents(
                on_notice=self.on_notice,
                on_swept=self._swept,
                on_tick=runtime.outbox.wake,  # rows other replicas left in the outbox
                on_resync=self._resync,
            )
        )

    def on_notice(self, kind: str, account_id: str, item_id: str, detail: Any = None) -> None:
        """Another replica announced a change: wake what waits for it here, as the
        change would have had it happened here."""
        if kind == "outcome":
            self._events.heard(account_id, _outcome_handoff(item_id, detail))
            return
        if kind == "interaction":
            # A request held here may need the row (a task: the listener reads on).
            self._runtime.background.spawn(self._interaction_changed(account_id, item_id, detail))
            return
        if kind == "delivery":
            self._runtime.notices.delivery.wake(account_id)
        self._runtime.notices.inbox.notify(account_id, kind, item_id)

    async def _interaction_changed(self, account_id: str, item_id: str, detail: Any) -> None:
        await self._settle_held(item_id, detail)
        self._runtime.notices.status.wake(item_id)
        self._runtime.notices.inbox.notify(account_id, "interaction", item_id)

    async def _settle_held(self, interaction_id: str, detail: Any = None) -> None:
        """A request held here for an interaction that ended elsewhere gets what it
        became (its answer, or "no response"): from the notice's ``detail`` when it
        carries the ending, else read (and the hold let go) in one statement."""
        hold = self._holding.held.waiting(interaction_id)
        if hold is None:
            return
        record = _ended_from_notice(hold.record, detail)
        missed = False
        if isinstance(detail, dict) and detail.get("waitEnded") is True:
            # Its ender wrote its wait.ended and let go of it, in the same statement.
            hold.follow = Follow.WRITTEN
            hold.let_go()
        elif record is not None:
            hold.unreleased()  # let go with its wait.ended, or as its wait ends
        else:
            # Ended with the hold still here: let go and read it in one statement.
            record = await self._runtime.coordinator.release_hold(interaction_id, ended_only=True)
            if record is not None:
                hold.let_go()
            missed = record is None
        if record is None:
            record = await self._store.get_interaction(interaction_id)
        if record is None or record.status == "pending":
            return  # another change (a delivery status): keep holding
        if missed and HELD_ANSWER in hold.record.request:
            # Ended and no longer held here: its ender let go of it as it wrote its
            # wait.ended (the notice that said so was missed: ``_resync``).
            hold.follow = Follow.WRITTEN
            hold.let_go()
        self._deadlines.disarm(interaction_id)
        hold.settle(record)

    async def _swept(self, records: list[InteractionRecord]) -> None:
        """Holds of a replica that died: answers handed to it go to the webhooks."""
        for record in records:
            if record.status == "ended" and record.result is not None and record.kind != "call":
                await self._runtime.outbox.emit(record.account_id, record.result, record.id)

    async def _resync(self) -> None:
        """The notice connection was down: what it missed is re-read. Held requests
        check their interaction; long-polls wake and look again, stream readers read."""
        for hold in self._holding.held:
            await self._settle_held(hold.interaction_id)
        self._events.missed()
        self._runtime.notices.wake_all()


def _ended_from_notice(held: InteractionRecord, detail: Any) -> InteractionRecord | None:
    """The held interaction as another replica's notice says it ended (``end_and_report``
    carries ``{"ended": {"endedAt", "outcome", "result"}, "deliveryStatus"}``; None: not
    carried, read it)."""
    if not isinstance(detail, dict):
        return None
    ended = detail.get("ended")
    if not isinstance(ended, dict):
        return None
    ended_at, result = ended.get("endedAt"), ended.get("result")
    outcome, delivery = ended.get("outcome"), detail.get("deliveryStatus")
    if (
        not isinstance(ended_at, (int, float))
        or not (result is None or isinstance(result, dict))
        or not (outcome is None or INTERACTION_OUTCOME.holds(outcome))
        or not (delivery is None or DELIVERY_STATUS.holds(delivery))
    ):
        return None
    return dataclasses.replace(
        held,
        status="ended",
        ended_at=float(ended_at),
        result=result,
        outcome=outcome,
        delivery_status=delivery,
    )


def _outcome_handoff(item_id: str, detail: Any) -> OutcomeHandoff | None:
    """The event an ``outcome`` notice carries (None: the readers read it)."""
    if not isinstance(detail, dict):
        return None
    after, body = detail.get("after"), detail.get("body")
    if type(after) is not int or not isinstance(body, dict) or not item_id.isdigit():
        return None
    return OutcomeHandoff(after, int(item_id), body)
