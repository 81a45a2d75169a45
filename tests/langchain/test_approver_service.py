"""The framework-neutral Approver against the real service."""

from __future__ import annotations

import pytest

from humanwire import AsyncHumanWire, HumanWire
from humanwire.approval import ApprovalRequest, Approver
from humanwire.testing import ScriptedHuman

REQUEST = ApprovalRequest("wire_money", {"amount": 250, "iban": "DE00 1234"}, "Monthly rent")


def test_request_approved_with_edit(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    human.fill_form({"decision": "edit", "arguments": '{"amount": 200, "iban": "DE00 1234"}'})
    approver = Approver(humanwire_client, wait_time=5, allow_edit=True)
    decision = approver.request(REQUEST)
    assert decision.approved and decision.decision == "edit"
    assert decision.arguments == {"amount": 200, "iban": "DE00 1234"}
    assert decision.interaction_id


def test_request_timeout_defaults(humanwire_client: HumanWire) -> None:
    decision = Approver(humanwire_client, wait_time=1).request(REQUEST)
    assert decision.timed_out and not decision.approved and decision.decision == "timeout"
    lenient = Approver(humanwire_client, wait_time=1, default_on_timeout="approve")
    assert lenient.request(REQUEST).approved


def test_same_idempotency_key_sends_one_form(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    human.fill_form({"decision": "reject", "comment": "Already paid"})
    approver = Approver(humanwire_client, wait_time=5)
    first = approver.request(REQUEST, idempotency_key="rent-2026-05")
    again = approver.request(REQUEST, idempotency_key="rent-2026-05")
    assert first == again
    assert first.comment == "Already paid"
    assert len(humanwire_client.sandbox.deliveries()) == 1


def test_send_without_waiting(humanwire_client: HumanWire) -> None:
    response = Approver(humanwire_client, follow_up_time=120).send(REQUEST, wait=False)
    assert response.status == "pending" and response.form_url
    assert response.responded is None or response.responded is False


def test_slack_approver(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    human.fill_form({"decision": "approve"}, channel="slack")
    decision = Approver(humanwire_client, channel="slack", wait_time=5).request(REQUEST)
    assert decision.approved
    (delivery,) = humanwire_client.sandbox.deliveries()
    assert delivery.to == "U0HUMAN0001" and delivery.channel == "slack"


async def test_arequest_on_the_async_client(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    human.fill_form({"decision": "respond", "comment": "Pay it next week"})
    approver = Approver(async_humanwire_client, wait_time=5, allow_respond=True)
    decision = await approver.arequest(REQUEST)
    assert decision.decision == "respond" and not decision.approved
    assert decision.comment == "Pay it next week"


def test_bad_configuration() -> None:
    with pytest.raises(ValueError, match="channel"):
        Approver(channel="fax")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="default_on_timeout"):
        Approver(default_on_timeout="maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="wait_time"):
        Approver(wait_time=900)
