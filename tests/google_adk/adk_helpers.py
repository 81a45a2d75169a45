"""A scripted model for the Google ADK tests (a ``BaseLlm`` subclass, ADK's own model
interface): it makes the tool calls it was given, one model response per step, then
answers ``FINAL: <the last tool response>``.

What it does next depends only on the conversation it is sent (how many tool calls it
already made), so a run paused in one process and resumed in another goes on where it
was.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.base_tool import BaseTool
from google.genai import types
from pydantic import Field

# A scripted model reports no token usage; ADK logs that once per call.
logging.getLogger("google_adk.google.adk.telemetry._metrics").setLevel(logging.ERROR)

Call = tuple[str, dict[str, Any]]
"""A tool call the model makes: the tool's name and its arguments."""


def shown(response: dict[str, Any] | None) -> str:
    """A function response as the scripted model repeats it: the result's text, or
    ``error: <text>``."""
    if not response:
        return ""
    if set(response) == {"result"}:
        return str(response["result"])
    if set(response) == {"error"}:
        return f"error: {response['error']}"
    return json.dumps(response, sort_keys=True)


class FakeLlm(BaseLlm):
    """``FakeLlm.script(step, step, ...)``: a step is one call ``(name, arguments)`` or a
    list of calls made in the same response (parallel tool calls)."""

    model: str = "scripted"
    steps: list[list[Call]] = Field(default_factory=list)
    outputs: list[str] = Field(default_factory=list)
    """Every tool response the model was sent, in order (its last request's view)."""
    declarations: list[types.FunctionDeclaration] = Field(default_factory=list)
    """The tools the model was offered on its last request."""

    @classmethod
    def script(cls, *steps: Call | list[Call]) -> FakeLlm:
        return cls(steps=[step if isinstance(step, list) else [step] for step in steps])

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        parts = [part for content in llm_request.contents for part in content.parts or []]
        self.outputs = [
            shown(part.function_response.response) for part in parts if part.function_response
        ]
        self.declarations = [
            declaration
            for tool in llm_request.config.tools or []
            for declaration in getattr(tool, "function_declarations", None) or []
        ]
        made = sum(1 for part in parts if part.function_call)
        done_steps, count = 0, 0
        for step in self.steps:  # how many whole steps the conversation already holds
            if count + len(step) > made:
                break
            count += len(step)
            done_steps += 1
        if done_steps < len(self.steps):
            reply = [
                types.Part(function_call=types.FunctionCall(name=name, args=arguments))
                for name, arguments in self.steps[done_steps]
            ]
        else:
            reply = [types.Part(text=f"FINAL: {self.outputs[-1] if self.outputs else ''}")]
        yield LlmResponse(content=types.Content(role="model", parts=reply))


def user_text(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


async def run_agent(
    model: FakeLlm, tools: list[Any], text: str = "go", **agent_options: Any
) -> str:
    """One run of an agent with ``tools`` (and ``agent_options`` for ``LlmAgent``) on a
    fresh in-memory session; the final text."""
    agent = LlmAgent(name="helper", model=model, tools=tools, **agent_options)
    runner = Runner(app_name="tests", agent=agent, session_service=InMemorySessionService())
    session = await runner.session_service.create_session(app_name=runner.app_name, user_id="u1")
    final = ""
    async for event in runner.run_async(
        user_id="u1", session_id=session.id, new_message=user_text(text)
    ):
        if event.is_final_response() and event.content and event.content.parts:
            final = "".join(part.text or "" for part in event.content.parts) or final
    return final


async def run_tool(tool: BaseTool, arguments: dict[str, Any]) -> tuple[str, FakeLlm]:
    """One agent run whose model calls ``tool`` once, then reports its response."""
    model = FakeLlm.script((tool.name, arguments))
    return await run_agent(model, [tool]), model
