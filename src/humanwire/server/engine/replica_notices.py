"""What other replicas announce (``Coordinator``'s notices): a change that happened
elsewhere wakes what waits for it here, as it would have had it happened here: an
outcome for the outcome stream's readers, an interaction a request held here waits on
(its answer, or "no response"), a delivery, an inbox change. A replica that died leaves
its holds to be swept; a notice connection that was down has what it missed re-read.

Waiting is event-driven: each held request is a ``Hold`` (``holds``) registered in
``Holds`` (``engine.holding.held``); the reply, submission or call end answers it. No
polling loops and no task per wait."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..literals import DELIVERY_STATUS
from ..store.records import INTERACTION_OUTCOME, InteractionRecord
from .coordination import ReplicaEvents
from .events import HELD_ANSWER, OutcomeEvents, OutcomeHandoff
from .holding import Deadlines, Holding
from .holds import Follow
from .runtime import Runtime


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
