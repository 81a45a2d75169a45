"""Approval in the run, on Strands' own seam (a ``BeforeToolCallEvent`` hook), against the
real service with the scripted human: the hook sends the form and waits; approved, the
tool runs (once); rejected, the model gets the reason and the comment as the tool's
error result (``cancel_tool``); no decision in time is a rejection that says so; a form
that cannot be sent cancels the call."""

from __future__ import annotations

from typing import Any

import pytest
from strands import tool
from strands.hooks import AfterToolCallEvent, HookProvider, HookRegistry
from strands_helpers import agent, final, once, scripted

from framework_support import PAY, forms
from humanwire import AsyncHumanWire, HumanWire
from humanwire.strands import HumanWireApprovals
from humanwire.testing import RunningService, ScriptedHuman


def payment_tool(ran: list[dict[str, Any]]) -> Any:
    @tool
    def send_payment(amount: int, to: str) -> str:
        """Send money."""
        ran.append({"amount": amount, "to": to})
        return f"sent {amount} to {to}"

    return send_payment


async def test_approved_the_tool_runs(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[dict[str, Any]] = []
    gate = HumanWireApprovals(["send_payment"], client=async_humanwire_client, wait_time=10)
    filled = human.decide_approval("approve", "fine")
    model = once(*PAY)

    result = await agent(model, [payment_tool(ran)], hooks=[gate]).invoke_async("pay bob 50")

    assert final(result) == "FINAL: success: sent 50 to bob"
    assert ran == [{"amount": 50, "to": "bob"}]
    delivery = await filled.async_wait(5)
    assert "send_payment will run with" not in delivery.text  # the form is a link
    (form,) = forms(human)
    status = await async_humanwire_client.interactions.status(form.interaction_id)
    assert status.kind == "approval"
    assert status.metadata is not None and status.metadata["strands_tool_use_id"] == "call_0_0"
    assert len(status.metadata["strands_run_id"]) == 32
    (decision,) = gate.decisions
    assert (decision.decision, decision.comment) == ("approve", "fine")


async def test_rejected_the_comment_reaches_the_model(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[dict[str, Any]] = []
    gate = HumanWireApprovals(["send_payment"], client=async_humanwire_client, wait_time=10)
    human.decide_approval("reject", "not this quarter")
    model = once(*PAY)

    result = await agent(model, [payment_tool(ran)], hooks=[gate]).invoke_async("pay")

    assert ran == []
    (returned,) = model.results
    assert returned["status"] == "error"  # Strands' cancelled tool: an error result
    assert returned["content"] == [
        {"text": "send_payment was not run: a human rejected it. Reason: not this quarter"}
    ]
    assert final(result) == (
        "FINAL: error: send_payment was not run: a human rejected it. Reason: not this quarter"
    )


async def test_no_decision_in_time_rejects_and_says_so(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[dict[str, Any]] = []
    gate = HumanWireApprovals(["send_payment"], client=async_humanwire_client, wait_time=1)
    silent = human.stay_silent()
    model = once(*PAY)

    await agent(model, [payment_tool(ran)], hooks=[gate]).invoke_async("pay")

    await silent.async_wait(5)
    assert ran == []
    (returned,) = model.results
    assert returned["content"][0]["text"] == (
        "send_payment was not run: no approval decision arrived in time "
        "(timeout; rejected by default)."
    )
    assert gate.decisions[0].timed_out


def test_an_edit_is_no_longer_offered(async_humanwire_client: AsyncHumanWire) -> None:
    # An approval request is about the call as asked (its digest binds the decision).
    with pytest.raises(ValueError, match="allow_edit"):
        HumanWireApprovals(
            ["send_payment"], client=async_humanwire_client, wait_time=10, allow_edit=True
        )


async def test_only_gated_calls_wait_for_a_person(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[dict[str, Any]] = []
    gate = HumanWireApprovals(
        ["send_payment"],
        client=async_humanwire_client,
        wait_time=10,
        when=lambda name, arguments: arguments["amount"] > 100,
    )

    @tool
    def look_up(order: str) -> str:
        """Look an order up."""
        return f"order {order} is open"

    model = scripted([("look_up", {"order": "1042"}), PAY])
    result = await agent(model, [payment_tool(ran), look_up], hooks=[gate]).invoke_async("go")

    assert final(result) == "FINAL: success: order 1042 is open | success: sent 50 to bob"
    assert ran == [{"amount": 50, "to": "bob"}]  # 50 is under the limit: no form
    assert forms(human) == []


async def test_a_form_that_cannot_be_sent_cancels_the_call(
    humanwire_service: RunningService,
) -> None:
    ran: list[dict[str, Any]] = []
    client = AsyncHumanWire(api_key="hw_not_a_key", base_url=humanwire_service.base_url)
    try:
        gate = HumanWireApprovals(["send_payment"], client=client, wait_time=5)
        model = once(*PAY)
        await agent(model, [payment_tool(ran)], hooks=[gate]).invoke_async("pay")
    finally:
        await client.aclose()
    assert ran == []  # fail closed
    (returned,) = model.results
    assert returned["status"] == "error"
    text = returned["content"][0]["text"]
    assert text.startswith("send_payment was not run: its approval could not be requested")


class RetryOnce(HookProvider):
    """Asks Strands to run each tool again after it ran (a retried step)."""

    def __init__(self) -> None:
        self.retried = False

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(AfterToolCallEvent, self.retry)

    def retry(self, event: AfterToolCallEvent) -> None:
        if not self.retried:
            self.retried = True
            event.retry = True


async def test_a_retried_call_does_not_run_the_approved_action_again(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    # Strands' retry runs the BeforeToolCallEvent hooks again: the same form comes back
    # (same Idempotency-Key), its approval is consumed already, and the call is cancelled.
    ran: list[dict[str, Any]] = []
    gate = HumanWireApprovals(["send_payment"], client=async_humanwire_client, wait_time=10)
    human.decide_approval("approve")
    model = once(*PAY)

    hooks = [gate, RetryOnce()]
    await agent(model, [payment_tool(ran)], hooks=hooks).invoke_async("pay")

    assert ran == [{"amount": 50, "to": "bob"}]
    assert len(forms(human)) == 1
    (returned,) = model.results
    assert returned["status"] == "error"
    assert returned["content"][0]["text"].startswith(
        "send_payment was not run again: its approval was used already"
    )


def test_the_gate_serves_sync_calls_on_several_event_loops(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    # Strands' sync agent(...) runs each call on an event loop of its own; the forms go
    # out on an async client per loop, made on the approver's sync client's account.
    ran: list[dict[str, Any]] = []
    gate = HumanWireApprovals(["send_payment"], client=humanwire_client, wait_time=10)
    strands_agent = agent(once(*PAY), [payment_tool(ran)], hooks=[gate])
    for comment in ("first", "second"):
        human.decide_approval("approve", comment)
        strands_agent.messages.clear()
        assert final(strands_agent("pay")) == "FINAL: success: sent 50 to bob"
    assert [d.comment for d in gate.decisions] == ["first", "second"]
    assert len(ran) == 2


async def test_a_tool_use_id_reused_in_a_later_turn_is_asked_afresh(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    """Models and fakes reuse ids from turn to turn: the second call under ``call_0`` is a
    new question (the human is asked again), not the first approval replayed and refused
    as "ran before"."""
    ran: list[dict[str, Any]] = []
    gate = HumanWireApprovals(["send_payment"], client=async_humanwire_client, wait_time=10)
    human.decide_approval("approve")
    asked = human.decide_approval("reject", "once was enough")
    model = scripted([PAY], [PAY], reuse_ids=True)

    result = await agent(model, [payment_tool(ran)], hooks=[gate]).invoke_async("pay twice")

    await asked.async_wait(5)
    assert ran == [{"amount": 50, "to": "bob"}]
    assert len(forms(human)) == 2
    assert final(result).endswith("a human rejected it. Reason: once was enough")
    assert [d.decision for d in gate.decisions] == ["approve", "reject"]
