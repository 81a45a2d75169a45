"""Durable approval: a run paused at its approvals waits in ADK's session service, and the
``form.received`` webhook resumes it, in another process too; an approved call runs
exactly once, however often the resume is attempted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from adk_helpers import FakeLlm, user_text
from google.adk.agents import LlmAgent
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService

from approval_support import approval_link
from framework_support import approval_decided, approved_later, decided, delivery_files, run_process
from humanwire import AsyncHumanWire, HumanWire
from humanwire.errors import InvalidSignatureError
from humanwire.google_adk import (
    DurableOutcome,
    FileClaimStore,
    require_approval,
    resume_expired,
    resume_from_webhook,
    run_until_approval,
)
from humanwire.testing import RunningService, ScriptedHuman, WebhookReceiver
from humanwire.types import ApprovalDecidedEvent

SCRIPT = Path(__file__).with_name("adk_resume_process.py")


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
    db, ran = tmp_path / "sessions.db", tmp_path / "ran.txt"
    common = (
        str(db),
        humanwire_service.base_url,
        humanwire_api_key,
        str(ran),
        str(tmp_path / "claims"),
    )

    paused = run("pause", *common)
    # The pausing process is gone; the human decides later.
    event = approved_later(human, webhook_receiver, paused["interaction_id"])
    metadata = event.payload.metadata or {}
    assert metadata["humanwire_resume"] == "google_adk"
    assert metadata["adk_session_id"] == paused["session_id"]
    webhook = delivery_files(webhook_receiver, tmp_path)
    stale = tmp_path / "stale.db"
    shutil.copy(db, stale)

    resumed = run("resume", *common, *webhook)
    assert resumed == {"resumed": True, "final": "FINAL: sent 50 to bob"}
    assert ran.read_text() == "50 bob\n"

    # The same delivery again (webhooks are retried): the session is past the pause.
    assert run("resume", *common, *webhook) == {"resumed": False}
    # The session back at the pause, as a resume that crashed after paying would have
    # left it, or as a second receiver read it at the same moment: the approval was used.
    shutil.copy(stale, db)
    assert run("resume", *common, *webhook) == {"resumed": False}
    assert ran.read_text() == "50 bob\n"
    assert len([d for d in humanwire_client.sandbox.deliveries() if approval_link(d.text)]) == 1


def payments(ran: list[str], client: AsyncHumanWire, *steps: Any, **approver: Any) -> Runner:
    async def send_payment(amount: int, to: str) -> str:
        """Send money."""
        ran.append(f"{amount} {to}")
        return f"sent {amount} to {to}"

    gate = require_approval(send_payment, client=client, **approver)
    agent = LlmAgent(name="payer", model=FakeLlm.script(*steps), tools=[gate])
    return Runner(app_name="payments", agent=agent, session_service=InMemorySessionService())


async def pause(runner: Runner, text: str = "pay") -> DurableOutcome:
    session = await runner.session_service.create_session(app_name="payments", user_id="u1")
    return await run_until_approval(
        runner, user_id="u1", session_id=session.id, new_message=user_text(text)
    )


async def test_a_rejection_resumes_with_the_comment(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[str] = []
    runner = payments(ran, async_humanwire_client, ("send_payment", {"amount": 50, "to": "bob"}))
    claims = FileClaimStore(tmp_path)

    paused = await pause(runner)
    [pending] = paused.paused
    human.decide_approval("reject", "wrong account", interaction_id=pending.interaction_id)
    event = await decided(async_humanwire_client, pending.interaction_id)
    outcome = await resume_from_webhook(runner, claims, event, client=async_humanwire_client)

    assert outcome is not None and outcome.finished
    assert outcome.final_output == (
        "FINAL: error: send_payment was not run: a human rejected it. Reason: wrong account"
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
    runner = payments(ran, async_humanwire_client, both)
    claims = FileClaimStore(tmp_path)

    paused = await pause(runner, "pay both")
    by_amount = {p.arguments["amount"]: p for p in paused.paused}
    assert sorted(by_amount) == [7, 50]
    human.decide_approval("approve", interaction_id=by_amount[50].interaction_id)
    early = await decided(async_humanwire_client, by_amount[50].interaction_id)
    # One decided, one open: the run keeps waiting (ADK would run on with the other
    # call's placeholder if one confirmation were answered alone).
    assert await resume_from_webhook(runner, claims, early, client=async_humanwire_client) is None
    assert ran == []

    human.decide_approval("reject", interaction_id=by_amount[7].interaction_id)
    late = await decided(async_humanwire_client, by_amount[7].interaction_id)
    outcome = await resume_from_webhook(runner, claims, late, client=async_humanwire_client)

    assert outcome is not None and outcome.finished
    assert ran == ["50 bob"]
    # The first webhook again, now that the pause is over: nothing.
    assert await resume_from_webhook(runner, claims, early, client=async_humanwire_client) is None
    assert ran == ["50 bob"]


async def test_a_run_pauses_again_at_its_next_approval(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[str] = []
    steps = (
        ("send_payment", {"amount": 5, "to": "bob"}),
        ("send_payment", {"amount": 6, "to": "ann"}),
    )
    runner = payments(ran, async_humanwire_client, *steps)
    claims = FileClaimStore(tmp_path)

    paused = await pause(runner, "pay twice")
    human.decide_approval("approve", interaction_id=paused.paused[0].interaction_id)
    event = await decided(async_humanwire_client, paused.paused[0].interaction_id)
    again = await resume_from_webhook(runner, claims, event, client=async_humanwire_client)

    assert again is not None and not again.finished
    assert ran == ["5 bob"]
    [next_call] = again.paused
    assert next_call.arguments == {"amount": 6, "to": "ann"}
    assert next_call.interaction_id != paused.paused[0].interaction_id
    human.decide_approval("approve", interaction_id=next_call.interaction_id)
    event = await decided(async_humanwire_client, next_call.interaction_id)
    done = await resume_from_webhook(runner, claims, event, client=async_humanwire_client)
    assert done is not None and done.final_output == "FINAL: sent 6 to ann"
    assert ran == ["5 bob", "6 ann"]


async def test_an_expired_form_resumes_with_the_timeout_default(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[str] = []
    runner = payments(
        ran, async_humanwire_client, ("send_payment", {"amount": 1, "to": "x"}), follow_up_time=1
    )
    claims = FileClaimStore(tmp_path)

    paused = await pause(runner)
    expire = {"client": async_humanwire_client}
    assert await resume_expired(runner, claims, **expire) == []  # still open
    await async_humanwire_client.interactions.wait(paused.paused[0].interaction_id, timeout=10)
    [outcome] = await resume_expired(runner, claims, **expire)

    assert outcome.final_output == (
        "FINAL: error: send_payment was not run: no approval decision arrived in time "
        "(timeout; rejected by default)."
    )
    assert ran == []
    assert await resume_expired(runner, claims, **expire) == []  # done: nothing paused


async def test_other_forms_and_bad_signatures_resume_nothing(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire
) -> None:
    runner = payments([], async_humanwire_client)
    claims = FileClaimStore(tmp_path)

    def event(metadata: dict[str, str]) -> ApprovalDecidedEvent:
        return ApprovalDecidedEvent.model_validate(approval_decided("int_1", metadata))

    langgraph = event({"humanwire_resume": "langgraph", "langgraph_thread_id": "t"})
    assert await resume_from_webhook(runner, claims, langgraph) is None
    ours = {
        "humanwire_resume": "google_adk",
        "adk_app_name": "payments",
        "adk_user_id": "u1",
        "adk_session_id": "no-such-session",
        "adk_call_id": "adk-1",
    }
    assert await resume_from_webhook(runner, claims, event(ours)) is None
    another_app = event({**ours, "adk_app_name": "billing"})
    assert await resume_from_webhook(runner, claims, another_app) is None
    body = json.dumps(langgraph.model_dump(mode="json", by_alias=True))
    with pytest.raises(InvalidSignatureError):
        await resume_from_webhook(
            runner, claims, body, {"Humanwire-Signature": "t=1,v1=00"}, secret="whsec_x"
        )


async def test_a_form_of_an_earlier_pause_or_another_app_resumes_nothing(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ran: list[str] = []
    runner = payments(ran, async_humanwire_client, ("send_payment", {"amount": 1, "to": "x"}))
    claims = FileClaimStore(tmp_path)
    paused = await pause(runner)
    [pending] = paused.paused
    human.decide_approval("approve", interaction_id=pending.interaction_id)
    real = await decided(async_humanwire_client, pending.interaction_id)

    def changed(**payload: Any) -> ApprovalDecidedEvent:
        return real.model_copy(update={"payload": real.payload.model_copy(update=payload)})

    # Same session and call, another interaction (an earlier pause's form): ignored.
    stale = changed(interaction_id="int_old")
    assert await resume_from_webhook(runner, claims, stale, client=async_humanwire_client) is None
    # Another app's session of the same ids: not this runner's.
    billing = changed(metadata={**(real.payload.metadata or {}), "adk_app_name": "billing"})
    assert await resume_from_webhook(runner, claims, billing, client=async_humanwire_client) is None
    assert ran == []
    outcome = await resume_from_webhook(runner, claims, real, client=async_humanwire_client)
    assert outcome is not None and ran == ["1 x"]
