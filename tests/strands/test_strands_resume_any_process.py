"""Resume in any process: one process pauses a Strands agent at an approval (a
``BeforeToolCallEvent`` interrupt) and exits; the human approves; another process, which
never saw the pause, receives the signed ``form.received`` webhook and resumes the
session's agent from the event's metadata and the saved session. The approved payment
runs once: a repeated delivery resumes nothing, and a host answering a kept copy of the
paused session again with the same decision is stopped by the consumed approval."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from framework_support import approved_later, delivery_files, run_process
from humanwire import HumanWire
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.testing.receiver import WebhookReceiver

SCRIPT = Path(__file__).with_name("strands_resume_process.py")


def run(*args: str) -> dict[str, Any]:
    return run_process(SCRIPT, *args)


def test_a_webhook_resumes_an_agent_paused_by_another_process(
    tmp_path: Path,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["approval.decided"])
    base = humanwire_service.base_url
    paused = run("pause", str(tmp_path), base, humanwire_api_key)
    assert paused["stop_reason"] == "interrupt"
    interaction_id, interrupt_id = paused["interaction_id"], paused["interrupt_id"]
    saved = json.loads((tmp_path / "paused" / "pay-bob.json").read_text())
    assert saved["pending"][0]["interrupt_id"] == interrupt_id
    # Strands saved the interrupt with the agent's session.
    agent_file = (
        tmp_path / "sessions" / "session_pay-bob" / "agents" / "agent_default" / "agent.json"
    )
    interrupt_state = json.loads(agent_file.read_text())["_internal_state"]["interrupt_state"]
    assert interrupt_state["activated"] is True and interrupt_id in interrupt_state["interrupts"]
    shutil.copytree(tmp_path / "sessions", tmp_path / "kept-sessions")
    assert not (tmp_path / "payments.log").exists()

    # The pausing process is gone; the human approves later.
    event = approved_later(human, webhook_receiver, interaction_id)
    assert event.payload.metadata == {
        "humanwire_resume": "strands",
        "strands_session_id": "pay-bob",
        "strands_interrupt_id": interrupt_id,
    }
    args = (str(tmp_path), base, humanwire_api_key, *delivery_files(webhook_receiver, tmp_path))

    resumed = run("resume", *args)
    assert resumed == {"resumed": True, "finished": True, "text": "FINAL: success: sent 50 to bob"}
    # A repeated delivery, in yet another process, finds the run resumed already.
    assert run("resume", *args) == {"resumed": False}
    # The kept session answered again with the same decision: the approval was consumed.
    replay = run("replay", str(tmp_path), base, humanwire_api_key, interrupt_id, interaction_id)
    assert replay["text"].startswith("FINAL: error: send_payment was not run again")
    assert (tmp_path / "payments.log").read_text().splitlines() == ["50 bob"]
