"""Approval answered in the run: ``HumanApprovals`` (a Pydantic AI capability answering
deferred tool calls) against the real service, with the scripted human filling the
approval form or replying to a question."""

from __future__ import annotations

import pytest
from pai_helpers import Payments, once, scripted
from pydantic_ai import Agent, CallDeferred, DeferredToolRequests, DeferredToolResults

from framework_support import PAY, PHONE
from humanwire import AsyncHumanWire, HumanWire
from humanwire.pydantic_ai import ApprovalGuard, HumanApprovals, MemoryApprovalLedger
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.types import DEFAULT_NO_RESPONSE_TEMPLATE


async def test_an_approved_call_runs(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    filled = human.decide_approval("approve")
    payments, model = Payments(), once(*PAY)
    approvals = HumanApprovals(client=async_humanwire_client, wait_time=10)
    agent = Agent(model.model, tools=[payments.tool()], capabilities=[approvals])
    result = await agent.run("Pay Bob 50")
    assert result.output == "FINAL: sent 50 to bob"
    assert payments.sent == [(50, "bob")]
    # The form named the tool and showed its arguments; it carries the run's keys.
    delivery = await filled.async_wait()
    assert delivery.to == PHONE
    assert delivery.interaction_id is not None
    status = humanwire_client.interactions.status(delivery.interaction_id)
    assert status.metadata == {
        "pydantic_ai_run_id": result.run_id,
        "pydantic_ai_tool_call_id": "call_0_0",
    }
    assert [d.decision for d in approvals.decisions] == ["approve"]


async def test_a_rejection_reaches_the_model_with_the_comment(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    human.decide_approval("reject", "Not this quarter")
    payments, model = Payments(), once(*PAY)
    approvals = HumanApprovals(client=async_humanwire_client, wait_time=10)
    agent = Agent(model.model, tools=[payments.tool()], capabilities=[approvals])
    result = await agent.run("Pay Bob 50")
    assert payments.sent == []
    (returned,) = model.returns()
    assert returned.outcome == "denied"
    assert returned.content == (
        "send_payment was not run: a human rejected it. Reason: Not this quarter"
    )
    assert result.output.endswith("Reason: Not this quarter")


async def test_nobody_deciding_in_time_is_a_timeout_rejection(
    async_humanwire_client: AsyncHumanWire,
) -> None:
    payments, model = Payments(), once(*PAY)
    approvals = HumanApprovals(client=async_humanwire_client, wait_time=1)
    agent = Agent(model.model, tools=[payments.tool()], capabilities=[approvals])
    await agent.run("Pay Bob 50")
    assert payments.sent == []
    (returned,) = model.returns()
    assert returned.outcome == "denied"
    assert "no approval decision arrived in time (timeout" in str(returned.content)


def test_an_edit_is_no_longer_offered(async_humanwire_client: AsyncHumanWire) -> None:
    # An approval request is about the call as asked (its digest binds the decision).
    with pytest.raises(ValueError, match="allow_edit"):
        HumanApprovals(client=async_humanwire_client, wait_time=10, allow_edit=True)


async def test_a_question_call_is_asked_and_its_reply_returned(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    human.reply("yes, ship it")

    def ask_human(question: str) -> str:
        """Ask a person; the run pauses until they answer."""
        raise CallDeferred(metadata={"question": question}, kind="question")

    model = once("ask_human", {"question": "Ship the release?"})
    approvals = HumanApprovals(client=async_humanwire_client, wait_time=10)
    agent = Agent(model.model, tools=[ask_human], capabilities=[approvals])
    result = await agent.run("Release")
    assert result.output == "FINAL: Human response: yes, ship it"
    silent = once("ask_human", {"question": "Anyone?"})
    quiet = HumanApprovals(client=async_humanwire_client, wait_time=1)
    await Agent(silent.model, tools=[ask_human], capabilities=[quiet]).run("Ask")
    (returned,) = silent.returns()
    assert returned.content == DEFAULT_NO_RESPONSE_TEMPLATE


async def test_external_work_is_left_to_the_host(async_humanwire_client: AsyncHumanWire) -> None:
    def render_video(title: str) -> str:
        """Rendered elsewhere."""
        raise CallDeferred(metadata={"job": title})

    model = once("render_video", {"title": "intro"})
    approvals = HumanApprovals(client=async_humanwire_client, wait_time=1)
    agent = Agent(
        model.model,
        tools=[render_video],
        capabilities=[approvals],
        output_type=[str, DeferredToolRequests],
    )
    result = await agent.run("Render")
    assert isinstance(result.output, DeferredToolRequests)
    assert [call.tool_name for call in result.output.calls] == ["render_video"]


async def test_an_approval_that_cannot_be_sent_is_denied(
    humanwire_service: RunningService,
) -> None:
    client = AsyncHumanWire(api_key="hw_not_a_key", base_url=humanwire_service.base_url)
    try:
        payments, model = Payments(), once(*PAY)
        approvals = HumanApprovals(client=client, to=PHONE, wait_time=5)
        agent = Agent(model.model, tools=[payments.tool()], capabilities=[approvals])
        await agent.run("Pay Bob 50")
    finally:
        await client.aclose()
    assert payments.sent == []  # fails closed
    (returned,) = model.returns()
    assert returned.outcome == "denied"
    assert "its approval could not be requested (humanwire:" in str(returned.content)


async def test_two_calls_in_one_step_are_asked_together(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    human.decide_approval("approve")
    human.decide_approval("reject", "too much")
    payments = Payments()
    model = scripted(
        [
            ("send_payment", {"amount": 5, "to": "ann"}),
            ("send_payment", {"amount": 500, "to": "eve"}),
        ]
    )
    approvals = HumanApprovals(client=async_humanwire_client, wait_time=10)
    agent = Agent(model.model, tools=[payments.tool()], capabilities=[approvals])
    await agent.run("Pay")
    # Which form each human action answered is the order they arrived: one approved,
    # one rejected, and only the approved payment ran.
    assert len(payments.sent) == 1
    outcomes = sorted(part.outcome for part in model.returns())
    assert outcomes == ["denied", "success"]


async def test_an_approval_is_used_once() -> None:
    # The guard alone, no service: a call approved through humanwire (its results carry
    # the approval's interaction id) runs the first time; the same approval again is
    # refused, whichever run presents it.
    payments, ledger = Payments(), MemoryApprovalLedger()
    model = once(*PAY)
    agent = Agent(
        model.model,
        tools=[payments.tool()],
        output_type=[str, DeferredToolRequests],
        capabilities=[ApprovalGuard(ledger)],
    )
    paused = await agent.run("Pay Bob 50")
    history = paused.all_messages()
    results = DeferredToolResults(
        approvals={"call_0_0": True},
        metadata={"call_0_0": {"humanwire_approval": "int-1"}},
    )
    first = await agent.run(message_history=history, deferred_tool_results=results)
    again = await agent.run(message_history=history, deferred_tool_results=results)
    assert payments.sent == [(50, "bob")]
    assert first.output == "FINAL: sent 50 to bob"
    assert "was not run again: its approval (interaction int-1) was already used" in again.output


async def test_a_call_id_reused_in_a_later_turn_is_asked_afresh(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    """Models and fakes reuse ids like ``call_1``: the second call is a new question (the
    human is asked again), not the first approval replayed and refused as "ran before"."""
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def reuse(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        made = sum(1 for message in messages if isinstance(message, ModelResponse))
        if made < 2:
            return ModelResponse(parts=[ToolCallPart(PAY[0], PAY[1], tool_call_id="call_1")])
        return ModelResponse(parts=[TextPart("done")])

    human.decide_approval("approve")
    payments = Payments()
    approvals = HumanApprovals(client=async_humanwire_client, wait_time=10)
    agent = Agent(FunctionModel(reuse), tools=[payments.tool()], capabilities=[approvals])
    asked = human.decide_approval("reject", "once was enough")
    await agent.run("Pay Bob 50")
    await asked.async_wait()
    assert payments.sent == [(50, "bob")]
    assert [d.decision for d in approvals.decisions] == ["approve", "reject"]
