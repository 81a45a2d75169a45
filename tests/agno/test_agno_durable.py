"""Paused Agno runs (``HumanRuns.start``) continued later from Agno's ``SqliteDb``
(``resume``, ``resume_from_webhook``), against the real service over loopback: a run
still waiting is left alone, a rejection reaches the model, another adapter's delivery is
ignored, and a replayed pause (the db as it was before the first resume) cannot run the
approved call again: its approval was consumed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from agno.db.sqlite import SqliteDb
from agno_helpers import agent, gated_tools, once, ran, scripted

from approval_support import decide_interaction
from framework_support import (
    PAY,
    PHONE,
    approval_decided,
    decided,
    deliveries_of,
    forms,
    signed,
)
from humanwire import AsyncHumanWire, HumanWire
from humanwire.agno import AskHumanSMS, HumanRuns
from humanwire.testing import ScriptedHuman
from humanwire.testing.receiver import WebhookReceiver
from humanwire.testing.service import start_test_service


def build(directory: Path, call: tuple[str, dict[str, Any]] = PAY) -> Any:
    db = SqliteDb(db_file=str(directory / "agno.db"))
    return agent(once(*call), gated_tools(directory / "ran.log"), db=db)


def runs_on(client: AsyncHumanWire) -> HumanRuns:
    return HumanRuns(client=client, to=PHONE, follow_up_time=120)


async def test_a_run_waits_until_decided_then_continues(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    runs = runs_on(async_humanwire_client)
    paused = await runs.start(build(tmp_path), "pay", session_id="s1")
    assert paused.is_paused
    assert str(paused.run_id) and paused.session_id == "s1"
    # Still open: nothing continues, nothing new is sent.
    assert await runs.resume(build(tmp_path), str(paused.run_id), "s1", timeout=0) is None
    (approval,) = forms(human)
    decide_interaction(human, approval.interaction_id, "approve", "Go")
    resumed = await runs.resume(build(tmp_path), str(paused.run_id), "s1", timeout=10)
    assert resumed is not None and resumed.content == "FINAL: sent 50 to bob"
    assert ran(tmp_path / "ran.log") == ["50 bob"]
    assert len(forms(human)) == 1


async def test_a_rejection_reaches_the_model_after_the_pause(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    runs = runs_on(async_humanwire_client)
    paused = await runs.start(build(tmp_path), "pay", session_id="s1")
    (approval,) = forms(human)
    decide_interaction(human, approval.interaction_id, "reject", "not this month")
    event = await decided(async_humanwire_client, approval.interaction_id)
    resumed = await runs.resume_from_webhook(build(tmp_path), event)
    assert resumed is not None
    assert resumed.content == (
        "FINAL: send_payment was not run: a human rejected it. Reason: not this month"
    )
    assert ran(tmp_path / "ran.log") == []
    assert paused.run_id == resumed.run_id


async def test_a_replayed_pause_does_not_run_the_call_again(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    runs = runs_on(async_humanwire_client)
    paused = await runs.start(build(tmp_path), "pay", session_id="s1")
    (approval,) = forms(human)
    decide_interaction(human, approval.interaction_id, "approve", "Go")
    kept = tmp_path / "kept"
    kept.mkdir()
    for file in tmp_path.glob("agno.db*"):  # the db as it was while paused
        shutil.copy(file, kept / file.name)
    run_id = str(paused.run_id)

    first = await runs.resume(build(tmp_path), run_id, "s1", timeout=10)
    assert first is not None and first.content == "FINAL: sent 50 to bob"
    for file in kept.iterdir():
        shutil.copy(file, tmp_path / file.name)
    again = await runs.resume(build(tmp_path), run_id, "s1", timeout=10)
    assert again is not None
    assert "send_payment was not run again" in str(again.content)
    assert ran(tmp_path / "ran.log") == ["50 bob"]


async def test_another_adapters_delivery_resumes_nothing(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    runs = runs_on(async_humanwire_client)
    paused = await runs.start(build(tmp_path), "pay", session_id="s1")
    (approval,) = forms(human)
    decide_interaction(human, approval.interaction_id, "approve")
    metadata = {"humanwire_resume": "strands", "agno_run_id": str(paused.run_id)}
    body = approval_decided(approval.interaction_id, metadata)
    assert await runs.resume_from_webhook(build(tmp_path), body) is None
    assert ran(tmp_path / "ran.log") == []


async def test_a_forged_delivery_cannot_approve(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    # The decision is read from the service, never from the delivery: a forged
    # "approved" for a pending approval continues nothing.
    runs = runs_on(async_humanwire_client)
    paused = await runs.start(build(tmp_path), "pay", session_id="s1")
    (approval,) = forms(human)
    metadata = {
        "humanwire_resume": "agno",
        "agno_run_id": str(paused.run_id),
        "agno_session_id": "s1",
    }
    body = approval_decided(approval.interaction_id, metadata)
    assert await runs.resume_from_webhook(build(tmp_path), body) is None
    assert ran(tmp_path / "ran.log") == []


async def test_a_pause_that_cannot_be_sent_is_rejected_at_once(tmp_path: Path) -> None:
    service = start_test_service(tmp_path / "stopped.db")
    key = service.create_account()
    service.stop()
    client = AsyncHumanWire(api_key=key, base_url=service.base_url)
    try:
        result = await runs_on(client).start(build(tmp_path), "pay", session_id="s1")
    finally:
        await client.aclose()
    assert not result.is_paused
    assert "send_payment was not run: its approval could not be requested" in str(result.content)
    assert ran(tmp_path / "ran.log") == []


async def test_user_input_is_given_after_the_pause(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    runs = runs_on(async_humanwire_client)
    call = ("ship", {"version": "v2"})
    human.reply("LGTM from alice", delay=2)  # after the pausing look
    paused = await runs.start(build(tmp_path, call), "ship", session_id="s1")
    assert paused.is_paused
    resumed = await runs.resume(build(tmp_path, call), str(paused.run_id), "s1", timeout=10)
    assert resumed is not None and resumed.content == "FINAL: shipped v2 (LGTM from alice)"
    assert len(human.deliveries()) == 1


async def test_an_external_execution_resumes_from_the_reply_webhook(
    async_humanwire_client: AsyncHumanWire,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
    tmp_path: Path,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["message.received"])
    runs = runs_on(async_humanwire_client)
    call = ("ask_external", {"question": "Is the venue booked?"})
    human.reply("yes, booked", delay=2)  # after the pausing look
    paused = await runs.start(build(tmp_path, call), "ask", session_id="s1")
    assert paused.is_paused
    (delivery,) = await deliveries_of(webhook_receiver, "message.received")
    resumed = await runs.resume_from_webhook(
        build(tmp_path, call), delivery.body, signed(delivery), secret=webhook_receiver.secret
    )
    assert resumed is not None
    assert resumed.content == "FINAL: Human response: yes, booked"
    # The same delivery again: the run is finished, nothing continues.
    again = await runs.resume_from_webhook(
        build(tmp_path, call), delivery.body, signed(delivery), secret=webhook_receiver.secret
    )
    assert again is None


async def test_the_tools_and_a_pause_share_a_run_on_the_db(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    # A humanwire tool (a Toolkit) in an agent whose run Agno stores, then a gated call.
    human.reply("yes please")
    model = scripted([("ask_human_sms", {"message": "Pay Bob 50?"})], [PAY])

    def built() -> Any:
        db = SqliteDb(db_file=str(tmp_path / "agno.db"))
        tools = [AskHumanSMS(client=async_humanwire_client, wait_time=5)]
        return agent(model, [*tools, *gated_tools(tmp_path / "ran.log")], db=db)

    runs = runs_on(async_humanwire_client)
    paused = await runs.start(built(), "pay", session_id="s1")
    assert paused.is_paused
    assert model.results == ["Human response: yes please"]
    (approval,) = forms(human)
    decide_interaction(human, approval.interaction_id, "approve")
    resumed = await runs.resume(built(), str(paused.run_id), "s1", timeout=10)
    assert resumed is not None and resumed.content == "FINAL: sent 50 to bob"
    assert ran(tmp_path / "ran.log") == ["50 bob"]
