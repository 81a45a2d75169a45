"""Human feedback in a CrewAI Flow, against the real service: the flow pauses at
``@human_feedback`` (the form sent, the state saved), the webhook's event resumes it with
``approve`` / ``reject: <comment>``, the approved step runs once; a blocking variant, a
text question, an expired form, and ``Flow.ask`` through humanwire."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from crewai.flow import Flow, HumanFeedbackPending, start
from crewai.flow.persistence.sqlite import SQLiteFlowPersistence
from crewai_flows import payment_flow, subject_flow

from approval_support import approval_link
from humanwire import HumanWire
from humanwire.approval import ApprovalDecision
from humanwire.crewai import (
    HumanWireFeedback,
    HumanWireInput,
    feedback_text,
    read_feedback,
    resume_flow,
    resume_from_webhook,
)
from humanwire.errors import InvalidSignatureError
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.types import ApprovalDecidedEvent, MessageReceivedEvent


@pytest.fixture
def persistence(tmp_path: Path) -> SQLiteFlowPersistence:
    return SQLiteFlowPersistence(str(tmp_path / "flows.db"))


def answered(client: HumanWire, interaction_id: str) -> Any:
    """The event of an answered interaction, as its webhook carries it."""
    status = client.interactions.wait(interaction_id, timeout=10)
    assert status.result is not None
    return status.result


def pause(flow_class: type[Flow[Any]], persistence: SQLiteFlowPersistence) -> HumanFeedbackPending:
    paused = flow_class(persistence=persistence).kickoff()
    assert isinstance(paused, HumanFeedbackPending)
    return paused


def test_a_paused_flow_resumes_from_the_webhook_and_pays_once(
    tmp_path: Path,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    persistence: SQLiteFlowPersistence,
) -> None:
    ledger = tmp_path / "paid.txt"
    provider = HumanWireFeedback(client=humanwire_client, follow_up_time=120)
    flow_class = payment_flow(provider, ledger)

    paused = pause(flow_class, persistence)
    flow_id = paused.context.flow_id
    interaction_id = paused.callback_info["interaction_id"]
    (text,) = humanwire_client.sandbox.deliveries(interaction_id=interaction_id)
    assert approval_link(text.text)  # the approver's text links to the approval page
    status = humanwire_client.interactions.status(interaction_id)
    assert status.metadata == {
        "humanwire_resume": "crewai",
        "crewai_flow_id": flow_id,
        "crewai_method": "propose",
    }
    assert not ledger.exists()

    human.decide_approval("approve", "Go", interaction_id=interaction_id)
    event = answered(humanwire_client, interaction_id)
    saved = persistence.load_pending_feedback(flow_id)
    assert saved is not None

    resumed = resume_from_webhook(event, None, flow_class, persistence, client=humanwire_client)

    assert resumed is not None and not resumed.paused
    assert resumed.result == "paid 50 to bob"
    assert resumed.flow.state["decision"] == "approve"
    assert resumed.flow.state["comment"] == "Go"
    assert resumed.flow.state["interaction_id"] == interaction_id
    assert ledger.read_text() == "50 bob\n"

    # The same delivery again (webhooks are retried): nothing to resume.
    assert (
        resume_from_webhook(event, None, flow_class, persistence, client=humanwire_client) is None
    )
    # The paused state back, as a crash after paying or a racing receiver would leave it:
    # the approval was consumed, so the payment does not run again.
    state, context = saved
    persistence.save_pending_feedback(flow_id, context, state)
    assert (
        resume_from_webhook(event, None, flow_class, persistence, client=humanwire_client) is None
    )
    assert ledger.read_text() == "50 bob\n"


def test_rejected_the_flow_takes_its_rejected_path_with_the_comment(
    tmp_path: Path,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    persistence: SQLiteFlowPersistence,
) -> None:
    ledger = tmp_path / "paid.txt"
    flow_class = payment_flow(HumanWireFeedback(client=humanwire_client), ledger)
    paused = pause(flow_class, persistence)
    interaction_id = paused.callback_info["interaction_id"]
    human.decide_approval("reject", "wrong account", interaction_id=interaction_id)

    resumed = resume_from_webhook(
        answered(humanwire_client, interaction_id),
        None,
        flow_class,
        persistence,
        client=humanwire_client,
    )

    assert resumed is not None
    assert resumed.result == "not paid: Rejected by a human: wrong account."
    assert not ledger.exists()


def test_waiting_in_the_run_needs_no_resume(
    tmp_path: Path, humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    ledger = tmp_path / "paid.txt"
    provider = HumanWireFeedback(client=humanwire_client, wait_time=10, wait=True)
    human.decide_approval("approve")

    result = payment_flow(provider, ledger)().kickoff()

    assert result == "paid 50 to bob"
    assert ledger.read_text() == "50 bob\n"


def test_an_approval_that_cannot_be_sent_takes_the_rejected_path(
    tmp_path: Path, humanwire_service: RunningService
) -> None:
    bad = HumanWire(api_key="hw_not_a_key", base_url=humanwire_service.base_url)
    flow_class = payment_flow(HumanWireFeedback(client=bad), tmp_path / "paid.txt")

    result = flow_class().kickoff()

    assert isinstance(result, str)
    assert result.startswith(
        "not paid: Rejected by a human: its approval could not be requested (humanwire: 401 "
    )


def test_a_question_pauses_and_the_reply_resumes(
    humanwire_client: HumanWire, human: ScriptedHuman, persistence: SQLiteFlowPersistence
) -> None:
    flow_class = subject_flow(HumanWireFeedback(client=humanwire_client, question=True))
    replied = human.reply("Q3: a record quarter")

    paused = pause(flow_class, persistence)
    delivery = replied.wait(5)
    assert delivery.text == "What subject line for the Q3 report?\n\nQ3 report: revenue up 12%"
    event = answered(humanwire_client, paused.callback_info["interaction_id"])
    assert isinstance(event, MessageReceivedEvent)

    resumed = resume_from_webhook(event, None, flow_class, persistence, client=humanwire_client)

    assert resumed is not None and resumed.result == "subject: Q3: a record quarter"


def test_an_expired_form_resumes_with_the_timeout_default(
    tmp_path: Path,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    persistence: SQLiteFlowPersistence,
) -> None:
    silent = human.stay_silent()
    provider = HumanWireFeedback(client=humanwire_client, window=1)
    flow_class = payment_flow(provider, tmp_path / "paid.txt")
    paused = pause(flow_class, persistence)
    flow_id = paused.context.flow_id
    silent.wait(5)

    # Open: nothing to resume yet. Then the form expires (no webhook is sent for that).
    assert resume_flow(flow_class, flow_id, persistence, client=humanwire_client) is None
    humanwire_client.interactions.wait(paused.callback_info["interaction_id"], timeout=10)
    resumed = resume_flow(flow_class, flow_id, persistence, client=humanwire_client)

    assert resumed is not None
    assert resumed.result == (
        "not paid: No approval decision arrived in time; rejected by default (timeout)."
    )
    assert resume_flow(flow_class, flow_id, persistence, client=humanwire_client) is None


def test_other_events_resume_nothing(
    tmp_path: Path,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    persistence: SQLiteFlowPersistence,
) -> None:
    flow_class = payment_flow(HumanWireFeedback(client=humanwire_client), tmp_path / "p.txt")
    paused = pause(flow_class, persistence)
    flow_id = paused.context.flow_id

    def form(metadata: dict[str, str], interaction_id: str = "int_1") -> ApprovalDecidedEvent:
        return ApprovalDecidedEvent.model_validate(
            {
                "eventType": "approval.decided",
                "payload": {
                    "interactionId": interaction_id,
                    "status": "ended",
                    "decision": "approved",
                    "metadata": metadata,
                },
            }
        )

    ours = {"humanwire_resume": "crewai", "crewai_flow_id": flow_id}
    langgraph = {"humanwire_resume": "langgraph", "langgraph_thread_id": flow_id}
    assert resume_from_webhook(form(langgraph), None, flow_class, persistence) is None
    # An answer to another feedback point than the one the flow waits at.
    assert resume_from_webhook(form(ours), None, flow_class, persistence) is None
    assert persistence.load_pending_feedback(flow_id) is not None  # still paused
    body = json.dumps(form(ours).model_dump(mode="json", by_alias=True))
    with pytest.raises(InvalidSignatureError):
        resume_from_webhook(
            body, {"Humanwire-Signature": "t=1,v1=00"}, flow_class, persistence, secret="whsec_x"
        )


@pytest.mark.parametrize(
    "decision",
    [
        ApprovalDecision(True, "approve"),
        ApprovalDecision(True, "approve", "fine: ship it"),
        ApprovalDecision(False, "reject", "too much"),
        ApprovalDecision(False, "respond", "pay 40 instead"),
        ApprovalDecision(False, "timeout", timed_out=True),
        ApprovalDecision(True, "timeout", timed_out=True),
    ],
)
def test_the_feedback_text_reads_back(decision: ApprovalDecision) -> None:
    text = feedback_text(decision)
    assert read_feedback(text) == decision
    assert text.startswith("approve" if decision.approved else ("respond", "reject"))


def test_feedback_typed_by_a_person_fails_closed() -> None:
    assert read_feedback("Approve").approved
    assert not read_feedback("yes please").approved
    assert not read_feedback("").approved


def test_flow_ask_texts_the_person(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    class AskFlow(Flow):  # type: ignore[type-arg]
        @start()
        def ask_name(self) -> Any:
            return self.ask("Who signs the contract?")

    human.reply("Ana Lima")
    provider = HumanWireInput(client=humanwire_client, wait_time=10)
    assert AskFlow(input_provider=provider).kickoff() == "Ana Lima"

    silent = human.stay_silent()
    provider = HumanWireInput(client=humanwire_client, wait_time=1)
    assert AskFlow(input_provider=provider).kickoff() is None
    silent.wait(5)
