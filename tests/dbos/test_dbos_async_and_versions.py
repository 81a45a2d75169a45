"""humanwire.dbos's async helpers (``ask_async`` ...: async steps, ``DBOS.recv_async``) in
``async def`` workflows, and the deploy guard: a wait begun under DBOS's computed
application version is warned about, or refused before anything is sent. Real DBOS (a
SQLite file and PostgreSQL) and the real humanwire service over loopback."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from dbos import DBOS, SetWorkflowID
from dbos_support import SystemDatabase
from dbos_workflows import (
    HUMAN,
    ask_once,
    ask_once_async,
    form_then_call_async,
    gated_deploy_async,
)

import humanwire.dbos as humanwire_dbos
from humanwire import HumanWire
from humanwire.testing import RunningService, ScriptedHuman

LIMIT = 90.0


@pytest.fixture
def humanwire(humanwire_service: RunningService, humanwire_api_key: str) -> Iterator[HumanWire]:
    with HumanWire(base_url=humanwire_service.base_url, api_key=humanwire_api_key) as client:
        yield client


@pytest.fixture
def bridge(
    system_database: SystemDatabase, humanwire: HumanWire, tmp_path: Path
) -> Iterator[humanwire_dbos.AnswerBridge]:
    """DBOS launched (version pinned) and the bridge beside it."""
    humanwire_dbos.configure(humanwire)
    DBOS(config=system_database.config("humanwire-dbos-async"))  # type: ignore[arg-type]
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


async def _step_names(workflow_id: str) -> list[str]:
    return [s["function_name"] for s in await DBOS.list_workflow_steps_async(workflow_id)]


async def test_an_async_workflow_asks_by_sms_and_gets_the_reply_once(
    bridge: humanwire_dbos.AnswerBridge, human: ScriptedHuman
) -> None:
    human.reply("yes, from an async workflow")
    with warnings.catch_warnings():
        warnings.simplefilter("error", humanwire_dbos.UnpinnedVersionWarning)  # pinned: none
        handle = await DBOS.start_workflow_async(ask_once_async, 120.0)
        assert await handle.get_result() == "yes, from an async workflow"
    names = await _step_names(handle.workflow_id)
    assert names.count("humanwire.send_message_async") == 1
    assert "DBOS.recv" in " ".join(names)  # the wait is DBOS's durable recv
    assert len(human.deliveries(to=HUMAN)) == 1


async def test_an_async_workflow_hears_silence_as_the_no_response_text(
    bridge: humanwire_dbos.AnswerBridge,
) -> None:
    handle = await DBOS.start_workflow_async(ask_once_async, 2.0)
    assert await handle.get_result() == humanwire_dbos.NO_RESPONSE


async def test_an_async_form_and_call_come_back_into_the_workflow(
    bridge: humanwire_dbos.AnswerBridge, human: ScriptedHuman
) -> None:
    human.fill_form({"note": "all green"})
    human.answer_call("They said v2 may ship after 6 pm.")
    handle = await DBOS.start_workflow_async(form_then_call_async)
    values, summary = await handle.get_result()
    assert values == {"note": "all green"}
    assert summary == "They said v2 may ship after 6 pm."


async def test_an_async_approval_with_a_quorum_of_two_is_consumed_once(
    bridge: humanwire_dbos.AnswerBridge, human: ScriptedHuman
) -> None:
    human.decide_approval("approve", to=HUMAN)
    human.decide_approval("approve", to="+12025550101")
    workflow_id = f"deploy-{uuid.uuid4()}"
    with SetWorkflowID(workflow_id):
        handle = await DBOS.start_workflow_async(gated_deploy_async, 2)
    decision, consumed, text = await handle.get_result()
    assert (decision, consumed) == ("approved", True)
    assert "2 of 2" in text
    with SetWorkflowID(workflow_id):  # started again under its id: what it recorded
        again = await DBOS.start_workflow_async(gated_deploy_async, 2)
    assert await again.get_result() == (decision, True, text)
    assert (await _step_names(workflow_id)).count("humanwire.consume_approval_async") == 1


# -- the deploy guard ----------------------------------------------------------------------


@pytest.fixture
def unpinned(system_database: SystemDatabase, humanwire: HumanWire) -> Iterator[None]:
    """DBOS launched with its computed application version (no ``application_version``)."""
    config = system_database.config("humanwire-dbos-unpinned")
    del config["application_version"]
    DBOS(config=config)  # type: ignore[arg-type]
    DBOS.launch()
    try:
        yield
    finally:
        DBOS.destroy()
        humanwire_dbos.configure(humanwire)  # not refusing, for the tests after


def test_a_wait_under_a_computed_version_is_warned_about(
    humanwire: HumanWire, unpinned: None
) -> None:
    humanwire_dbos.configure(humanwire)
    assert humanwire_dbos.version_pinned() is False
    with pytest.warns(humanwire_dbos.UnpinnedVersionWarning, match="application_version") as warned:
        assert ask_once(1.0) == humanwire_dbos.NO_RESPONSE  # it still waits: a warning
    # It points at the workflow that waits, not at humanwire (a workflow another thread
    # runs meanwhile may warn too, at its own line).
    files = [Path(w.filename) for w in warned]
    assert "dbos_workflows.py" in [file.name for file in files]
    assert not [file for file in files if "humanwire" in file.parts], files


def test_a_wait_under_a_computed_version_is_refused_before_anything_is_sent(
    humanwire: HumanWire, unpinned: None, human: ScriptedHuman
) -> None:
    humanwire_dbos.configure(humanwire, require_pinned_version=True)
    with pytest.raises(humanwire_dbos.UnpinnedVersionError, match="not recover"):
        ask_once(60.0)
    assert human.deliveries(to=HUMAN) == []


def test_a_pinned_version_is_told_apart_from_a_computed_one(
    system_database: SystemDatabase, humanwire: HumanWire
) -> None:
    humanwire_dbos.configure(humanwire, require_pinned_version=True)
    DBOS(config=system_database.config("humanwire-dbos-pinned"))  # type: ignore[arg-type]
    DBOS.launch()
    try:
        assert DBOS.application_version == "humanwire-test"
        assert humanwire_dbos.version_pinned() is True
        assert ask_once(1.0) == humanwire_dbos.NO_RESPONSE  # not refused
    finally:
        DBOS.destroy()
        humanwire_dbos.configure(humanwire)
