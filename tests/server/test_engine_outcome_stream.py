"""The outcome stream's readers and the events handed to them as they are stored.

An append hands its event to the account's stream readers with the id of the account's
event before it: events heard that follow a reader's last one without a gap are sent on
without reading the store; a reader behind, or one that missed an event, reads. Run on
both stores (on PostgreSQL the engine is a replica: its appends also notify).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from engine_support import HUMAN, account, engine, next_delivery, reply, sms

from humanwire.server.config import SHARED_SMS_NUMBER
from humanwire.server.engine import Account, Engine
from humanwire.server.engine.events import PassedOver
from humanwire.types import OutcomeEvent

__all__ = ["account", "engine"]


def counted_reads(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every ``outcomes_after`` read of the store, by the position it read from."""
    reads: list[int] = []
    read = engine.store.outcomes_after

    def counting(account_id: str, after: int, limit: int) -> list[tuple[int, dict[str, Any]]]:
        reads.append(after)
        return read(account_id, after, limit)

    monkeypatch.setattr(engine.store, "outcomes_after", counting)
    return reads


def ended(n: int) -> dict[str, Any]:
    interaction_id = f"int_{n}"
    return {"interactionId": interaction_id, "eventType": "interaction.ended", "responded": True}


async def next_event(stream: AsyncIterator[OutcomeEvent | None]) -> OutcomeEvent:
    event = await asyncio.wait_for(stream.__anext__(), 5)
    assert event is not None
    return event


async def test_a_caught_up_reader_takes_the_next_event_without_reading(
    engine: Engine, account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await engine.events.append(account.id, "int_0", ended(0))
    reads = counted_reads(engine, monkeypatch)
    stream = engine.events.stream(account, first - 1 if first > 1 else 0, keepalive=30)
    # Behind: reads (its first event), then waits.
    assert (await next_event(stream)).interaction_id == "int_0"
    waiting = asyncio.ensure_future(next_event(stream))
    await asyncio.sleep(0.05)
    assert len(reads) == 1 and not waiting.done()

    second = await engine.events.append(account.id, "int_1", ended(1))
    event = await waiting
    assert (event.id, event.interaction_id) == (str(second), "int_1")
    assert len(reads) == 1  # handed over: no read

    # Two appends before the reader is back: both heard, both sent on unread.
    third = await engine.events.append(account.id, "int_2", ended(2))
    fourth = await engine.events.append(account.id, "int_3", ended(3))
    assert (await next_event(stream)).id == str(third)
    assert (await next_event(stream)).id == str(fourth)
    assert len(reads) == 1
    # One stored that this reader never heard of (as another replica's whose notice has
    # not come yet), then one heard: the gap before it is read, nothing skipped.
    waiting = asyncio.ensure_future(next_event(stream))
    await asyncio.sleep(0.05)
    unheard, _ = await engine.store.append_outcome(account.id, "int_4", ended(4), time.time())
    fifth = await engine.events.append(account.id, "int_5", ended(5))
    assert (await waiting).id == str(unheard)
    assert (await next_event(stream)).id == str(fifth)
    assert reads[1:] == [fourth]
    await stream.aclose()  # type: ignore[attr-defined]


async def test_a_reader_whose_cursor_is_not_the_accounts_last_event_reads(
    engine: Engine, account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    await engine.events.append(account.id, "int_0", ended(0))
    other, _key = await engine.accounts.create("other")
    await engine.events.append(other.id, "int_x", ended(9))
    reads = counted_reads(engine, monkeypatch)
    # From now on: its cursor is the service's last id (the other account's event).
    stream = engine.events.stream(account, None, keepalive=30)
    waiting = asyncio.ensure_future(next_event(stream))
    await asyncio.sleep(0.05)
    assert len(reads) == 1 and not waiting.done()
    appended = await engine.events.append(account.id, "int_1", ended(1))
    assert (await waiting).id == str(appended)
    assert len(reads) == 2  # its event follows int_0, not the cursor: read
    await stream.aclose()  # type: ignore[attr-defined]


async def test_an_event_another_replica_stored_is_handed_over_from_its_notice(
    engine: Engine, account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await engine.events.append(account.id, "int_0", ended(0))
    stream = engine.events.stream(account, first, keepalive=30)
    reads = counted_reads(engine, monkeypatch)
    waiting = asyncio.ensure_future(next_event(stream))
    await asyncio.sleep(0.05)
    # Stored by "another replica" (the store directly: nothing here wakes), then its
    # notice, as the listener hands it on.
    seq, after = await engine.store.append_outcome(account.id, "int_7", ended(7), time.time())
    engine.replica_notices.on_notice(
        "outcome", account.id, str(seq), {"after": after, "body": ended(7)}
    )
    event = await waiting
    assert (event.id, event.interaction_id) == (str(seq), "int_7")
    assert len(reads) == 1  # only the first read, that found it caught up
    # A notice without the event (too large to carry) or a malformed one: read.
    for detail in ({"after": seq, "body": None}, {"after": str(seq), "body": {}}, None):
        waiting = asyncio.ensure_future(next_event(stream))
        await asyncio.sleep(0.05)
        later, _ = await engine.store.append_outcome(account.id, "int_8", ended(8), time.time())
        engine.replica_notices.on_notice("outcome", account.id, str(later), detail)
        assert (await waiting).id == str(later)
        assert reads[-1] == seq
        seq = later
    assert len(reads) == 4
    await stream.aclose()  # type: ignore[attr-defined]


async def test_an_answers_end_is_handed_to_a_caught_up_reader(
    engine: Engine, account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reply ends its interaction (on PostgreSQL with its outcome, in one transaction,
    ``end_and_report``): a reader caught up gets ``interaction.ended`` at once, unread."""
    first = await engine.events.append(account.id, "int_0", ended(0))
    stream = engine.events.stream(account, first, keepalive=30)
    reads = counted_reads(engine, monkeypatch)
    waiting = asyncio.ensure_future(next_event(stream))
    await asyncio.sleep(0.05)
    held = asyncio.create_task(engine.send_message(account, sms(wait_time=30)))
    await next_delivery(engine, account)
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "yes"))
    event = await waiting
    response = await held
    assert (event.event_type, event.interaction_id) == (
        "interaction.ended",
        response.interaction_id,
    )
    assert int(event.id) > first and len(reads) == 1  # handed over: no read
    await stream.aclose()  # type: ignore[attr-defined]


def waited(n: int) -> dict[str, Any]:
    return {"interactionId": f"int_{n}", "eventType": "wait.ended", "response": {"n": n}}


async def test_a_reader_asking_for_one_event_type_gets_only_those_and_no_gap(
    engine: Engine, account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    start = await engine.store.last_outcome_id()
    reads = counted_reads(engine, monkeypatch)
    stream = engine.events.stream(account, start, keepalive=30, only="wait.ended")
    waiting = asyncio.ensure_future(next_event(stream))
    await asyncio.sleep(0.05)
    await engine.events.append(account.id, "int_1", ended(1))
    await asyncio.sleep(0.05)
    assert not waiting.done()  # passed over, not sent
    second = await engine.events.append(account.id, "int_1", waited(1))
    event = await waiting
    assert (event.id, event.event_type, event.interaction_id) == (
        str(second),
        "wait.ended",
        "int_1",
    )
    # The left-out events still count as heard: the next one follows without a read.
    await engine.events.append(account.id, "int_2", ended(2))
    fourth = await engine.events.append(account.id, "int_2", waited(2))
    assert (await next_event(stream)).id == str(fourth)
    assert len(reads) == 1


async def test_a_busy_stream_of_left_out_events_still_sends_its_keepalive(
    engine: Engine, account: Account
) -> None:
    stream = engine.events.stream(account, None, keepalive=0.3, only="wait.ended")
    first = asyncio.ensure_future(asyncio.wait_for(stream.__anext__(), 5))
    began = time.monotonic()
    n = 0
    last = 0
    while not first.done():
        last = await engine.events.append(
            account.id, f"int_{n}", ended(n)
        )  # quicker than keepalive
        n += 1
        await asyncio.sleep(0.05)
    # The keepalive, not an event; it carries the id of the last event left out before it.
    keepalive = await first
    assert isinstance(keepalive, PassedOver) and keepalive.cursor <= last
    assert 0.25 < time.monotonic() - began < 4 and n >= 5  # 4: a slow machine's slack
    # What was left out after it comes with the next keepalive; said once, never again.
    following = await asyncio.wait_for(stream.__anext__(), 5)
    assert following == (None if keepalive.cursor == last else PassedOver(last))
    await stream.aclose()  # type: ignore[attr-defined]


async def test_a_keepalive_names_the_last_event_left_out_once(
    engine: Engine, account: Account
) -> None:
    stream = engine.events.stream(account, None, keepalive=0.2, only="wait.ended")
    assert await asyncio.wait_for(stream.__anext__(), 5) is None  # nothing left out yet
    await engine.events.append(account.id, "int_1", ended(1))
    skipped = await engine.events.append(account.id, "int_2", ended(2))
    assert await asyncio.wait_for(stream.__anext__(), 5) == PassedOver(skipped)
    assert await asyncio.wait_for(stream.__anext__(), 5) is None  # said once
    wanted = await engine.events.append(account.id, "int_2", waited(2))
    event = await asyncio.wait_for(stream.__anext__(), 5)
    assert isinstance(event, OutcomeEvent) and event.id == str(wanted)
    assert await asyncio.wait_for(stream.__anext__(), 5) is None  # nothing left out since
    await stream.aclose()  # type: ignore[attr-defined]
    # Unfiltered, nothing is ever left out: keepalives stay plain.
    everything = engine.events.stream(account, await engine.store.last_outcome_id(), keepalive=0.2)
    await engine.events.append(account.id, "int_3", ended(3))
    assert isinstance(await asyncio.wait_for(everything.__anext__(), 5), OutcomeEvent)
    assert await asyncio.wait_for(everything.__anext__(), 5) is None
    await everything.aclose()  # type: ignore[attr-defined]


async def test_a_long_poll_for_one_event_type_passes_the_others(
    engine: Engine, account: Account
) -> None:
    start = await engine.store.last_outcome_id()
    skipped = await engine.events.append(account.id, "int_1", ended(1))
    # Nothing of that type: the cursor still passes what was left out.
    page = await engine.events.page(account, start, 0, "wait.ended")
    assert (page.events, page.cursor) == ([], str(skipped))
    # Held past left-out events until one of its type comes.
    polling = asyncio.ensure_future(engine.events.page(account, skipped, 5, "wait.ended"))
    await asyncio.sleep(0.05)
    await engine.events.append(account.id, "int_2", ended(2))
    await asyncio.sleep(0.1)
    assert not polling.done()
    wanted = await engine.events.append(account.id, "int_2", waited(2))
    page = await asyncio.wait_for(polling, 5)
    assert [(e.id, e.event_type) for e in page.events] == [(str(wanted), "wait.ended")]
    assert page.cursor == str(wanted)
    # Both kinds without the filter, in order.
    page = await engine.events.page(account, start, 0)
    assert [e.event_type for e in page.events] == [
        "interaction.ended",
        "interaction.ended",
        "wait.ended",
    ]
