"""The tools in a Claude Agent SDK session (the bundled Claude Code CLI against a scripted
model behind a fake Messages API on loopback), against the real service over loopback with
the scripted human: answered, timed out, sent without waiting; arguments the model got
wrong and service errors as an MCP error result, the run going on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from claude_helpers import FakeMessagesAPI, ScriptedModel, once, options

import humanwire.claude_agent_sdk as adapter
from framework_support import PHONE, assert_checked_when_built, check_tools_follow_the_table
from humanwire import AsyncHumanWire
from humanwire.claude_agent_sdk import (
    AskHumanPerson,
    AskHumanSMS,
    NotifyHumanPerson,
    NotifyHumanSMS,
    allowed_tool_names,
    humanwire_server,
    run_session,
)
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.testing.service import start_test_service
from humanwire.types import DEFAULT_NO_RESPONSE_TEMPLATE


async def run(model: ScriptedModel, tools: list[Any], directory: Path) -> Any:
    """One session whose model is ``model`` and whose MCP server serves ``tools``
    (allowed up front: no gate)."""
    with FakeMessagesAPI(model) as api:
        opts = options(
            api,
            directory,
            mcp_servers={"humanwire": humanwire_server(tools)},
            allowed_tools=allowed_tool_names(tools),
        )
        return await run_session(opts, "go")


def test_the_tools_follow_the_table() -> None:
    check_tools_follow_the_table(adapter)
    assert_checked_when_built(adapter)
    assert allowed_tool_names([AskHumanSMS(to=PHONE)]) == ["mcp__humanwire__ask_human_sms"]


async def test_the_human_replies(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    human.reply("Blue, please")
    model = once("ask_human_sms", {"message": "Which colour?"})
    result = await run(model, [AskHumanSMS(client=async_humanwire_client)], tmp_path)
    assert model.results == ["Human response: Blue, please"]
    assert result.result == "FINAL: Human response: Blue, please"
    (delivery,) = human.deliveries()
    assert delivery.text == "Which colour?"


async def test_nobody_answering_is_the_no_response_text_never_an_error(
    async_humanwire_client: AsyncHumanWire, tmp_path: Path
) -> None:
    model = once("ask_human_sms", {"message": "Anyone?"})
    tool = AskHumanSMS(client=async_humanwire_client, wait_time=1)
    result = await run(model, [tool], tmp_path)
    assert model.results == [DEFAULT_NO_RESPONSE_TEMPLATE]
    assert not result.is_error


async def test_a_person_is_asked_wherever_they_are(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path, ada: str
) -> None:
    human.reply("Blue, please")  # Ada's first confirmed address: the sms number
    model = once("ask_human_person", {"message": "Which colour?"})
    tool = AskHumanPerson(client=async_humanwire_client, person=ada)
    result = await run(model, [tool], tmp_path)
    assert model.results == ["Human response: Blue, please"]
    assert result.result == "FINAL: Human response: Blue, please"


async def test_a_person_who_does_not_answer_is_the_no_response_text(
    async_humanwire_client: AsyncHumanWire, tmp_path: Path, ada: str
) -> None:
    model = once("ask_human_person", {"message": "Anyone?"})
    tool = AskHumanPerson(client=async_humanwire_client, person=ada, wait_time=1)
    result = await run(model, [tool], tmp_path)
    assert model.results == [DEFAULT_NO_RESPONSE_TEMPLATE]
    assert not result.is_error


async def test_a_person_is_notified(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path, ada: str
) -> None:
    model = once("notify_human_person", {"message": "Deploy done"})
    await run(model, [NotifyHumanPerson(client=async_humanwire_client, person=ada)], tmp_path)
    [sent] = [d for d in human.deliveries() if d.text == "Deploy done"]
    assert sent.to == human.phone
    assert model.results == [
        f"Message sent to the person (interaction {sent.interaction_id}); no reply is awaited."
    ]


async def test_a_notification_is_sent_without_waiting(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    model = once("notify_human_sms", {"message": "Deploy done"})
    result = await run(model, [NotifyHumanSMS(client=async_humanwire_client)], tmp_path)
    (returned,) = model.results
    assert returned.startswith("Message sent")
    assert result.result == f"FINAL: {returned}"
    assert [d.text for d in human.deliveries()] == ["Deploy done"]


async def test_arguments_that_do_not_fit_are_an_error_result(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    # The CLI checks the input schema first; the handler checks again (a caller other
    # than the CLI), and says so as an error result.
    tool = AskHumanSMS(client=async_humanwire_client)
    model = once("ask_human_sms", {"text": "no message field"})
    await run(model, [tool], tmp_path)
    (returned,) = model.results
    assert "'message' is a required property" in returned
    direct = await tool.handler({"text": "no message field"})
    assert direct["is_error"] is True
    assert direct["content"][0]["text"].startswith("humanwire: invalid arguments: message")
    assert human.deliveries() == []


async def test_a_bad_key_is_an_error_result_and_the_run_goes_on(
    humanwire_service: RunningService, tmp_path: Path
) -> None:
    client = AsyncHumanWire(api_key="hw_not_a_key", base_url=humanwire_service.base_url)
    try:
        model = once("ask_human_sms", {"message": "Hello?"})
        result = await run(model, [AskHumanSMS(client=client, to=PHONE)], tmp_path)
    finally:
        await client.aclose()
    (returned,) = model.results
    assert returned.startswith("humanwire: ")
    assert result.result == f"FINAL: {returned}"


async def test_a_stopped_service_is_an_error_result(tmp_path: Path) -> None:
    service = start_test_service(tmp_path / "stopped.db")
    key = service.create_account()
    service.stop()
    client = AsyncHumanWire(api_key=key, base_url=service.base_url)
    try:
        model = once("ask_human_sms", {"message": "Hello?"})
        await run(model, [AskHumanSMS(client=client, to=PHONE)], tmp_path)
    finally:
        await client.aclose()
    (returned,) = model.results
    assert returned.startswith("humanwire: ")
