"""How the adapters use an approval once, against a scripted transport: the consume sent
with the digest of the action about to run, ``already_consumed`` turned into a decision
that does not run, ``not_approved`` into a rejection, and a pause's approvals consumed in
a fixed order. (End to end against the service: the adapters' tests.)"""

from __future__ import annotations

import httpx
from unit_support import API_KEY, BASE_URL, Script, error, ok

from humanwire import AsyncHumanWire, HumanWire
from humanwire._pauses import consume_on_service, denial_text
from humanwire.approval import (
    ApprovalDecision,
    ApprovalRequest,
    Approver,
    action_digest_of,
    consume_approval,
)

PAY = ApprovalRequest("send_payment", {"amount": 50, "to": "bob"})
APPROVED = ApprovalDecision(True, "approve", interaction_id="i-1")


def approver(script: Script) -> Approver:
    client = HumanWire(
        API_KEY, BASE_URL, http_client=httpx.Client(transport=httpx.MockTransport(script.handle))
    )
    return Approver(client, to="+12025550100", wait_time=10)


def async_client(script: Script) -> AsyncHumanWire:
    transport = httpx.MockTransport(script.handle)
    return AsyncHumanWire(API_KEY, BASE_URL, http_client=httpx.AsyncClient(transport=transport))


def test_an_approved_decision_is_consumed_for_its_action(script: Script) -> None:
    script.reply(ok({"consumed": True}))
    assert approver(script).consume(APPROVED, PAY) == APPROVED
    assert script.last.url.path == "/approvals/i-1/consume"
    assert script.body() == {"actionDigest": action_digest_of(PAY)}


def test_used_already_does_not_run_and_says_it_ran_before(script: Script) -> None:
    script.reply(error(409, "already_consumed"))
    used = approver(script).consume(APPROVED, PAY)
    assert used.decision == "consumed" and not used.approved and used.interaction_id == "i-1"
    assert denial_text("send_payment", used).startswith("send_payment was not run again")


def test_not_approved_on_the_service_is_a_rejection(script: Script) -> None:
    script.reply(error(409, "not_approved", "rejected"))
    refused = approver(script).consume(APPROVED, PAY)
    assert not refused.approved and refused.decision == "reject"
    assert refused.comment is not None and "rejected" in refused.comment


def test_a_rejection_is_not_sent_to_consume(script: Script) -> None:
    rejected = ApprovalDecision(False, "reject", "no", interaction_id="i-1")
    assert approver(script).consume(rejected, PAY) == rejected
    assert script.requests == []


async def test_the_async_consume(script: Script) -> None:
    script.reply(ok({"consumed": True}), error(409, "already_consumed"))
    client = async_client(script)
    assert await consume_approval(client, APPROVED, PAY) == APPROVED
    assert (await consume_approval(client, APPROVED, PAY)).decision == "consumed"


async def test_a_pause_is_consumed_in_order_and_stops_at_one_used(script: Script) -> None:
    other = ApprovalRequest("send_payment", {"amount": 7, "to": "eve"})
    script.reply(ok({"consumed": True}), error(409, "already_consumed"), ok({"consumed": True}))
    client = async_client(script)
    assert not await consume_on_service(client, {"i-2": other, "i-1": PAY, "i-3": PAY})
    assert [r.url.path for r in script.requests] == [
        "/approvals/i-1/consume",
        "/approvals/i-2/consume",
    ]
    assert script.body(1) == {"actionDigest": action_digest_of(other)}
