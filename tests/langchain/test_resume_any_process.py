"""Resume in any process (docs/design.md "Metadata"): one process pauses a LangGraph graph at
an approval on a persistent checkpointer (SQLite) and exits; another, which never saw
the pause and has no registry, receives the signed ``approval.decided`` webhook and resumes
the thread from the event's metadata alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from humanwire import HumanWire
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.testing.receiver import WebhookReceiver
from humanwire.webhooks import SIGNATURE_HEADER

SCRIPT = Path(__file__).with_name("resume_process.py")


def run(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_webhook_resumes_a_pause_made_by_another_process(
    tmp_path: Path,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["approval.decided"])
    db = str(tmp_path / "checkpoints.sqlite")
    base = humanwire_service.base_url
    paused = run("pause", db, base, humanwire_api_key, "thread-7")
    interaction_id = paused["interaction_id"]
    # The pausing process is gone; the human answers later.
    human.decide_approval("approve", "Go", interaction_id=interaction_id).wait(10)
    (event,) = webhook_receiver.wait_for("approval.decided", timeout=10)
    metadata = event.payload.metadata or {}
    assert (metadata["humanwire_resume"], metadata["langgraph_thread_id"]) == (
        "langgraph",
        "thread-7",
    )
    assert metadata["langgraph_checkpoint_ns"].startswith("approve:")
    [delivery] = webhook_receiver.deliveries
    body = tmp_path / "event.json"
    body.write_bytes(delivery.body)
    signature = delivery.headers[SIGNATURE_HEADER.lower()]
    secret = webhook_receiver.secret
    assert secret is not None
    resumed = run("resume", db, base, humanwire_api_key, str(body), signature, secret)
    assert resumed == {"resumed": True, "published": True, "approved": True, "comment": "Go"}
    # A repeated delivery finds the thread no longer paused there: nothing happens twice.
    again = run("resume", db, base, humanwire_api_key, str(body), signature, secret)
    assert again == {"resumed": False}
    # The node re-ran on resume without asking again: one text reached the approver.
    assert len(humanwire_client.sandbox.deliveries()) == 1
