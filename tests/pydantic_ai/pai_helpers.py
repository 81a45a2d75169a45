"""Helpers of the Pydantic AI adapter tests (a module name no other test folder uses):
a scripted model on Pydantic AI's own ``FunctionModel``, and a payment tool to gate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai import Tool
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

Call = tuple[str, dict[str, Any]]


class ScriptedModel:
    """Plays ``turns`` of tool calls, one turn per model request, then answers
    ``FINAL: <what the last tool results said>``. ``seen`` holds every tool result (and
    retry prompt) the model was given, in order; ``tools`` the tool definitions it was
    offered on its first request."""

    def __init__(self, *turns: Sequence[Call]) -> None:
        self.turns = [list(turn) for turn in turns]
        self.seen: list[ToolReturnPart | RetryPromptPart] = []
        self.tools: dict[str, Any] = {}
        self._requests = 0

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not self.tools:
            self.tools = {tool.name: tool for tool in info.function_tools}
        last = messages[-1]
        results = [
            part
            for part in (last.parts if isinstance(last, ModelRequest) else [])
            if isinstance(part, (ToolReturnPart, RetryPromptPart))
        ]
        self.seen.extend(results)
        # A resumed run starts at the results of the deferred calls: count turns by the
        # responses already in the history, so it does not call the tools again.
        made = sum(1 for message in messages if isinstance(message, ModelResponse))
        if made < len(self.turns):
            turn = self.turns[made]
            return ModelResponse(
                parts=[
                    ToolCallPart(name, args, tool_call_id=f"call_{made}_{index}")
                    for index, (name, args) in enumerate(turn)
                ]
            )
        text = " | ".join(str(part.content) for part in results)
        return ModelResponse(parts=[TextPart(f"FINAL: {text}")])

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self.respond)

    def returns(self) -> list[ToolReturnPart]:
        """The tool results, retry prompts left out."""
        return [
            part
            for part in self.seen
            if isinstance(part, ToolReturnPart) and part.outcome != "retried"
        ]

    def retries(self) -> list[ToolReturnPart | RetryPromptPart]:
        """The retry prompts (a ``ModelRetry`` comes back as a ``retried`` result)."""
        return [
            part
            for part in self.seen
            if isinstance(part, RetryPromptPart) or part.outcome == "retried"
        ]


def scripted(*turns: Sequence[Call]) -> ScriptedModel:
    return ScriptedModel(*turns)


def once(tool: str, args: dict[str, Any]) -> ScriptedModel:
    """A model that calls ``tool`` once and answers with its result."""
    return ScriptedModel([(tool, args)])


class Payments:
    """A tool with a side effect the tests count."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, str]] = []

    def send_payment(self, amount: int, to: str) -> str:
        """Send money."""
        self.sent.append((amount, to))
        return f"sent {amount} to {to}"

    def tool(self) -> Tool[Any]:
        return Tool(self.send_payment, requires_approval=True)
