"""The events role (``engine.events``): the account's outcome stream, appended and read
(``GET /events``, ``/events/stream``; docs/design.md "Many waits from one client").

Every interaction that ends appends ``interaction.ended``; a respond-async send appends
``wait.ended`` with the body its held request would have returned once its wait is over.
Each append wakes the account's stream readers and long-polls here, and (through the
``Coordinator``, in the same transaction) on the other replicas. Ids increase (one
sequence for the service), so ``after=<id>`` reads exactly what followed; a reader holds
on a future of its account, settled by the next append.

The answer of a message send held after answering 202 (``Prefer: respond-async``),
written by whoever ends the interaction.

Such a send's answer reaches its client as a ``wait.ended`` outcome. Its holder used to
write it once it heard the end: with replicas, a second transaction after the one that
ended the interaction, on the answer's path (a round trip and a WAL flush more, before the
client heard anything). The answer of a message is a function of the ended interaction
and the response template the send was made with, so the replica that ends it writes the
``wait.ended`` (and its key's stored result) in the same statement as the end, and lets
go of the hold there; the holder, told by the notice, writes nothing.

The send records what that takes in its stored request (``HELD_ANSWER``): the response
template, and the ``Idempotency-Key`` and fingerprint it runs under. Only an answer that
comes ``HELD_ANSWER_MARGIN`` seconds or more before the send's ``waitTime`` ends is
written so: nearer the end, the holder's own timer may be answering "no response" at the
same moment, and it stays the holder's to write.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from humanwire.types import MessageResponse, OutcomeEvent, OutcomePage

from .. import templates
from ..errors import InvalidRequest
from ..store.records import (
    IdempotencyRecord,
    InteractionOutcome,
    InteractionRecord,
    WaitEndedAnswer,
)
from ._common import Account
from .holds import Hold, Release, SendContext
from .runtime import Runtime, Wakeups, _metadata, wire_json

__all__ = [
    "CURSOR",
    "EVENT_TYPES",
    "HELD_ANSWER",
    "HELD_ANSWER_MARGIN",
    "OutcomeEvents",
    "PassedOver",
    "answered_message",
    "held_answer",
    "parse_cursor",
    "parse_event_type",
    "wait_ended",
    "wait_ended_event",
]


PAGE_SIZE = 500
"""Events one ``GET /events`` returns at most (the cursor continues)."""
OUTCOME_TTL = 25 * 3600.0
"""Outcome events are kept at least 24 hours (docs/design.md), pruned after 25."""
OUTCOME_PRUNE_EVERY = 1000

CURSOR = re.compile(r"[0-9]{1,18}")
"""An event id, as ``after`` and ``Last-Event-ID`` take it (ASCII digits: ``isdigit``
also takes ``²``, which ``int`` refuses)."""


def parse_cursor(value: str | None, name: str = "after") -> int | None:
    """``after`` / ``Last-Event-ID`` (``name``): an event id, or None when not given (from
    now). Given empty it is refused: it names no event, and "from now" or "from the
    start" would be a guess."""
    if value is None:
        return None
    if not CURSOR.fullmatch(value):
        raise InvalidRequest(f"{name} must be an event id from an earlier answer", field=name)
    return int(value)


EVENT_TYPES = ("interaction.ended", "wait.ended")
"""The outcome stream's event types (``eventType`` picks one)."""


def parse_event_type(value: str | None) -> str | None:
    """``eventType``: one of ``EVENT_TYPES``, or None (all of them)."""
    if value is None:
        return None
    if value not in EVENT_TYPES:
        raise InvalidRequest(
            f"eventType must be one of {', '.join(EVENT_TYPES)}", field="eventType"
        )
    return value


@dataclass(frozen=True)
class PassedOver:
    """A keepalive of a stream that left events out (``only``) since the last one it
    sent: ``cursor`` is the last of them. Written as an ``id:`` line with no data, it
    moves the reader's ``Last-Event-ID`` past them, so a reconnect does not read them
    again; no event is dispatched."""

    cursor: int


class OutcomeEvents:
    """The outcome stream: what was appended and who waits for the next append (the
    accounts' long-polls and stream readers)."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        # GET /events long-polls by account.
        self._wakeups: Wakeups[str] = Wakeups()
        self._collectors: dict[str, set[OutcomeCollector]] = {}
        """Per account: its stream readers' collectors of what was appended."""
        self._appended = 0

    # -- appended ----------------------------------------------------------------------
    async def ended(
        self, record: InteractionRecord, event: dict[str, Any] | None, outcome: str | None
    ) -> None:
        """Appends the ``interaction.ended`` event of ``record``."""
        await self.append(record.account_id, record.id, self.ended_report(record, event, outcome))

    @staticmethod
    def ended_report(
        record: InteractionRecord, event: dict[str, Any] | None, outcome: str | None
    ) -> dict[str, Any]:
        """The ``interaction.ended`` outcome event of ``record``."""
        return {
            "interactionId": record.id,
            "eventType": "interaction.ended",
            "result": event,
            "responded": event is not None and outcome != "no_answer",
            "metadata": _metadata(record),
        }

    async def append(
        self,
        account_id: str,
        interaction_id: str,
        body: dict[str, Any],
        *,
        idempotency: IdempotencyRecord | None = None,
        release: bool = False,
    ) -> int:
        """Stores an outcome event (with ``idempotency``, the result of the send it
        reports; with ``release``, this replica's hold on the interaction let go) and
        wakes the account's ``GET /events`` readers, here and on the other replicas
        (whose notice the write itself publishes)."""
        now = self._runtime.clock()
        seq, after = await self._runtime.coordinator.append_outcome(
            account_id, interaction_id, body, now, idempotency=idempotency, release=release
        )
        await self.stored(account_id, OutcomeHandoff(after, seq, body), now)
        return seq

    async def stored(self, account_id: str, handoff: OutcomeHandoff, now: float) -> None:
        """An outcome of the account was stored here (by ``append``, or with the write
        that ended its interaction)."""
        self.heard(account_id, handoff)
        self._appended += 1
        if self._appended % OUTCOME_PRUNE_EVERY == 0:
            await self._runtime.store.delete_outcomes_before(now - OUTCOME_TTL)

    def heard(self, account_id: str, handoff: OutcomeHandoff | None) -> None:
        """An outcome of the account was stored (here or by another replica): handed to
        its stream readers, and its long-polls woken."""
        for collector in self._collectors.get(account_id, ()):
            collector.add(handoff)
        self._wakeups.wake(account_id)

    async def wait_ended(
        self,
        hold: Hold,
        status: int,
        body: dict[str, Any],
        *,
        idempotency: IdempotencyRecord | None = None,
    ) -> None:
        """The ``wait.ended`` event of a send answered 202: ``status`` and ``body``, what
        its held request would have answered (and the hold let go, if it is left)."""
        release = hold.release is Release.UNRELEASED
        if release:
            hold.let_go()  # in the same transaction as the event
        interaction_id = hold.interaction_id
        await self.append(
            hold.record.account_id,
            interaction_id,
            wait_ended_event(interaction_id, status, body),
            idempotency=idempotency,
            release=release,
        )

    def missed(self) -> None:
        """The notices of other replicas' appends may have been missed (the notice
        connection was down): every reader reads, every long-poll looks again."""
        for collectors in self._collectors.values():
            for collector in collectors:
                collector.add(None)
        self._wakeups.wake_all()

    def wake_all(self) -> None:
        """Every long-poll and stream reader looks again (the service stops)."""
        self._wakeups.wake_all()

    # -- read --------------------------------------------------------------------------
    async def _page(self, account: Account, after: int) -> list[tuple[int, dict[str, Any]]]:
        return await self._runtime.store.outcomes_after(account.id, after, PAGE_SIZE)

    async def page(
        self,
        account: Account,
        after: int | None,
        wait: float | None,
        only: str | None = None,
    ) -> OutcomePage:
        """The account's events past ``after`` (None: from now), holding up to ``wait``
        seconds for the first one; ``only``: the events of that type (the cursor passes
        the others)."""
        store, lifecycle = self._runtime.store, self._runtime.lifecycle
        position = await store.last_outcome_id() if after is None else after
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (wait or 0.0)
        while True:
            # Registered before the read, so an event appended in between still wakes us.
            waiter = self._wakeups.add(account.id)
            try:
                found = await self._page(account, position)
                if found:
                    position = found[-1][0]
                kept = [(seq, body) for seq, body in found if _wanted(body, only)]
                remaining = deadline - loop.time()
                if kept or len(found) == PAGE_SIZE or remaining <= 0 or lifecycle.draining:
                    break
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(waiter, remaining)
            finally:
                self._wakeups.discard(account.id, waiter)
        events = [_event(seq, body) for seq, body in kept]
        return OutcomePage(events=events, cursor=str(position))

    async def stream(
        self, account: Account, after: int | None, keepalive: float, only: str | None = None
    ) -> AsyncIterator[OutcomeEvent | PassedOver | None]:
        """Events past ``after`` as they come (None every ``keepalive`` seconds of quiet,
        for a comment line that keeps proxies from closing the stream); ``only``: the
        events of that type. Left out, the others cost the client nothing: a client
        waiting on ``wait.ended`` is not woken by every ``interaction.ended``; its
        keepalive is then ``PassedOver``, the last id left out, at most once a
        ``keepalive``."""
        store, lifecycle = self._runtime.store, self._runtime.lifecycle
        # Collects what is appended from before the first read on: events that follow
        # the last one sent are sent on without reading the store.
        collector = OutcomeCollector()
        collectors = self._collectors.setdefault(account.id, set())
        collectors.add(collector)
        position = await store.last_outcome_id() if after is None else after
        found: list[tuple[int, dict[str, Any]]] | None = None
        loop = asyncio.get_running_loop()
        sent_at = loop.time()
        told = position  # the last id the reader was given (an event's, or passed over)
        try:
            while not lifecycle.draining:
                # Registered before the read, and kept while the events are sent on:
                # any append from then on wakes us. A read that caught up is not
                # repeated before the next append (each append costs every reader one
                # read, not two), and none is needed for appends heard in full.
                waiter = self._wakeups.add(account.id)
                try:
                    if found is None:
                        collector.take(position)  # what the read below sees
                        found = await self._page(account, position)
                    for seq, body in found:
                        position = seq
                        if _wanted(body, only):
                            sent_at, told = loop.time(), seq
                            yield _event(seq, body)
                    if len(found) == PAGE_SIZE:
                        found = None
                        continue  # more past this page: read on at once
                    try:
                        await asyncio.wait_for(waiter, keepalive)
                        # Busy with events ``only`` leaves out: the line still comes.
                        due = loop.time() - sent_at >= keepalive
                    except asyncio.TimeoutError:
                        due = True
                    if due:
                        sent_at = loop.time()
                        yield PassedOver(position) if position > told else None
                        told = position
                    found = collector.take(position)
                finally:
                    self._wakeups.discard(account.id, waiter)
        finally:
            collectors.discard(collector)
            if not collectors:
                self._collectors.pop(account.id, None)


def wait_ended_event(interaction_id: str, status: int, body: dict[str, Any]) -> dict[str, Any]:
    """A send's ``wait.ended`` outcome: ``status`` and ``body``, what its held request
    would have answered."""
    return {
        "interactionId": interaction_id,
        "eventType": "wait.ended",
        "response": body,
        "responded": body.get("responded") is True,
        "metadata": body.get("metadata"),
        "status": status,
    }


def _wanted(body: dict[str, Any], only: str | None) -> bool:
    return only is None or body.get("eventType") == only


def _event(seq: int, body: dict[str, Any]) -> OutcomeEvent:
    return OutcomeEvent.model_validate({**body, "id": str(seq)})


HELD_ANSWER = "_heldAnswer"
"""The stored request's key for what a respond-async message send's answer needs."""
HELD_ANSWER_MARGIN = 1.0
"""Seconds before the end of the send's ``waitTime`` past which its holder writes it."""
HELD_STATUS = 200
"""The HTTP status a message send answers with."""


def held_answer(context: SendContext, response_template: str | None) -> dict[str, Any]:
    """The request entry (``HELD_ANSWER``) of a message send made with ``context``: empty
    unless it asked to be answered 202."""
    if context.accept is None:
        return {}
    spec: dict[str, Any] = {"template": response_template}
    if context.run is not None:
        spec["key"] = context.run.key
        spec["fingerprint"] = context.run.fingerprint
    return {HELD_ANSWER: spec}


def answered_message(
    interaction_id: str, response_template: str | None, answered: InteractionRecord
) -> MessageResponse:
    """What a held message send answers once ``answered`` (the ended interaction with its
    reply) ends it."""
    assert answered.result is not None
    reply = str(answered.result["payload"]["body"])
    return MessageResponse(
        interaction_id=interaction_id,
        status="ended",
        responded=True,
        response=templates.response_text(response_template, reply),
        reply=reply,
        delivery_status=answered.delivery_status,
        metadata=_metadata(answered),
    )


def wait_ended(
    record: InteractionRecord,
    event: dict[str, Any],
    outcome: InteractionOutcome | None,
    now: float,
) -> WaitEndedAnswer | None:
    """The ``wait.ended`` of ``record`` if ``event`` (its reply, at ``now``) ends it while a
    respond-async send may hold it; None when its holder is to write it."""
    spec = record.request.get(HELD_ANSWER)
    if (
        not isinstance(spec, dict)
        or record.kind != "message"
        or outcome is not None
        or record.wait_deadline is None
        or now > record.wait_deadline - HELD_ANSWER_MARGIN
        or not isinstance(event.get("payload"), dict)
        or "body" not in event["payload"]
    ):
        return None
    template = spec.get("template")
    ended = dataclasses.replace(record, status="ended", result=event, outcome=None, ended_at=now)
    response = answered_message(
        record.id, template if isinstance(template, str) else None, ended
    ).to_wire()
    idempotency = None
    key, fingerprint = spec.get("key"), spec.get("fingerprint")
    if isinstance(key, str) and isinstance(fingerprint, str):
        idempotency = IdempotencyRecord(
            account_id=record.account_id,
            key=key,
            fingerprint=fingerprint,
            status_code=HELD_STATUS,
            body=wire_json(response),  # as the HTTP layer encodes the send's answer
            created_at=now,
        )
    return WaitEndedAnswer(wait_ended_event(record.id, HELD_STATUS, response), idempotency)


@dataclass(frozen=True)
class OutcomeHandoff:
    """An outcome event just stored, handed to the account's stream readers: ``after``
    is the id of the account's event before it."""

    after: int
    id: int
    body: dict[str, Any]


class OutcomeCollector:
    """What a stream reader heard appended since it last looked: the events handed to
    it, in the order heard (None: one it must read, its body not carried)."""

    LIMIT = 500

    def __init__(self) -> None:
        self.heard: list[OutcomeHandoff | None] = []

    def add(self, handoff: OutcomeHandoff | None) -> None:
        if len(self.heard) >= self.LIMIT:
            self.heard = [None]  # a reader that fell behind reads instead
        self.heard.append(handoff)

    def take(self, position: int) -> list[tuple[int, dict[str, Any]]] | None:
        """The events past ``position`` heard, if they follow it without a gap and
        nothing heard is left out; None: read them. Clears what was heard."""
        heard, self.heard = self.heard, []
        events = [handoff for handoff in heard if handoff is not None]
        if not events or len(events) < len(heard):
            return None
        chain: list[tuple[int, dict[str, Any]]] = []
        for handoff in sorted(events, key=lambda h: h.id):
            if handoff.id <= position:
                continue  # sent on already
            if handoff.after != position:
                return None  # one between them was not heard (yet)
            chain.append((handoff.id, handoff.body))
            position = handoff.id
        return chain
