"""Resume in any process: one process kicks a CrewAI Flow off until its payment waits for
approval and exits; the person approves; another process, which never saw the pause,
receives the signed ``form.received`` webhook and resumes the flow from the event's
metadata and the flow's own persistence. The payment runs once: the same delivery in a
third process resumes nothing, nor does it after the paused state is put back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crewai.flow.persistence.sqlite import SQLiteFlowPersistence
from crewai_flows import payment_flow

from framework_support import approved_later, delivery_files, run_process
from humanwire import HumanWire
from humanwire.crewai import HumanWireFeedback, resume_from_webhook
from humanwire.testing import RunningService, ScriptedHuman, WebhookReceiver
from humanwire.webhooks import SIGNATURE_HEADER

SCRIPT = Path(__file__).with_name("crewai_flow_process.py")


def run(*args: str) -> dict[str, Any]:
    # The CREWAI_* settings of conftest.py travel in os.environ.
    return run_process(SCRIPT, *args)


def test_a_webhook_resumes_a_flow_paused_by_another_process(
    tmp_path: Path,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["approval.decided"])
    common = (str(tmp_path), humanwire_service.base_url, humanwire_api_key)
    paid = tmp_path / "paid.txt"

    paused = run("pause", *common)
    flow_id, interaction_id = paused["flow_id"], paused["interaction_id"]
    persistence = SQLiteFlowPersistence(str(tmp_path / "flows.db"))
    saved = persistence.load_pending_feedback(flow_id)
    assert saved is not None and not paid.exists()

    # The pausing process is gone; the person approves later.
    event = approved_later(human, webhook_receiver, interaction_id)
    assert event.payload.metadata == {
        "humanwire_resume": "crewai",
        "crewai_flow_id": flow_id,
        "crewai_method": "propose",
    }
    [delivery] = webhook_receiver.deliveries
    webhook = delivery_files(webhook_receiver, tmp_path)
    secret = webhook[2]

    resumed = run("resume", *common, *webhook)
    assert resumed == {"resumed": True, "paused": False, "result": "paid 50 to bob"}
    assert paid.read_text() == "50 bob\n"
    assert persistence.load_pending_feedback(flow_id) is None

    # The same delivery again, in yet another process (webhooks are retried): nothing.
    assert run("resume", *common, *webhook) == {"resumed": False}
    # The paused state back, as a crash after paying or a racing receiver would leave it,
    # and the delivery once more (here, a receiver of its own): the approval was consumed
    # in the flow's database, so nothing runs again.
    state, context = saved
    persistence.save_pending_feedback(flow_id, context, state)
    provider = HumanWireFeedback(client=humanwire_client)
    flow_class = payment_flow(provider, paid)
    headers = {SIGNATURE_HEADER: webhook[1]}
    replayed = resume_from_webhook(
        delivery.body, headers, flow_class, persistence, secret=secret, client=humanwire_client
    )
    assert replayed is None
    assert paid.read_text() == "50 bob\n"
