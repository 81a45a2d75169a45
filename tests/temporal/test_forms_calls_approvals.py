"""Forms, calls and approvals from a Temporal workflow, against the real dev server and
the real humanwire service over loopback, the scripted human answering; the approval
Update's validator, and an approval used once by a retried gated activity."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from human_workflows import (
    DEPLOY,
    HUMAN,
    SECOND_HUMAN,
    CallWorkflow,
    DeployActivities,
    FormWorkflow,
    GatedDeploy,
    TwoApprovals,
    TwoApprovalsThenLinger,
)
from temporal_support import LIMIT, until
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from humanwire import AsyncHumanWire
from humanwire.errors import AlreadyConsumedError
from humanwire.temporal import (
    APPROVAL_SIGNAL,
    APPROVAL_UPDATE,
    ASK_ID_KEY,
    AnswerBridge,
    ApprovalDecision,
    FileCursor,
    HumanWireActivities,
)
from humanwire.testing import ScriptedHuman
from humanwire.types.approvals import action_digest


def _worker(
    client: Client, humanwire: AsyncHumanWire, queue: str, *extra: Callable[..., Any]
) -> Worker:
    return Worker(
        client,
        task_queue=queue,
        workflows=[FormWorkflow, CallWorkflow, GatedDeploy, TwoApprovalsThenLinger],
        activities=[*HumanWireActivities(humanwire).all(), *extra],
    )


async def test_a_workflow_sends_a_form_and_returns_the_values(
    dev_server: WorkflowEnvironment,
    humanwire: AsyncHumanWire,
    bridge: AnswerBridge,
    human: ScriptedHuman,
) -> None:
    filled = human.fill_form({"notes": "faster sync"})
    queue = f"q-{uuid.uuid4()}"
    async with _worker(dev_server.client, humanwire, queue):
        result = await asyncio.wait_for(
            dev_server.client.execute_workflow(
                FormWorkflow.run, 72.0, id=f"form-{uuid.uuid4()}", task_queue=queue
            ),
            LIMIT,
        )
    assert result == {"notes": "faster sync"}
    assert filled.wait(5).form_url


async def test_a_workflow_calls_and_returns_the_summary(
    dev_server: WorkflowEnvironment,
    humanwire: AsyncHumanWire,
    bridge: AnswerBridge,
    human: ScriptedHuman,
) -> None:
    human.answer_call("They said v2 may ship tonight.")
    queue = f"q-{uuid.uuid4()}"
    async with _worker(dev_server.client, humanwire, queue):
        result = await asyncio.wait_for(
            dev_server.client.execute_workflow(
                CallWorkflow.run, 1.0, id=f"call-{uuid.uuid4()}", task_queue=queue
            ),
            LIMIT,
        )
    assert result == "They said v2 may ship tonight."


async def _update_ids(handle: WorkflowHandle[Any, Any]) -> list[str]:
    history = await handle.fetch_history()
    accepted = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    return [
        event.workflow_execution_update_accepted_event_attributes.accepted_request.meta.update_id
        for event in history.events
        if event.event_type == accepted
    ]


async def test_a_quorum_of_two_is_consumed_once_though_the_gated_activity_is_retried(
    dev_server: WorkflowEnvironment,
    humanwire: AsyncHumanWire,
    bridge: AnswerBridge,
    human: ScriptedHuman,
) -> None:
    feed_start = bridge.cursor.load()
    human.decide_approval("approve", to=HUMAN)
    human.decide_approval("approve", to=SECOND_HUMAN)
    deploys = DeployActivities(HumanWireActivities(humanwire))
    queue = f"q-{uuid.uuid4()}"
    async with _worker(dev_server.client, humanwire, queue, deploys.deploy):
        handle = await dev_server.client.start_workflow(
            GatedDeploy.run, 72.0, id=f"deploy-{uuid.uuid4()}", task_queue=queue
        )
        result = await asyncio.wait_for(handle.result(), LIMIT)
    assert result == "deployed on attempt 2"
    assert deploys.attempts == [1, 2]
    (sent,) = {d.interaction_id for d in human.deliveries(to=HUMAN)}
    consumed = [
        entry
        async for entry in humanwire.audit.entries()
        if entry.type == "approval.consumed" and entry.interaction_id == sent
    ]
    assert len(consumed) == 1
    # Anything else that tries to use it is refused: the approval was used.
    with pytest.raises(AlreadyConsumedError):
        await humanwire.approvals.consume(sent, action_digest=action_digest(DEPLOY))
    # The decision came as one Update whose id is the outcome event's id.
    page = await humanwire.interactions.events(after=feed_start, event_type="interaction.ended")
    (ended,) = [event for event in page.events if event.interaction_id == sent]
    assert await _update_ids(handle) == [ended.id]
    # A bridge that delivers it again (it crashed before saving its cursor) sends the
    # same Update id: Temporal answers it as the first, and nothing is applied again.
    assert await bridge.deliver(ended)
    assert await _update_ids(handle) == [ended.id]
    # Another event for the completed run is passed over, not retried for ever.
    assert not await bridge.deliver(ended.model_copy(update={"id": f"evt-{uuid.uuid4()}"}))


async def _refusal(handle: WorkflowHandle[Any, Any], decision: ApprovalDecision) -> str:
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await asyncio.wait_for(
            handle.execute_update(APPROVAL_UPDATE, decision, id=f"u-{uuid.uuid4()}"), LIMIT
        )
    cause = refused.value.cause
    assert isinstance(cause, ApplicationError)
    return str(cause.type)


async def test_the_approval_update_refuses_a_duplicate_a_late_and_a_foreign_decision(
    dev_server: WorkflowEnvironment,
    humanwire: AsyncHumanWire,
    human: ScriptedHuman,
    tmp_path: Path,
) -> None:
    bridge = AnswerBridge(
        humanwire, dev_server.client, FileCursor(tmp_path / "cursor"), poll_wait=1
    )
    await bridge.start_cursor()
    following = asyncio.create_task(bridge.run())
    human.decide_approval("approve", to=HUMAN)
    queue = f"q-{uuid.uuid4()}"
    async with _worker(dev_server.client, humanwire, queue):
        handle = await dev_server.client.start_workflow(
            TwoApprovalsThenLinger.run,
            TwoApprovals(first_hours=72.0, second_seconds=2.0),
            id=f"linger-{uuid.uuid4()}",
            task_queue=queue,
        )

        async def decided() -> list[Any]:
            return list((await handle.query(TwoApprovalsThenLinger.results)).results)

        await until(lambda: _count(decided, 1), "the first decision")
        # The bridge stops here: the service's own end of the second request (its window
        # closes with the workflow's wait) must not be what the test sends below.
        following.cancel()
        with pytest.raises(asyncio.CancelledError):
            await following
        first, second = await until(lambda: _count(decided, 2), "the second wait's end")
        assert first.approved and first.decision == "approved"
        assert second.timed_out and second.decision is None and not second.approved
        asks = {}
        for result in (first, second):
            status = await humanwire.interactions.status(result.interaction_id)
            asks[result.interaction_id] = (status.metadata or {})[ASK_ID_KEY]

        def decision(result: Any, ask_id: str | None, verdict: str) -> ApprovalDecision:
            return ApprovalDecision(
                event_id=f"e-{uuid.uuid4()}",
                interaction_id=result.interaction_id,
                decision=verdict,
                ask_id=ask_id,
            )

        again = decision(first, asks[first.interaction_id], "rejected")
        late = decision(second, asks[second.interaction_id], "approved")
        foreign = decision(first, str(uuid.uuid4()), "approved")
        assert await _refusal(handle, again) == "DuplicateDecision"
        assert await _refusal(handle, late) == "LateDecision"
        assert await _refusal(handle, foreign) == "ForeignDecision"
        # The Signal the bridge falls back to is held to the same rules: it is ignored.
        for ignored in (again, late, foreign):
            await handle.signal(APPROVAL_SIGNAL, ignored)
        await handle.signal(TwoApprovalsThenLinger.finish)
        final = await asyncio.wait_for(handle.result(), LIMIT)
    assert [r.decision for r in final.results] == ["approved", None]


async def _count(read: Callable[[], Any], count: int) -> Any:
    found = await read()
    return found if len(found) >= count else None
