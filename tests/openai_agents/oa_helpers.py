"""A scripted model for the OpenAI Agents SDK tests (a ``Model`` subclass, as in the SDK's
own tests): it makes the tool calls it was given, one model response per step, then
answers ``FINAL: <the last tool output>``.

What it does next depends only on the conversation it is sent (how many tool outputs
came back), so a run paused in one process and resumed in another goes on where it was.
"""

from __future__ import annotations

import json
from typing import Any

from agents import set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

set_tracing_disabled(True)

Call = tuple[str, dict[str, Any]]
"""A tool call the model makes: the tool's name and its arguments."""


class FakeModel(Model):
    """``FakeModel(step, step, ...)``: a step is one call ``(name, arguments)`` or a list
    of calls made in the same response (parallel tool calls)."""

    def __init__(self, *steps: Call | list[Call]) -> None:
        self.steps = [step if isinstance(step, list) else [step] for step in steps]
        self.outputs: list[str] = []
        """Every tool output the model was sent, in order (the last run's view)."""
        self.tools: list[Any] = []
        """The tools the model was offered on its last call."""

    async def get_response(
        self,
        system_instructions: Any,
        input: Any,
        model_settings: Any,
        tools: Any,
        *a: Any,
        **kw: Any,
    ) -> ModelResponse:
        items = input if isinstance(input, list) else []
        outputs = [
            str(item["output"])
            for item in items
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        self.outputs, self.tools = outputs, list(tools)
        made = sum(
            1 for item in items if isinstance(item, dict) and item.get("type") == "function_call"
        )
        done_steps, count = 0, 0
        for step in self.steps:  # how many whole steps the conversation already holds
            if count + len(step) > made:
                break
            count += len(step)
            done_steps += 1
        if done_steps < len(self.steps):
            output: list[Any] = [
                ResponseFunctionToolCall(
                    id=f"fc_{count + i + 1}",
                    call_id=f"call_{count + i + 1}",
                    type="function_call",
                    name=name,
                    arguments=json.dumps(arguments),
                )
                for i, (name, arguments) in enumerate(self.steps[done_steps])
            ]
        else:
            text = f"FINAL: {outputs[-1] if outputs else ''}"
            output = [
                ResponseOutputMessage(
                    id="msg",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[
                        ResponseOutputText(
                            type="output_text", text=text, annotations=[], logprobs=[]
                        )
                    ],
                )
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError
