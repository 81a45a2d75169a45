"""The README's "LangChain in ten lines" runs as written against the loopback service,
with a scripted chat model in the place of ``"openai:gpt-5"``: the agent texts the inbox's
human and finishes on the answer. docs/start/langchain.md's agent, whose scripted model
is on the page, runs as written, offline."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage
from lc_helpers import scripted_model

from docs_support import block
from humanwire.testing import RunningService, ScriptedHuman


def test_the_ten_lines_run(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
) -> None:
    code = block("README.md", "LangChain in ten lines", "python")
    monkeypatch.setenv("HUMANWIRE_BASE_URL", humanwire_service.base_url)
    monkeypatch.setenv("HUMANWIRE_API_KEY", humanwire_api_key)
    ask = {"name": "ask_human_sms", "args": {"message": "Where?"}, "id": "call-ask"}
    model = scripted_model(
        AIMessage(content="", tool_calls=[ask]),
        AIMessage(content="The offsite is in Lisbon."),
    )
    # The inbox's default human, the recipient of a tool built without one.
    reply = human.reply("Lisbon")
    namespace: dict[str, Any] = {"model": model}
    exec(compile(code.replace('"openai:gpt-5"', "model"), "README-langchain", "exec"), namespace)
    assert reply.wait(10).text == "Where?"
    assert capsys.readouterr().out.strip() == "The offsite is in Lisbon."
    tool_answer = namespace["result"]["messages"][2]
    assert tool_answer.content == "Human response: Lisbon"


@pytest.mark.usefixtures("service_environment")
def test_the_langchain_pages_agent_runs_offline_as_written(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], human: ScriptedHuman
) -> None:
    code = block("start/langchain.md", "An agent that asks", "python")
    # No model key anywhere: the page's model is its own.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    reply = human.reply("Lisbon")
    exec(compile(code, "docs-langchain-agent", "exec"), {})
    assert reply.wait(10).text == "Where should the offsite be?"
    assert capsys.readouterr().out.strip() == "Human response: Lisbon"
