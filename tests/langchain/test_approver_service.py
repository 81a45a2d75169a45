"""The framework-neutral Approver against the real service: an approval request per
action, bound to it, several approvers with a quorum, decided on the page, consumed once."""

from __future__ import annotations

import pytest

from approval_support import decide_next, decide_on_page
from humanwire import AsyncHumanWire, HumanWire
from humanwire.approval import ApprovalRequest, Approver, action_digest_of
from humanwire.errors import InvalidRequestError

REQUEST = ApprovalRequest("wire_money", {"amount": 250, "iban": "DE00 1234"}, "Monthly rent")


def test_request_approved_and_consumed_for_its_action(humanwire_client: HumanWire) -> None:
    decide_next(humanwire_client, "approve", "fine")
    approver = Approver(humanwire_client, wait_time=10)
    decision = approver.request(REQUEST, idempotency_key="rent-2026-04")
    assert decision.approved and decision.decision == "approve" and decision.comment == "fine"
    assert decision.action_digest == action_digest_of(REQUEST)
    # The same key again: the same decision, but the approval is used.
    again = approver.request(REQUEST, idempotency_key="rent-2026-04")
    assert again.decision == "consumed" and not again.approved
    assert len(humanwire_client.sandbox.deliveries()) == 1


def test_request_timeout_is_decided_by_the_service(humanwire_client: HumanWire) -> None:
    decision = Approver(humanwire_client, wait_time=1).request(REQUEST)
    assert decision.timed_out and not decision.approved and decision.decision == "timeout"
    lenient = Approver(humanwire_client, wait_time=1, on_timeout="approve")
    approved = lenient.request(REQUEST)
    assert approved.approved and approved.timed_out  # consumable: the service approved it


def test_a_rejection_with_its_comment(humanwire_client: HumanWire) -> None:
    decide_next(humanwire_client, "reject", "Already paid")
    decision = Approver(humanwire_client, wait_time=10).request(REQUEST)
    assert not decision.approved and decision.decision == "reject"
    assert decision.comment == "Already paid"


def test_send_without_waiting_then_two_of_two_approve(humanwire_client: HumanWire) -> None:
    approver = Approver(
        humanwire_client,
        approvers=[{"channel": "link", "to": "alice"}, {"channel": "link", "to": "bob"}],
        quorum=2,
        follow_up_time=120,
    )
    pending = approver.send(REQUEST, wait=False)
    assert pending.status == "pending" and pending.decision is None
    assert [link.to for link in pending.links] == ["alice", "bob"]
    decide_on_page(pending.links[0].url, "approve")
    assert humanwire_client.approvals.get(pending.interaction_id).decision is None  # 1 of 2
    decide_on_page(pending.links[1].url, "approve")
    decided = humanwire_client.approvals.wait(pending.interaction_id, timeout=10)
    assert decided.decision == "approved" and len(decided.decisions) == 2


async def test_arequest_on_the_async_client(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire
) -> None:
    decide_next(humanwire_client, "approve")
    approver = Approver(async_humanwire_client, wait_time=10)
    decision = await approver.arequest(REQUEST)
    assert decision.approved
    assert (await approver.aconsume(decision, REQUEST)).decision == "consumed"


def test_bad_configuration(humanwire_client: HumanWire) -> None:
    with pytest.raises(ValueError, match="channel"):
        Approver(channel="fax")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="default_on_timeout"):
        Approver(default_on_timeout="maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="wait_time"):
        Approver(wait_time=900)
    with pytest.raises(ValueError, match="allow_edit"):
        Approver(humanwire_client, allow_edit=True)
    with pytest.raises(InvalidRequestError, match="quorum"):
        Approver(humanwire_client, quorum=2)  # one person cannot make two approvals
    with pytest.raises(ValueError, match="not two of them"):
        Approver(humanwire_client, to="+12025550100", approvers=[{"channel": "sms", "to": "x"}])
    with pytest.raises(ValueError, match="not two of them"):
        Approver(humanwire_client, person="per_ada", approvers=[{"person": "per_bob"}])
