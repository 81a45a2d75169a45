"""HumanInTheLoopApprover: HumanInTheLoopMiddleware's interrupts answered by forms."""

from __future__ import annotations

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

from humanwire import AsyncHumanWire, HumanWire
from humanwire.langchain import HumanInTheLoopApprover
from humanwire.testing import ScriptedHuman

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
def test_approve(humanwire_client: HumanWire, human: ScriptedHuman, mode: str) -> None:
    sent: list[dict[str, str]] = []
    agent = build_agent(sent, ["approve", "reject"], mode)
    human.fill_form({"decision": "approve"})
    approver = HumanInTheLoopApprover(client=humanwire_client, wait_time=5)
    result = approver.invoke(agent, INPUT, config(f"approve-{mode}"))
    assert sent == [{"to": "all@example.com", "subject": "Q3"}]
    assert tool_message(result).content == "sent to all@example.com"
    assert result["messages"][-1].content == "All done."


@pytest.mark.parametrize("mode", ["batched", "per_call"])
def test_edit_the_arguments(humanwire_client: HumanWire, human: ScriptedHuman, mode: str) -> None:
    sent: list[dict[str, str]] = []
    agent = build_agent(sent, ["approve", "edit", "reject"], mode)
    human.fill_form(
        {"decision": "edit", "arguments": '{"to": "team@example.com", "subject": "Q3 draft"}'}
    )
    approver = HumanInTheLoopApprover(client=humanwire_client, wait_time=5)
    result = approver.invoke(agent, INPUT, config(f"edit-{mode}"))
    assert sent == [{"to": "team@example.com", "subject": "Q3 draft"}]
    assert "sent to team@example.com" in tool_message(result).content


def test_reject_with_a_message(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    sent: list[dict[str, str]] = []
    agent = build_agent(sent, ["approve", "reject"])
    human.fill_form({"decision": "reject", "comment": "Not before the board meeting"})
    approver = HumanInTheLoopApprover(client=humanwire_client, wait_time=5)
    result = approver.invoke(agent, INPUT, config("reject"))
    assert sent == []
    message = tool_message(result)
    assert message.status == "error"
    assert "Not before the board meeting" in message.content


def test_respond_instead(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    sent: list[dict[str, str]] = []
    agent = build_agent(sent, ["approve", "reject", "respond"])
    human.fill_form({"decision": "respond", "comment": "I already emailed them."})
    approver = HumanInTheLoopApprover(client=humanwire_client, wait_time=5)
    result = approver.invoke(agent, INPUT, config("respond"))
    assert sent == []
    message = tool_message(result)
    assert message.status == "success"
    assert message.content == "I already emailed them."


def test_timeout_rejects_and_says_it_was_a_timeout(humanwire_client: HumanWire) -> None:
    sent: list[dict[str, str]] = []
    agent = build_agent(sent, ["approve", "reject"])
    approver = HumanInTheLoopApprover(client=humanwire_client, wait_time=1)
    result = approver.invoke(agent, INPUT, config("timeout"))
    assert sent == []
    content = tool_message(result).content
    assert "timeout" in content and "not a human rejection" in content


def test_form_offers_only_the_allowed_decisions(humanwire_client: HumanWire) -> None:
    approver = HumanInTheLoopApprover(client=humanwire_client, wait_time=1)
    decision = approver.decide("send_email", {"to": "x"}, allowed=["approve", "reject", "edit"])
    assert decision["type"] == "reject"
    (delivery,) = humanwire_client.sandbox.deliveries()
    page = httpx.get(delivery.form_url or "", timeout=5).text
    assert 'value="edit"' in page and 'value="respond"' not in page
    assert 'name="arguments"' in page


def test_resume_is_idempotent_per_thread_and_interrupt(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    sent: list[dict[str, str]] = []
    agent = build_agent(sent, ["approve", "reject"])
    cfg = config("idempotent")
    agent.invoke(INPUT, cfg)
    interrupts = agent.get_state(cfg).interrupts
    approver = HumanInTheLoopApprover(client=humanwire_client, wait_time=5)
    human.fill_form({"decision": "approve"})
    first = approver.resume(interrupts, cfg)
    # A driver re-run (say, after a crash) replays the human's answer: no second form.
    second = approver.resume(interrupts, cfg)
    assert first.resume == second.resume
    assert len(humanwire_client.sandbox.deliveries()) == 1


async def test_async_driver(async_humanwire_client: AsyncHumanWire, human: ScriptedHuman) -> None:
    sent: list[dict[str, str]] = []
    agent = build_agent(sent, ["approve", "reject"], "per_call")
    human.fill_form({"decision": "approve"})
    approver = HumanInTheLoopApprover(client=async_humanwire_client, wait_time=5)
    result = await approver.ainvoke(agent, INPUT, config("async"))
    assert sent == [{"to": "all@example.com", "subject": "Q3"}]
    assert result["messages"][-1].content == "All done."
