"""The waiting core of the engine: the engine's state, its start and stop, the window
deadlines, the held requests and what wakes them, the spam and suspension checks of a send,
and the live change notices. Every other part of the engine builds on ``EngineCore``.

Waiting is event-driven: each held request is a ``Hold`` (``holds``: its future, its
state, its hold in the store) registered in ``Holds``; the reply, submission or call end
answers it. A held request's ``waitTime`` is a timer of its own on the replica holding it
(it expires the hold with "no response"). An interaction's last window (the end of its
follow-up window, or of its wait when it has none) is a step of the schedule
(``WINDOW_STEP``, ``docs/explanation/schedule.md``), armed in the statement that creates
the interaction and run, once due, by whichever replica claimed it: an open window no
request holds costs no memory and no work until it falls due, and survives a restart or
the death of the replica that created it. No polling loops and no task per wait."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..config import ServiceConfig
from ..literals import DELIVERY_STATUS
from ..store.records import INTERACTION_OUTCOME, InteractionRecord
from ._common import (
    OutcomeHandoff,
)
from .coordination import ReplicaEvents
from .delivering import Delivering
from .held_answers import HELD_ANSWER
from .holds import Follow


class EngineCore(Delivering):
    """The engine's core, its parts in the order each builds on the last: ``state``
    (the runtime and the roles built on it, start and stop), ``deadlines`` (windows
    closing), ``holding`` (held requests and their answers), ``opening`` (an interaction
    created or re-attached to), ``delivering`` (handed to a provider, its delivery
    status), and here what other replicas announce."""

    def __init__(self, config: ServiceConfig, **options: Any) -> None:
        super().__init__(config, **options)
        self.coordinator.attach(
            ReplicaEvents(
                on_notice=self._on_notice,
                on_swept=self._swept,
                on_tick=self.outbox.wake,  # rows other replicas left in the outbox
                on_resync=self._resync,
            )
        )

    def _on_notice(self, kind: str, account_id: str, item_id: str, detail: Any = None) -> None:
        """Another replica announced a change: wake what waits for it here, as the
        change would have had it happened here."""
        if kind == "outcome":
            self.events.heard(account_id, _outcome_handoff(item_id, detail))
            return
        if kind == "interaction":
            # A request held here may need the row (a task: the listener reads on).
            self._spawn(self._interaction_changed(account_id, item_id, detail))
            return
        if kind == "delivery":
            self.runtime.notices.delivery.wake(account_id)
        self.runtime.notices.inbox.notify(account_id, kind, item_id)

    async def _interaction_changed(self, account_id: str, item_id: str, detail: Any) -> None:
        await self._settle_held(item_id, detail)
        self.runtime.notices.status.wake(item_id)
        self.runtime.notices.inbox.notify(account_id, "interaction", item_id)

    async def _settle_held(self, interaction_id: str, detail: Any = None) -> None:
        """A request held here for an interaction that ended elsewhere gets what it
        became (its answer, or "no response"): from the notice's ``detail`` when it
        carries the ending, else read (and the hold let go) in one statement."""
        hold = self._holds.waiting(interaction_id)
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
            record = await self.coordinator.release_hold(interaction_id, ended_only=True)
            if record is not None:
                hold.let_go()
            missed = record is None
        if record is None:
            record = await self.store.get_interaction(interaction_id)
        if record is None or record.status == "pending":
            return  # another change (a delivery status): keep holding
        if missed and HELD_ANSWER in hold.record.request:
            # Ended and no longer held here: its ender let go of it as it wrote its
            # wait.ended (the notice that said so was missed: ``_resync``).
            hold.follow = Follow.WRITTEN
            hold.let_go()
        self._disarm(interaction_id)
        hold.settle(record)

    async def _swept(self, records: list[InteractionRecord]) -> None:
        """Holds of a replica that died: answers handed to it go to the webhooks."""
        for record in records:
            if record.status == "ended" and record.result is not None and record.kind != "call":
                await self.outbox.emit(record.account_id, record.result, record.id)

    async def _resync(self) -> None:
        """The notice connection was down: what it missed is re-read. Held requests
        check their interaction; long-polls wake and look again, stream readers read."""
        for hold in self._holds:
            await self._settle_held(hold.interaction_id)
        self.events.missed()
        self.runtime.notices.wake_all()


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
