"""Scripted models for the CrewAI tests (``crewai.llms.base_llm.BaseLLM`` subclasses) and a
one-agent crew to run them in.

- :class:`ScriptedLLM` speaks CrewAI's text protocol (ReAct), as a model without native
  tool calling does: one ``Action`` per step, then ``Final Answer: <the last
  observation>``.
- :class:`NativeLLM` answers with OpenAI-style tool calls, so CrewAI takes its native
  function-calling path, and records the tool schemas it was offered.

What each does next depends only on the conversation it is sent.
"""

from __future__ import annotations

import json
from typing import Any

from crewai import Agent, Crew, CrewOutput, Task
from crewai.llms.base_llm import BaseLLM
from pydantic import Field

Call = tuple[str, dict[str, Any]]
"""A tool call the model makes: the tool's name and its arguments."""


_REMINDER = "\n\n\nYou ONLY have access to the following tools"
"""CrewAI appends its tool list to every third observation: not the tool's result."""


def _observation(turn: str) -> str:
    return turn.split("Observation:", 1)[1].split(_REMINDER, 1)[0].strip()


class ScriptedLLM(BaseLLM):
    """``ScriptedLLM(model="fake", steps=[(name, arguments), ...])``."""

    steps: list[Call] = Field(default_factory=list)
    observations: list[str] = Field(default_factory=list)
    """Every observation (tool result) the model was sent, in order (the last call's)."""

    def call(  # type: ignore[override]
        self, messages: Any, tools: Any = None, *args: Any, **kwargs: Any
    ) -> str:
        sent = messages if isinstance(messages, list) else [{"role": "user", "content": messages}]
        # The system prompt itself says "Observation:": read the model's own turns only.
        made = [str(m["content"]) for m in sent if m["role"] == "assistant"]
        self.observations = [_observation(turn) for turn in made]
        if len(made) < len(self.steps):
            name, arguments = self.steps[len(made)]
            return f"Thought: I use a tool.\nAction: {name}\nAction Input: {json.dumps(arguments)}"
        last = self.observations[-1] if self.observations else ""
        return f"Thought: I now know the final answer\nFinal Answer: {last}"


class NativeLLM(BaseLLM):
    """``NativeLLM(model="fake", steps=[(name, arguments), ...])``: native tool calls."""

    steps: list[Call] = Field(default_factory=list)
    results: list[str] = Field(default_factory=list)
    """Every tool result the model was sent, in order (the last call's)."""
    offered: list[dict[str, Any]] = Field(default_factory=list)
    """The tool schemas the model was offered on its last call."""

    def supports_function_calling(self) -> bool:
        return True

    def call(  # type: ignore[override]
        self, messages: Any, tools: Any = None, *args: Any, **kwargs: Any
    ) -> Any:
        self.offered = list(tools or [])
        self.results = [str(m["content"]) for m in messages if m.get("role") == "tool"]
        if len(self.results) < len(self.steps):
            name, arguments = self.steps[len(self.results)]
            call_id = f"call_{len(self.results) + 1}"
            function = {"name": name, "arguments": json.dumps(arguments)}
            return [{"id": call_id, "type": "function", "function": function}]
        return self.results[-1] if self.results else ""


def kickoff(
    llm: BaseLLM, tools: list[Any], *, cache: bool = False, **agent_options: Any
) -> CrewOutput:
    """One agent with ``tools`` and ``llm``, one task, one crew (with CrewAI's tool-result
    cache when ``cache``): kicked off."""
    agent = Agent(
        role="helper",
        goal="Help the user",
        backstory="A careful assistant.",
        llm=llm,
        tools=tools,
        verbose=False,
        **agent_options,
    )
    task = Task(description="Do what the user asked.", expected_output="The answer", agent=agent)
    return Crew(agents=[agent], tasks=[task], verbose=False, cache=cache).kickoff()


def run_tool(tool: Any, arguments: dict[str, Any], **agent_options: Any) -> tuple[str, CrewOutput]:
    """A crew whose model calls ``tool`` once with ``arguments`` and answers with what it
    observed: ``(the final answer, the crew's output)``."""
    llm = ScriptedLLM(model="fake", steps=[(tool.name, arguments)])
    output = kickoff(llm, [tool], **agent_options)
    return output.raw, output
