"""Paused runs (``PausedRuns``) against the real service: the run ends on its deferred
calls, the forms and questions go out with the run's keys in their metadata, and the
signed webhook (or a wait on the service) resumes it; a repeated delivery resumes
nothing, and an approval is consumed before its tool runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pai_helpers import Payments, once, scripted
from pydantic_ai import Agent, CallDeferred, DeferredToolRequests, Tool

from framework_support import PAY, approval_decided, deliveries_of, signed
from humanwire import AsyncHumanWire, HumanWire
from humanwire.approval import decision_from_values
from humanwire.pydantic_ai import ApprovalGuard, FilePausedRunStore, PausedRuns
from humanwire.pydantic_ai.durable import deferred_results, parse_delivery
from humanwire.testing import ScriptedHuman
from humanwire.testing.receiver import WebhookReceiver
from humanwire.webhooks import SIGNATURE_HEADER, WebhookVerificationError


def ask_human(question: str) -> str:
    """Ask a person; the run pauses until they answer."""
    raise CallDeferred(metadata={"question": question}, kind="question")


def make_agent(model: Any, payments: Payments) -> Agent[None, Any]:
    return Agent(
        model.model,
        tools=[Tool(payments.send_payment, requires_approval=True), ask_human],
        output_type=[str, DeferredToolRequests],
    )


def runs(tmp_path: Path, client: AsyncHumanWire, **options: Any) -> PausedRuns:
    return PausedRuns(FilePausedRunStore(tmp_path / "paused"), client=client, **options)


async def test_an_approval_resumes_from_its_webhook(
    tmp_path: Path,
    async_humanwire_client: AsyncHumanWire,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["approval.decided"])
    payments, model = Payments(), once(*PAY)
    paused_runs = runs(tmp_path, async_humanwire_client)
    outcome = await paused_runs.run(make_agent(model, payments), "Pay Bob 50")
    paused = outcome.paused
    assert paused is not None and not outcome.finished
    (call,) = paused.pending
    assert (call.tool_name, call.kind) == ("send_payment", "approval")
    # The form went out without waiting and carries the run's keys.
    status = humanwire_client.interactions.status(call.interaction_id)
    assert status.metadata == {
        "humanwire_resume": "pydantic_ai",
        "pydantic_ai_run_id": paused.run_id,
        "pydantic_ai_tool_call_id": call.tool_call_id,
    }
    assert status.status == "pending" and payments.sent == []

    human.decide_approval("approve", "Go", interaction_id=call.interaction_id)
    (delivery,) = await deliveries_of(webhook_receiver, "approval.decided")
    secret = webhook_receiver.secret
    resumed = await paused_runs.resume_from_webhook(
        make_agent(model, payments), delivery.body, signed(delivery), secret=secret
    )
    assert resumed is not None and resumed.finished
    assert resumed.output == "FINAL: sent 50 to bob"
    assert payments.sent == [(50, "bob")]
    # A repeated delivery finds the run resumed already: nothing runs twice.
    again = await paused_runs.resume_from_webhook(
        make_agent(model, payments), delivery.body, signed(delivery), secret=secret
    )
    assert again is None
    assert payments.sent == [(50, "bob")]
    assert paused_runs.store.run_ids() == []


async def test_pausing_the_same_run_again_sends_nothing_new(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire
) -> None:
    payments, model = Payments(), once(*PAY)
    paused_runs = runs(tmp_path, async_humanwire_client)
    result = await make_agent(model, payments).run("Pay Bob 50")
    first = await paused_runs.pause(result)
    again = await paused_runs.pause(result)  # a host retrying after a crash, say
    assert first is not None and again is not None
    assert again.pending == first.pending
    assert len(humanwire_client.sandbox.deliveries()) == 1


async def test_concurrent_deliveries_resume_the_run_once(
    tmp_path: Path,
    async_humanwire_client: AsyncHumanWire,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["approval.decided"])
    payments, model = Payments(), once(*PAY)
    paused_runs = runs(tmp_path, async_humanwire_client)
    outcome = await paused_runs.run(make_agent(model, payments), "Pay Bob 50")
    assert outcome.paused is not None
    (call,) = outcome.paused.pending
    human.decide_approval("approve", interaction_id=call.interaction_id)
    (delivery,) = await deliveries_of(webhook_receiver, "approval.decided")
    # The same delivery handled twice at once (a retry racing the first attempt): the run
    # is claimed before it resumes, so only one of them resumes it.
    both = await asyncio.gather(
        *(
            paused_runs.resume_from_webhook(
                make_agent(model, payments),
                delivery.body,
                signed(delivery),
                secret=webhook_receiver.secret,
            )
            for _ in range(2)
        )
    )
    assert sorted(outcome is None for outcome in both) == [False, True]
    assert payments.sent == [(50, "bob")]


async def test_a_rejection_reaches_the_model_with_the_comment(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    payments, model = Payments(), once(*PAY)
    paused_runs = runs(tmp_path, async_humanwire_client)
    outcome = await paused_runs.run(make_agent(model, payments), "Pay Bob 50")
    assert outcome.paused is not None
    (call,) = outcome.paused.pending
    await human.decide_approval(
        "reject", "Not this quarter", interaction_id=call.interaction_id
    ).async_wait()
    # No webhook: wait on the service for the decision instead.
    resumed = await paused_runs.resume(make_agent(model, payments), outcome.paused.run_id)
    assert resumed is not None
    assert payments.sent == []
    (returned,) = model.returns()
    assert returned.outcome == "denied"
    assert returned.content == (
        "send_payment was not run: a human rejected it. Reason: Not this quarter"
    )


async def test_resume_waits_for_a_late_decision(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    payments, model = Payments(), once(*PAY)
    paused_runs = runs(tmp_path, async_humanwire_client)
    outcome = await paused_runs.run(make_agent(model, payments), "Pay Bob 50")
    assert outcome.paused is not None
    (call,) = outcome.paused.pending
    agent = make_agent(model, payments)
    # Still open: a look (timeout=0) resumes nothing.
    assert await paused_runs.resume(agent, outcome.paused.run_id, timeout=0) is None
    human.decide_approval("approve", interaction_id=call.interaction_id)
    resumed = await paused_runs.resume(agent, outcome.paused.run_id, timeout=20)
    assert resumed is not None and resumed.output == "FINAL: sent 50 to bob"


async def test_a_step_with_two_calls_resumes_on_the_last_answer(
    tmp_path: Path,
    async_humanwire_client: AsyncHumanWire,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(
        humanwire_client, event_types=["approval.decided", "message.received"]
    )
    payments = Payments()
    model = scripted([PAY, ("ask_human", {"question": "Which invoice?"})])
    paused_runs = runs(tmp_path, async_humanwire_client)
    outcome = await paused_runs.run(make_agent(model, payments), "Pay Bob")
    assert outcome.paused is not None
    by_kind = {call.kind: call for call in outcome.paused.pending}
    secret = webhook_receiver.secret

    human.decide_approval("approve", interaction_id=by_kind["approval"].interaction_id)
    (form,) = await deliveries_of(webhook_receiver, "approval.decided")
    first = await paused_runs.resume_from_webhook(
        make_agent(model, payments), form.body, signed(form), secret=secret
    )
    assert first is None  # the question is still open: its answer resumes the run
    assert payments.sent == []

    human.reply("INV-7", interaction_id=by_kind["question"].interaction_id)
    (reply,) = await deliveries_of(webhook_receiver, "message.received")
    resumed = await paused_runs.resume_from_webhook(
        make_agent(model, payments), reply.body, signed(reply), secret=secret
    )
    assert resumed is not None and resumed.finished
    assert payments.sent == [(50, "bob")]
    assert resumed.output == "FINAL: sent 50 to bob | Human response: INV-7"


async def test_an_expired_approval_resumes_as_the_timeout_default(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire
) -> None:
    payments, model = Payments(), once(*PAY)
    paused_runs = runs(tmp_path, async_humanwire_client, window=1)
    outcome = await paused_runs.run(make_agent(model, payments), "Pay Bob 50")
    assert outcome.paused is not None
    (call,) = outcome.paused.pending
    await async_humanwire_client.interactions.wait(call.interaction_id, timeout=15)
    # An expired form sends no webhook: the sweep resumes it.
    (resumed,) = await paused_runs.resume_decided(make_agent(model, payments))
    assert payments.sent == []
    (returned,) = model.returns()
    assert returned.outcome == "denied"
    assert "no approval decision arrived in time (timeout" in str(returned.content)
    assert resumed.finished


async def test_an_approval_is_consumed_before_its_tool_runs(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    payments, model = Payments(), once(*PAY)
    paused_runs = runs(tmp_path, async_humanwire_client)
    outcome = await paused_runs.run(make_agent(model, payments), "Pay Bob 50")
    paused = outcome.paused
    assert paused is not None
    (call,) = paused.pending
    await human.decide_approval("approve", interaction_id=call.interaction_id).async_wait()
    assert await paused_runs.resume(make_agent(model, payments), paused.run_id) is not None
    # The host kept the history and resumes it once more with the same decision, past
    # the store: the approval is consumed, so the payment does not go out again.
    approved = decision_from_values({"decision": "approve"}, interaction_id=call.interaction_id)
    results = deferred_results(paused, {call.tool_call_id: approved})
    again = await make_agent(model, payments).run(
        message_history=paused.history(),
        deferred_tool_results=results,
        capabilities=[ApprovalGuard(FilePausedRunStore(tmp_path / "paused"))],
    )
    assert payments.sent == [(50, "bob")]
    assert "was not run again: its approval" in again.output


async def test_a_failed_resume_gives_the_run_back(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    payments, model = Payments(), once(*PAY)
    paused_runs = runs(tmp_path, async_humanwire_client)
    outcome = await paused_runs.run(make_agent(model, payments), "Pay Bob 50")
    assert outcome.paused is not None
    (call,) = outcome.paused.pending
    await human.decide_approval("approve", interaction_id=call.interaction_id).async_wait()

    def broken(*_: Any) -> Any:
        raise RuntimeError("model provider down")

    from pydantic_ai.models.function import FunctionModel

    failing = Agent(
        FunctionModel(broken),
        tools=[Tool(payments.send_payment, requires_approval=True), ask_human],
        output_type=[str, DeferredToolRequests],
    )
    with pytest.raises(RuntimeError, match="model provider down"):
        await paused_runs.resume(failing, outcome.paused.run_id)
    # The tool ran before the model failed; the run is back in the store for a retry.
    assert payments.sent == [(50, "bob")]
    assert paused_runs.store.run_ids() == [outcome.paused.run_id]
    retried = await paused_runs.resume(make_agent(model, payments), outcome.paused.run_id)
    assert retried is not None
    # The approved action did not run twice, and the model is told it ran before.
    assert payments.sent == [(50, "bob")]
    assert "its approval was used already, so it ran before" in retried.output


async def test_deliveries_that_are_not_ours_resume_nothing(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire
) -> None:
    payments, model = Payments(), once(*PAY)
    paused_runs = runs(tmp_path, async_humanwire_client)
    outcome = await paused_runs.run(make_agent(model, payments), "Pay Bob 50")
    assert outcome.paused is not None
    run_id, (call,) = outcome.paused.run_id, outcome.paused.pending
    agent = make_agent(model, payments)

    def form_event(interaction_id: str, **metadata: str) -> dict[str, Any]:
        return approval_decided(interaction_id, metadata)

    ours = {"humanwire_resume": "pydantic_ai", "pydantic_ai_run_id": run_id}
    forged = [
        # another framework's pause, even one naming this run
        form_event(call.interaction_id, **{**ours, "humanwire_resume": "langgraph"}),
        form_event(call.interaction_id, humanwire_resume="langgraph", langgraph_thread_id="t"),
        # an interaction this run does not wait for
        form_event("00000000-0000-4000-8000-000000000000", **ours),
        # the right interaction named for another call of the run
        form_event(call.interaction_id, **ours, pydantic_ai_tool_call_id="call_9"),
        # a run id that would name another file is never looked up
        form_event(call.interaction_id, **{**ours, "pydantic_ai_run_id": "../../etc"}),
        form_event(call.interaction_id, **{**ours, "pydantic_ai_run_id": "nope"}),
    ]
    for event in forged:
        assert await paused_runs.resume_from_webhook(agent, event) is None, event
    assert paused_runs.store.run_ids() == [run_id] and payments.sent == []
    # With a secret, an unsigned (or tampered) body is refused before anything is read.
    genuine = form_event(call.interaction_id, **ours)
    with pytest.raises(WebhookVerificationError):
        await paused_runs.resume_from_webhook(
            agent, json.dumps(genuine).encode(), {SIGNATURE_HEADER: "t=1,v1=00"}, secret="s"
        )
    with pytest.raises(TypeError):
        parse_delivery(genuine, secret="s")
    assert paused_runs.store.run_ids() == [run_id] and payments.sent == []


async def test_external_work_is_refused_before_anything_is_sent(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire
) -> None:
    def render_video(title: str) -> str:
        """Rendered elsewhere."""
        raise CallDeferred(metadata={"job": title})

    model = scripted([PAY, ("render_video", {"title": "intro"})])
    agent = Agent(
        model.model,
        tools=[Tool(Payments().send_payment, requires_approval=True), render_video],
        output_type=[str, DeferredToolRequests],
    )
    with pytest.raises(ValueError, match="external results of \\['render_video'\\]"):
        await runs(tmp_path, async_humanwire_client).run(agent, "Go")
    assert humanwire_client.sandbox.deliveries() == []
