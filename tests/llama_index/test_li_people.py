"""A person of the people directory in ``HumanWireToolSpec`` (``person=``, else
``HUMANWIRE_PERSON``): ``ask_human_person`` and ``notify_human_person`` offered as the
LangChain tools read, answered by the scripted human and timed out to the no-response
text, sync and async; not offered without a person."""

from __future__ import annotations

import pytest
from llama_index.core.tools import FunctionTool

from humanwire import AsyncHumanWire, HumanWire
from humanwire._tooling import plain_json_schema
from humanwire.langchain import AskHumanPerson
from humanwire.llama_index import HumanWireToolSpec
from humanwire.testing import ScriptedHuman
from humanwire.types import DEFAULT_NO_RESPONSE_TEMPLATE

PERSON_TOOLS = {"ask_human_person", "notify_human_person"}


def _tools(spec: HumanWireToolSpec) -> dict[str, FunctionTool]:
    return {tool.metadata.get_name(): tool for tool in spec.to_tool_list()}


def test_offered_only_with_a_person(
    humanwire_client: HumanWire, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not set(_tools(HumanWireToolSpec(humanwire_client))) & PERSON_TOOLS
    spec = HumanWireToolSpec(humanwire_client, person="per_ada", fallback_after=60)
    tool = _tools(spec)["ask_human_person"]
    lc_tool = AskHumanPerson(person="per_ada", fallback_after=60, wait_time=300)
    assert tool.metadata.description == lc_tool.description
    assert lc_tool.args_schema is not None
    assert set(tool.metadata.get_parameters_dict()["properties"]) == set(
        plain_json_schema(lc_tool.args_schema)["properties"]  # type: ignore[arg-type]
    )
    monkeypatch.setenv("HUMANWIRE_PERSON", "per_env")
    assert set(_tools(HumanWireToolSpec(humanwire_client))) >= PERSON_TOOLS
    with pytest.raises(ValueError, match="person's id"):
        HumanWireToolSpec(humanwire_client, person="ada")


def test_the_person_is_asked_and_answers(
    humanwire_client: HumanWire, human: ScriptedHuman, ada: str
) -> None:
    replied = human.reply("teal")  # Ada's first confirmed address: the sms number
    spec = HumanWireToolSpec(humanwire_client, person=ada, wait_time=10)
    output = _tools(spec)["ask_human_person"].call(message="Which colour?")
    assert output.content == "Human response: teal"
    assert replied.wait(5).text == "Which colour?"


async def test_the_person_does_not_answer_in_time(
    async_humanwire_client: AsyncHumanWire, ada: str
) -> None:
    spec = HumanWireToolSpec(async_client=async_humanwire_client, person=ada, wait_time=1)
    output = await _tools(spec)["ask_human_person"].acall(message="Anyone?")
    assert output.content == DEFAULT_NO_RESPONSE_TEMPLATE
    assert output.is_error is False


async def test_the_model_names_another_person_when_exposed(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire, ada: str
) -> None:
    spec = HumanWireToolSpec(
        async_client=async_humanwire_client, person="per_nobody", expose_recipients=True
    )
    output = await _tools(spec)["notify_human_person"].acall(message="Deployed.", person=ada)
    assert output.content.startswith("Message sent to the person (interaction ")
    interaction = output.content.split("(interaction ", 1)[1].split(")", 1)[0]
    (delivery,) = humanwire_client.sandbox.deliveries(interaction_id=interaction)
    assert delivery.text == "Deployed."
