"""Helpers of the Agno adapter tests (a module name no other test folder uses): a
scripted model on Agno's own ``Model`` interface (no model API, no network).

What it does next depends only on the conversation it is sent (how many tool-call turns
the history already holds), so a run paused in one process and continued in another goes
on where it was."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agno.agent import Agent
from agno.models.base import Model
from agno.models.response import ModelResponse
from agno.tools import tool

Call = tuple[str, dict[str, Any]]


@dataclass
class ScriptedModel(Model):
    """Plays ``turns`` of tool calls, one turn per model request, then answers
    ``FINAL: <text>`` of the last tool results (`` | `` between several). ``results``
    holds every tool result it was sent, in order."""

    turns: list[list[Call]] = field(default_factory=list)
    results: list[str] = field(default_factory=list)

    def invoke(self, messages: list[Any], *args: Any, **kwargs: Any) -> ModelResponse:
        made = sum(1 for m in messages if m.role == "assistant" and m.tool_calls)
        last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
        returned = [str(m.content) for m in messages[last + 1 :] if m.role == "tool"]
        self.results.extend(returned)
        if made < len(self.turns):
            calls = [
                {
                    "id": f"call_{made}_{index}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
                for index, (name, arguments) in enumerate(self.turns[made])
            ]
            return ModelResponse(role="assistant", content="", tool_calls=calls)
        return ModelResponse(role="assistant", content="FINAL: " + " | ".join(returned))

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self.invoke(*args, **kwargs)

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Iterator[ModelResponse]:
        yield self.invoke(*args, **kwargs)

    async def ainvoke_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ModelResponse]:
        yield self.invoke(*args, **kwargs)

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> Any:
        return response

    def _parse_provider_response_delta(self, response: Any) -> Any:
        return response


def scripted(*turns: Sequence[Call]) -> ScriptedModel:
    return ScriptedModel(id="scripted", turns=[list(turn) for turn in turns])


def once(name: str, arguments: dict[str, Any]) -> ScriptedModel:
    """A model that calls ``name`` once and answers with its result."""
    return scripted([(name, arguments)])


def agent(model: ScriptedModel, tools: list[Any], **options: Any) -> Agent:
    return Agent(model=model, tools=tools, telemetry=False, **options)


def gated_tools(log: Path) -> list[Any]:
    """The three tools that pause an Agno run, each appending to ``log`` when it runs:
    a payment that needs confirmation, a release that needs an approver's note, and a
    question the host answers (external execution: Agno never calls it)."""

    @tool(requires_confirmation=True)
    def send_payment(amount: int, to: str) -> str:
        """Send a payment."""
        with log.open("a", encoding="utf-8") as out:
            out.write(f"{amount} {to}\n")
        return f"sent {amount} to {to}"

    @tool(requires_user_input=True, user_input_fields=["approver_note"])
    def ship(version: str, approver_note: str) -> str:
        """Ship a release."""
        with log.open("a", encoding="utf-8") as out:
            out.write(f"ship {version} {approver_note}\n")
        return f"shipped {version} ({approver_note})"

    @tool(external_execution=True)
    def ask_external(question: str) -> str:
        """Ask someone outside."""
        raise AssertionError("Agno never runs an external execution tool")

    return [send_payment, ship, ask_external]


def ran(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []
