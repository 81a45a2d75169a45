"""A deferred call resumed in another process: one process's ``PreToolUse`` hook sends the
approval request, answers ``defer`` (the CLI ends the run, ``tool_deferred``) and exits;
the person decides; another process, which never saw the run, opens the CLI session again
(``resume=session_id``) and the hook allows the call. The payment runs exactly once: a
second resume, and a repeated webhook delivery, resume nothing. Rejected, it never runs
and the model reads the comment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from claude_helpers import ran

from approval_support import decide_interaction
from framework_support import approved_later, delivery_files, forms, run_process
from humanwire import HumanWire
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.testing.receiver import WebhookReceiver

SCRIPT = Path(__file__).with_name("claude_resume_process.py")


def runner(tmp_path: Path, service: RunningService, api_key: str) -> Any:
    common = (str(tmp_path), service.base_url, api_key)

    def run(command: str, *args: str) -> dict[str, Any]:
        return run_process(SCRIPT, command, *common, *args)

    return run


def test_a_deferred_call_resumes_once_in_another_process(
    tmp_path: Path,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
) -> None:
    run = runner(tmp_path, humanwire_service, humanwire_api_key)
    paused = run("pause")
    assert paused["terminal_reason"] == "tool_deferred"
    assert paused["paused"] is True
    assert ran(tmp_path / "payments.log") == []
    (approval,) = forms(human)
    decide_interaction(human, approval.interaction_id, "approve", "Go")

    session_id = paused["session_id"]
    saved = tmp_path / "pauses" / f"{session_id}.json"
    replayed = saved.read_bytes()
    assert run("resume", session_id) == {"resumed": True, "result": "FINAL: sent 50 to bob"}
    assert run("resume", session_id) == {"resumed": False}
    # The pause put back as it was (a backup restored): it was resumed already.
    saved.write_bytes(replayed)
    assert run("resume", session_id) == {"resumed": False}
    assert ran(tmp_path / "payments.log") == ["50 bob"]


def test_a_rejected_deferred_call_never_runs(
    tmp_path: Path,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
) -> None:
    run = runner(tmp_path, humanwire_service, humanwire_api_key)
    paused = run("pause")
    (approval,) = forms(human)
    decide_interaction(human, approval.interaction_id, "reject", "too expensive")
    resumed = run("resume", paused["session_id"])
    assert resumed["resumed"] is True
    assert "a human rejected it. Reason: too expensive" in resumed["result"]
    assert ran(tmp_path / "payments.log") == []


def test_a_webhook_resumes_a_session_deferred_by_another_process(
    tmp_path: Path,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["approval.decided"])
    run = runner(tmp_path, humanwire_service, humanwire_api_key)
    paused = run("pause")
    (approval,) = forms(human)
    event = approved_later(human, webhook_receiver, approval.interaction_id)
    assert event.payload.metadata == {
        "humanwire_resume": "claude_agent_sdk",
        "claude_session_id": paused["session_id"],
        "claude_tool_use_id": "toolu_0_0",
    }
    delivery = delivery_files(webhook_receiver, tmp_path)
    assert run("webhook", *delivery) == {"resumed": True, "result": "FINAL: sent 50 to bob"}
    assert run("webhook", *delivery) == {"resumed": False}
    assert run("resume", paused["session_id"]) == {"resumed": False}
    assert ran(tmp_path / "payments.log") == ["50 bob"]
