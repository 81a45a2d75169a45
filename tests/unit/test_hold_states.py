"""A held request's states, on the ``Hold`` alone (the engine's use of them:
``tests/server/test_engine_holds.py``)."""

from __future__ import annotations

import asyncio
import dataclasses

from humanwire.server.engine.holds import Follow, Hold, Holds, HoldState, Release, SendContext
from humanwire.server.store.records import InteractionRecord


def record(interaction_id: str = "int_1") -> InteractionRecord:
    return InteractionRecord(
        id=interaction_id,
        account_id="acc_1",
        kind="message",
        channel="sms",
        to_addr="+12025550100",
        from_addr="+12025550199",
        request={"message": "go?"},
        created_at=0.0,
        status="pending",
        wait_deadline=30.0,
        follow_up_deadline=None,
    )


def ended(held: InteractionRecord, result: dict[str, object] | None) -> InteractionRecord:
    return dataclasses.replace(held, status="ended", ended_at=1.0, result=result)


def new_hold(context: SendContext | None = None) -> Hold:
    future: asyncio.Future[InteractionRecord | None] = asyncio.get_running_loop().create_future()
    return Hold(record(), future, context or SendContext())


async def test_a_new_hold_waits_with_its_hold_recorded_and_not_followed() -> None:
    hold = new_hold()
    assert (hold.state, hold.release, hold.follow) == (
        HoldState.HOLDING,
        Release.HELD,
        Follow.NONE,
    )
    assert hold.holding and not hold.answered.done() and not hold.followed


async def test_an_answer_wins_over_what_comes_after_it() -> None:
    hold = new_hold()
    answer = ended(hold.record, {"eventType": "message.received"})
    assert hold.answer(answer)
    # The stop, the window and the client leaving come too late: the answer stays.
    assert not hold.drain()
    assert not hold.expire()
    assert not hold.leave()
    assert hold.state is HoldState.ANSWERED and not hold.holding
    assert await hold.wait() is answer


async def test_an_interaction_ended_without_a_result_expires_its_hold() -> None:
    hold = new_hold()
    assert hold.settle(ended(hold.record, None))
    assert hold.state is HoldState.EXPIRED
    assert await hold.wait() is None


async def test_a_drained_hold_takes_no_answer_after_the_stop() -> None:
    hold = new_hold()
    assert hold.drain()
    assert not hold.answer(ended(hold.record, {"eventType": "message.received"}))
    assert hold.state is HoldState.DRAINED
    assert await hold.wait() is None


async def test_a_hold_whose_requester_left_stops_waiting_and_takes_no_answer() -> None:
    gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    hold = new_hold(SendContext(gone=gone))
    waiting = asyncio.ensure_future(hold.wait())
    await asyncio.sleep(0)
    assert not waiting.done()
    gone.set_result(None)
    assert await asyncio.wait_for(waiting, 5) is None
    assert hold.state is HoldState.LEFT
    # An answer arriving now is nobody's: the engine sends it to the webhooks.
    assert not hold.answer(ended(hold.record, {"eventType": "message.received"}))
    assert hold.answered.result() is None  # settled as it left, with nothing


async def test_an_answer_before_the_requester_leaves_is_still_returned() -> None:
    gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    hold = new_hold(SendContext(gone=gone))
    answer = ended(hold.record, {"eventType": "message.received"})
    waiting = asyncio.ensure_future(hold.wait())
    hold.answer(answer)
    gone.set_result(None)  # both before the request wakes: the answer wins
    assert await asyncio.wait_for(waiting, 5) is answer
    assert hold.state is HoldState.ANSWERED


async def test_release_answered_from_a_notice_then_let_go() -> None:
    hold = new_hold()
    hold.unreleased()
    assert hold.release is Release.UNRELEASED
    hold.let_go()
    assert hold.release is Release.LET_GO


async def test_the_registry_removes_only_the_hold_registered_for_the_interaction() -> None:
    holds = Holds()
    first, retry = new_hold(), new_hold()  # the same interaction, held twice in turn
    holds.add(first)
    holds.add(retry)
    holds.remove(first)  # the first's wait ended late: the retry stays held
    assert holds.get("int_1") is retry and len(holds) == 1
    assert holds.waiting("int_1") is retry
    retry.expire()
    assert holds.waiting("int_1") is None  # still registered, no longer waiting
    holds.remove(retry)
    assert len(holds) == 0 and holds.get("int_1") is None


async def test_the_registry_counts_holds_whose_request_waits() -> None:
    # Registered before its interaction is stored, a hold is a held wait only once its
    # request waits on it; a retry's hold taking its place is counted once.
    holds = Holds()
    first, retry = new_hold(), new_hold()
    holds.add(first)
    assert holds.started == 0
    holds.start(first)
    holds.start(first)
    assert holds.started == 1
    holds.add(retry)
    holds.start(first)  # no longer the one registered
    assert holds.started == 0
    holds.start(retry)
    holds.remove(first)
    assert holds.started == 1
    holds.remove(retry)
    assert holds.started == 0
