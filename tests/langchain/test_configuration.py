"""Tools configured as users write them: from the environment, or with nothing at all
(the embedded service and its inbox's default human)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lc_helpers import Mode, run_tool

from humanwire.langchain import AskHumanSMS, HumanForm
from humanwire.testing import ScriptedHuman
from humanwire.testing.service import RunningService


async def _close(tool: AskHumanSMS | HumanForm) -> None:
    if tool.client is not None:
        tool.client.close()
    if tool.async_client is not None:
        await tool.async_client.aclose()


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_configured_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
    mode: Mode,
) -> None:
    monkeypatch.setenv("HUMANWIRE_BASE_URL", humanwire_service.base_url)
    monkeypatch.setenv("HUMANWIRE_API_KEY", humanwire_api_key)
    human.reply("from the environment")
    tool = AskHumanSMS(wait_time=5)
    try:
        message = await run_tool(tool, {"message": "Configured?"}, mode)
        assert message.content == "Human response: from the environment"
    finally:
        await _close(tool)


@pytest.fixture
def embedded_human() -> Iterator[ScriptedHuman]:
    """The scripted human of the embedded service (a private home and port: tests/conftest)."""
    from humanwire.server.runtime.embedded import ensure_embedded_service, stop_embedded_service

    service = ensure_embedded_service()
    with ScriptedHuman(service.base_url, service.api_key) as human:
        yield human
    stop_embedded_service()


async def test_no_arguments_on_the_embedded_service(embedded_human: ScriptedHuman) -> None:
    embedded_human.reply("no config needed")
    embedded_human.fill_form({"answer": "42"})
    ask = AskHumanSMS(wait_time=5)
    form = HumanForm(wait_time=5)
    try:
        answered = await run_tool(ask, {"message": "Hello?"}, "sync")
        assert answered.content == "Human response: no config needed"
        args = {"title": "Quiz", "fields": [{"id": "answer", "label": "Answer"}]}
        submitted = await run_tool(form, args, "async")
        assert submitted.artifact.values == {"answer": "42"}
    finally:
        await _close(ask)
        await _close(form)
