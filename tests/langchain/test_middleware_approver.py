"""HumanInTheLoopApprover: HumanInTheLoopMiddleware's interrupts answered by approval
requests, consumed before the agent runs the tool."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from lc_helpers import scripted_model

from approval_support import approval_link, decide_next
from humanwire import AsyncHumanWire, HumanWire
from humanwire.langchain import HumanInTheLoopApprover

CALL = {"name": "send_email", "args": {"to": "all@example.com", "subject": "Q3"}, "id": "c1"}


def build_agent(
    sent: list[dict[str, str]],
    allowed: list[str],
    mode: str = "batched",
) -> Any:
    @tool
    def send_email(to: str, subject: str) -> str:
        """Send an email."""
        sent.append({"to": to, "subject": subject})
        return f"sent to {to}"

    tools: list[BaseTool] = [send_email]
    model = scripted_model(AIMessage(content="", tool_calls=[CALL]), AIMessage(content="All done."))
    middleware = HumanInTheLoopMiddleware(
        interrupt_on={"send_email": {"allowed_decisions": allowed}},  # type: ignore[dict-item]
        interrupt_mode=mode,  # type: ignore[arg-type]
    )
    return create_agent(model, tools=tools, middleware=[middleware], checkpointer=InMemorySaver())


def config(thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread}}


def tool_message(result: dict[str, Any]) -> ToolMessage:
    (message,) = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    return message


INPUT = {"messages": [{"role": "user", "content": "Email everyone about Q3"}]}


@pytest.mark.parametrize("mode", ["batched", "per_call"])
def test_approve(humanwire_client: HumanWire, mode: str) -> None:
    sent: list[dict[str, str]] = []
    agent = build_agent(sent, ["approve", "reject"], mode)
    decide_next(humanwire_client, "approve")
    approver = HumanInTheLoopApprover(client=humanwire_client, wait_time=10)
    result = approver.invoke(agent, INPUT, config(f"approve-{mode}"))
    assert sent == [{"to": "all@example.com", "subject": "Q3"}]
    assert tool_message(result).content == "sent to all@example.com"
    assert result["messages"][-1].content == "All done."


def test_reject_with_a_message(humanwire_client: HumanWire) -> None:
    sent: list[dict[str, str]] = []
    agent = build_agent(sent, ["approve", "reject"])
    decide_next(humanwire_client, "reject", "Not before the board meeting")
    approver = HumanInTheLoopApprover(client=humanwire_client, wait_time=10)
    result = approver.invoke(agent, INPUT, config("reject"))
    assert sent == []
    message = tool_message(result)
    assert message.status == "error"
    assert "Not before the board meeting" in message.content


def test_timeout_rejects_and_says_it_was_a_timeout(humanwire_client: HumanWire) -> None:
    sent: list[dict[str, str]] = []
    agent = build_agent(sent, ["approve", "reject"])
    approver = HumanInTheLoopApprover(client=humanwire_client, wait_time=1)
    result = approver.invoke(agent, INPUT, config("timeout"))
    assert sent == []
    content = tool_message(result).content
    assert "timeout" in content and "not a human rejection" in content


def test_edit_and_respond_are_asked_as_approve_or_reject(humanwire_client: HumanWire) -> None:
    """A tool allowing "edit" / "respond" is asked approve / reject: an approval is about
    the action as asked (docs: breaking change)."""
    sent: list[dict[str, str]] = []
    agent = build_agent(sent, ["approve", "edit", "reject", "respond"])
    decide_next(humanwire_client, "approve")
    approver = HumanInTheLoopApprover(client=humanwire_client, wait_time=10)
    approver.invoke(agent, INPUT, config("edit-allowed"))
    assert sent == [{"to": "all@example.com", "subject": "Q3"}]
    (delivery,) = humanwire_client.sandbox.deliveries()
    # Approve or reject, nothing else (with a code when the number has other open approvals).
    assert re.search(r"Reply YES( \d+)? or NO( \d+)?", delivery.text), delivery.text
    page = httpx.get(approval_link(delivery.text) or "", timeout=5).text
    assert 'value="edit"' not in page and 'value="respond"' not in page


def test_a_rerun_driver_replays_the_decision_and_never_runs_the_tool_twice(
    humanwire_client: HumanWire,
) -> None:
    sent: list[dict[str, str]] = []
    agent = build_agent(sent, ["approve", "reject"])
    cfg = config("idempotent")
    agent.invoke(INPUT, cfg)
    interrupts = agent.get_state(cfg).interrupts
    approver = HumanInTheLoopApprover(client=humanwire_client, wait_time=10)
    decide_next(humanwire_client, "approve")
    first = approver.resume(interrupts, cfg)
    # A driver re-run (say, after a crash) replays the decision: nobody is asked again,
    # and the approval, used by the first run, is not used twice.
    second = approver.resume(interrupts, cfg)
    (interrupt,) = interrupts
    assert first.resume[interrupt.id]["decisions"] == [{"type": "approve"}]
    (again,) = second.resume[interrupt.id]["decisions"]
    assert again["type"] == "reject" and "not run again" in again["message"]
    assert len(humanwire_client.sandbox.deliveries()) == 1


async def test_async_driver(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire
) -> None:
    sent: list[dict[str, str]] = []
    agent = build_agent(sent, ["approve", "reject"], "per_call")
    decide_next(humanwire_client, "approve")
    approver = HumanInTheLoopApprover(client=async_humanwire_client, wait_time=10)
    result = await approver.ainvoke(agent, INPUT, config("async"))
    assert sent == [{"to": "all@example.com", "subject": "Q3"}]
    assert result["messages"][-1].content == "All done."
