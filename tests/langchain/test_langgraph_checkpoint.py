"""ApprovalCheckpoint: a LangGraph node that sends an approval request and interrupts,
resumed by the approval.decided webhook after its wait window, with one request sent, and
its approval consumed once: a graph resumed twice from the same webhook runs the gated
node once."""

from __future__ import annotations

import copy
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from approval_support import decide_next, decide_on_page
from humanwire import AsyncHumanWire, HumanWire
from humanwire.approval import ApprovalRequest
from humanwire.langchain import ApprovalCheckpoint
from humanwire.testing.receiver import WebhookReceiver
from pg_support import humanwire_config  # noqa: F401  (on each store in turn)

OPS = [{"channel": "link", "to": "ops"}]


class PostState(TypedDict, total=False):
    draft: str
    approval: dict[str, Any]
    published: bool


def build(
    checkpoint: ApprovalCheckpoint,
    *,
    use_async: bool = False,
    runs: list[str] | None = None,
    saver: InMemorySaver | None = None,
) -> Any:
    def publish(state: PostState) -> PostState:
        if runs is not None:
            runs.append(state["draft"])
        return {"published": True}

    builder = StateGraph(PostState)
    builder.add_node("approve", checkpoint.anode if use_async else checkpoint)
    builder.add_node("publish", publish)
    builder.add_edge(START, "approve")
    builder.add_conditional_edges(
        "approve", checkpoint.route, {"approved": "publish", "rejected": END}
    )
    builder.add_edge("publish", END)
    return builder.compile(checkpointer=saver if saver is not None else InMemorySaver())


def ask(state: PostState) -> ApprovalRequest:
    return ApprovalRequest("publish_post", {"post": state["draft"]}, "Publish to the blog")


def config(thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread}}


def requests_made(client: HumanWire, interaction_id: str) -> int:
    """Approval requests the account made for this run (one, however often the node ran)."""
    return sum(
        1
        for entry in client.audit.entries()
        if entry.type == "approval.requested" and entry.interaction_id == interaction_id
    )


def test_resumed_by_webhook_after_the_wait_window_with_one_request(
    humanwire_client: HumanWire, webhook_receiver: WebhookReceiver
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["approval.decided"])
    checkpoint = ApprovalCheckpoint(
        ask, client=humanwire_client, approvers=OPS, wait_time=1, follow_up_time=60
    )
    graph = build(checkpoint)

    paused = graph.invoke({"draft": "Hello world"}, config("t-webhook"))
    (pending,) = paused["__interrupt__"]
    assert pending.value["type"] == "humanwire_approval"
    assert pending.value["action"] == "publish_post"
    assert "published" not in paused
    decide_on_page(pending.value["form_url"], "approve", "Ship it")

    (event,) = webhook_receiver.wait_for("approval.decided", timeout=10)
    assert event.payload.interaction_id == pending.value["interaction_id"]
    assert event.payload.metadata and event.payload.metadata["langgraph_thread_id"] == "t-webhook"
    final = checkpoint.resume_from_event(graph, event)
    assert final["published"] is True
    decision = checkpoint.decision(final)
    assert decision is not None and decision.approved and decision.comment == "Ship it"
    assert not decision.timed_out and decision.action_digest
    # The node re-ran on resume; its idempotent send asked nobody again.
    assert requests_made(humanwire_client, event.payload.interaction_id) == 1
    # A repeated delivery of the same event finds nothing paused: no second resume.
    assert checkpoint.resume_from_event(graph, event) is None
    assert checkpoint.resume_from_event(graph, {"eventType": "message.received",
        "payload": {"medium": "sms", "from": "+12025550100", "to": "+12025550199",
                    "body": "hi"}}) is None  # fmt: skip


def test_resumed_twice_from_the_same_webhook_runs_the_gated_node_once(
    humanwire_client: HumanWire, webhook_receiver: WebhookReceiver
) -> None:
    """Two copies of the paused graph (two processes, each with the checkpoint it
    saved) resume from the same delivery: both re-run the node, both read the approval;
    the service lets one consume it, and only that one publishes."""
    webhook_receiver.register(humanwire_client, event_types=["approval.decided"])
    checkpoint = ApprovalCheckpoint(
        ask, client=humanwire_client, approvers=OPS, wait_time=1, follow_up_time=60
    )
    runs: list[str] = []
    saver = InMemorySaver()
    graph = build(checkpoint, runs=runs, saver=saver)
    paused = graph.invoke({"draft": "Once"}, config("t-twice"))
    copied = build(checkpoint, runs=runs, saver=copy.deepcopy(saver))
    decide_on_page(paused["__interrupt__"][0].value["form_url"], "approve")
    (event,) = webhook_receiver.wait_for("approval.decided", timeout=10)
    body = webhook_receiver.deliveries[0].body

    first = checkpoint.resume_from_event(graph, body)
    second = checkpoint.resume_from_event(copied, body)
    assert runs == ["Once"]  # the gated node ran once
    assert first["published"] is True
    assert "published" not in second
    used = checkpoint.decision(second)
    assert used is not None and used.decision == "consumed" and not used.approved
    assert checkpoint.resume_from_event(graph, body) is None  # and again: nothing paused
    consumed = [
        e
        for e in humanwire_client.audit.entries()
        if e.type == "approval.consumed" and e.interaction_id == event.payload.interaction_id
    ]
    assert len(consumed) == 1


def test_rejected_by_webhook_skips_the_next_node(
    humanwire_client: HumanWire, webhook_receiver: WebhookReceiver
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["approval.decided"])
    checkpoint = ApprovalCheckpoint(
        ask, client=humanwire_client, approvers=OPS, wait_time=1, follow_up_time=60
    )
    graph = build(checkpoint)
    paused = graph.invoke({"draft": "Helo"}, config("t-reject"))
    decide_on_page(paused["__interrupt__"][0].value["form_url"], "reject", "Typos")
    (event,) = webhook_receiver.wait_for("approval.decided", timeout=10)
    final = checkpoint.resume_from_event(graph, webhook_receiver.deliveries[0].body)
    assert event.payload.decision == "rejected"
    assert "published" not in final
    assert final["approval"]["comment"] == "Typos"


def test_decided_inside_the_wait_window_needs_no_interrupt(humanwire_client: HumanWire) -> None:
    checkpoint = ApprovalCheckpoint(ask, client=humanwire_client, wait_time=10)
    graph = build(checkpoint)
    decider = decide_next(humanwire_client, "approve")
    result = graph.invoke({"draft": "Hi"}, config("t-fast"))
    decider.wait()
    assert "__interrupt__" not in result
    assert result["published"] is True


def test_poll_resumes_without_webhooks(humanwire_client: HumanWire) -> None:
    checkpoint = ApprovalCheckpoint(
        ask, client=humanwire_client, approvers=OPS, wait_time=1, follow_up_time=60
    )
    graph = build(checkpoint)
    cfg = config("t-poll")
    paused = graph.invoke({"draft": "Hi"}, cfg)
    assert checkpoint.poll(graph, cfg) is None  # still open, nobody decided
    decide_on_page(paused["__interrupt__"][0].value["form_url"], "approve")
    final = checkpoint.poll(graph, cfg, wait=5)
    assert final["published"] is True


def test_poll_after_the_windows_closed_is_the_timeout_decision(
    humanwire_client: HumanWire,
) -> None:
    checkpoint = ApprovalCheckpoint(
        ask, client=humanwire_client, approvers=OPS, wait_time=1, follow_up_time=1
    )
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
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["approval.decided"])
    checkpoint = ApprovalCheckpoint(
        ask, client=async_humanwire_client, approvers=OPS, wait_time=1, follow_up_time=60
    )
    runs: list[str] = []
    graph = build(checkpoint, use_async=True, runs=runs)
    paused = await graph.ainvoke({"draft": "Async"}, config("t-async"))
    decide_on_page(paused["__interrupt__"][0].value["form_url"], "approve")
    (event,) = await webhook_receiver.async_wait_for("approval.decided", timeout=10)
    final = await checkpoint.aresume_from_event(graph, event)
    assert final["published"] is True and runs == ["Async"]
    # A repeated delivery finds nothing paused.
    assert await checkpoint.aresume_from_event(graph, event) is None


async def test_async_poll_resumes_without_webhooks(
    async_humanwire_client: AsyncHumanWire,
) -> None:
    checkpoint = ApprovalCheckpoint(
        ask, client=async_humanwire_client, approvers=OPS, wait_time=1, follow_up_time=60
    )
    graph = build(checkpoint, use_async=True)
    cfg = config("t-apoll")
    paused = await graph.ainvoke({"draft": "Hi"}, cfg)
    assert await checkpoint.apoll(graph, cfg) is None  # still open, nobody decided
    decide_on_page(paused["__interrupt__"][0].value["form_url"], "reject", "Not yet")
    final = await checkpoint.apoll(graph, cfg, wait=5)
    assert "published" not in final
    assert final["approval"]["comment"] == "Not yet" and not final["approval"]["timed_out"]
    assert await checkpoint.apoll(graph, cfg) is None  # nothing paused any more


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
