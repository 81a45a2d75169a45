"""Resume in any process, on Agno's SQLite and PostgreSQL storage: one process pauses an
Agno run at its ``requires_confirmation`` call and exits; the person approves; another
process, which never saw the pause, receives the signed ``approval.decided`` webhook and
continues the run with ``continue_run`` from Agno's db. The payment runs exactly once: a
repeated delivery, and a resume by run id in a third process, continue nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agno_helpers import ran

from framework_support import approved_later, delivery_files, forms, run_process
from humanwire import HumanWire
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.testing.receiver import WebhookReceiver
from pg_support import drop_schema, new_schema

SCRIPT = Path(__file__).with_name("agno_resume_process.py")


@pytest.fixture(params=["sqlite", "postgres"])
def agno_db(request: pytest.FixtureRequest) -> Iterator[str]:
    """``sqlite`` (a file in the test's directory) or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        yield "sqlite"
        return
    schema, _ = new_schema("hw_agno")
    try:
        yield schema
    finally:
        drop_schema(schema)


def test_a_webhook_continues_a_run_paused_by_another_process(
    tmp_path: Path,
    agno_db: str,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["approval.decided"])
    common = (str(tmp_path), humanwire_service.base_url, humanwire_api_key, agno_db)

    def run(command: str, *args: str) -> dict[str, Any]:
        return run_process(SCRIPT, command, *common, *args)

    paused = run("pause")
    assert paused["paused"] is True
    assert ran(tmp_path / "payments.log") == []
    (approval,) = forms(human)

    # The pausing process is gone; the person approves later.
    event = approved_later(human, webhook_receiver, approval.interaction_id)
    assert event.payload.metadata == {
        "humanwire_resume": "agno",
        "agno_run_id": paused["run_id"],
        "agno_session_id": "session-1",
        "agno_tool_call_id": "call_0_0",
    }
    delivery = delivery_files(webhook_receiver, tmp_path)

    resumed = run("webhook", *delivery)
    assert resumed == {"resumed": True, "paused": False, "output": "FINAL: sent 50 to bob"}
    # A repeated delivery, in yet another process, finds the run finished.
    assert run("webhook", *delivery) == {"resumed": False}
    # So does a resume by the run's id.
    assert run("resume", paused["run_id"], paused["session_id"]) == {"resumed": False}
    assert ran(tmp_path / "payments.log") == ["50 bob"]
