"""Resume in any process: one process pauses a Pydantic AI run at an approval and exits;
the human approves; another process, which never saw the pause, receives the signed
``form.received`` webhook and resumes the run from the event's metadata and the saved
history. The approved payment runs once: a repeated delivery resumes nothing, and a
third process replaying the kept history with the same decision is stopped by the
consumed approval."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from framework_support import approved_later, delivery_files, run_process
from humanwire import HumanWire
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.testing.receiver import WebhookReceiver

SCRIPT = Path(__file__).with_name("pai_resume_process.py")


def run(*args: str) -> dict[str, Any]:
    return run_process(SCRIPT, *args)


def test_a_webhook_resumes_a_run_paused_by_another_process(
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
    interaction_id = paused["interaction_id"]
    saved = json.loads((tmp_path / "paused" / f"{paused['run_id']}.json").read_text())
    assert json.loads(saved["messages"])  # the history, as ModelMessagesTypeAdapter JSON
    record = tmp_path / "kept-record.json"
    record.write_text(paused["record"], encoding="utf-8")
    assert not (tmp_path / "payments.log").exists()

    # The pausing process is gone; the human approves later.
    event = approved_later(human, webhook_receiver, interaction_id)
    assert event.payload.metadata == {
        "humanwire_resume": "pydantic_ai",
        "pydantic_ai_run_id": paused["run_id"],
        "pydantic_ai_tool_call_id": "call_0_0",
    }
    args = (str(tmp_path), base, humanwire_api_key, *delivery_files(webhook_receiver, tmp_path))

    resumed = run("resume", *args)
    assert resumed == {"resumed": True, "finished": True, "output": "FINAL: sent 50 to bob"}
    # A repeated delivery, in yet another process, finds the run resumed already.
    assert run("resume", *args) == {"resumed": False}
    # The kept history replayed with the same decision: the approval was consumed.
    replay = run("replay", str(tmp_path), base, humanwire_api_key, str(record), interaction_id)
    assert "was not run again: its approval" in replay["output"]
    assert (tmp_path / "payments.log").read_text().splitlines() == ["50 bob"]
