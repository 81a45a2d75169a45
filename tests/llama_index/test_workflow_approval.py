"""Approval inside LlamaIndex workflows against the real service: approved, rejected and
timed out with the service driving the run; durable pause and resume from the webhook."""

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from approval_support import approval_link
from humanwire import AsyncHumanWire, HumanWire
from humanwire.approval import Approver
from humanwire.errors import InvalidSignatureError
from humanwire.llama_index import (
    ApprovalRequiredEvent,
    ApprovalResponseEvent,
    FilePausedRunStore,
    resume_expired,
    resume_from_webhook,
    run_until_approval,
)
from humanwire.testing import ScriptedHuman, WebhookReceiver

sys.path.insert(0, str(Path(__file__).parent))
from llama_approval_flows import (
    ApprovalStateFlow,
    DeployFlow,
    PlainStateFlow,
    TwoApprovalFlow,
)


async def _run_live(flow: Any, **start: Any) -> tuple[dict[str, Any], list[Any]]:
    handler = flow.run(**start)
    events = [event async for event in handler.stream_events()]
    return await handler, events


async def test_approved(async_humanwire_client: AsyncHumanWire, human: ScriptedHuman) -> None:
    approver = Approver(async_humanwire_client, follow_up_time=30)
    form = human.decide_approval("approve", "ship it")

    result, events = await _run_live(DeployFlow(approver, timeout=None), version="2.4.0")

    assert result["approved"] is True
    assert (result["decision"], result["comment"], result["timed_out"]) == (
        "approve",
        "ship it",
        False,
    )
    delivery = await form.async_wait(5)
    [asked] = [e for e in events if isinstance(e, ApprovalRequiredEvent)]
    assert approval_link(delivery.text)  # the text links to the approval page
    assert asked.interaction_id == result["interaction_id"] == delivery.interaction_id
    assert asked.arguments == {"version": "2.4.0"}
    assert len(human.deliveries()) == 1  # the step replayed; the form went out once


async def test_rejected(async_humanwire_client: AsyncHumanWire, human: ScriptedHuman) -> None:
    approver = Approver(async_humanwire_client, follow_up_time=30)
    human.decide_approval("reject", "freeze until Monday")
    result, _ = await _run_live(DeployFlow(approver, timeout=None), version="2.4.1")
    assert (result["approved"], result["decision"], result["comment"]) == (
        False,
        "reject",
        "freeze until Monday",
    )


@pytest.mark.parametrize("default", ["reject", "approve"])
async def test_timed_out(
    default: str, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    approver = Approver(
        async_humanwire_client,
        follow_up_time=1,
        default_on_timeout=default,  # type: ignore[arg-type]
    )
    silent = human.stay_silent()
    result, _ = await _run_live(DeployFlow(approver, timeout=None), version="2.5.0")
    assert result["timed_out"] is True
    assert result["decision"] == "timeout"
    assert result["approved"] is (default == "approve")
    await silent.async_wait(5)


async def test_a_workflow_timeout_shorter_than_the_window_is_refused(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    approver = Approver(async_humanwire_client, follow_up_time=600)
    with pytest.raises(ValueError, match="timeout=None"):
        await DeployFlow(approver, timeout=45).run(version="1.0.0")
    assert human.deliveries() == []


async def test_a_response_event_counts_as_far_as_the_service_approved(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    # watch=False: nothing polls the service; a UI answers through the handler instead.
    # Its answer counts only once the service lets the approval be consumed.
    approver = Approver(async_humanwire_client, follow_up_time=30)
    for decided_on_the_service in (False, True):
        handler = DeployFlow(approver, watch=False, timeout=None).run(version="3.0.0")
        async for event in handler.stream_events():
            if isinstance(event, ApprovalRequiredEvent):
                if decided_on_the_service:
                    await human.decide_approval(
                        "approve", interaction_id=event.interaction_id
                    ).async_wait(10)
                handler.ctx.send_event(
                    ApprovalResponseEvent(
                        interaction_id=event.interaction_id,
                        approved=True,
                        decision="approve",
                        comment="approved in the dashboard",
                        response="ok",
                    )
                )
        result: dict[str, Any] = await handler
        if decided_on_the_service:
            assert (result["approved"], result["comment"]) == (True, "approved in the dashboard")
        else:  # approved by nobody the service knows: refused when consumed, not run
            assert result["approved"] is False
            assert "refused to consume" in result["comment"]
    assert len(human.deliveries()) == 2


PAUSE_SCRIPT = """
import asyncio, json, sys
sys.path.insert(0, {tests_dir!r})
from llama_approval_flows import DeployFlow
from humanwire import AsyncHumanWire
from humanwire.approval import Approver
from humanwire.llama_index import FilePausedRunStore, run_until_approval

async def main():
    async with AsyncHumanWire(api_key={api_key!r}, base_url={base_url!r}) as client:
        flow = DeployFlow(Approver(client, follow_up_time=120), watch=False, timeout=None)
        outcome = await run_until_approval(
            flow.run(version="9.9.9"), FilePausedRunStore({store_dir!r})
        )
        print(json.dumps({{"interaction_id": outcome.paused.interaction_id,
                           "form_url": outcome.paused.form_url}}))

asyncio.run(main())
"""


def _form_deliveries(receiver: WebhookReceiver) -> list[Any]:
    return [
        d
        for d in receiver.deliveries
        if d.accepted and d.event is not None and d.event.event_type == "approval.decided"
    ]


async def test_durable_resume_from_webhook_in_another_process(
    tmp_path: Path,
    humanwire_service: Any,
    humanwire_api_key: str,
    humanwire_client: HumanWire,
    async_humanwire_client: AsyncHumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["approval.decided"])
    store_dir = tmp_path / "paused"
    script = PAUSE_SCRIPT.format(
        tests_dir=str(Path(__file__).parent),
        api_key=humanwire_api_key,
        base_url=humanwire_service.base_url,
        store_dir=str(store_dir),
    )
    # The process that started the run pauses it, saves it and exits.
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    # Stopping the paused run leaves nothing dangling behind.
    assert "Traceback" not in done.stderr and "Task was destroyed" not in done.stderr
    paused = json.loads(done.stdout.strip().splitlines()[-1])
    store = FilePausedRunStore(store_dir)
    assert store.interaction_ids() == [paused["interaction_id"]]

    # Later, the human decides; the service tells the webhook.
    filled = human.decide_approval("approve", "go", interaction_id=paused["interaction_id"])
    assert approval_link((await filled.async_wait(10)).text)
    [received] = await webhook_receiver.async_wait_for("approval.decided", timeout=10)
    [delivery] = _form_deliveries(webhook_receiver)
    # The form says whose pause it is: a LangGraph receiver on the same webhook skips it.
    metadata = received.payload.metadata or {}
    assert metadata["humanwire_resume"] == "llama_index"
    assert metadata["llama_index_approval_key"]

    flow = DeployFlow(Approver(async_humanwire_client, follow_up_time=120), watch=False)
    # A forged delivery is refused and the run stays saved.
    with pytest.raises(InvalidSignatureError):
        await resume_from_webhook(
            flow, store, delivery.body, delivery.headers, secret="not-the-secret"
        )
    assert store.interaction_ids() == [paused["interaction_id"]]

    outcome = await resume_from_webhook(
        flow, store, delivery.body, delivery.headers, secret=webhook_receiver.secret
    )
    assert outcome is not None and outcome.finished
    assert outcome.result["approved"] is True
    assert outcome.result["comment"] == "go"
    assert outcome.result["interaction_id"] == paused["interaction_id"]
    assert store.interaction_ids() == []
    # Resuming did not send the form again; a retried delivery finds nothing to resume.
    assert len(human.deliveries()) == 1
    again = await resume_from_webhook(
        flow, store, delivery.body, delivery.headers, secret=webhook_receiver.secret
    )
    assert again is None


async def test_durable_run_pauses_again_at_its_next_approval(
    tmp_path: Path,
    humanwire_client: HumanWire,
    async_humanwire_client: AsyncHumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["approval.decided"])
    store = FilePausedRunStore(tmp_path)
    approver = Approver(async_humanwire_client, follow_up_time=60)

    first = await run_until_approval(
        TwoApprovalFlow(approver, watch=False, timeout=None).run(version="5.0"), store
    )
    assert first.paused is not None and first.paused.action == "deploy"
    human.decide_approval("approve", interaction_id=first.paused.interaction_id)
    [event] = await webhook_receiver.async_wait_for("approval.decided", timeout=10)

    second = await resume_from_webhook(
        TwoApprovalFlow(approver, watch=False), store, event.model_dump(by_alias=True)
    )
    assert second is not None and second.paused is not None
    assert second.paused.action == "announce"
    assert store.interaction_ids() == [second.paused.interaction_id]

    human.decide_approval("reject", "not today", interaction_id=second.paused.interaction_id)
    events = await webhook_receiver.async_wait_for("approval.decided", count=2, timeout=10)
    [latest] = [
        e
        for e in events
        if e.payload.interaction_id == second.paused.interaction_id  # type: ignore[union-attr]
    ]
    final = await resume_from_webhook(TwoApprovalFlow(approver, watch=False), store, latest)
    assert final is not None and final.finished
    assert final.result["deploy"]["approved"] is True
    assert final.result["announce"]["approved"] is False
    assert final.result["announce"]["comment"] == "not today"
    assert store.interaction_ids() == []
    assert len(human.deliveries()) == 2


async def test_durable_expired_form_resumes_with_the_timeout_default(
    tmp_path: Path, async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    store = FilePausedRunStore(tmp_path)
    approver = Approver(async_humanwire_client, follow_up_time=1)
    paused = await run_until_approval(
        DeployFlow(approver, watch=False, timeout=None).run(version="6.0"), store
    )
    assert paused.paused is not None
    flow = DeployFlow(approver, watch=False)
    status = await async_humanwire_client.interactions.wait(
        paused.paused.interaction_id, timeout=10
    )
    assert status.ended
    [outcome] = await resume_expired(flow, store, async_humanwire_client)
    assert outcome.finished
    assert (outcome.result["timed_out"], outcome.result["approved"]) == (True, False)
    assert store.interaction_ids() == []


def test_file_store_refuses_ids_that_are_paths(tmp_path: Path) -> None:
    store = FilePausedRunStore(tmp_path / "runs")
    assert store.load("../../etc/passwd") is None
    with pytest.raises(ValueError):
        store.save("../escape", {"context": {}})
    store.save("abc-123", {"context": {"x": 1}})
    assert store.load("abc-123") == {"context": {"x": 1}}
    assert store.interaction_ids() == ["abc-123"]
    store.delete("abc-123")
    assert store.interaction_ids() == []


async def test_an_approver_with_only_a_sync_client_stays_on_its_account(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    approver = Approver(humanwire_client, follow_up_time=1)
    silent = human.stay_silent()
    result, _ = await _run_live(DeployFlow(approver, timeout=None), version="7.0")
    assert result["timed_out"] is True
    delivered = await silent.async_wait(5)
    assert delivered.interaction_id == result["interaction_id"]


async def test_default_approver_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
    humanwire_service: Any,
    humanwire_api_key: str,
    human: ScriptedHuman,
) -> None:
    monkeypatch.setenv("HUMANWIRE_BASE_URL", humanwire_service.base_url)
    monkeypatch.setenv("HUMANWIRE_API_KEY", humanwire_api_key)
    form = human.decide_approval("approve")
    result, events = await _run_live(DeployFlow(None, timeout=None), version="8.0")
    assert result["approved"] is True
    # On a loopback service the default human is the recipient.
    assert (await form.async_wait(5)).to == "+12025550100"
    [asked] = [e for e in events if isinstance(e, ApprovalRequiredEvent)]
    assert asked.interaction_id == result["interaction_id"]


async def test_typed_state_needs_room_for_the_approval(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    approver = Approver(async_humanwire_client, follow_up_time=30)
    with pytest.raises(ValueError, match="humanwire_approvals: dict"):
        await PlainStateFlow(approver, timeout=None).run()
    assert human.deliveries() == []  # refused before anyone was asked

    human.decide_approval("approve")
    result, _ = await _run_live(ApprovalStateFlow(approver, timeout=None))
    assert result["approved"] is True


async def test_a_webhook_for_another_frameworks_pause_is_left_alone(tmp_path: Path) -> None:
    store = FilePausedRunStore(tmp_path)
    store.save("iid-1", {"context": {}, "pause": {}})
    event = {
        "eventType": "approval.decided",
        "payload": {
            "interactionId": "iid-1",
            "status": "ended",
            "decision": "approved",
            "metadata": {"humanwire_resume": "langgraph", "langgraph_thread_id": "t"},
        },
    }
    flow = DeployFlow(Approver(HumanWire(api_key="hw_x", base_url="http://127.0.0.1:9")))
    assert await resume_from_webhook(flow, store, event) is None
    assert store.interaction_ids() == ["iid-1"]  # untouched
