"""humanwire's ask tool and approval gate inside a Pydantic AI agent made durable by DBOS
(``DBOSDurability``): the model's requests are DBOS steps, the tools run in the workflow
and ask through humanwire.dbos (a send step, then ``DBOS.recv_async``), the answers come
in through the answer bridge. Real DBOS (a SQLite file and PostgreSQL), the real humanwire
service over loopback, Pydantic AI's ``FunctionModel`` as the model.

In-process here; ``test_dbos_pydantic_ai_killed.py`` kills the process mid-wait."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS, SetWorkflowID
from dbos_support import SystemDatabase
from pai_release_agent import (
    HUMAN,
    QUESTION,
    ask_human,
    deploy,
    deploy_version,
    run_release,
    wrapped_release_agent,
)

import humanwire.dbos as humanwire_dbos
from humanwire import HumanWire
from humanwire.errors import AlreadyConsumedError
from humanwire.testing import RunningService, ScriptedHuman

LIMIT = 120.0
"""Seconds any one wait of these tests may take on a slow, loaded machine."""
PROMPT = "Release v2 if the on-call human agrees."


@pytest.fixture
def humanwire(humanwire_service: RunningService, humanwire_api_key: str) -> Iterator[HumanWire]:
    with HumanWire(base_url=humanwire_service.base_url, api_key=humanwire_api_key) as client:
        yield client


@pytest.fixture
def bridge(
    system_database: SystemDatabase, humanwire: HumanWire, tmp_path: Path
) -> Iterator[humanwire_dbos.AnswerBridge]:
    """DBOS launched in this process (version pinned) and the answer bridge beside it."""
    humanwire_dbos.configure(humanwire)
    DBOS(config=system_database.config("humanwire-dbos-pydantic-ai"))  # type: ignore[arg-type]
    DBOS.launch()
    answer_bridge = humanwire_dbos.AnswerBridge(
        humanwire, DBOS, humanwire_dbos.FileCursor(tmp_path / "cursor"), poll_wait=1
    )
    answer_bridge.start()
    try:
        yield answer_bridge
    finally:
        answer_bridge.stop(LIMIT)
        DBOS.destroy()


def _steps(workflow_id: str) -> list[str]:
    return [step["function_name"] for step in DBOS.list_workflow_steps(workflow_id)]


@pytest.mark.parametrize("durable", ["capability", "wrapper"])
def test_the_agent_asks_waits_and_deploys_once_approved(
    durable: str, bridge: humanwire_dbos.AnswerBridge, humanwire: HumanWire, human: ScriptedHuman
) -> None:
    """``DBOSDurability`` on the agent, run in a workflow of ours; or the agent wrapped in
    ``DBOSAgent``, whose ``run_sync`` is a workflow of its own."""
    replied = human.reply("yes, ship it")
    approved = human.decide_approval("approve", to=HUMAN)
    workflow_id = f"release-{uuid.uuid4()}"
    with SetWorkflowID(workflow_id):
        if durable == "capability":
            result = DBOS.start_workflow(run_release, PROMPT).get_result()
        else:
            result = wrapped_release_agent.run_sync(PROMPT).output
            # run_sync's workflow runs the agent as a child workflow (``run``).
            (workflow_id,) = [
                step["child_workflow_id"]
                for step in DBOS.list_workflow_steps(workflow_id)
                if step["function_name"] == "release_wrapped.run"
            ]
    prefix = "release__" if durable == "capability" else "release_wrapped__"
    approval_id = approved.wait(LIMIT).interaction_id
    assert result == f"The human said: yes, ship it. Deployed v2 (approval {approval_id})."
    assert replied.wait(LIMIT).text == QUESTION
    steps = _steps(workflow_id)
    # The model's requests are steps; between them, the tools' sends, waits, claim and
    # deploy (DBOS's own bookkeeping steps, DBOS.sleep..., left out).
    assert [name for name in steps if not name.startswith("DBOS.sleep")] == [
        f"{prefix}model.request",
        "humanwire.send_message_async",
        "DBOS.recv",
        f"{prefix}model.request",
        "humanwire.request_approval_async",
        "DBOS.recv",
        "humanwire.consume_approval_async",
        "release.deploy_version",
        f"{prefix}model.request",
    ], steps
    # One text to ask, one approval request; the approval is consumed: another claim of
    # it is refused.
    assert len(human.deliveries(to=HUMAN)) == 2
    digest = humanwire.approvals.get(approval_id or "").action_digest
    with pytest.raises(AlreadyConsumedError):
        humanwire.approvals.consume(approval_id or "", action_digest=digest)


def test_a_rejected_deploy_is_not_run(
    bridge: humanwire_dbos.AnswerBridge, human: ScriptedHuman
) -> None:
    human.reply("yes")
    human.decide_approval("reject", "not tonight", to=HUMAN)
    handle = DBOS.start_workflow(run_release, PROMPT)
    assert handle.get_result() == "The human said: yes. Not deployed: rejected."
    steps = _steps(handle.workflow_id)
    assert "humanwire.consume_approval_async" not in steps
    assert "release.deploy_version" not in steps


GUIDE = Path(__file__).parents[2] / "docs" / "guides" / "dbos.md"


@pytest.mark.parametrize("function", [ask_human, deploy, deploy_version, run_release])
def test_the_guide_shows_the_tested_tools(function: Callable[..., Any]) -> None:
    assert inspect.getsource(function) in GUIDE.read_text()
