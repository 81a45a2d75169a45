"""Durable approval: a run paused at its approvals is saved, and the ``form.received``
webhook resumes it, in another process too; an approved call runs exactly once, however
often the resume is attempted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, function_tool
from oa_helpers import FakeModel

from approval_support import approval_link
from framework_support import approval_decided, approved_later, decided, delivery_files, run_process
from humanwire import AsyncHumanWire, HumanWire
from humanwire.errors import InvalidSignatureError
from humanwire.openai_agents import (
    FilePausedRunStore,
    require_approval,
    resume_expired,
    resume_from_webhook,
    run_until_approval,
)
from humanwire.testing import RunningService, ScriptedHuman, WebhookReceiver
from humanwire.types import ApprovalDecidedEvent

SCRIPT = Path(__file__).with_name("oa_resume_process.py")


def run(*args: str) -> dict[str, Any]:
    return run_process(SCRIPT, *args)


def test_a_webhook_resumes_in_another_process_and_the_payment_runs_once(
    tmp_path: Path,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["approval.decided"])
    store, ran = tmp_path / "paused", tmp_path / "ran.txt"
    common = (str(store), humanwire_service.base_url, humanwire_api_key, str(ran))

    paused = run("pause", *common)
    # The pausing process is gone; the human decides later.
    event = approved_later(human, webhook_receiver, paused["interaction_id"])
    assert event.payload.metadata == {
        "humanwire_resume": "openai_agents",
        "openai_agents_run_id": paused["run_id"],
        "openai_agents_call_id": "call_1",
    }
    webhook = delivery_files(webhook_receiver, tmp_path)
    saved = store / f"{paused['run_id']}.json"
    stale = tmp_path / "stale.json"
    shutil.copy(saved, stale)

    resumed = run("resume", *common, *webhook)
    assert resumed == {"resumed": True, "final": "FINAL: sent 50 to bob"}
    assert ran.read_text() == "50 bob\n"
    assert not saved.exists()  # finished: forgotten

    # The same delivery again (webhooks are retried): nothing to resume.
    assert run("resume", *common, *webhook) == {"resumed": False}
    # The paused state back, as a resume that crashed after paying would have left it, or
    # as a second receiver loaded it at the same moment: the approval was used already.
    shutil.copy(stale, saved)
    assert run("resume", *common, *webhook) == {"resumed": False}
    assert ran.read_text() == "50 bob\n"
    assert len([d for d in humanwire_client.sandbox.deliveries() if approval_link(d.text)]) == 1


def payment_tool(ran: list[str], client: AsyncHumanWire, **approver: Any) -> FunctionTool:
    @function_tool
    async def send_payment(amount: int, to: str) -> str:
        """Send money."""
        ran.append(f"{amount} {to}")
        return f"sent {amount} to {to}"

    return require_approval(send_payment, client=client, **approver)


async def test_a_rejection_resumes_with_the_comment(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[str] = []
    model = FakeModel(("send_payment", {"amount": 50, "to": "bob"}))
    agent = Agent(name="payer", tools=[payment_tool(ran, async_humanwire_client)], model=model)
    store = FilePausedRunStore(tmp_path)

    paused = await run_until_approval(agent, "pay", store)
    [pending] = paused.paused
    human.decide_approval("reject", "wrong account", interaction_id=pending.interaction_id)
    event = await decided(async_humanwire_client, pending.interaction_id)
    outcome = await resume_from_webhook(agent, store, event, client=async_humanwire_client)

    assert outcome is not None and outcome.finished
    assert outcome.final_output == (
        "FINAL: send_payment was not run: a human rejected it. Reason: wrong account"
    )
    assert ran == []


async def test_parallel_calls_resume_once_both_are_decided(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[str] = []
    both = [
        ("send_payment", {"amount": 50, "to": "bob"}),
        ("send_payment", {"amount": 7, "to": "eve"}),
    ]
    agent = Agent(
        name="payer", tools=[payment_tool(ran, async_humanwire_client)], model=FakeModel(both)
    )
    store = FilePausedRunStore(tmp_path)

    paused = await run_until_approval(agent, "pay both", store)
    first, second = paused.paused
    assert (first.call_id, second.call_id) == ("call_1", "call_2")
    human.decide_approval("approve", interaction_id=first.interaction_id)
    early = await decided(async_humanwire_client, first.interaction_id)
    # One decided, one open: the run keeps waiting.
    assert await resume_from_webhook(agent, store, early, client=async_humanwire_client) is None
    assert ran == []

    human.decide_approval("reject", interaction_id=second.interaction_id)
    late = await decided(async_humanwire_client, second.interaction_id)
    outcome = await resume_from_webhook(agent, store, late, client=async_humanwire_client)

    assert outcome is not None and outcome.finished
    assert ran == ["50 bob"]
    assert outcome.final_output == "FINAL: send_payment was not run: a human rejected it."


async def test_a_run_pauses_again_at_its_next_approval(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[str] = []
    steps = (
        ("send_payment", {"amount": 5, "to": "bob"}),
        ("send_payment", {"amount": 6, "to": "ann"}),
    )
    agent = Agent(
        name="payer", tools=[payment_tool(ran, async_humanwire_client)], model=FakeModel(*steps)
    )
    store = FilePausedRunStore(tmp_path)

    paused = await run_until_approval(agent, "pay twice", store, run_id="twice")
    human.decide_approval("approve", interaction_id=paused.paused[0].interaction_id)
    event = await decided(async_humanwire_client, paused.paused[0].interaction_id)
    again = await resume_from_webhook(agent, store, event, client=async_humanwire_client)

    assert again is not None and not again.finished
    assert ran == ["5 bob"]
    [next_call] = again.paused
    assert next_call.call_id == "call_2"
    assert store.load("twice") is not None
    human.decide_approval("approve", interaction_id=next_call.interaction_id)
    event = await decided(async_humanwire_client, next_call.interaction_id)
    done = await resume_from_webhook(agent, store, event, client=async_humanwire_client)
    assert done is not None and done.final_output == "FINAL: sent 6 to ann"
    assert ran == ["5 bob", "6 ann"]


async def test_an_expired_form_resumes_with_the_timeout_default(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[str] = []
    tool = payment_tool(ran, async_humanwire_client, follow_up_time=1)
    agent = Agent(
        name="payer", tools=[tool], model=FakeModel(("send_payment", {"amount": 1, "to": "x"}))
    )
    store = FilePausedRunStore(tmp_path)

    paused = await run_until_approval(agent, "pay", store)
    assert await resume_expired(agent, store, client=async_humanwire_client) == []  # still open
    await async_humanwire_client.interactions.wait(paused.paused[0].interaction_id, timeout=10)
    [outcome] = await resume_expired(agent, store, client=async_humanwire_client)

    assert outcome.final_output == (
        "FINAL: send_payment was not run: no approval decision arrived in time "
        "(timeout; rejected by default)."
    )
    assert ran == [] and store.run_ids() == []


async def test_other_forms_and_bad_signatures_resume_nothing(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire
) -> None:
    agent = Agent(name="payer", tools=[], model=FakeModel())
    store = FilePausedRunStore(tmp_path)
    langgraph = ApprovalDecidedEvent.model_validate(
        approval_decided("int_1", {"humanwire_resume": "langgraph", "langgraph_thread_id": "t"})
    )
    assert await resume_from_webhook(agent, store, langgraph) is None
    body = json.dumps(langgraph.model_dump(mode="json", by_alias=True))
    with pytest.raises(InvalidSignatureError):
        await resume_from_webhook(
            agent, store, body, {"Humanwire-Signature": "t=1,v1=00"}, secret="whsec_x"
        )
