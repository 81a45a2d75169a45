"""ApprovalCheckpoint: a LangGraph node that sends an approval form and interrupts,
resumed by the form.received webhook after its wait window, with exactly one form sent."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from humanwire import AsyncHumanWire, HumanWire
from humanwire.approval import ApprovalRequest
from humanwire.langchain import ApprovalCheckpoint
from humanwire.testing import ScriptedHuman
from humanwire.testing.receiver import WebhookReceiver


class PostState(TypedDict, total=False):
    draft: str
    approval: dict[str, Any]
    published: bool


def build(checkpoint: ApprovalCheckpoint, *, use_async: bool = False) -> Any:
    def publish(state: PostState) -> PostState:
        return {"published": True}

    builder = StateGraph(PostState)
    builder.add_node("approve", checkpoint.anode if use_async else checkpoint)
    builder.add_node("publish", publish)
    builder.add_edge(START, "approve")
    builder.add_conditional_edges(
        "approve", checkpoint.route, {"approved": "publish", "rejected": END}
    )
    builder.add_edge("publish", END)
    return builder.compile(checkpointer=InMemorySaver())


def ask(state: PostState) -> ApprovalRequest:
    return ApprovalRequest("publish_post", {"post": state["draft"]}, "Publish to the blog")


def config(thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread}}


def forms_sent(client: HumanWire) -> int:
    return sum(1 for d in client.sandbox.deliveries() if d.kind == "form")


def test_resumed_by_webhook_after_the_wait_window_with_one_form(
    humanwire_client: HumanWire, human: ScriptedHuman, webhook_receiver: WebhookReceiver
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["form.received"])
    checkpoint = ApprovalCheckpoint(ask, client=humanwire_client, wait_time=1, follow_up_time=60)
    graph = build(checkpoint)
    human.fill_form({"decision": "approve", "comment": "Ship it"}, delay=2)

    paused = graph.invoke({"draft": "Hello world"}, config("t-webhook"))
    (pending,) = paused["__interrupt__"]
    assert pending.value["type"] == "humanwire_approval"
    assert pending.value["action"] == "publish_post"
    assert "published" not in paused

    (event,) = webhook_receiver.wait_for("form.received", timeout=10)
    assert event.payload.interaction_id == pending.value["interaction_id"]
    final = checkpoint.resume_from_event(graph, event)
    assert final["published"] is True
    decision = checkpoint.decision(final)
    assert decision is not None and decision.approved and decision.comment == "Ship it"
    assert not decision.timed_out
    # The node re-ran on resume; its idempotent send delivered nothing new.
    assert forms_sent(humanwire_client) == 1
    # A repeated delivery of the same event finds nothing paused: no second resume.
    assert checkpoint.resume_from_event(graph, event) is None
    assert checkpoint.resume_from_event(graph, {"eventType": "message.received",
        "payload": {"medium": "sms", "from": "+12025550100", "to": "+12025550199",
                    "body": "hi"}}) is None  # fmt: skip


def test_rejected_by_webhook_skips_the_next_node(
    humanwire_client: HumanWire, human: ScriptedHuman, webhook_receiver: WebhookReceiver
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["form.received"])
    checkpoint = ApprovalCheckpoint(ask, client=humanwire_client, wait_time=1, follow_up_time=60)
    graph = build(checkpoint)
    human.fill_form({"decision": "reject", "comment": "Typos"}, delay=2)
    graph.invoke({"draft": "Helo"}, config("t-reject"))
    (event,) = webhook_receiver.wait_for("form.received", timeout=10)
    final = checkpoint.resume_from_event(graph, webhook_receiver.deliveries[0].body)
    assert event.payload.values["decision"] == "reject"
    assert "published" not in final
    assert final["approval"]["comment"] == "Typos"
    assert forms_sent(humanwire_client) == 1


def test_answered_inside_the_wait_window_needs_no_interrupt(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    checkpoint = ApprovalCheckpoint(ask, client=humanwire_client, wait_time=5)
    graph = build(checkpoint)
    human.fill_form({"decision": "approve"})
    result = graph.invoke({"draft": "Hi"}, config("t-fast"))
    assert "__interrupt__" not in result
    assert result["published"] is True


def test_poll_resumes_without_webhooks(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    checkpoint = ApprovalCheckpoint(ask, client=humanwire_client, wait_time=1, follow_up_time=60)
    graph = build(checkpoint)
    cfg = config("t-poll")
    paused = graph.invoke({"draft": "Hi"}, cfg)
    assert checkpoint.poll(graph, cfg) is None  # still open, nobody answered
    interaction_id = paused["__interrupt__"][0].value["interaction_id"]
    human.fill_form({"decision": "approve"}, interaction_id=interaction_id).wait(10)
    final = checkpoint.poll(graph, cfg, wait=5)
    assert final["published"] is True
    assert forms_sent(humanwire_client) == 1


def test_poll_after_the_form_expired_is_a_timeout(humanwire_client: HumanWire) -> None:
    checkpoint = ApprovalCheckpoint(ask, client=humanwire_client, wait_time=1, follow_up_time=1)
    graph = build(checkpoint)
    cfg = config("t-expired")
    graph.invoke({"draft": "Hi"}, cfg)
    final = None
    for _ in range(10):
        final = checkpoint.poll(graph, cfg, wait=2)
        if final is not None:
            break
    assert final is not None
    decision = checkpoint.decision(final)
    assert decision is not None and decision.timed_out and not decision.approved
    assert "published" not in final


async def test_async_node_and_resume(
    humanwire_client: HumanWire,
    async_humanwire_client: AsyncHumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["form.received"])
    checkpoint = ApprovalCheckpoint(
        ask, client=async_humanwire_client, wait_time=1, follow_up_time=60
    )
    graph = build(checkpoint, use_async=True)
    human.fill_form({"decision": "approve"}, delay=2)
    paused = await graph.ainvoke({"draft": "Async"}, config("t-async"))
    assert "__interrupt__" in paused
    (event,) = await webhook_receiver.async_wait_for("form.received", timeout=10)
    final = await checkpoint.aresume_from_event(graph, event)
    assert final["published"] is True
    assert forms_sent(humanwire_client) == 1
    # A repeated delivery finds nothing paused.
    assert await checkpoint.aresume_from_event(graph, event) is None


async def test_async_poll_resumes_without_webhooks(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    checkpoint = ApprovalCheckpoint(
        ask, client=async_humanwire_client, wait_time=1, follow_up_time=60
    )
    graph = build(checkpoint, use_async=True)
    cfg = config("t-apoll")
    paused = await graph.ainvoke({"draft": "Hi"}, cfg)
    assert await checkpoint.apoll(graph, cfg) is None  # still open, nobody answered
    interaction_id = paused["__interrupt__"][0].value["interaction_id"]
    await human.fill_form(
        {"decision": "reject", "comment": "Not yet"}, interaction_id=interaction_id
    ).async_wait(10)
    final = await checkpoint.apoll(graph, cfg, wait=5)
    assert "published" not in final
    assert final["approval"]["comment"] == "Not yet" and not final["approval"]["timed_out"]
    assert await checkpoint.apoll(graph, cfg) is None  # nothing paused any more
    assert len([d for d in human.deliveries() if d.kind == "form"]) == 1


def test_key_differs_per_thread_and_is_stable_per_task() -> None:
    first = ApprovalCheckpoint.idempotency_key(
        {"configurable": {"thread_id": "a", "checkpoint_ns": "approve:1"}}
    )
    assert first == ApprovalCheckpoint.idempotency_key(
        {"configurable": {"thread_id": "a", "checkpoint_ns": "approve:1"}}
    )
    assert first != ApprovalCheckpoint.idempotency_key(
        {"configurable": {"thread_id": "b", "checkpoint_ns": "approve:1"}}
    )
    assert ApprovalCheckpoint.idempotency_key({"configurable": {}}) is None


def test_bad_resume_value_is_refused(humanwire_client: HumanWire) -> None:
    checkpoint = ApprovalCheckpoint(ask, client=humanwire_client, wait_time=1)
    with pytest.raises(ValueError, match="resume an approval checkpoint"):
        checkpoint._decision_from_resume("yes", "i-1")
