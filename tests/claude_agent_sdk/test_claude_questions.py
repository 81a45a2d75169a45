"""Claude Code's own ``AskUserQuestion`` tool answered by a person through the gate's
``can_use_tool`` (the bundled CLI, a scripted model on loopback; the real service and
the scripted human): the question and its options go out on the approver's channel; the
reply (an option's number or label, or free text) comes back as the tool's ``answers``;
nobody answering in time is the no-response text, never an exception."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from claude_helpers import FakeMessagesAPI, once, options

from framework_support import PHONE
from humanwire import AsyncHumanWire
from humanwire.claude_agent_sdk import HumanApprovals, answer_for, run_session
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.types import DEFAULT_NO_RESPONSE_TEMPLATE

QUESTION = {
    "question": "Which colour should the banner be?",
    "header": "Colour",
    "options": [
        {"label": "Blue", "description": "calm"},
        {"label": "Red", "description": "bold"},
    ],
    "multiSelect": False,
}


async def ask(client: AsyncHumanWire, directory: Path, **approver: Any) -> list[str]:
    """A session whose model asks ``QUESTION`` with AskUserQuestion; the tool results
    the model was sent."""
    model = once("AskUserQuestion", {"questions": [QUESTION]})
    gate = HumanApprovals(["send_payment"], client=client, to=PHONE, **approver)
    with FakeMessagesAPI(model) as api:
        result = await run_session(gate.options(options(api, directory)), "Pick a colour")
    assert result is not None and result.result == "FINAL: " + " | ".join(model.results)
    return model.results


@pytest.mark.parametrize("reply", ["2", "red", "Red"])
async def test_a_person_picks_an_option(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path, reply: str
) -> None:
    human.reply(reply)
    (returned,) = await ask(async_humanwire_client, tmp_path)
    assert '"Which colour should the banner be?"="Red"' in returned
    (delivery,) = human.deliveries()
    assert "Which colour should the banner be?" in delivery.text
    assert "1. Blue (calm)" in delivery.text and "2. Red (bold)" in delivery.text


async def test_a_free_answer_is_given_as_written(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    human.reply("Green, to match the logo")
    (returned,) = await ask(async_humanwire_client, tmp_path)
    assert '"Which colour should the banner be?"="Green, to match the logo"' in returned


async def test_nobody_answering_is_the_no_response_text(
    async_humanwire_client: AsyncHumanWire, tmp_path: Path
) -> None:
    (returned,) = await ask(async_humanwire_client, tmp_path, wait_time=1)
    assert DEFAULT_NO_RESPONSE_TEMPLATE in returned


async def test_a_bad_key_tells_the_model_it_could_not_ask(
    humanwire_service: RunningService, tmp_path: Path
) -> None:
    client = AsyncHumanWire(api_key="hw_not_a_key", base_url=humanwire_service.base_url)
    try:
        (returned,) = await ask(client, tmp_path)
    finally:
        await client.aclose()
    assert "humanwire: the question could not be asked" in returned


def test_answers_read_numbers_labels_and_several_choices() -> None:
    several = {**QUESTION, "multiSelect": True}
    assert answer_for(QUESTION, " 1 ") == "Blue"
    assert answer_for(several, "1, red") == "Blue, Red"
    assert answer_for(several, "1, purple") == "1, purple"
    assert answer_for(QUESTION, "3") == "3"
