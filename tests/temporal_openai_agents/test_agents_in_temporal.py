"""humanwire's tools and approval gate inside an OpenAI Agents run under Temporal's
plugin (temporalio-openai-agents 1.1.0, which pins openai-agents 0.22: an environment of
its own, ``scripts/test-isolated temporal_openai_agents``). The model is the plugin's
TestModel; Temporal is the time-skipping test server; humanwire the real service over
loopback, the scripted human answering."""

from __future__ import annotations

import asyncio
import json
import os
import sysconfig
import uuid
from pathlib import Path
from typing import Any

from agent_workflows import HUMAN, DeployActivities, ReleaseAgent
from temporalio.api.enums.v1 import EventType
from temporalio.openai_agents.testing import AgentEnvironment, ResponseBuilders, TestModel
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from humanwire import AsyncHumanWire
from humanwire.temporal import NO_RESPONSE, AnswerBridge, FileCursor, HumanWireActivities
from humanwire.testing import RunningService, ScriptedHuman

LIMIT = 120.0


async def _run_agent(
    service: RunningService, api_key: str, tmp_path: Path, *, skip_time: bool
) -> tuple[str, list[str], str, list[Any]]:
    """Runs the release agent: the model asks, then deploys, then answers. Returns the
    final output, the activities in order, what the last model call was given, and the
    account's audit log."""
    model = TestModel.returning_responses(
        [
            ResponseBuilders.tool_call(
                json.dumps({"question": "Ship v2 tonight?"}), "ask_human", call_id="call-1"
            ),
            ResponseBuilders.tool_call(json.dumps({"version": "v2"}), "deploy", call_id="call-2"),
            ResponseBuilders.output_message("Done with v2."),
        ]
    )
    test_server = os.path.join(sysconfig.get_path("scripts"), "temporal-test-server")
    queue = f"q-{uuid.uuid4()}"
    async with (
        AsyncHumanWire(base_url=service.base_url, api_key=api_key) as humanwire,
        await WorkflowEnvironment.start_time_skipping(test_server_existing_path=test_server) as env,
        AgentEnvironment(model=model) as agents_env,
    ):
        client = agents_env.applied_on_client(env.client)
        bridge = AnswerBridge(humanwire, client, FileCursor(tmp_path / "cursor"), poll_wait=1)
        await bridge.start_cursor()
        following = asyncio.create_task(bridge.run())
        activities = HumanWireActivities(humanwire)
        try:
            async with Worker(
                client,
                task_queue=queue,
                workflows=[ReleaseAgent],
                activities=[*activities.all(), DeployActivities(activities).deploy_version],
            ):
                handle = await client.start_workflow(
                    ReleaseAgent.run, "Release v2.", id=f"agent-{uuid.uuid4()}", task_queue=queue
                )
                if skip_time:
                    result = await asyncio.wait_for(handle.result(), LIMIT)
                else:
                    # The human answers in real time: no skipping past the 72 h waits.
                    with env.auto_time_skipping_disabled():
                        result = await asyncio.wait_for(handle.result(), LIMIT)
            history = await handle.fetch_history()
        finally:
            following.cancel()
        audit = [entry async for entry in humanwire.audit.entries()]
    scheduled = [
        event.activity_task_scheduled_event_attributes
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    names = [attributes.activity_type.name for attributes in scheduled]
    return result, names, str(scheduled[-1].input), audit


async def test_an_agent_run_asks_a_human_and_deploys_on_their_approval(
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
    tmp_path: Path,
) -> None:
    human.reply("yes, ship v2")
    human.decide_approval("approve", to=HUMAN)
    result, names, last_input, audit = await _run_agent(
        humanwire_service, humanwire_api_key, tmp_path, skip_time=False
    )
    assert result == "Done with v2."
    assert names == [
        "invoke_model_activity",
        "humanwire.send_sms",
        "invoke_model_activity",
        "humanwire.request_approval",
        "deploy_version",
        "invoke_model_activity",
    ]
    # The tools' results went back to the model: the reply and the deploy's outcome.
    assert "yes, ship v2" in last_input and "Deployed (" in last_input
    assert [entry.type for entry in audit].count("approval.consumed") == 1


async def test_an_agent_run_left_unanswered_for_three_days_gets_the_no_response_text(
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
    tmp_path: Path,
) -> None:
    result, names, last_input, audit = await _run_agent(
        humanwire_service, humanwire_api_key, tmp_path, skip_time=True
    )
    assert result == "Done with v2."
    assert "deploy_version" not in names
    assert NO_RESPONSE in last_input and "Not deployed: no decision in time." in last_input
    assert "approval.consumed" not in [entry.type for entry in audit]
