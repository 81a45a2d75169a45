"""Every LangChain adapter takes approvers, quorum and escalation, and the service gets
exactly those: the approval callback, ``require_approval``, the
``HumanInTheLoopMiddleware`` approver and LangGraph's ``ApprovalCheckpoint``, each built
with two approvers, a quorum of two and an escalation tier. The gated action runs only
once both approved on their pages, and finds the approval consumed, once (what the
service recorded, read back from inside the action: ``approval_quorum_support``)."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from lc_helpers import scripted_model

from approval_quorum_support import EXPECTED, OPTIONS, both_approve, observe
from humanwire import HumanWire
from humanwire.approval import ApprovalRequest, Approver, decision_from_approval
from humanwire.errors import AlreadyConsumedError
from humanwire.langchain import (
    ApprovalCheckpoint,
    HumanApprovalCallbackHandler,
    HumanInTheLoopApprover,
    require_approval,
)
from pg_support import humanwire_config  # noqa: F401  (on each store in turn)

WAIT = 20


def test_callback_handler(humanwire_client: HumanWire) -> None:
    seen: list[dict[str, Any]] = []

    @tool
    def wire_money(amount: int) -> str:
        """Wire money."""
        seen.append(observe(humanwire_client))
        return "wired"

    first, second = both_approve(humanwire_client)
    handler = HumanApprovalCallbackHandler(client=humanwire_client, wait_time=WAIT, **OPTIONS)
    call = {"type": "tool_call", "id": "q-1", "name": "wire_money", "args": {"amount": 900}}
    # A graph's task (its thread and task, as LangGraph tells the callbacks).
    config: Any = {
        "callbacks": [handler],
        "metadata": {"thread_id": "t-q", "langgraph_checkpoint_ns": "tools:q"},
    }
    assert wire_money.invoke(call, config=config).content == "wired"
    first.wait(), second.wait()
    assert seen == [EXPECTED]
    # The same task again: the service's decision is used already; no second run.
    with pytest.raises(Exception, match="not run again"):
        wire_money.invoke(call, config=config)
    assert len(seen) == 1 and observe(humanwire_client)["consumed"] == 1


def test_require_approval_on_a_plain_function_consumes_before_it_runs(
    humanwire_client: HumanWire,
) -> None:
    seen: list[dict[str, Any]] = []

    @require_approval(client=humanwire_client, wait_time=WAIT, **OPTIONS)
    def pay(amount: int, to: str) -> str:
        seen.append(observe(humanwire_client))
        return "paid"

    first, second = both_approve(humanwire_client)
    assert pay(120, to="ACME") == "paid"
    first.wait(), second.wait()
    assert seen == [EXPECTED]  # consumed before the function ran

    # The same decision a second time is refused: already_consumed.
    (requested,) = [e for e in humanwire_client.audit.entries() if e.type == "approval.requested"]
    approval = humanwire_client.approvals.get(requested.interaction_id)
    request = ApprovalRequest("pay", {"amount": 120, "to": "ACME"})
    with pytest.raises(AlreadyConsumedError):
        humanwire_client.approvals.consume(
            approval.interaction_id, action_digest=approval.action_digest
        )
    decision = decision_from_approval(approval)
    assert decision is not None and decision.approved
    again = Approver(humanwire_client, wait_time=WAIT, **OPTIONS).consume(decision, request)
    assert again.decision == "consumed" and not again.approved
    assert observe(humanwire_client)["consumed"] == 1 and len(seen) == 1


def test_middleware_approver(humanwire_client: HumanWire) -> None:
    seen: list[dict[str, Any]] = []

    @tool
    def send_email(to: str, subject: str) -> str:
        """Send an email."""
        seen.append(observe(humanwire_client))
        return f"sent to {to}"

    call = {"name": "send_email", "args": {"to": "all@example.com", "subject": "Q3"}, "id": "c1"}
    model = scripted_model(AIMessage(content="", tool_calls=[call]), AIMessage(content="Done."))
    middleware = HumanInTheLoopMiddleware(
        interrupt_on={"send_email": {"allowed_decisions": ["approve", "reject"]}}
    )
    agent = create_agent(
        model, tools=[send_email], middleware=[middleware], checkpointer=InMemorySaver()
    )
    first, second = both_approve(humanwire_client)
    approver = HumanInTheLoopApprover(client=humanwire_client, wait_time=WAIT, **OPTIONS)
    messages = {"messages": [{"role": "user", "content": "Email everyone"}]}
    result = approver.invoke(agent, messages, {"configurable": {"thread_id": "quorum"}})
    first.wait(), second.wait()
    assert result["messages"][-1].content == "Done."
    assert seen == [EXPECTED]


class PostState(TypedDict, total=False):
    draft: str
    approval: dict[str, Any]
    published: bool


def test_langgraph_checkpoint(humanwire_client: HumanWire) -> None:
    seen: list[dict[str, Any]] = []

    def ask(state: PostState) -> ApprovalRequest:
        return ApprovalRequest("publish_post", {"post": state["draft"]})

    def publish(state: PostState) -> PostState:
        seen.append(observe(humanwire_client))
        return {"published": True}

    checkpoint = ApprovalCheckpoint(ask, client=humanwire_client, wait_time=WAIT, **OPTIONS)
    builder = StateGraph(PostState)
    builder.add_node("approve", checkpoint)
    builder.add_node("publish", publish)
    builder.add_edge(START, "approve")
    builder.add_conditional_edges(
        "approve", checkpoint.route, {"approved": "publish", "rejected": END}
    )
    builder.add_edge("publish", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    first, second = both_approve(humanwire_client)
    result = graph.invoke({"draft": "Hello"}, {"configurable": {"thread_id": "quorum"}})
    first.wait(), second.wait()
    assert "__interrupt__" not in result and result["published"] is True
    assert seen == [EXPECTED]
