"""Resume in any process: one process pauses an agent run at its approval request, saves
the session (``session.to_dict()``) and exits; the person approves; another process,
which never saw the pause, receives the signed ``approval.decided`` webhook and runs the
saved session on. The payment runs exactly once: a repeated delivery, and a resume of a
copy of the paused session in a third process, run nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_framework_helpers import ran

from framework_support import approved_later, delivery_files, forms, run_process
from humanwire import HumanWire
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.testing.receiver import WebhookReceiver

SCRIPT = Path(__file__).with_name("agent_framework_resume_process.py")


def test_a_webhook_runs_on_a_session_paused_by_another_process(
    tmp_path: Path,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["approval.decided"])
    common = (str(tmp_path), humanwire_service.base_url, humanwire_api_key)

    def run(command: str, *args: str) -> dict[str, Any]:
        return run_process(SCRIPT, command, *common, *args)

    assert run("pause") == {"paused": True, "text": ""}
    assert ran(tmp_path / "payments.log") == []
    (approval,) = forms(human)

    # The pausing process is gone; the person approves later.
    event = approved_later(human, webhook_receiver, approval.interaction_id)
    metadata = dict(event.payload.metadata or {})
    assert metadata.pop("af_approval_id").startswith("af-call-")
    assert metadata == {"humanwire_resume": "agent_framework", "af_session_id": "session-1"}
    delivery = delivery_files(webhook_receiver, tmp_path)

    assert run("webhook", *delivery) == {"resumed": True, "text": "FINAL: sent 50 to bob"}
    # A repeated delivery, in yet another process, finds the session resumed.
    assert run("webhook", *delivery) == {"resumed": False}
    # So does a copy of the paused session: its approval is used.
    assert run("copy") == {"resumed": False}
    assert ran(tmp_path / "payments.log") == ["50 bob"]
