"""The humanwire service itself SIGKILLed mid-wait and started again on its database at
the same address (a real ``humanwire serve`` process), on each store (``database``: its
SQLite file, then a PostgreSQL schema of its own): once while the answer bridge holds its
long-poll, once right after the human answered while no bridge ran, so the answer is only
in the killed service's database. The run completes once: one send, one Signal, and the
feed holds the answer once under one id after both restarts."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from pathlib import Path

import pytest
from ask_workflow import ShipDecision
from temporal_support import HUMAN, LIMIT, at_least, count_events, until
from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from humanwire import AsyncHumanWire
from humanwire.temporal import AnswerBridge, FileCursor, HumanWireActivities
from humanwire.testing import ScriptedHuman
from pg_support import stored_bytes
from service_process import ServiceProcess

pytestmark = pytest.mark.timeout(900)

SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
TIMER = EventType.EVENT_TYPE_TIMER_STARTED
SIGNALLED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED


async def _restart(service: ServiceProcess) -> None:
    service.kill()
    await asyncio.to_thread(service.start)


async def test_the_humanwire_service_killed_mid_wait_loses_no_answer_and_applies_it_once(
    dev_server: WorkflowEnvironment, database: str, tmp_path: Path
) -> None:
    key = f"hw_killed_{uuid.uuid4().hex}"
    service = ServiceProcess(database, key, tmp_path / "home", tmp_path / "log")
    await asyncio.to_thread(service.start)
    client = dev_server.client
    queue = f"q-{uuid.uuid4()}"
    cursor = FileCursor(tmp_path / "cursor")
    try:
        async with AsyncHumanWire(base_url=service.base_url, api_key=key) as humanwire:
            bridge = AnswerBridge(humanwire, client, cursor, poll_wait=1, retry_delay=0.5)
            await bridge.start_cursor()
            following = asyncio.create_task(bridge.run())
            activities = HumanWireActivities(humanwire).all()
            async with Worker(
                client, task_queue=queue, workflows=[ShipDecision], activities=activities
            ):
                handle = await client.start_workflow(
                    ShipDecision.run, 72.0, id=f"ship-{uuid.uuid4()}", task_queue=queue
                )
                await until(at_least(handle, TIMER, 1), "the wait to begin")
                # 1. Killed while the bridge holds its long-poll; the bridge retries.
                await _restart(service)
                # 2. No bridge runs; the human answers; the service is killed at once.
                following.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await following
                before = tmp_path / "cursor-before"
                shutil.copy(cursor.path, before)
                with ScriptedHuman(service.base_url, key) as human:
                    (sent,) = human.deliveries(to=HUMAN)
                    human.reply("yes, then it died", interaction_id=sent.interaction_id).wait(LIMIT)
                await _restart(service)
                following = asyncio.create_task(bridge.run())
                result = await asyncio.wait_for(handle.result(), LIMIT)
                following.cancel()
            assert result == "The human said: yes, then it died"
            assert await count_events(handle, SCHEDULED) == 1
            assert await count_events(handle, SIGNALLED) == 1
            with ScriptedHuman(service.base_url, key) as human:
                assert len(human.deliveries(to=HUMAN)) == 1  # sent once, across both kills
            # From the cursor saved before the answer: the answer once, under one id.
            page = await humanwire.interactions.events(
                after=FileCursor(before).load(), wait=0, event_type="interaction.ended"
            )
            assert [e.interaction_id for e in page.events] == [sent.interaction_id]
            assert cursor.load() == page.cursor or cursor.load() == page.events[0].id
            assert b"yes, then it died" in stored_bytes(database)  # the store under test
    finally:
        service.kill()
