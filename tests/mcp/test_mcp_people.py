"""A person of the people directory through the MCP server (``--person`` /
``HUMANWIRE_PERSON``): ``ask_human_person`` and ``notify_human_person`` listed as the
LangChain tools read, answered by the scripted human, timed out to the no-response text,
held under a client's limit and handed to the check tool; not listed without a person."""

from __future__ import annotations

from typing import Any

import pytest
from mcp_helpers import PHONE, Connect, text

from humanwire import HumanWire
from humanwire._tooling import plain_json_schema
from humanwire.langchain import AskHumanPerson, NotifyHumanPerson
from humanwire.mcp import ConfiguredSource, McpSettings, SettingsError, build_server
from humanwire.testing import ScriptedHuman
from humanwire.types import DEFAULT_NO_RESPONSE_TEMPLATE

NO_LIMIT: dict[str, Any] = {"client_timeout": None}
PERSON_TOOLS = {"ask_human_person", "notify_human_person"}


async def test_the_person_tools_mirror_the_langchain_tools() -> None:
    settings = McpSettings(person="per_ada", fallback_after=120, **NO_LIMIT)
    server = build_server(settings, ConfiguredSource(settings, None))
    tools = {tool.name: tool for tool in await server.list_tools()}
    for lc_tool in (
        AskHumanPerson(person="per_ada", fallback_after=120),
        NotifyHumanPerson(person="per_ada", fallback_after=120),
    ):
        tool = tools[lc_tool.name]
        assert tool.description == lc_tool.description
        assert lc_tool.args_schema is not None
        assert tool.input_schema == plain_json_schema(lc_tool.args_schema)  # type: ignore[arg-type]


async def test_no_person_no_person_tools(connect: Connect) -> None:
    async with connect() as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert "ask_human_sms" in names and not names & PERSON_TOOLS


def test_a_person_alone_is_a_configuration_and_a_bad_one_is_refused() -> None:
    remote = HumanWire(api_key="k", base_url="https://humanwire.example")
    source = ConfiguredSource(McpSettings(person="per_ada"), remote.to_async())
    assert source.channels == ()  # no address configured: the person tools only
    with pytest.raises(SettingsError, match="HUMANWIRE_PERSON"):
        McpSettings(person="ada@example.com")
    with pytest.raises(SettingsError, match="fallback_after"):
        McpSettings(person="per_ada", fallback_after=0)
    env = {"HUMANWIRE_PERSON": "per_env", "HUMANWIRE_MCP_FALLBACK_AFTER": "90"}
    settings = McpSettings.from_env(env)
    assert (settings.person, settings.fallback_after) == ("per_env", 90)
    assert McpSettings.from_env(env, person="per_flag").person == "per_flag"


async def test_the_person_is_asked_wherever_they_are(
    connect: Connect, human: ScriptedHuman, ada: str
) -> None:
    replied = human.reply("Blue, please")  # Ada's first confirmed address: the sms number
    async with connect(person=ada, wait_time=10, **NO_LIMIT) as client:
        result = await client.call_tool("ask_human_person", {"message": "Which colour?"})
    assert result.is_error is False
    assert text(result) == "Human response: Blue, please"
    assert (await replied.async_wait(5)).to == PHONE


async def test_a_person_who_does_not_answer_is_the_no_response_text(
    connect: Connect, ada: str
) -> None:
    async with connect(person=ada, wait_time=1, **NO_LIMIT) as client:
        result = await client.call_tool("ask_human_person", {"message": "Anyone there?"})
    assert result.is_error is False
    assert text(result) == DEFAULT_NO_RESPONSE_TEMPLATE


async def test_a_wait_longer_than_the_client_allows_goes_to_the_check_tool(
    connect: Connect, human: ScriptedHuman, ada: str
) -> None:
    async with connect(person=ada, wait_time=30, client_timeout=3) as client:
        [tool] = [t for t in (await client.list_tools()).tools if t.name == "ask_human_person"]
        assert "check_human_interaction returns their answer later" in (tool.description or "")
        result = await client.call_tool("ask_human_person", {"message": "Later?"})
        handed = text(result)
        assert handed.startswith("The human has not answered yet (interaction ")
        interaction = handed.split("(interaction ", 1)[1].split(")", 1)[0]
        await human.reply("now I have", interaction_id=interaction).async_wait(10)
        checked = await client.call_tool("check_human_interaction", {"interaction_id": interaction})
    assert text(checked).endswith("was answered. Human response: now I have")


async def test_the_person_is_notified(
    connect: Connect, humanwire_client: HumanWire, ada: str
) -> None:
    async with connect(person=ada) as client:
        result = await client.call_tool("notify_human_person", {"message": "Deployed."})
    sent = text(result)
    assert sent.startswith("Message sent to the person (interaction ")
    interaction = sent.split("(interaction ", 1)[1].split(")", 1)[0]
    (delivery,) = humanwire_client.sandbox.deliveries(interaction_id=interaction)
    assert (delivery.to, delivery.text) == (PHONE, "Deployed.")
