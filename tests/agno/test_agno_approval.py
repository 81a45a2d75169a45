"""Agno's own pauses answered by people in the run (``HumanRuns.arun``), against the real
service over loopback with the scripted human: ``requires_confirmation`` through ``POST
/approvals`` (the gated function runs once on approval, never on rejection, the model
reading the comment), ``requires_user_input`` and ``external_execution`` answered by
text; timeouts; and service errors failing closed, the model told why."""

from __future__ import annotations

from pathlib import Path

import pytest
from agno_helpers import agent, gated_tools, once, ran, scripted

from framework_support import PAY, PHONE, forms
from humanwire import AsyncHumanWire
from humanwire.agno import HumanRuns, questions_of
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.testing.service import start_test_service
from humanwire.types import DEFAULT_NO_RESPONSE_TEMPLATE


def humans(client: AsyncHumanWire, **options: object) -> HumanRuns:
    return HumanRuns(client=client, to=PHONE, follow_up_time=options.pop("window", 30), **options)


async def test_an_approved_call_runs_once(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    log = tmp_path / "ran.log"
    human.decide_approval("approve", "Go")
    model = once(*PAY)
    result = await humans(async_humanwire_client).arun(agent(model, gated_tools(log)), "pay")
    assert result.content == "FINAL: sent 50 to bob"
    assert ran(log) == ["50 bob"]
    (delivery,) = forms(human)
    assert "send_payment" in delivery.text


async def test_a_rejection_reaches_the_model_with_the_comment(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    log = tmp_path / "ran.log"
    human.decide_approval("reject", "too expensive")
    model = once(*PAY)
    result = await humans(async_humanwire_client).arun(agent(model, gated_tools(log)), "pay")
    assert ran(log) == []
    assert model.results == ["send_payment was not run: a human rejected it. Reason: too expensive"]
    assert result.content == f"FINAL: {model.results[0]}"


async def test_nobody_deciding_in_time_is_a_rejection_never_an_error(
    async_humanwire_client: AsyncHumanWire, tmp_path: Path
) -> None:
    log = tmp_path / "ran.log"
    model = once(*PAY)
    runs = humans(async_humanwire_client, window=1)
    result = await runs.arun(agent(model, gated_tools(log)), "pay")
    assert ran(log) == []
    assert "no approval decision arrived in time (timeout" in str(result.content)


async def test_user_input_is_asked_and_given(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    log = tmp_path / "ran.log"
    human.reply("LGTM from alice")
    model = once("ship", {"version": "v2"})
    result = await humans(async_humanwire_client).arun(agent(model, gated_tools(log)), "ship")
    assert result.content == "FINAL: shipped v2 (LGTM from alice)"
    assert ran(log) == ["ship v2 LGTM from alice"]
    (delivery,) = human.deliveries()
    assert "approver_note" in delivery.text and "version: v2" in delivery.text


async def test_user_input_nobody_gives_rejects_the_call(
    async_humanwire_client: AsyncHumanWire, tmp_path: Path
) -> None:
    log = tmp_path / "ran.log"
    model = once("ship", {"version": "v2"})
    runs = humans(async_humanwire_client, window=1)
    result = await runs.arun(agent(model, gated_tools(log)), "ship")
    assert ran(log) == []  # never run with a made-up note
    assert result.content == f"FINAL: ship was not run: {DEFAULT_NO_RESPONSE_TEMPLATE}"


async def test_an_external_execution_is_answered_by_a_person(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    human.reply("yes (answered by SMS)")
    model = once("ask_external", {"question": "Is the venue booked?"})
    tools = gated_tools(tmp_path / "ran.log")
    result = await humans(async_humanwire_client).arun(agent(model, tools), "ask")
    assert result.content == "FINAL: Human response: yes (answered by SMS)"
    (delivery,) = human.deliveries()
    assert "Is the venue booked?" in delivery.text


async def test_an_unanswered_external_execution_is_the_no_response_text(
    async_humanwire_client: AsyncHumanWire, tmp_path: Path
) -> None:
    model = once("ask_external", {"question": "Anyone?"})
    tools = gated_tools(tmp_path / "ran.log")
    result = await humans(async_humanwire_client, window=1).arun(agent(model, tools), "ask")
    assert result.content == f"FINAL: {DEFAULT_NO_RESPONSE_TEMPLATE}"


async def test_every_pause_of_a_step_is_answered(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    # Two calls in one step, then a second step repeating the first's action: each
    # pause is answered in turn, and the repeated action is asked afresh.
    log = tmp_path / "ran.log"
    for _ in range(3):
        human.decide_approval("approve")
    model = scripted([PAY, ("send_payment", {"amount": 7, "to": "eve"})], [PAY])
    result = await humans(async_humanwire_client).arun(agent(model, gated_tools(log)), "pay")
    assert ran(log) == ["50 bob", "7 eve", "50 bob"]
    assert len(forms(human)) == 3
    assert result.content == "FINAL: sent 50 to bob"


async def test_a_bad_key_rejects_the_call_with_the_reason(
    humanwire_service: RunningService, tmp_path: Path
) -> None:
    log = tmp_path / "ran.log"
    client = AsyncHumanWire(api_key="hw_not_a_key", base_url=humanwire_service.base_url)
    try:
        model = once(*PAY)
        result = await humans(client).arun(agent(model, gated_tools(log)), "pay")
    finally:
        await client.aclose()
    assert ran(log) == []  # fail closed
    (returned,) = model.results
    assert returned.startswith("send_payment was not run: its approval could not be requested")
    assert result.content == f"FINAL: {returned}"


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (PAY, "send_payment was not run: its approval could not be requested"),
        (("ship", {"version": "v2"}), "ship was not run: its approval could not be requested"),
        (("ask_external", {"question": "Anyone?"}), "humanwire: "),
    ],
)
async def test_a_stopped_service_fails_closed(
    tmp_path: Path, call: tuple[str, dict[str, object]], said: str
) -> None:
    service = start_test_service(tmp_path / "stopped.db")
    key = service.create_account()
    service.stop()
    log = tmp_path / "ran.log"
    client = AsyncHumanWire(api_key=key, base_url=service.base_url)
    try:
        model = once(*call)
        result = await humans(client).arun(agent(model, gated_tools(log)), "go")
    finally:
        await client.aclose()
    assert ran(log) == []
    (returned,) = model.results
    assert returned.startswith(said)
    assert not result.is_paused


def test_user_feedback_is_not_a_question_it_answers() -> None:
    from agno.models.response import ToolExecution
    from agno.run.requirement import RunRequirement
    from agno.tools.function import UserFeedbackQuestion

    execution = ToolExecution(
        tool_call_id="c",
        tool_name="pick",
        tool_args={},
        user_feedback_schema=[UserFeedbackQuestion(question="Which?", options=[])],
    )
    with pytest.raises(ValueError, match="user feedback"):
        questions_of(RunRequirement(tool_execution=execution))


async def test_a_call_id_reused_by_another_run_is_asked_afresh(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    # The same call id (call_0_0) and action in two runs: the Idempotency-Key is bound to
    # the run too, so the second run gets an approval of its own, not the first's (used).
    log = tmp_path / "ran.log"
    human.decide_approval("approve")
    human.decide_approval("approve")
    runs = humans(async_humanwire_client)
    for _ in range(2):
        result = await runs.arun(agent(once(*PAY), gated_tools(log)), "pay")
        assert result.content == "FINAL: sent 50 to bob"
    assert ran(log) == ["50 bob", "50 bob"]
    assert len(forms(human)) == 2
