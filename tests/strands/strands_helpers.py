"""Helpers of the Strands adapter tests (a module name no other test folder uses): a
scripted model on Strands' own ``Model`` interface, streaming Bedrock-style events.

What it does next depends only on the conversation it is sent (how many of its tool-use
turns the history already holds), so a run paused in one process and resumed in another
goes on where it was."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from strands import Agent
from strands.models.model import Model
from strands.types.tools import ToolResult

Call = tuple[str, dict[str, Any]]


class ScriptedModel(Model):
    """Plays ``turns`` of tool calls, one turn per model request, then answers
    ``FINAL: <status>: <text>`` of the last tool results (`` | `` between several).
    ``results`` holds every tool result it was sent, in order; ``specs`` the tool specs
    it was offered on its last request. ``reuse_ids`` gives every turn's calls the same
    ids (``call_0``, ``call_1``, …), as a model that numbers its calls per turn does."""

    def __init__(self, *turns: Sequence[Call], reuse_ids: bool = False) -> None:
        self.turns = [list(turn) for turn in turns]
        self.reuse_ids = reuse_ids
        self.results: list[ToolResult] = []
        self.specs: list[Any] = []
        self.config: dict[str, Any] = {}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(  # type: ignore[override]
        self,
        messages: list[Any],
        tool_specs: list[Any] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[Any, None]:
        self.specs = list(tool_specs or [])
        results = [
            block["toolResult"] for block in messages[-1]["content"] if "toolResult" in block
        ]
        self.results.extend(results)
        made = sum(
            1
            for message in messages
            if message["role"] == "assistant"
            and any("toolUse" in block for block in message["content"])
        )
        yield {"messageStart": {"role": "assistant"}}
        if made < len(self.turns):
            for index, (name, arguments) in enumerate(self.turns[made]):
                call_id = f"call_{index}" if self.reuse_ids else f"call_{made}_{index}"
                start = {"toolUse": {"toolUseId": call_id, "name": name}}
                yield {"contentBlockStart": {"start": start}}
                yield {
                    "contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(arguments)}}}
                }
                yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
            return
        text = " | ".join(f"{r['status']}: {r['content'][0]['text']}" for r in results)
        yield {"contentBlockStart": {"start": {}}}
        yield {"contentBlockDelta": {"delta": {"text": f"FINAL: {text}"}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


def once(tool: str, arguments: dict[str, Any]) -> ScriptedModel:
    """A model that calls ``tool`` once and answers with its result."""
    return ScriptedModel([(tool, arguments)])


def scripted(*turns: Sequence[Call], reuse_ids: bool = False) -> ScriptedModel:
    return ScriptedModel(*turns, reuse_ids=reuse_ids)


def agent(model: ScriptedModel, tools: list[Any], **options: Any) -> Agent:
    """An agent that prints nothing (no callback handler)."""
    return Agent(model=model, tools=tools, callback_handler=None, **options)


def final(result: Any) -> str:
    """The agent's final text."""
    return str(result).strip()
