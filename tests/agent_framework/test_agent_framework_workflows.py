"""A Microsoft Agent Framework workflow's ``ctx.request_info`` answered by a person
(``HumanRequests``), against the real service over loopback with the scripted human: in
the run; nobody answering (the no-response text); a stopped service (the reason, never a
made-up answer); and from a checkpoint in another process, once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_framework_helpers import asking_workflow, ran

from framework_support import PHONE, run_process
from humanwire import AsyncHumanWire
from humanwire.agent_framework import HumanRequests
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.testing.service import start_test_service
from humanwire.types import DEFAULT_NO_RESPONSE_TEMPLATE

SCRIPT = Path(__file__).with_name("agent_framework_workflow_process.py")


def people(client: AsyncHumanWire, window: float = 30) -> HumanRequests:
    return HumanRequests(client=client, to=PHONE, follow_up_time=window)


async def test_a_person_answers_the_request(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    human.reply("yes, ship it")
    workflow = asking_workflow(tmp_path / "answers.log")
    result = await people(async_humanwire_client).arun(workflow, "v2")
    assert result.get_outputs() == ["Ship v2? -> yes, ship it"]
    (delivery,) = human.deliveries()
    assert delivery.to == PHONE and delivery.text.startswith("Ship v2?")


async def test_nobody_answering_is_the_no_response_text(
    async_humanwire_client: AsyncHumanWire, tmp_path: Path
) -> None:
    workflow = asking_workflow(tmp_path / "answers.log")
    result = await people(async_humanwire_client, window=1).arun(workflow, "v2")
    assert result.get_outputs() == [f"Ship v2? -> {DEFAULT_NO_RESPONSE_TEMPLATE}"]


async def test_a_stopped_service_is_the_reason_never_an_answer(tmp_path: Path) -> None:
    service = start_test_service(tmp_path / "stopped.db")
    key = service.create_account()
    service.stop()
    client = AsyncHumanWire(api_key=key, base_url=service.base_url)
    try:
        workflow = asking_workflow(tmp_path / "answers.log")
        result = await people(client).arun(workflow, "v2")
    finally:
        await client.aclose()
    (output,) = result.get_outputs()
    assert output.startswith("Ship v2? -> humanwire: ")


def test_a_checkpoint_is_run_on_in_another_process_once(
    tmp_path: Path,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
) -> None:
    common = (str(tmp_path), humanwire_service.base_url, humanwire_api_key)

    def run(command: str) -> dict[str, Any]:
        return run_process(SCRIPT, command, *common)

    assert run("start") == {"pending": 1}
    (question,) = human.deliveries()
    assert question.text.startswith("Ship v2?")
    # Nobody has answered yet: the resume looks once and runs nothing.
    assert run("resume") == {"resumed": False}
    human.reply("yes, ship it", interaction_id=question.interaction_id).wait(10)
    assert run("resume") == {"resumed": True, "outputs": ["Ship v2? -> yes, ship it"]}
    assert run("resume") == {"resumed": False}  # the latest checkpoint waits for nothing
    assert ran(tmp_path / "answers.log") == ["yes, ship it"]
    assert len(human.deliveries()) == 1  # asked once, however often resumed


def test_what_a_person_is_asked() -> None:
    from agent_framework_helpers import ShipQuestion

    from humanwire.agent_framework import question_text

    assert question_text("Ship v2?") == "Ship v2?"
    assert question_text(ShipQuestion("Ship v3?")) == "Ship v3?"
    assert question_text(42) == "42"


async def test_a_request_wanting_another_type_than_text_is_refused(
    async_humanwire_client: AsyncHumanWire,
) -> None:
    import pytest
    from agent_framework_helpers import counting_workflow

    with pytest.raises(TypeError, match="a person's reply is text"):
        await people(async_humanwire_client).arun(counting_workflow(), "crates")
