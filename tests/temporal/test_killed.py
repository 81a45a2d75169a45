"""Proved by killing things: the worker, the answer bridge and the humanwire service
killed with SIGKILL mid-wait and started again, the Temporal dev server stopped (SIGTERM)
or killed (SIGKILL) and started again on its database file; the human answers while the
killed part is down. Each time the run completes once,
with one send and one answer applied. Real processes, the real dev server and the real
humanwire service over loopback."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from ask_workflow import ShipDecision
from human_workflows import OneApproval, QuickSendAsk
from temporal_support import (
    HUMAN,
    LIMIT,
    ChildProcess,
    DevServerProcess,
    at_least,
    count_events,
    until,
)
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from humanwire import AsyncHumanWire
from humanwire.temporal import AnswerBridge, FileCursor, HumanWireActivities
from humanwire.testing import RunningService, ScriptedHuman

# Two child processes start in some tests; on a loaded machine each start may take
# minutes (importing temporalio and humanwire), past the suite's 300 s per test.
pytestmark = pytest.mark.timeout(900)

SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
TIMER = EventType.EVENT_TYPE_TIMER_STARTED
STARTED = EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
SIGNALLED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED


@pytest.fixture
async def children() -> AsyncIterator[list[ChildProcess]]:
    """The test's child processes, killed at the end whatever happened."""
    started: list[ChildProcess] = []
    yield started
    for child in started:
        await child.kill()


def _worker(client: Client, humanwire: AsyncHumanWire, queue: str) -> Worker:
    return Worker(
        client,
        task_queue=queue,
        workflows=[ShipDecision],
        activities=HumanWireActivities(humanwire).all(),
    )


async def _sent_once(handle: WorkflowHandle[str, str], human: ScriptedHuman, result: str) -> None:
    assert await asyncio.wait_for(handle.result(), LIMIT) == f"The human said: {result}"
    assert await count_events(handle, SCHEDULED) == 1
    assert await count_events(handle, SIGNALLED) == 1
    assert len(human.deliveries(to=HUMAN)) == 1


async def test_a_worker_killed_mid_wait_and_started_again_completes_the_run_once(
    dev_server: WorkflowEnvironment,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    bridge: AnswerBridge,
    human: ScriptedHuman,
    children: list[ChildProcess],
    tmp_path: Path,
) -> None:
    address = dev_server.client.service_client.config.target_host
    queue = f"q-{uuid.uuid4()}"
    args = (address, queue, humanwire_service.base_url, humanwire_api_key)
    first = ChildProcess("worker_process.py", *args, log=tmp_path / "worker.log")
    children.append(first)
    await first.start()
    handle = await dev_server.client.start_workflow(
        ShipDecision.run, 72.0, id=f"ship-{uuid.uuid4()}", task_queue=queue
    )
    await until(at_least(handle, TIMER, 1), "the wait to begin")
    await first.kill()
    # No worker runs: the human answers, and the bridge's Signal is stored.
    (sent,) = human.deliveries(to=HUMAN)
    human.reply("yes, while no worker ran", interaction_id=sent.interaction_id).wait(LIMIT)
    await until(at_least(handle, SIGNALLED, 1), "the signal")
    second = ChildProcess("worker_process.py", *args, log=tmp_path / "worker.log")
    children.append(second)
    await second.start()
    await _sent_once(handle, human, "yes, while no worker ran")


async def test_a_worker_killed_between_the_send_and_its_report_sends_once(
    dev_server: WorkflowEnvironment,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    bridge: AnswerBridge,
    human: ScriptedHuman,
    children: list[ChildProcess],
    tmp_path: Path,
) -> None:
    address = dev_server.client.service_client.config.target_host
    queue = f"q-{uuid.uuid4()}"
    args = (address, queue, humanwire_service.base_url, humanwire_api_key)
    marker = tmp_path / "sent"
    first = ChildProcess("worker_process.py", *args, str(marker), log=tmp_path / "worker.log")
    children.append(first)
    await first.start()
    handle = await dev_server.client.start_workflow(
        QuickSendAsk.run, 72.0, id=f"ship-{uuid.uuid4()}", task_queue=queue
    )
    await until(lambda: _exists(marker), "the send")
    await first.kill()  # sent, but Temporal never heard of it
    second = ChildProcess("worker_process.py", *args, log=tmp_path / "worker.log")
    children.append(second)
    await second.start()
    # The send's 5 s bound passes; the retry's send is answered by the first one's key.
    await until(at_least(handle, TIMER, 1), "the retried send and the wait")
    (sent,) = human.deliveries(to=HUMAN)
    assert sent.interaction_id == marker.read_text()
    human.reply("yes, sent once", interaction_id=sent.interaction_id).wait(LIMIT)
    await _sent_once(handle, human, "yes, sent once")
    history = await handle.fetch_history()
    (started,) = [e for e in history.events if e.event_type == STARTED]
    assert started.activity_task_started_event_attributes.attempt == 2


async def _exists(path: Path) -> bool:
    return path.exists()


async def test_a_bridge_killed_and_started_again_loses_no_answer_and_applies_it_once(
    dev_server: WorkflowEnvironment,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire: AsyncHumanWire,
    human: ScriptedHuman,
    children: list[ChildProcess],
    tmp_path: Path,
) -> None:
    address = dev_server.client.service_client.config.target_host
    cursor = tmp_path / "cursor"
    args = (address, humanwire_service.base_url, humanwire_api_key, str(cursor))
    first = ChildProcess("bridge_process.py", *args, log=tmp_path / "bridge.log")
    children.append(first)
    await first.start()
    saved = FileCursor(cursor).load()
    assert saved is not None
    queue = f"q-{uuid.uuid4()}"
    async with _worker(dev_server.client, humanwire, queue):
        handle = await dev_server.client.start_workflow(
            ShipDecision.run, 72.0, id=f"ship-{uuid.uuid4()}", task_queue=queue
        )
        await until(at_least(handle, TIMER, 1), "the wait to begin")
        await first.kill()
        # No bridge runs: the answer waits in the service's feed.
        (sent,) = human.deliveries(to=HUMAN)
        human.reply("yes, while no bridge ran", interaction_id=sent.interaction_id).wait(LIMIT)
        assert await count_events(handle, SIGNALLED) == 0
        second = ChildProcess("bridge_process.py", *args, log=tmp_path / "bridge.log")
        children.append(second)
        await second.start()
        await _sent_once(handle, human, "yes, while no bridge ran")
    assert FileCursor(cursor).load() != saved


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
async def test_the_dev_server_restarted_on_its_database_resumes_the_wait(
    humanwire: AsyncHumanWire,
    human: ScriptedHuman,
    tmp_path: Path,
    how: str,
) -> None:
    """Stopped (SIGTERM: it closes its database) or killed (SIGKILL: it closes nothing)
    mid-wait; the human answers while it is down; started again on its database file."""
    server = DevServerProcess(tmp_path / "temporal.sqlite", tmp_path / "temporal.log")
    try:
        await server.start()
        client = await Client.connect(server.address)
        bridge = AnswerBridge(
            humanwire, client, FileCursor(tmp_path / "cursor"), poll_wait=1, retry_delay=0.5
        )
        await bridge.start_cursor()
        following = asyncio.create_task(bridge.run())
        queue = f"q-{uuid.uuid4()}"
        async with _worker(client, humanwire, queue):
            handle = await client.start_workflow(
                ShipDecision.run, 72.0, id=f"ship-{uuid.uuid4()}", task_queue=queue
            )
            await until(at_least(handle, TIMER, 1), "the wait to begin")
        await (server.kill() if how == "SIGKILL" else server.stop())
        # The server is down: the human answers; the bridge cannot signal and retries.
        (sent,) = human.deliveries(to=HUMAN)
        human.reply("yes, while Temporal was down", interaction_id=sent.interaction_id).wait(LIMIT)
        await server.start()
        async with _worker(client, humanwire, queue):
            await _sent_once(handle, human, "yes, while Temporal was down")
        following.cancel()
        with pytest.raises(asyncio.CancelledError):
            await following
    finally:
        await server.stop()


async def test_a_decision_made_while_no_worker_runs_comes_in_as_the_fallback_signal(
    dev_server: WorkflowEnvironment,
    humanwire: AsyncHumanWire,
    human: ScriptedHuman,
    tmp_path: Path,
) -> None:
    """An Update waits for a worker to run its validator; the bridge gives it
    ``update_timeout`` seconds, then signals the decision (stored at once) and moves on."""
    client = dev_server.client
    bridge = AnswerBridge(
        humanwire, client, FileCursor(tmp_path / "cursor"), poll_wait=1, update_timeout=2
    )
    await bridge.start_cursor()
    queue = f"q-{uuid.uuid4()}"
    worker = Worker(
        client,
        task_queue=queue,
        workflows=[OneApproval],
        activities=HumanWireActivities(humanwire).all(),
    )
    async with worker:
        handle = await client.start_workflow(
            OneApproval.run, 72.0, id=f"approve-{uuid.uuid4()}", task_queue=queue
        )
        await until(at_least(handle, TIMER, 1), "the wait to begin")
    # No worker runs: the approver decides, and the bridge's Update finds no validator.
    (asked,) = human.deliveries(to=HUMAN)
    human.decide_approval("approve", interaction_id=asked.interaction_id).wait(LIMIT)
    following = asyncio.create_task(bridge.run())
    try:
        await until(at_least(handle, SIGNALLED, 1), "the fallback signal")
        async with Worker(
            client,
            task_queue=queue,
            workflows=[OneApproval],
            activities=HumanWireActivities(humanwire).all(),
        ):
            result = await asyncio.wait_for(handle.result(), LIMIT)
    finally:
        following.cancel()
    assert result.approved and result.decision == "approved"
    assert result.decided_by == [f"sms:{HUMAN}"]
