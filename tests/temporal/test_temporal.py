"""humanwire.temporal against the real Temporal servers (the dev server and the
time-skipping test server, binaries installed into the venv by the dev extra) and the real
humanwire service over loopback, with the testing kit's scripted human."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sysconfig
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import ship_runner
from ask_workflow import ShipDecision
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment
from temporalio.worker import Worker

from humanwire import AsyncHumanWire
from humanwire.temporal import (
    NO_RESPONSE,
    AnswerBridge,
    FileCursor,
    HumanWireActivities,
    SmsAsk,
)
from humanwire.testing import RunningService, ScriptedHuman

HUMAN = "+12025550100"
GUIDE = Path(__file__).parents[2] / "docs" / "guides" / "temporal.md"
LIMIT = 90.0
"""Seconds any one wait of these tests may take on a slow, loaded machine."""


def _binary(name: str) -> str:
    path = os.path.join(sysconfig.get_path("scripts"), name)
    assert os.path.exists(path), f"{name} is installed by the dev extra ({path})"
    return path


async def _until(check: Callable[[], Awaitable[Any]], what: str) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LIMIT
    while True:
        value = await check()
        if value:
            return value
        assert loop.time() < deadline, f"gave up waiting for {what}"
        await asyncio.sleep(0.2)


async def _events(handle: WorkflowHandle[Any, Any], kind: int) -> int:
    history = await handle.fetch_history()
    return sum(1 for event in history.events if event.event_type == kind)


def _at_least(
    handle: WorkflowHandle[Any, Any], kind: int, count: int
) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return await _events(handle, kind) >= count

    return check


@pytest.fixture
async def humanwire(
    humanwire_service: RunningService, humanwire_api_key: str
) -> AsyncIterator[AsyncHumanWire]:
    async with AsyncHumanWire(
        base_url=humanwire_service.base_url, api_key=humanwire_api_key
    ) as client:
        yield client


@pytest.fixture
async def dev_server() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=_binary("temporal"), ui=False, dev_server_log_level="error"
    )
    async with env:
        yield env


@pytest.fixture
async def bridge(
    humanwire: AsyncHumanWire, dev_server: WorkflowEnvironment, tmp_path: Path
) -> AsyncIterator[AnswerBridge]:
    """The answer bridge, following the feed from before the test's first send."""
    answer_bridge = AnswerBridge(
        humanwire, dev_server.client, FileCursor(tmp_path / "cursor"), poll_wait=1
    )
    await answer_bridge.start_cursor()
    task = asyncio.create_task(answer_bridge.run())
    yield answer_bridge
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def _worker(client: Client, humanwire: AsyncHumanWire, queue: str) -> Worker:
    return Worker(
        client,
        task_queue=queue,
        workflows=[ShipDecision],
        activities=HumanWireActivities(humanwire).all(),
    )


async def test_a_workflow_asks_by_sms_and_returns_the_reply(
    dev_server: WorkflowEnvironment,
    humanwire: AsyncHumanWire,
    bridge: AnswerBridge,
    human: ScriptedHuman,
) -> None:
    replied = human.reply("yes, ship it")
    queue = f"q-{uuid.uuid4()}"
    async with _worker(dev_server.client, humanwire, queue):
        result = await asyncio.wait_for(
            dev_server.client.execute_workflow(
                ShipDecision.run, 72.0, id=f"ship-{uuid.uuid4()}", task_queue=queue
            ),
            LIMIT,
        )
    assert result == "The human said: yes, ship it"
    delivered = replied.wait(5)
    assert delivered.text == "Ship v2 tonight? Reply yes or no."
    assert len(human.deliveries(to=HUMAN)) == 1


async def test_three_days_of_silence_end_in_the_no_response_text(
    humanwire: AsyncHumanWire, human: ScriptedHuman
) -> None:
    queue = f"q-{uuid.uuid4()}"
    async with (
        await WorkflowEnvironment.start_time_skipping(
            test_server_existing_path=_binary("temporal-test-server")
        ) as env,
        _worker(env.client, humanwire, queue),
    ):
        result = await asyncio.wait_for(
            env.client.execute_workflow(
                ShipDecision.run, 72.0, id=f"ship-{uuid.uuid4()}", task_queue=queue
            ),
            LIMIT,
        )
    assert result == f"The human said: {NO_RESPONSE}"
    (sent,) = human.deliveries(to=HUMAN)
    status = await humanwire.interactions.status(sent.interaction_id)
    assert status.status == "pending"  # the service still listens: the workflow's timer ended it


async def test_the_answer_given_while_no_worker_runs_completes_the_run_once(
    dev_server: WorkflowEnvironment,
    humanwire: AsyncHumanWire,
    bridge: AnswerBridge,
    human: ScriptedHuman,
    tmp_path: Path,
) -> None:
    queue = f"q-{uuid.uuid4()}"
    client = dev_server.client
    signaled = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    async with _worker(client, humanwire, queue):
        handle = await client.start_workflow(
            ShipDecision.run, 72.0, id=f"ship-{uuid.uuid4()}", task_queue=queue
        )
        await _until(_at_least(handle, EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, 1), "the send")
    # No worker runs now; the human answers, and the bridge signals the answer in.
    (sent,) = human.deliveries(to=HUMAN)
    before = bridge.cursor.load()
    human.reply("yes, after the restart", interaction_id=sent.interaction_id).wait(LIMIT)
    await _until(_at_least(handle, signaled, 1), "the signal")
    # A bridge that crashed before saving its cursor delivers the same event again.
    assert before is not None
    bridge.cursor.save(before)
    await _until(_at_least(handle, signaled, 2), "the redelivery")
    async with _worker(client, humanwire, queue):
        result = await asyncio.wait_for(handle.result(), LIMIT)
    assert result == "The human said: yes, after the restart"
    assert await _events(handle, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) == 1
    assert len(human.deliveries(to=HUMAN)) == 1


async def test_a_retried_send_activity_sends_once(
    humanwire: AsyncHumanWire, human: ScriptedHuman
) -> None:
    activities = HumanWireActivities(humanwire)
    ask = SmsAsk(to=HUMAN, message="Ship?", follow_up_time=60)
    first = ActivityEnvironment()
    first.info = dataclasses.replace(
        first.info, workflow_id="wf-1", workflow_run_id="run-1", activity_id="1"
    )
    retry = ActivityEnvironment()
    retry.info = dataclasses.replace(first.info, attempt=2)
    other = ActivityEnvironment()
    other.info = dataclasses.replace(first.info, activity_id="2")
    sent = await first.run(activities.send_sms, ask)
    assert (await retry.run(activities.send_sms, ask)) == sent
    assert (await other.run(activities.send_sms, ask)) != sent
    assert len(human.deliveries(to=HUMAN)) == 2
    status = await humanwire.interactions.status(sent.interaction_id)
    assert status.metadata == {"temporalWorkflowId": "wf-1", "temporalRunId": "run-1"}


@pytest.mark.parametrize("example", ["ask_workflow.py", "ship_runner.py"])
def test_the_guide_shows_the_tested_code(example: str) -> None:
    source = (Path(__file__).parent / example).read_text()
    body = source.split("\n", 1)[1]  # past the comment naming the page
    assert body in GUIDE.read_text()


async def test_the_guide_runs_against_the_embedded_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the runner keeps its cursor in the working directory
    assert await asyncio.wait_for(ship_runner.main(), LIMIT) == "The human said: yes, ship it"
    assert (tmp_path / "humanwire-temporal.cursor").read_text()
