"""Helpers of the Microsoft Agent Framework adapter tests (a module name no other test
folder uses): a scripted chat client on the framework's own ``BaseChatClient`` with its
function-invocation layer (no model API, no network).

What it does next depends only on the conversation it is sent (how many tool-call turns
the history already holds), so a run paused in one process and continued in another goes
on where it was."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_framework import (
    Agent,
    BaseChatClient,
    ChatResponse,
    Content,
    Executor,
    FileCheckpointStorage,
    Message,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    register_checkpoint_type,
    response_handler,
    tool,
)
from agent_framework._tools import FunctionInvocationLayer

Call = tuple[str, dict[str, Any]]


class ScriptedChat(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """Plays ``turns`` of tool calls, one turn per model request, then answers
    ``FINAL: <text>`` of the last tool results (`` | `` between several). ``results``
    holds every tool result it was sent, in order. (``FunctionInvocationLayer``: a client
    without it never runs a tool.)"""

    def __init__(self, turns: Sequence[Sequence[Call]]) -> None:
        super().__init__()
        self.turns = [list(turn) for turn in turns]
        self.results: list[str] = []

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any
    ) -> ChatResponse:
        made = sum(
            1
            for m in messages
            if m.role == "assistant" and any(c.type == "function_call" for c in m.contents)
        )
        last = max(
            (
                i
                for i, m in enumerate(messages)
                if m.role == "assistant" and any(c.type == "function_call" for c in m.contents)
            ),
            default=-1,
        )
        # The tools' results, and what a user message beside an approval response says
        # (why a call was refused).
        returned = [
            str(c.result) if c.type == "function_result" else str(c.text)
            for m in messages[last + 1 :]
            if last >= 0
            for c in m.contents
            if c.type == "function_result" or (m.role == "user" and c.type == "text")
        ]
        self.results.extend(returned)
        if made < len(self.turns):
            contents = [
                Content.from_function_call(
                    call_id=f"call_{made}_{index}", name=name, arguments=arguments
                )
                for index, (name, arguments) in enumerate(self.turns[made])
            ]
        else:
            contents = [Content.from_text("FINAL: " + " | ".join(returned))]
        return ChatResponse(messages=[Message(role="assistant", contents=contents)])


def scripted(*turns: Sequence[Call]) -> ScriptedChat:
    return ScriptedChat(turns)


def once(name: str, arguments: dict[str, Any]) -> ScriptedChat:
    """A chat client that calls ``name`` once and answers with its result."""
    return scripted([(name, arguments)])


def agent(chat: ScriptedChat, tools: list[Any], **options: Any) -> Agent[Any]:
    return Agent(client=chat, tools=tools, name="tester", **options)


def gated_tools(log: Path) -> list[Any]:
    """A payment that needs approval (``approval_mode="always_require"``), appending to
    ``log`` when it runs."""

    @tool(approval_mode="always_require")
    def send_payment(amount: int, to: str) -> str:
        """Send a payment."""
        with log.open("a", encoding="utf-8") as out:
            out.write(f"{amount} {to}\n")
        return f"sent {amount} to {to}"

    return [send_payment]


def ran(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


# --- a workflow that asks a person ------------------------------------------------------


@dataclass
class ShipQuestion:
    """What the workflow asks (registered: checkpoint decoding is an allow-list)."""

    text: str


register_checkpoint_type(ShipQuestion)


class Asker(Executor):
    """Asks ``Ship <topic>?`` with ``ctx.request_info`` and yields ``<question> -> <reply>``,
    appending the reply to ``log`` when it runs."""

    def __init__(self, log: Path) -> None:
        super().__init__(id="asker")
        self.log = log

    @handler
    async def start(self, topic: str, ctx: WorkflowContext) -> None:
        await ctx.request_info(ShipQuestion(f"Ship {topic}?"), str)

    @response_handler
    async def on_answer(
        self, original: ShipQuestion, answer: str, ctx: WorkflowContext[None, str]
    ) -> None:
        with self.log.open("a", encoding="utf-8") as out:
            out.write(f"{answer}\n")
        await ctx.yield_output(f"{original.text} -> {answer}")


def asking_workflow(log: Path, checkpoints: Path | None = None) -> Workflow:
    storage = FileCheckpointStorage(str(checkpoints)) if checkpoints is not None else None
    return WorkflowBuilder(
        start_executor=Asker(log), checkpoint_storage=storage, name="shipping"
    ).build()


class Counter(Executor):
    """Asks for a number (``response_type=int``): not a question a person's text answers."""

    @handler
    async def start(self, topic: str, ctx: WorkflowContext) -> None:
        await ctx.request_info(f"How many {topic}?", int)


def counting_workflow() -> Workflow:
    return WorkflowBuilder(start_executor=Counter(id="counter")).build()
