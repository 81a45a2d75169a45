"""The Many waits guide's code runs as written (docs/guides/many-waits.md): more asks at
once than the client holds requests for (four), each answered with its own reply."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from docs_support import blocks, section
from humanwire.testing import RunningService, ScriptedHuman


def test_everyone_is_asked_and_each_answer_comes_back(
    monkeypatch: pytest.MonkeyPatch,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
) -> None:
    monkeypatch.setenv("HUMANWIRE_BASE_URL", humanwire_service.base_url)
    monkeypatch.setenv("HUMANWIRE_API_KEY", humanwire_api_key)
    (code,) = blocks(section("guides/many-waits.md", None), "python")
    namespace: dict[str, Any] = {}
    exec(compile(code, "many-waits", "exec"), namespace)
    ask_everyone: Callable[[list[str]], Coroutine[Any, Any, list[str]]] = namespace["ask_everyone"]
    people = [f"U0PERSON{n:03d}" for n in range(12)]
    for who in people:
        human.reply(f"{who} can", to=who, channel="slack")
    texts = asyncio.run(ask_everyone(people))
    assert texts == [f"Human response: {who} can" for who in people]
