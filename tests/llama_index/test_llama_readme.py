"""The README's LlamaIndex example, which docs/start/llama-index.md shows too, runs as
written (in an async function: it awaits at the top level, as in a notebook) against the
loopback service, with a scripted LLM as its ``llm``."""

from __future__ import annotations

import ast
import asyncio
import types
from typing import Any

import pytest
from test_agent import scripted_llm

from docs_support import block
from humanwire.testing import RunningService, ScriptedHuman

pytestmark = pytest.mark.filterwarnings(
    "ignore::pydantic.warnings.PydanticDeprecatedSince20",
    "ignore::pydantic.warnings.PydanticDeprecatedSince211",
)


def test_the_example_runs(
    monkeypatch: pytest.MonkeyPatch,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
) -> None:
    code = block("README.md", "LlamaIndex", "python")
    assert block("start/llama-index.md", "An agent that asks", "python") == code
    monkeypatch.setenv("HUMANWIRE_BASE_URL", humanwire_service.base_url)
    monkeypatch.setenv("HUMANWIRE_API_KEY", humanwire_api_key)
    namespace: dict[str, Any] = {"llm": scripted_llm("ask_human_sms", {"message": "Where?"})}
    compiled = compile(code, "README-llama-index", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    reply = human.reply("Lisbon")

    async def run() -> None:
        # A top-level-await code object, run as an async function's body would be.
        result = eval(compiled, namespace)
        if isinstance(result, types.CoroutineType):
            await result

    asyncio.run(run())
    assert reply.wait(10).text == "Where?"
    assert str(namespace["response"]) == "Done. Human response: Lisbon"
