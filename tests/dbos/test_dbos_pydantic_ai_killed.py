"""The Pydantic AI agent made durable by DBOS (``pai_release_agent.py``) runs in a process
of its own; its ask tool sends and waits; the process is SIGKILLed mid-wait; the human
answers while nothing runs the agent, and the answer bridge (a ``DBOSClient`` in this
test's process) sends the answer in; a new process launches DBOS, which recovers the run:
the model's first request is read from DBOS's record (not asked again), the send step is
not run again, and the run goes on to its approval gate and deploys once."""

from __future__ import annotations

import json
import os
import shutil
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOSClient
from dbos_support import LIMIT, AppProcesses, SystemDatabase, until
from pai_release_agent import HUMAN

import humanwire.dbos as humanwire_dbos
from humanwire import HumanWire
from humanwire.errors import AlreadyConsumedError
from humanwire.testing import RunningService, ScriptedHuman

HERE = Path(__file__).parent
SEND = "humanwire.send_message_async"


@pytest.fixture
def humanwire(humanwire_service: RunningService, humanwire_api_key: str) -> Iterator[HumanWire]:
    with HumanWire(base_url=humanwire_service.base_url, api_key=humanwire_api_key) as client:
        yield client


def test_the_agent_killed_mid_wait_is_recovered_and_asks_once(
    system_database: SystemDatabase,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire: HumanWire,
    human: ScriptedHuman,
    tmp_path: Path,
) -> None:
    for name in ("pai_release_app.py", "pai_release_agent.py"):
        shutil.copy(HERE / name, tmp_path / name)
    env = {
        **os.environ,
        "HW_BASE_URL": humanwire_service.base_url,
        "HW_API_KEY": humanwire_api_key,
        "DBOS_URL": system_database.url,
        "DBOS_SCHEMA": system_database.schema,
    }
    app = AppProcesses(tmp_path / "pai_release_app.py", env, tmp_path)
    workflow_id = f"release-{uuid.uuid4()}"
    client = DBOSClient(
        system_database_url=system_database.url, dbos_system_schema=system_database.schema
    )
    bridge = humanwire_dbos.AnswerBridge(
        humanwire, client, humanwire_dbos.FileCursor(tmp_path / "cursor"), poll_wait=1
    )
    try:
        bridge.start_cursor()  # before the first ask
        first = app.run("start", workflow_id)
        assert first.stdout is not None
        assert first.stdout.readline().strip() == "started", app.stderr()

        def waiting() -> list[dict[str, Any]] | None:
            steps = client.list_workflow_steps(workflow_id)
            sends = [step for step in steps if step["function_name"] == SEND]
            # Past the send, at its wait: the recv step has begun (or nothing recorded yet).
            return sends or None

        (send,) = until(waiting, "the ask's send step")
        first.send_signal(signal.SIGKILL)
        assert first.wait(LIMIT) == -signal.SIGKILL

        # Nothing runs the agent: the human answers; the bridge stores the answer at once.
        (sent,) = human.deliveries(to=HUMAN)
        assert sent.interaction_id == send["output"]
        human.reply("yes, after the restart", interaction_id=sent.interaction_id).wait(LIMIT)
        until(lambda: bridge.deliver_once(wait=5), "the bridge's delivery of the answer")
        assert client.retrieve_workflow(workflow_id).get_status().status == "PENDING"
        bridge.start()  # from here on, for the approval the recovered run asks for

        approved = human.decide_approval("approve", to=HUMAN)
        second = app.run("finish", workflow_id)
        out, _ = second.communicate(timeout=LIMIT * 2)
        assert second.returncode == 0, app.stderr()
        finished = json.loads(out.strip().splitlines()[-1])
        approval_id = approved.wait(LIMIT).interaction_id
        assert finished["result"] == (
            f"The human said: yes, after the restart. Deployed v2 (approval {approval_id})."
        )
        # The recovered process's model answered the two requests after the answer; the
        # first (which called the ask tool) was read from DBOS's record.
        assert finished["model_calls"] == 2
        names = [step["function_name"] for step in client.list_workflow_steps(workflow_id)]
        assert names.count(SEND) == 1
        assert names.count("release__model.request") == 3
        assert names.count("release.deploy_version") == 1
        # One text to ask (across the kill), one approval request, consumed once.
        assert len(human.deliveries(to=HUMAN)) == 2
        digest = humanwire.approvals.get(approval_id or "").action_digest
        with pytest.raises(AlreadyConsumedError):
            humanwire.approvals.consume(approval_id or "", action_digest=digest)
        assert client.retrieve_workflow(workflow_id).get_status().status == "SUCCESS"
    finally:
        bridge.stop(LIMIT)
        app.close()
        client.destroy()
