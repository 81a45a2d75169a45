"""Paused runs (``PausedRuns``): the run stops at a Strands interrupt, the form or the
question goes out without waiting, the agent's session and the pause are saved; the
answer's webhook (or a look at the service) resumes a freshly built agent of the session.
Against the real service with the scripted human and a real webhook receiver."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from strands import Agent, tool
from strands.hooks import BeforeToolCallEvent
from strands.session.file_session_manager import FileSessionManager
from strands_helpers import ScriptedModel, agent, once, scripted

from approval_support import approval_link
from framework_support import PAY, approval_decided, deliveries_of, signed
from humanwire import AsyncHumanWire, HumanWire
from humanwire.errors import WebhookVerificationError
from humanwire.strands import (
    FilePausedRunStore,
    HumanWireApprovals,
    PausedRuns,
    PausingAskHuman,
)
from humanwire.testing import ScriptedHuman
from humanwire.testing.receiver import ReceivedDelivery, WebhookReceiver
from humanwire.webhooks import SIGNATURE_HEADER


class Sessions:
    """The agents of a test: ``agent_for(session_id)`` builds a new ``Agent`` on the
    session's saved state each time, as a process receiving a webhook would."""

    def __init__(self, directory: Path, model: ScriptedModel, gate: Any = None) -> None:
        self.directory = directory
        self.model = model
        self.ran: list[dict[str, Any]] = []
        self.gate = gate if gate is not None else HumanWireApprovals(["send_payment"], pause=True)
        ran = self.ran

        @tool
        def send_payment(amount: int, to: str) -> str:
            """Send money."""
            ran.append({"amount": amount, "to": to})
            return f"sent {amount} to {to}"

        self.tools = [send_payment, PausingAskHuman()]

    def agent_for(self, session_id: str) -> Agent:
        manager = FileSessionManager(session_id, storage_dir=str(self.directory / "sessions"))
        return agent(self.model, self.tools, hooks=[self.gate], session_manager=manager)


def paused_runs(
    tmp_path: Path, sessions: Sessions, client: AsyncHumanWire, **options: Any
) -> PausedRuns:
    store = FilePausedRunStore(tmp_path / "paused")
    return PausedRuns(store, sessions.agent_for, client=client, **options)


async def delivery_of(
    receiver: WebhookReceiver, event_type: str, count: int = 1
) -> ReceivedDelivery:
    """The ``count``-th delivery of ``event_type``."""
    return (await deliveries_of(receiver, event_type, count))[count - 1]


# --- approvals ------------------------------------------------------------------------------


async def test_a_paused_approval_resumes_from_the_webhook_once(
    tmp_path: Path,
    async_humanwire_client: AsyncHumanWire,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["approval.decided"])
    sessions = Sessions(tmp_path, once(*PAY))
    runs = paused_runs(tmp_path, sessions, async_humanwire_client)

    outcome = await runs.run("order-1042", "Pay Bob 50")

    assert outcome.result.stop_reason == "interrupt" and not outcome.finished
    assert outcome.paused is not None
    (pending,) = outcome.paused.pending
    assert (pending.kind, pending.tool_name) == ("approval", "send_payment")
    assert pending.interrupt_id.startswith("v1:before_tool_call:call_0_0:")
    assert sessions.ran == []
    (form,) = [d for d in human.deliveries() if approval_link(d.text)]
    assert form.interaction_id == pending.interaction_id
    status = await async_humanwire_client.interactions.status(pending.interaction_id)
    assert status.metadata == {
        "humanwire_resume": "strands",
        "strands_session_id": "order-1042",
        "strands_interrupt_id": pending.interrupt_id,
    }
    assert runs.store.load("order-1042") == outcome.paused

    human.decide_approval("approve", "go", interaction_id=pending.interaction_id)
    delivery = await delivery_of(webhook_receiver, "approval.decided")
    secret = webhook_receiver.secret

    resumed = await runs.resume_from_webhook(delivery.body, signed(delivery), secret=secret)

    assert resumed is not None and resumed.finished
    assert resumed.text == "FINAL: success: sent 50 to bob"
    assert sessions.ran == [{"amount": 50, "to": "bob"}]
    assert runs.store.load("order-1042") is None
    # The delivery again (webhooks are retried): nothing to resume, nothing runs.
    again = await runs.resume_from_webhook(delivery.body, signed(delivery), secret=secret)
    assert again is None
    assert sessions.ran == [{"amount": 50, "to": "bob"}]


async def test_a_rejection_from_the_webhook_carries_the_comment(
    tmp_path: Path,
    async_humanwire_client: AsyncHumanWire,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["approval.decided"])
    sessions = Sessions(tmp_path, once(*PAY))
    runs = paused_runs(tmp_path, sessions, async_humanwire_client)
    outcome = await runs.run("s-reject", "Pay Bob 50")
    assert outcome.paused is not None
    (pending,) = outcome.paused.pending

    human.decide_approval("reject", "wrong account", interaction_id=pending.interaction_id)
    delivery = await delivery_of(webhook_receiver, "approval.decided")
    resumed = await runs.resume_from_webhook(delivery.body)

    assert resumed is not None
    assert resumed.text == (
        "FINAL: error: send_payment was not run: a human rejected it. Reason: wrong account"
    )
    assert sessions.ran == []


async def test_a_run_driven_by_paused_runs_pauses_an_in_run_gate(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    # The same agent waits in the run when invoked directly, and pauses under PausedRuns;
    # without webhooks, resume() waits on the service for the decision.
    gate = HumanWireApprovals(["send_payment"], client=async_humanwire_client, wait_time=5)
    sessions = Sessions(tmp_path, once(*PAY), gate=gate)
    runs = paused_runs(tmp_path, sessions, async_humanwire_client)

    outcome = await runs.run("s-poll", "Pay Bob 50")
    assert outcome.paused is not None
    assert await runs.resume("s-poll", timeout=0) is None  # nobody decided yet
    (pending,) = outcome.paused.pending
    human.decide_approval("approve", interaction_id=pending.interaction_id)
    resumed = await runs.resume("s-poll", timeout=10)

    assert resumed is not None and resumed.text == "FINAL: success: sent 50 to bob"
    assert sessions.ran == [{"amount": 50, "to": "bob"}]
    assert len([d for d in human.deliveries() if approval_link(d.text)]) == 1


async def test_two_calls_in_one_step_resume_when_both_are_answered(
    tmp_path: Path,
    async_humanwire_client: AsyncHumanWire,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["approval.decided"])
    model = scripted([PAY, ("send_payment", {"amount": 7, "to": "ann"})])
    sessions = Sessions(tmp_path, model)
    runs = paused_runs(tmp_path, sessions, async_humanwire_client)
    outcome = await runs.run("s-two", "Pay both")
    assert outcome.paused is not None
    first, second = outcome.paused.pending

    human.decide_approval("approve", interaction_id=first.interaction_id)
    assert (
        await runs.resume_from_webhook(
            (await delivery_of(webhook_receiver, "approval.decided")).body
        )
        is None
    )  # the other call is still open: its answer resumes the run
    assert sessions.ran == []

    human.decide_approval("reject", "not Ann", interaction_id=second.interaction_id)
    resumed = await runs.resume_from_webhook(
        (await delivery_of(webhook_receiver, "approval.decided", count=2)).body
    )

    assert resumed is not None and resumed.finished
    assert sessions.ran == [{"amount": 50, "to": "bob"}]
    assert sorted(resumed.text.removeprefix("FINAL: ").split(" | ")) == [
        "error: send_payment was not run: a human rejected it. Reason: not Ann",
        "success: sent 50 to bob",
    ]


async def test_a_resumed_run_that_stops_again_is_paused_again(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    model = scripted([PAY], [PAY], reuse_ids=True)  # the same call, with the same id, again
    sessions = Sessions(tmp_path, model)
    runs = paused_runs(tmp_path, sessions, async_humanwire_client)
    first = await runs.run("s-again", "Pay Bob twice")
    assert first.paused is not None
    human.decide_approval("approve", interaction_id=first.paused.pending[0].interaction_id)
    resumed = await runs.resume("s-again", timeout=10)

    assert resumed is not None and resumed.paused is not None
    (second,) = resumed.paused.pending
    # The same tool use id, so the same interrupt id: the new pause still asks afresh.
    assert second.interrupt_id == first.paused.pending[0].interrupt_id
    assert second.interaction_id != first.paused.pending[0].interaction_id
    assert resumed.paused.round > first.paused.round
    assert runs.store.load("s-again") == resumed.paused
    human.decide_approval("approve", interaction_id=second.interaction_id)
    done = await runs.resume("s-again", timeout=10)
    assert done is not None and done.finished
    assert sessions.ran == [{"amount": 50, "to": "bob"}] * 2


async def test_an_expired_approval_is_the_timeout_default(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    sessions = Sessions(tmp_path, once(*PAY))
    runs = paused_runs(tmp_path, sessions, async_humanwire_client, window=1)
    silent = human.stay_silent()
    outcome = await runs.run("s-expired", "Pay")
    assert outcome.paused is not None
    await silent.async_wait(5)
    assert await runs.resume_decided() == []  # still open

    (pending,) = outcome.paused.pending
    await async_humanwire_client.interactions.wait(pending.interaction_id, timeout=10)
    (resumed,) = await runs.resume_decided()

    assert resumed.text == (
        "FINAL: error: send_payment was not run: no approval decision arrived in time "
        "(timeout; rejected by default)."
    )
    assert sessions.ran == []


# --- questions ------------------------------------------------------------------------------


async def test_a_question_pauses_the_run_until_the_reply(
    tmp_path: Path,
    async_humanwire_client: AsyncHumanWire,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["message.received"])
    sessions = Sessions(tmp_path, once("ask_human", {"message": "Which venue, Lisbon or Porto?"}))
    runs = paused_runs(tmp_path, sessions, async_humanwire_client)

    outcome = await runs.run("s-question", "Book the offsite")
    assert outcome.paused is not None
    (pending,) = outcome.paused.pending
    assert pending.kind == "question" and pending.interrupt_id.startswith("v1:tool_call:")
    (message,) = human.deliveries(interaction_id=pending.interaction_id)
    assert message.text == "Which venue, Lisbon or Porto?"

    await human.reply("Porto", interaction_id=pending.interaction_id).async_wait(10)
    delivery = await delivery_of(webhook_receiver, "message.received")
    resumed = await runs.resume_from_webhook(
        delivery.body, signed(delivery), secret=webhook_receiver.secret
    )

    assert resumed is not None and resumed.text == "FINAL: success: Human response: Porto"
    # Running the tool again on resume sent nothing again.
    assert len(human.deliveries()) == 1


# --- what a receiver leaves alone -----------------------------------------------------------


async def test_deliveries_that_are_not_ours_resume_nothing(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, webhook_receiver: WebhookReceiver
) -> None:
    sessions = Sessions(tmp_path, once(*PAY))
    runs = paused_runs(tmp_path, sessions, async_humanwire_client)
    outcome = await runs.run("s-foreign", "Pay")
    assert outcome.paused is not None
    (pending,) = outcome.paused.pending

    def form_event(metadata: dict[str, str], interaction_id: str) -> dict[str, Any]:
        return approval_decided(interaction_id, metadata)

    ours = {
        "humanwire_resume": "strands",
        "strands_session_id": "s-foreign",
        "strands_interrupt_id": pending.interrupt_id,
    }
    others = [
        form_event({**ours, "humanwire_resume": "pydantic_ai"}, pending.interaction_id),
        form_event({**ours, "strands_session_id": "../../etc"}, pending.interaction_id),
        form_event({**ours, "strands_interrupt_id": "v1:other"}, pending.interaction_id),
        form_event(ours, "00000000-0000-4000-8000-000000000000"),
    ]
    for event in others:
        assert await runs.resume_from_webhook(event) is None
    with pytest.raises(WebhookVerificationError):
        await runs.resume_from_webhook(
            json.dumps(form_event(ours, pending.interaction_id)).encode(),
            {SIGNATURE_HEADER: "t=1,v1=00"},
            secret="whsec_test",
        )
    assert sessions.ran == [] and runs.store.load("s-foreign") == outcome.paused


async def test_an_interrupt_that_is_not_humanwires_is_refused_before_sending(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    class OtherGate:
        def register_hooks(self, registry: Any, **kwargs: Any) -> None:
            registry.add_callback(BeforeToolCallEvent, self.gate)

        def gate(self, event: BeforeToolCallEvent) -> None:
            event.interrupt("someone-else", reason="check")

    sessions = Sessions(tmp_path, once(*PAY), gate=OtherGate())
    runs = paused_runs(tmp_path, sessions, async_humanwire_client)
    with pytest.raises(ValueError, match="someone-else"):
        await runs.run("s-other", "Pay")
    assert human.deliveries() == []
    await asyncio.sleep(0)
