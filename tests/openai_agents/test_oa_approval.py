"""Approval on the SDK's own seam (``needs_approval`` and interruptions), in process,
against the real service: the gate sends the form once, the host waits for the decision
and answers ``approve`` / ``reject`` with the human's comment as the model's text."""

from __future__ import annotations

from typing import Any

import httpx
from agents import Agent, FunctionTool, RunContextWrapper, Runner, function_tool
from oa_helpers import FakeModel

from approval_support import approval_link
from framework_support import PAY, forms
from humanwire import AsyncHumanWire
from humanwire.approval import Approver
from humanwire.openai_agents import ApprovalGate, require_approval, run_with_approvals
from humanwire.openai_agents.approval import ApprovalRun, send_approval
from humanwire.testing import ScriptedHuman


def payment_tool(ran: list[dict[str, Any]], **tool_options: Any) -> FunctionTool:
    @function_tool(**tool_options)
    async def send_payment(amount: int, to: str) -> str:
        """Send money."""
        ran.append({"amount": amount, "to": to})
        return f"sent {amount} to {to}"

    return send_payment


async def test_approved_the_call_runs_once(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[dict[str, Any]] = []
    tool = require_approval(payment_tool(ran), client=async_humanwire_client)
    filled = human.decide_approval("approve", "fine")
    agent = Agent(name="payer", tools=[tool], model=FakeModel(PAY))

    result = await run_with_approvals(agent, "pay bob 50", run_id="run-approved")

    assert result.final_output == "FINAL: sent 50 to bob"
    assert ran == [{"amount": 50, "to": "bob"}]
    delivery = await filled.async_wait(5)
    assert len(forms(human)) == 1  # the gate sent it; the host did not send again
    status = await async_humanwire_client.interactions.status(delivery.interaction_id)
    assert status.metadata == {
        "humanwire_resume": "openai_agents",
        "openai_agents_run_id": "run-approved",
        "openai_agents_call_id": "call_1",
    }


async def test_rejected_the_comment_reaches_the_model(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[dict[str, Any]] = []
    tool = require_approval(payment_tool(ran), client=async_humanwire_client)
    human.decide_approval("reject", "not this quarter")
    model = FakeModel(PAY)

    result = await run_with_approvals(Agent(name="payer", tools=[tool], model=model), "pay")

    assert ran == []
    assert model.outputs == [
        "send_payment was not run: a human rejected it. Reason: not this quarter"
    ]
    assert result.final_output == f"FINAL: {model.outputs[0]}"


async def test_no_decision_in_time_rejects_and_says_so(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[dict[str, Any]] = []
    tool = require_approval(payment_tool(ran), client=async_humanwire_client, follow_up_time=1)
    silent = human.stay_silent()

    result = await run_with_approvals(
        Agent(name="payer", tools=[tool], model=FakeModel(PAY)), "pay"
    )

    await silent.async_wait(5)
    assert ran == []
    assert result.final_output == (
        "FINAL: send_payment was not run: no approval decision arrived in time "
        "(timeout; rejected by default)."
    )


async def test_a_policy_limits_the_gate_to_some_calls(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    seen: list[tuple[dict[str, Any], str]] = []

    def large(context: RunContextWrapper[Any], params: dict[str, Any], call_id: str) -> bool:
        seen.append((params, call_id))
        return bool(params["amount"] > 100)

    ran: list[dict[str, Any]] = []
    # The tool's own needs_approval policy becomes the gate's "when".
    tool = require_approval(
        payment_tool(ran, needs_approval=large), client=async_humanwire_client, follow_up_time=2
    )
    agent = Agent(name="payer", tools=[tool], model=FakeModel(PAY))

    result = await run_with_approvals(agent, "pay bob 50")

    assert result.final_output == "FINAL: sent 50 to bob"
    assert seen == [({"amount": 50, "to": "bob"}, "call_1")]
    assert human.deliveries() == []  # small payments are not asked about


async def test_tools_gated_by_the_sdk_alone_are_asked_by_the_host(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[dict[str, Any]] = []
    tool = payment_tool(ran, needs_approval=True)  # plain SDK gate: nothing is sent by it
    human.decide_approval("approve")
    agent = Agent(name="payer", tools=[tool], model=FakeModel(PAY))

    result = await run_with_approvals(agent, "pay", approver=Approver(async_humanwire_client))

    assert result.final_output == "FINAL: sent 50 to bob"
    assert len(ran) == 1
    assert len(forms(human)) == 1


async def test_the_gate_sends_inside_a_driven_run_only(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[dict[str, Any]] = []
    tool = require_approval(payment_tool(ran), client=async_humanwire_client)
    agent = Agent(name="payer", tools=[tool], model=FakeModel(PAY))

    # Outside run_with_approvals / the durable helpers: the SDK pauses, nothing is sent.
    plain = await Runner.run(agent, "pay")
    assert [item.tool_name for item in plain.interruptions] == ["send_payment"]
    assert human.deliveries() == []

    # Inside a driven run the gate sends as the SDK asks it, before the run returns.
    run = ApprovalRun("run-gate", lambda: Approver(async_humanwire_client))
    with run.active():
        paused = await Runner.run(agent, "pay")
    assert [item.call_id for item in paused.interruptions] == ["call_1"]
    [form] = forms(human)
    assert run.sent["call_1"].interaction_id == form.interaction_id
    assert isinstance(tool.needs_approval, ApprovalGate)
    assert ran == []


async def test_the_form_is_keyed_by_run_pause_and_call(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    approver = Approver(async_humanwire_client)
    ask: dict[str, Any] = {
        "tool_name": "send_payment",
        "arguments": {"amount": 50, "to": "bob"},
    }
    first = await send_approval(approver, run_id="r1", round=0, call_id="call_1", **ask)
    again = await send_approval(approver, run_id="r1", round=0, call_id="call_1", **ask)
    later = await send_approval(approver, run_id="r1", round=1, call_id="call_1", **ask)

    assert again.interaction_id == first.interaction_id
    assert later.interaction_id != first.interaction_id  # a reused call id in a later pause
    assert len(forms(human)) == 2


async def test_a_call_the_sdk_holds_without_asking_the_gate_is_still_asked(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    # The SDK skips a callable policy when the model left out an argument with a default
    # (it requires approval without asking): the host asks through the tool's gate.
    ran: list[str] = []

    @function_tool
    async def send_payment(amount: int, to: str, memo: str = "") -> str:
        """Send money."""
        ran.append(f"{amount} {to} {memo!r}")
        return f"sent {amount} to {to}"

    consulted: list[str] = []

    def never(context: RunContextWrapper[Any], params: dict[str, Any], call_id: str) -> bool:
        consulted.append(call_id)
        return False

    tool = require_approval(
        send_payment, client=async_humanwire_client, when=never, description="Payments desk"
    )
    filled = human.decide_approval("approve")

    result = await run_with_approvals(
        Agent(name="payer", tools=[tool], model=FakeModel(PAY)), "pay"
    )

    assert consulted == []
    assert result.final_output == "FINAL: sent 50 to bob"
    assert ran == ["50 bob ''"]
    delivery = await filled.async_wait(5)
    page = approval_link(delivery.text)
    assert page is not None
    async with httpx.AsyncClient() as browser:  # the gate's request: its description shows
        assert "Payments desk" in (await browser.get(page)).text


async def test_a_service_error_on_the_approval_path_is_told_to_the_model(
    humanwire_service: Any,
) -> None:
    """A bad key: the approval cannot be requested, the call does not run, and the model
    reads why (the run is not ended by the error), as in the other adapters."""
    wrong = AsyncHumanWire(api_key="hw_not_a_key", base_url=humanwire_service.base_url)
    ran: list[dict[str, Any]] = []
    tool = require_approval(payment_tool(ran), client=wrong, to="+12025550100")
    model = FakeModel(PAY)

    result = await run_with_approvals(Agent(name="payer", tools=[tool], model=model), "pay")

    assert ran == []
    (told,) = model.outputs
    assert told.startswith("send_payment was not run: its approval could not be requested")
    assert result.final_output == f"FINAL: {told}"
