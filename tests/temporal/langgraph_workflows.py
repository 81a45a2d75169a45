"""A LangGraph graph inside a Temporal workflow under Temporal's LangGraph plugin
(temporalio-langgraph): its nodes, run in workflow context, ask a human and gate a deploy
on an approval through humanwire.temporal. A module of its own: Temporal's sandbox
re-imports it, and the plugin needs nodes importable from a named module."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from temporalio import activity, workflow
from temporalio.langgraph import graph

with workflow.unsafe.imports_passed_through():
    from humanwire import temporal as humanwire_temporal
    from humanwire.temporal import ApprovalResult, HumanWireActivities

HUMAN = "+12025550100"
IN_WORKFLOW = {"execute_in": "workflow"}


class Release(TypedDict, total=False):
    question: str
    answer: str
    outcome: str


async def ask_human(state: Release) -> dict[str, Any]:
    """The graph's "ask" tool: a durable SMS ask (an activity, then a timer and a Signal)."""
    answer = await humanwire_temporal.ask(
        to=HUMAN, message=state["question"], timeout=timedelta(hours=72)
    )
    return {"answer": answer}


async def deploy_gate(state: Release) -> dict[str, Any]:
    """The approval gate: the deploy activity runs only once approved, and claims it."""
    if not state["answer"].lower().startswith("yes"):
        return {"outcome": f"Not asked to deploy: {state['answer']}"}
    approval = await humanwire_temporal.request_approval(
        title="Deploy v2",
        approvers=[{"channel": "sms", "to": HUMAN}],
        action={"name": "deploy", "arguments": {"version": "v2"}},
        timeout=timedelta(hours=72),
    )
    if not approval.approved:
        return {"outcome": f"Not deployed: {approval.decision or 'no decision in time'}."}
    outcome = await workflow.execute_activity(
        "deploy_version", approval, start_to_close_timeout=timedelta(seconds=60), result_type=str
    )
    return {"outcome": outcome}


def release_graph() -> StateGraph[Release]:
    builder = StateGraph(Release)
    builder.add_node("ask", ask_human, metadata=IN_WORKFLOW)
    builder.add_node("gate", deploy_gate, metadata=IN_WORKFLOW)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "gate")
    builder.add_edge("gate", END)
    return builder


@workflow.defn
class ReleaseGraph:
    @workflow.run
    async def run(self, question: str) -> dict[str, Any]:
        app = graph("release").compile()
        return dict(await app.ainvoke({"question": question}))


class DeployActivities:
    """The gated action: it uses the approval once, first thing."""

    def __init__(self, humanwire: HumanWireActivities) -> None:
        self.humanwire = humanwire

    @activity.defn(name="deploy_version")
    async def deploy_version(self, approval: ApprovalResult) -> str:
        await self.humanwire.claim(approval)
        return f"Deployed ({approval.interaction_id})."
