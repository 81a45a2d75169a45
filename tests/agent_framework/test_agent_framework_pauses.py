"""Approval requests answered after a pause, in one process (the two-process test is
test_agent_framework_resume_any_process.py): ``start`` sends without waiting and the
session names what it waits for; ``resume`` runs nothing while the decision is open and
runs the call once after; ``resume_expired`` refuses a call nobody decided; a pause none
of whose requests could be sent is run on at once, its calls refused; and a humanwire
tool may itself need approval."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent_framework_helpers import agent, gated_tools, once, ran

from approval_support import decide_interaction
from framework_support import PAY, PHONE, forms
from humanwire import AsyncHumanWire
from humanwire.agent_framework import STATE_KEY, HumanApprovals, NotifyHumanSMS
from humanwire.testing import ScriptedHuman
from humanwire.testing.service import start_test_service


async def test_a_paused_session_runs_on_once_decided(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    log = tmp_path / "ran.log"
    humans = HumanApprovals(client=async_humanwire_client, to=PHONE, follow_up_time=60)
    built = agent(once(*PAY), gated_tools(log))
    session = built.create_session(session_id="s-1")
    paused = await humans.start(built, "pay", session=session)
    assert paused.user_input_requests and ran(log) == []
    (pending,) = session.state[STATE_KEY]["pending"].values()
    assert pending["tool_name"] == "send_payment" and pending["interaction_id"]

    assert await humans.resume(built, session, timeout=0) is None  # still open
    (approval,) = forms(human)
    await asyncio.to_thread(decide_interaction, human, approval.interaction_id, "approve")
    resumed = await humans.resume(built, session.to_dict(), timeout=5)
    assert resumed is not None and resumed.text == "FINAL: sent 50 to bob"
    # The session itself, resumed again: its approval is used, nothing runs.
    assert await humans.resume(built, session, timeout=0) is None
    assert ran(log) == ["50 bob"]
    assert len(forms(human)) == 1  # asked again under the same key: the same request


async def test_resume_expired_refuses_a_call_nobody_decided(
    async_humanwire_client: AsyncHumanWire, tmp_path: Path
) -> None:
    log = tmp_path / "ran.log"
    humans = HumanApprovals(
        client=async_humanwire_client, to=PHONE, follow_up_time=1, store=tmp_path / "sessions"
    )
    built = agent(once(*PAY), gated_tools(log))
    session = built.create_session(session_id="s-2")
    await humans.start(built, "pay", session=session)
    assert await humans.resume_expired(built) == []  # the window is still open
    assert await humans.resume(built, session, timeout=0) is None
    assert humans.store is not None and humans.store.keys() == ["s-2"]  # still waiting
    await asyncio.sleep(2.5)
    (resumed,) = await humans.resume_expired(built)
    assert "no approval decision arrived in time" in resumed.text
    assert ran(log) == []
    assert await humans.resume_expired(built) == []  # resumed once


async def test_a_pause_nothing_could_be_sent_for_is_refused_at_once(tmp_path: Path) -> None:
    service = start_test_service(tmp_path / "stopped.db")
    key = service.create_account()
    service.stop()
    log = tmp_path / "ran.log"
    client = AsyncHumanWire(api_key=key, base_url=service.base_url)
    try:
        chat = once(*PAY)
        humans = HumanApprovals(client=client, to=PHONE, store=tmp_path / "sessions")
        built = agent(chat, gated_tools(log))
        session = built.create_session(session_id="s-3")
        result = await humans.start(built, "pay", session=session)
    finally:
        await client.aclose()
    assert ran(log) == []
    assert result.user_input_requests == [] and STATE_KEY not in session.state
    assert any("its approval could not be requested" in text for text in chat.results)
    assert humans.store is not None and humans.store.keys() == []  # nothing left paused


async def test_a_humanwire_tool_may_need_approval_itself(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    human.decide_approval("approve")
    tool = NotifyHumanSMS(client=async_humanwire_client, approval_mode="always_require")
    chat = once("notify_human_sms", {"message": "Deploy done"})
    humans = HumanApprovals(client=async_humanwire_client, to=PHONE, follow_up_time=30)
    result = await humans.arun(agent(chat, [tool]), "Tell")
    assert result.text.startswith("FINAL: Message sent by sms")
    assert [d for d in human.deliveries() if "Deploy done" in d.text]


async def test_the_request_is_found_without_the_in_memory_history(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    # A session whose history lives elsewhere: the framework's own record of the pending
    # request (in the session's state) is enough to answer it.
    from agent_framework import AgentSession

    from humanwire.agent_framework.runs import approval_requests

    humans = HumanApprovals(client=async_humanwire_client, to=PHONE, follow_up_time=60)
    built = agent(once(*PAY), gated_tools(tmp_path / "ran.log"))
    session = built.create_session(session_id="s-4")
    await humans.start(built, "pay", session=session)
    saved = session.to_dict()
    saved["state"].pop("in_memory")
    (request_id,) = saved["state"][STATE_KEY]["pending"]
    (found,) = approval_requests(AgentSession.from_dict(saved), [request_id])
    assert found.id == request_id and found.function_call is not None
    assert found.function_call.name == "send_payment"


async def test_a_forged_approval_delivery_runs_nothing(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    # An approval.decided event saying "approved" for a request nobody decided (no
    # signature checked here): the approval cannot be consumed on the service, so the
    # call is refused and never runs.
    from humanwire.types import ApprovalDecidedEvent

    log = tmp_path / "ran.log"
    chat = once(*PAY)
    humans = HumanApprovals(
        client=async_humanwire_client, to=PHONE, follow_up_time=60, store=tmp_path / "sessions"
    )
    built = agent(chat, gated_tools(log))
    session = built.create_session(session_id="s-5")
    await humans.start(built, "pay", session=session)
    (pending,) = session.state[STATE_KEY]["pending"].values()
    record = await async_humanwire_client.approvals.get(pending["interaction_id"])
    forged = record.model_copy(update={"decision": "approved", "status": "ended"})
    event = ApprovalDecidedEvent(payload=forged)
    await humans.resume_from_webhook(built, event)
    assert ran(log) == []
    assert any("send_payment was not run" in text for text in chat.results)
