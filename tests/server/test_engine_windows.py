"""Interactions' windows as steps of the schedule (``WINDOW_STEP``): an open window no
request holds is a row, not a timer, until it falls due; it closes on time; its end
drops the row; a step left by a replica that died is taken over once its claim runs out."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

from engine_support import HUMAN, account, engine, reply, sms

from humanwire.server.config import SHARED_SMS_NUMBER
from humanwire.server.engine import Account, Engine
from humanwire.server.store.records import WINDOW_STEP

__all__ = ["account", "engine"]


async def test_open_windows_nobody_holds_cost_no_memory_until_due(
    engine: Engine, account: Account
) -> None:
    far = [await engine.send_message(account, sms(f"q{i}", follow_up_time=3600)) for i in range(50)]
    assert engine.open_windows == 0 and engine.schedule.held() == 0
    assert await engine.store.count_steps() == 50
    step = await engine.store.get_step(WINDOW_STEP, far[0].interaction_id)
    assert step is not None and step.due_at > time.time() + 3500
    await engine.schedule.tick()  # a tick claims nothing of them
    assert engine.schedule.held() == 0
    # One due soon is claimed as it is armed, and closes on time.
    soon = await engine.send_message(account, sms("soon?", to="+12025550101", follow_up_time=0.4))
    assert engine.open_windows == 1
    started = time.monotonic()
    status = await engine.interaction_status(account, soon.interaction_id, wait=3)
    assert status.status == "ended" and status.result is None
    assert 0.2 < time.monotonic() - started < 1.2
    assert await engine.store.get_step(WINDOW_STEP, soon.interaction_id) is None
    assert engine.open_windows == 0
    # An answer ends the interaction and drops its step with it.
    await engine.sandbox_reply(account, reply("sms", HUMAN, SHARED_SMS_NUMBER, "yes"))
    assert await engine.store.count_steps() == 49


async def test_a_held_wait_is_a_timer_of_its_request_and_the_window_a_step(
    engine: Engine, account: Account
) -> None:
    held = asyncio.create_task(engine.send_message(account, sms(wait_time=0.3, follow_up_time=60)))
    while engine.held_waits == 0:
        await asyncio.sleep(0.005)
    assert engine.open_windows == 1  # the request's wait timer; the window is a row
    response = await asyncio.wait_for(held, 3)
    assert response.responded is False and response.status == "pending"
    step = await engine.store.get_step(WINDOW_STEP, response.interaction_id)
    assert step is not None and step.due_at > time.time() + 50
    assert engine.open_windows == 0


async def test_a_window_step_left_claimed_by_a_dead_replica_runs_once_its_claim_ends(
    engine: Engine, account: Account
) -> None:
    sent = await engine.send_message(account, sms(follow_up_time=0.2))
    # As a replica that died holding it would leave it: claimed for 1 s more, and
    # nothing of it in this engine's memory.
    engine.schedule.forget(WINDOW_STEP, sent.interaction_id)
    step = await engine.store.get_step(WINDOW_STEP, sent.interaction_id)
    assert step is not None
    claimed_until = time.time() + 1.0
    await engine.store.put_steps([step], "dead-replica", claimed_until)
    await asyncio.sleep(0.5)
    assert (await engine.interaction_status(account, sent.interaction_id)).status == "pending"
    status = await engine.interaction_status(account, sent.interaction_id, wait=8)
    # Taken over by the first tick after the claim ran out (a tick every half horizon).
    assert status.status == "ended" and time.time() >= claimed_until
    assert await engine.store.count_steps() == 0


async def test_a_window_step_armed_for_an_older_deadline_moves_to_the_window(
    engine: Engine, account: Account
) -> None:
    sent = await engine.send_message(account, sms(follow_up_time=3600))
    step = await engine.store.get_step(WINDOW_STEP, sent.interaction_id)
    assert step is not None
    close = step.due_at
    await engine.store.put_steps([replace(step, due_at=time.time())], None, None)
    await engine.schedule.tick()  # claims it, due now
    await asyncio.sleep(0.3)
    assert (await engine.interaction_status(account, sent.interaction_id)).status == "pending"
    moved = await engine.store.get_step(WINDOW_STEP, sent.interaction_id)
    assert moved is not None and moved.due_at == close
