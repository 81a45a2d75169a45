"""humanwire.temporal against the real Temporal servers (the dev server and the
time-skipping test server, binaries installed into the venv by the dev extra) and the real
humanwire service over loopback, with the testing kit's scripted human."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from pathlib import Path

import pytest
import ship_runner
from ask_workflow import ShipDecision
from temporal_support import HUMAN, LIMIT, at_least, binary, count_events, until
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment
from temporalio.worker import Worker

from humanwire import AsyncHumanWire
from humanwire.temporal import MAX_LISTEN, NO_RESPONSE, AnswerBridge, HumanWireActivities, SmsAsk
from humanwire.testing import ScriptedHuman
from humanwire.types import OutcomeEvent

GUIDE = Path(__file__).parents[2] / "docs" / "guides" / "temporal.md"


async def _at(bridge: AnswerBridge, cursor: str | None) -> bool:
    return bridge.cursor.load() == cursor


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
            test_server_existing_path=binary("temporal-test-server")
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
        await until(at_least(handle, EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, 1), "the send")
    # No worker runs now; the human answers, and the bridge signals the answer in.
    (sent,) = human.deliveries(to=HUMAN)
    before = bridge.cursor.load()
    human.reply("yes, after the restart", interaction_id=sent.interaction_id).wait(LIMIT)
    await until(at_least(handle, signaled, 1), "the signal")
    # A bridge that crashed before saving its cursor delivers the same event again,
    # under the same request id (the event's): Temporal keeps the first Signal only.
    assert before is not None
    after = bridge.cursor.load()
    bridge.cursor.save(before)
    await until(lambda: _at(bridge, after), "the redelivery")
    assert await count_events(handle, signaled) == 1
    async with _worker(client, humanwire, queue):
        result = await asyncio.wait_for(handle.result(), LIMIT)
    assert result == "The human said: yes, after the restart"
    assert await count_events(handle, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) == 1
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


def test_the_guides_approval_blocks_are_the_tested_code() -> None:
    from docs_support import page_blocks

    source = (Path(__file__).parent / "human_workflows.py").read_text()
    shown = [
        block
        for block in page_blocks("guides/temporal.md")
        if block.not_run is not None and "human_workflows.py" in block.not_run
    ]
    assert len(shown) == 2
    for block in shown:
        assert block.code in source, block.code


def test_the_guides_agent_tools_are_the_tested_code() -> None:
    from docs_support import page_blocks

    tested = Path(__file__).parents[1] / "temporal_openai_agents" / "agent_workflows.py"
    (shown,) = [
        block
        for block in page_blocks("guides/temporal.md")
        if block.not_run is not None and "agent_workflows.py" in block.not_run
    ]
    assert shown.code in tested.read_text()


async def test_the_guide_runs_against_the_embedded_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the runner keeps its cursor in the working directory
    assert await asyncio.wait_for(ship_runner.main(), LIMIT) == "The human said: yes, ship it"
    assert (tmp_path / "humanwire-temporal.cursor").read_text()


async def test_a_wait_past_the_services_listening_limit_ends_in_the_no_response_text(
    dev_server: WorkflowEnvironment,
    humanwire: AsyncHumanWire,
    bridge: AnswerBridge,
    human: ScriptedHuman,
) -> None:
    """A 72 h ask is sent with the service's longest followUpTime, 60000 s; when the
    service stops listening it ends the interaction unanswered, and the bridge's Signal
    of that end makes ``ask`` return the no-response text (before the workflow's own
    timer, without an exception). The service's 60000 s cannot pass in a test: the end
    is handed to the bridge as the service reports it (``interaction.ended``,
    ``responded`` false, the send's metadata)."""
    queue = f"q-{uuid.uuid4()}"
    async with _worker(dev_server.client, humanwire, queue):
        handle = await dev_server.client.start_workflow(
            ShipDecision.run, 72.0, id=f"ship-{uuid.uuid4()}", task_queue=queue
        )
        await until(at_least(handle, EventType.EVENT_TYPE_TIMER_STARTED, 1), "the wait")
        history = await handle.fetch_history()
        (scheduled,) = [
            event.activity_task_scheduled_event_attributes
            for event in history.events
            if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        ]
        (ask,) = await dev_server.client.data_converter.decode(scheduled.input.payloads, [SmsAsk])
        assert ask.follow_up_time == MAX_LISTEN == 60000
        (sent,) = human.deliveries(to=HUMAN)
        status = await humanwire.interactions.status(sent.interaction_id)
        unanswered = OutcomeEvent(
            id=f"evt-{uuid.uuid4()}",
            interaction_id=sent.interaction_id,
            event_type="interaction.ended",
            responded=False,
            metadata=status.metadata,
        )
        assert await bridge.deliver(unanswered)
        result = await asyncio.wait_for(handle.result(), LIMIT)
    assert result == f"The human said: {NO_RESPONSE}"
