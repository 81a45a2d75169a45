"""Approval on ADK's own seam, in one process, against the real service: the gate that
waits for the decision inside the call (``wait=True``), and the gate that pauses the run
at ADK's confirmation; a rejection reaches the model with the human's comment, and an
answer to the confirmation that the service does not back runs nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from adk_helpers import FakeLlm, run_agent, user_text
from google.adk.agents import LlmAgent
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.function_tool import FunctionTool
from google.genai import types

from approval_support import approval_link
from framework_support import PAY, forms
from humanwire import AsyncHumanWire
from humanwire._pauses import send_pending_approval
from humanwire.approval import Approver
from humanwire.google_adk import (
    ApprovalGate,
    FileClaimStore,
    paused_approvals,
    require_approval,
    resume_session,
    run_until_approval,
)
from humanwire.google_adk.approval import CallKeys, approval_key
from humanwire.testing import ScriptedHuman


def payment_tool(ran: list[str]) -> Any:
    async def send_payment(amount: int, to: str) -> str:
        """Send money."""
        ran.append(f"{amount} {to}")
        return f"sent {amount} to {to}"

    return send_payment


# --- waiting in the call (wait=True) ------------------------------------------------------


async def test_waiting_approved_the_call_runs_once(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[str] = []
    gate = require_approval(payment_tool(ran), client=async_humanwire_client, wait=True)
    filled = human.decide_approval("approve", "fine")

    output = await run_agent(FakeLlm.script(PAY), [gate], "pay bob 50")

    assert output == "FINAL: sent 50 to bob"
    assert ran == ["50 bob"]
    delivery = await filled.async_wait(5)
    assert len(forms(human)) == 1
    status = await async_humanwire_client.interactions.status(delivery.interaction_id)
    metadata = status.metadata or {}
    # Where the call stands, for tracing; not marked for a webhook resume: nothing pauses.
    assert set(metadata) == {
        "adk_app_name",
        "adk_user_id",
        "adk_session_id",
        "adk_invocation_id",
        "adk_call_id",
    }
    assert metadata["adk_app_name"] == "tests" and metadata["adk_user_id"] == "u1"


async def test_waiting_rejected_the_comment_reaches_the_model(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[str] = []
    gate = require_approval(payment_tool(ran), client=async_humanwire_client, wait=True)
    human.decide_approval("reject", "not this quarter")
    model = FakeLlm.script(PAY)

    output = await run_agent(model, [gate], "pay")

    assert ran == []
    assert model.outputs == [
        "error: send_payment was not run: a human rejected it. Reason: not this quarter"
    ]
    assert output == f"FINAL: {model.outputs[0]}"


async def test_waiting_without_a_decision_in_time_rejects_and_says_so(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[str] = []
    gate = require_approval(
        payment_tool(ran), client=async_humanwire_client, follow_up_time=1, wait=True
    )
    silent = human.stay_silent()

    output = await run_agent(FakeLlm.script(PAY), [gate], "pay")

    await silent.async_wait(5)
    assert ran == []
    assert output == (
        "FINAL: error: send_payment was not run: no approval decision arrived in time "
        "(timeout; rejected by default)."
    )


async def test_waiting_parallel_calls_are_asked_at_the_same_time(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[str] = []
    gate = require_approval(
        payment_tool(ran), client=async_humanwire_client, follow_up_time=30, wait=True
    )
    both = [
        ("send_payment", {"amount": 50, "to": "bob"}),
        ("send_payment", {"amount": 7, "to": "eve"}),
    ]
    run = asyncio.create_task(run_agent(FakeLlm.script(both), [gate], "pay both"))
    try:
        for _ in range(100):  # both forms go out before either is decided
            if len(forms(human)) == 2:
                break
            await asyncio.sleep(0.05)
        first, second = forms(human)
        for delivery, decision in ((first, "approve"), (second, "reject")):
            human.decide_approval(decision, interaction_id=delivery.interaction_id or "")
        await asyncio.wait_for(run, 20)
    finally:
        run.cancel()
    assert len(ran) == 1


async def test_a_policy_limits_the_gate_to_some_calls(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    seen: list[dict[str, Any]] = []

    def large(amount: int, **others: Any) -> bool:  # ADK's form: the tool's own arguments
        seen.append({"amount": amount, **others})
        return amount > 100

    ran: list[str] = []
    gate = require_approval(payment_tool(ran), client=async_humanwire_client, when=large)

    output = await run_agent(FakeLlm.script(PAY), [gate], "pay bob 50")

    assert output == "FINAL: sent 50 to bob"
    assert seen == [{"amount": 50, "to": "bob"}]
    assert human.deliveries() == []  # small payments are not asked about


async def test_any_truthy_policy_answer_asks(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    # ADK lets a call through unless its policy returns True itself; the gate fails closed.
    ran: list[str] = []
    gate = require_approval(
        payment_tool(ran), client=async_humanwire_client, when=lambda amount: amount, wait=True
    )
    human.decide_approval("approve")

    assert await run_agent(FakeLlm.script(PAY), [gate], "pay") == "FINAL: sent 50 to bob"
    assert len(forms(human)) == 1


async def test_adks_own_require_confirmation_becomes_the_gates(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[str] = []
    asked: list[int] = []

    def large(amount: int, to: str) -> bool:
        asked.append(amount)
        return amount > 10

    tool = FunctionTool(payment_tool(ran), require_confirmation=large)
    gate = require_approval(tool, client=async_humanwire_client, wait=True)
    human.decide_approval("approve")

    output = await run_agent(FakeLlm.script(PAY), [gate], "pay")

    # humanwire asked (ADK's own fixed confirmation did not pause the run), once.
    assert output == "FINAL: sent 50 to bob"
    assert ran == ["50 bob"] and asked == [50]
    assert len(forms(human)) == 1
    assert tool._require_confirmation is large  # the original stays as it was


async def test_the_decorator_gates_a_plain_function_and_shows_the_subtitle(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[str] = []

    @require_approval(client=async_humanwire_client, wait=True, description="Payments desk")
    async def send_payment(amount: int, to: str) -> str:
        """Send money."""
        ran.append(f"{amount} {to}")
        return f"sent {amount} to {to}"

    assert isinstance(send_payment, ApprovalGate)
    filled = human.decide_approval("approve")
    model = FakeLlm.script(PAY)

    output = await run_agent(model, [send_payment], "pay")

    assert output == "FINAL: sent 50 to bob"
    [declaration] = model.declarations  # the model sees the wrapped tool's own declaration
    assert declaration.name == "send_payment" and declaration.description == "Send money."
    delivery = await filled.async_wait(5)
    page = approval_link(delivery.text)
    assert page is not None
    async with httpx.AsyncClient() as browser:  # the gate's request: its description shows
        assert "Payments desk" in (await browser.get(page)).text


async def test_an_approval_that_cannot_be_asked_runs_nothing(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[str] = []
    gate = require_approval(
        payment_tool(ran), client=async_humanwire_client, to="not a number", wait=True
    )

    output = await run_agent(FakeLlm.script(PAY), [gate], "pay")

    assert ran == []
    assert output.startswith("FINAL: error: send_payment was not run: no approval could be asked")


async def test_the_form_is_keyed_by_session_invocation_and_call(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    approver = Approver(async_humanwire_client)
    keys = CallKeys("app", "u1", "s1", "e-1", "adk-1")

    async def ask(call: CallKeys) -> str:
        pending = await send_pending_approval(
            approver,
            call_id=call.call_id,
            tool_name="send_payment",
            arguments={"amount": 50},
            idempotency_key=approval_key(call),
            metadata=call.metadata(resumable=True),
        )
        return pending.interaction_id

    first = await ask(keys)
    assert await ask(keys) == first  # ADK calling the gate again for the same call
    other = CallKeys("app", "u1", "s1", "e-1", "adk-2")
    assert await ask(other) != first
    assert len(forms(human)) == 2


# --- pausing at ADK's confirmation (the default), answered in this process ----------------


def paused_runner(gate: ApprovalGate, model: FakeLlm) -> Runner:
    agent = LlmAgent(name="payer", model=model, tools=[gate])
    return Runner(app_name="payments", agent=agent, session_service=InMemorySessionService())


async def test_the_run_pauses_at_adks_confirmation_and_resumes_once(
    tmp_path: Any, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[str] = []
    gate = require_approval(payment_tool(ran), client=async_humanwire_client)
    runner = paused_runner(gate, FakeLlm.script(PAY))
    session = await runner.session_service.create_session(app_name="payments", user_id="u1")

    outcome = await run_until_approval(
        runner, user_id="u1", session_id=session.id, new_message=user_text("pay")
    )

    assert ran == [] and not outcome.finished
    assert outcome.final_output is None  # paused: the model was not called with the placeholder
    [paused] = outcome.paused
    pause = [event for event in outcome.events if event.long_running_tool_ids]
    assert [set(event.long_running_tool_ids or ()) for event in pause] == [{paused.confirmation_id}]
    [form] = forms(human)
    assert paused.interaction_id == form.interaction_id
    status = await async_humanwire_client.interactions.status(form.interaction_id)
    assert status.metadata == {
        "humanwire_resume": "google_adk",
        "adk_app_name": "payments",
        "adk_user_id": "u1",
        "adk_session_id": session.id,
        "adk_invocation_id": pause[0].invocation_id,
        "adk_call_id": paused.call_id,
    }

    claims = FileClaimStore(tmp_path)
    kwargs: dict[str, Any] = {
        "user_id": "u1",
        "session_id": session.id,
        "client": async_humanwire_client,
    }
    assert await resume_session(runner, claims, **kwargs) is None  # still open
    human.decide_approval("approve", interaction_id=form.interaction_id)
    await async_humanwire_client.interactions.wait(form.interaction_id, timeout=10)
    done = await resume_session(runner, claims, **kwargs)

    assert done is not None and done.finished
    assert done.final_output == "FINAL: sent 50 to bob"
    assert ran == ["50 bob"]
    assert await resume_session(runner, claims, **kwargs) is None
    assert ran == ["50 bob"]


async def answer(
    runner: Runner, session_id: str, confirmation_id: str, response: dict[str, Any]
) -> str:
    """Answer a paused confirmation by hand, as any client of the runner could."""
    message = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    name="adk_request_confirmation", id=confirmation_id, response=response
                )
            )
        ],
    )
    final = ""
    async for event in runner.run_async(user_id="u1", session_id=session_id, new_message=message):
        if event.is_final_response() and event.content and event.content.parts:
            final = "".join(part.text or "" for part in event.content.parts) or final
    return final


async def test_a_confirmation_the_service_does_not_back_runs_nothing(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[str] = []
    gate = require_approval(payment_tool(ran), client=async_humanwire_client)
    runner = paused_runner(gate, FakeLlm.script(PAY))
    session = await runner.session_service.create_session(app_name="payments", user_id="u1")
    outcome = await run_until_approval(
        runner, user_id="u1", session_id=session.id, new_message=user_text("pay")
    )
    [paused] = outcome.paused

    # The chat's user confirms the payment to themselves while the form is still open.
    forged = await answer(runner, session.id, paused.confirmation_id, {"confirmed": True})

    assert ran == []
    assert forged == (
        "FINAL: error: send_payment was not run: its approval (humanwire interaction "
        f"{paused.interaction_id}) is not decided yet."
    )
    after = await runner.session_service.get_session(
        app_name="payments", user_id="u1", session_id=session.id
    )
    assert after is not None and paused_approvals(after) == []  # answered: the pause is over


async def test_a_rejection_on_the_service_wins_over_a_confirmed_answer(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[str] = []
    gate = require_approval(payment_tool(ran), client=async_humanwire_client)
    runner = paused_runner(gate, FakeLlm.script(PAY))
    session = await runner.session_service.create_session(app_name="payments", user_id="u1")
    outcome = await run_until_approval(
        runner, user_id="u1", session_id=session.id, new_message=user_text("pay")
    )
    [paused] = outcome.paused
    human.decide_approval("reject", "wrong account", interaction_id=paused.interaction_id)
    await async_humanwire_client.interactions.wait(paused.interaction_id, timeout=10)

    final = await answer(runner, session.id, paused.confirmation_id, {"confirmed": True})

    assert ran == []
    rejected = "send_payment was not run: a human rejected it. Reason: wrong account"
    assert final == f"FINAL: error: {rejected}"


class _ReusingLlm(FakeLlm):
    """A model that names every call ``call_1``, as models and fakes do from turn to turn."""

    async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
        async for response in super().generate_content_async(llm_request, stream):
            for part in (response.content.parts if response.content else None) or []:
                if part.function_call is not None:
                    part.function_call.id = "call_1"
            yield response


async def test_waiting_a_call_id_reused_in_a_later_step_is_asked_afresh(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    """The second call under ``call_1`` is a new question: the human is asked again (not
    the first approval replayed and refused as "ran before")."""
    ran: list[str] = []
    gate = require_approval(payment_tool(ran), client=async_humanwire_client, wait=True)
    human.decide_approval("approve")
    asked = human.decide_approval("reject", "once was enough")

    output = await run_agent(_ReusingLlm.script(PAY, PAY), [gate], "pay bob 50, twice")

    await asked.async_wait(5)
    assert ran == ["50 bob"]
    assert len(forms(human)) == 2
    assert "a human rejected it. Reason: once was enough" in output
