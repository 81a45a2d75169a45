"""Graceful stop: ``Engine.drain()`` answers every held request with ``ServiceUnavailable``
(503 ``unavailable``) without ending anything, refuses new sends before they deliver, and
the windows it left open stay armed (steps of the schedule) for the next engine on the same
database."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from engine_support import HUMAN, fast_config, reply, sms, sms_form

from humanwire.server.config import SHARED_SMS_NUMBER
from humanwire.server.engine import Account, Engine
from humanwire.server.errors import ServiceUnavailable
from humanwire.server.store.records import WINDOW_STEP
from humanwire.types import CallRequest


async def _until_held(engine: Engine, account: Account, count: int) -> None:
    """Until ``count`` sends are held and their deliveries stored (a hold is registered
    before its delivery goes out: on PostgreSQL the delivery's write may still be on
    its way when the hold is there)."""
    while engine.held_waits < count or (len(await engine.list_sandbox_deliveries(account)) < count):
        await asyncio.sleep(0.005)


async def test_drain_answers_held_requests_unavailable_and_ends_nothing(
    tmp_path: Path, database: str
) -> None:
    config = fast_config(tmp_path, db_path=database)
    engine = Engine(config)
    await engine.start()
    account, key = await engine.accounts.create()
    held_message = asyncio.create_task(engine.send_message(account, sms(wait_time=30)))
    held_form = asyncio.create_task(
        engine.send_form(account, sms_form(to="+14155550123", wait_time=30))
    )
    call = CallRequest.model_validate({"prompt": "Call", "to": HUMAN, "waitForCallEnd": True})
    held_call = asyncio.create_task(engine.place_call(account, call))
    await _until_held(engine, account, 3)
    delivered = await engine.list_sandbox_deliveries(account)
    # By kind: on PostgreSQL the three sends' store calls interleave (any order).
    of_kind = {d.kind: str(d.interaction_id) for d in delivered}
    message_id, form_id, call_id = of_kind["message"], of_kind["form"], of_kind["call"]
    poll = asyncio.create_task(engine.interaction_status(account, message_id, wait=30))
    follow = asyncio.create_task(engine.wait_for_delivery(account, delivered[0].id, 30))
    await asyncio.sleep(0.01)

    engine.drain()
    assert engine.draining
    for task in (held_message, held_form, held_call, poll, follow):
        with pytest.raises(ServiceUnavailable) as info:
            await asyncio.wait_for(task, 1)
        assert (info.value.status, info.value.code) == (503, "unavailable")
        assert info.value.message == "the service is restarting; retry"
        assert info.value.retry_after >= 1
    assert engine.held_waits == 0
    # Nothing ended: the windows stay open in the store and armed until close.
    for interaction_id in (message_id, form_id, call_id):
        record = await engine.store.get_interaction(interaction_id)
        assert record is not None and record.status == "pending"
    # The windows are steps of the schedule, in the store: the message's, the form's and
    # the call's (its limit). Nothing of them is in memory once their holds went.
    steps = [await engine.store.get_step(WINDOW_STEP, i) for i in (message_id, form_id, call_id)]
    assert [step is not None for step in steps] == [True, True, True]
    assert engine.open_windows == 0
    await engine.close()

    again = Engine(config)
    await again.start()
    try:
        assert await again.store.count_steps() == 3  # still armed after the restart
        restored = await again.accounts.authenticate(key)
        assert restored is not None
        await again.sandbox_reply(restored, reply("sms", HUMAN, SHARED_SMS_NUMBER, "after"))
        status = await again.interaction_status(restored, message_id)
        assert status.status == "ended" and status.result is not None
    finally:
        await again.close()


async def test_a_send_after_drain_is_refused_before_anything_is_delivered(
    tmp_path: Path, database: str
) -> None:
    engine = Engine(fast_config(tmp_path, db_path=database))
    await engine.start()
    try:
        account, _key = await engine.accounts.create()
        engine.drain()
        with pytest.raises(ServiceUnavailable):
            await engine.send_message(account, sms(wait_time=30))
        with pytest.raises(ServiceUnavailable):
            await engine.send_form(account, sms_form(follow_up_time=30))
        assert await engine.list_sandbox_deliveries(account) == []
        assert await engine.list_interactions(account) == []
    finally:
        await engine.close()


async def test_a_reply_already_handed_over_is_still_answered(tmp_path: Path, database: str) -> None:
    engine = Engine(fast_config(tmp_path, db_path=database))
    await engine.start()
    try:
        account, _key = await engine.accounts.create()
        held = asyncio.create_task(engine.send_message(account, sms(wait_time=30)))
        await _until_held(engine, account, 1)
        await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "yes"))
        engine.drain()  # the reply reached the held request first: it gets the answer
        answered = await asyncio.wait_for(held, 1)
        assert (answered.responded, answered.response) == (True, "Human response: yes")
    finally:
        await engine.close()


async def test_close_answers_what_is_still_held_unavailable(tmp_path: Path, database: str) -> None:
    engine = Engine(fast_config(tmp_path, db_path=database))
    await engine.start()
    account, _key = await engine.accounts.create()
    held = asyncio.create_task(engine.send_message(account, sms(wait_time=30)))
    await _until_held(engine, account, 1)
    await engine.close()  # a host that never called drain(): close drains first
    with pytest.raises(ServiceUnavailable):
        await asyncio.wait_for(held, 1)


async def test_drain_ends_live_inbox_streams(tmp_path: Path, database: str) -> None:
    engine = Engine(fast_config(tmp_path, db_path=database))
    await engine.start()
    try:
        account, _key = await engine.accounts.create()
        changes = engine.subscribe(account)
        reading = asyncio.ensure_future(changes.__anext__())
        await asyncio.sleep(0.01)
        engine.drain()
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(reading, 1)
    finally:
        await engine.close()
