"""humanwire's ask and approval gate inside a LangGraph graph under Temporal's LangGraph
plugin (temporalio-langgraph 0.1.0, experimental): the graph's nodes run in workflow
context and call humanwire.temporal, whose send activities and waits are the workflow's
own. The real dev server and the real service over loopback, the scripted human
answering; a worker stopped mid-wait resumes the graph without sending again."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from langgraph_workflows import HUMAN, DeployActivities, ReleaseGraph, release_graph
from temporal_support import LIMIT, at_least, count_events, until
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.langgraph import LangGraphPlugin
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from humanwire import AsyncHumanWire
from humanwire.temporal import AnswerBridge, HumanWireActivities
from humanwire.testing import ScriptedHuman

# A worker stopped mid-wait evicts the run; LangGraph's cleanup of the evicted graph
# task then reports "no running event loop" as an unraisable exception (harmless: the
# next worker replays the history). Seen with temporalio-langgraph 0.1.0, langgraph 1.2.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

TIMER = EventType.EVENT_TYPE_TIMER_STARTED
SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED


def _worker(client: object, humanwire: AsyncHumanWire, queue: str) -> Worker:
    activities = HumanWireActivities(humanwire)
    return Worker(
        client,  # type: ignore[arg-type]
        task_queue=queue,
        workflows=[ReleaseGraph],
        activities=[*activities.all(), DeployActivities(activities).deploy_version],
        plugins=[LangGraphPlugin(graphs={"release": release_graph()})],
    )


async def _activities(handle: WorkflowHandle[ReleaseGraph, dict[str, str]]) -> list[str]:
    history = await handle.fetch_history()
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == SCHEDULED
    ]


async def test_a_graph_asks_a_human_and_deploys_on_their_approval_once(
    dev_server: WorkflowEnvironment,
    humanwire: AsyncHumanWire,
    bridge: AnswerBridge,
    human: ScriptedHuman,
) -> None:
    client = dev_server.client
    queue = f"q-{uuid.uuid4()}"
    async with _worker(client, humanwire, queue):
        handle = await client.start_workflow(
            ReleaseGraph.run, "Ship v2 tonight?", id=f"graph-{uuid.uuid4()}", task_queue=queue
        )
        await until(at_least(handle, TIMER, 1), "the graph's ask to wait")
    # No worker runs: the human answers; a new worker resumes the graph at its wait.
    (sent,) = human.deliveries(to=HUMAN)
    human.reply("yes, ship v2", interaction_id=sent.interaction_id).wait(LIMIT)
    human.decide_approval("approve", to=HUMAN)
    async with _worker(client, humanwire, queue):
        result = await asyncio.wait_for(handle.result(), LIMIT)
    assert result["answer"] == "yes, ship v2"
    assert result["outcome"].startswith("Deployed (")
    assert await _activities(handle) == [
        "humanwire.send_sms",
        "humanwire.request_approval",
        "deploy_version",
    ]
    audit = [entry async for entry in humanwire.audit.entries()]
    assert [entry.type for entry in audit].count("approval.consumed") == 1
    assert await count_events(handle, SCHEDULED) == 3


async def test_a_graph_whose_human_says_no_never_asks_for_the_deploy(
    dev_server: WorkflowEnvironment,
    humanwire: AsyncHumanWire,
    bridge: AnswerBridge,
    human: ScriptedHuman,
) -> None:
    human.reply("no, not tonight")
    queue = f"q-{uuid.uuid4()}"
    async with _worker(dev_server.client, humanwire, queue):
        result = await dev_server.client.execute_workflow(
            ReleaseGraph.run, "Ship v2 tonight?", id=f"graph-{uuid.uuid4()}", task_queue=queue
        )
    assert result == {
        "question": "Ship v2 tonight?",
        "answer": "no, not tonight",
        "outcome": "Not asked to deploy: no, not tonight",
    }
