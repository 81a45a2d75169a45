"""Approval requests before any service: the request's rules (400 naming the field), the
action digest, the tally that decides, and the audit chain's check."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from pydantic import ValidationError

from humanwire.server.approvals.audit import GENESIS, entry_hash, verify
from humanwire.server.approvals.tally import Counted, Rules, Tally, response_text, timeout_text
from humanwire.types.approvals import Approval, ApprovalRequest, Approver, action_digest
from humanwire.types.errors import detail_from_validation_error

A = {"channel": "sms", "to": "+12025550100"}
B = {"channel": "slack", "to": "U0123ABCD"}
C = {"channel": "email", "to": "lead@example.com"}


def request(**fields: Any) -> ApprovalRequest:
    body = {"title": "Wire $4,200 to ACME", "approvers": [A], "waitTime": 30, **fields}
    return ApprovalRequest.model_validate(body)


def refusal(**fields: Any) -> tuple[str, str]:
    """The (field, message) a bad request is refused with, as the service reports it."""
    with pytest.raises(ValidationError) as caught:
        request(**fields)
    detail = detail_from_validation_error(caught.value)
    assert detail.field is not None
    return detail.field, detail.message


def test_a_request_with_every_field_reads_from_the_wire() -> None:
    parsed = request(
        description="Invoice 118",
        action={"name": "wire", "arguments": {"amount": 4200, "to": "ACME"}},
        approvers=[A, B, C],
        quorum=2,
        rejectQuorum=2,
        escalation=[{"after": 600, "approvers": [{"channel": "call", "to": "+12025550111"}]}],
        remindEvery=300,
        followUpTime=3600,
        onTimeout="none",
        allowComment=False,
        metadata={"run": "7"},
    )
    assert parsed.quorum == 2 and parsed.reject_quorum == 2 and parsed.remind_every == 300
    assert parsed.escalation is not None and parsed.escalation[0].after == 600
    assert parsed.on_timeout == "none" and parsed.allow_comment is False
    assert parsed.to_wire()["rejectQuorum"] == 2


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"approvers": [A, dict(A)]}, "approvers[1]", "same approver as approvers[0]"),
        (
            {"approvers": [A], "escalation": [{"after": 60, "approvers": [A]}]},
            "escalation[0].approvers[0]",
            "same approver",
        ),
        (
            {"approvers": [C, {"channel": "email", "to": "LEAD@example.com"}]},
            "approvers[1]",
            "same approver",
        ),
        ({"approvers": [A, B], "quorum": 3}, "quorum", "2 different people"),
        # One number by sms and by call is one person: a quorum of 2 cannot be met.
        (
            {"approvers": [A, {"channel": "call", "to": A["to"]}], "quorum": 2},
            "quorum",
            "1 person",
        ),
        ({"approvers": [A, B], "rejectQuorum": 3}, "rejectQuorum", "rejectQuorum is 3"),
        (
            {
                "approvers": [A, B],
                "escalation": [
                    {"after": 600, "approvers": [C]},
                    {"after": 600, "approvers": [{"channel": "link", "to": "ops"}]},
                ],
            },
            "escalation[1].after",
            "increasing",
        ),
        # The innermost field is named, whichever rule the approver breaks.
        ({"approvers": [A, {"channel": "sms", "to": "U0123ABCD"}]}, "approvers[1].to", "E.164"),
        ({"approvers": [{"channel": "slack", "to": "+12025550100"}]}, "approvers[0].to", "Slack"),
        (
            {"approvers": [{"channel": "email", "to": "not an address"}]},
            "approvers[0].to",
            "email",
        ),
        ({"approvers": [{"channel": "link", "to": "  "}]}, "approvers[0].to", "name"),
        ({"approvers": [A, {"channel": "fax", "to": "1"}]}, "approvers[1].channel", "sms"),
        (
            {"escalation": [{"after": 60, "approvers": [{"channel": "call", "to": "12"}]}]},
            "escalation[0].approvers[0].to",
            "E.164",
        ),
        ({"waitTime": None}, "waitTime", "waitTime, followUpTime or both"),
    ],
)
def test_a_bad_request_is_refused_naming_its_field(
    fields: dict[str, Any], field: str, says: str
) -> None:
    got_field, message = refusal(**fields)
    assert got_field == field
    assert says in message


def test_over_twenty_approvers_with_the_tiers_are_refused() -> None:
    phones = [{"channel": "sms", "to": f"+120255501{n:02d}"} for n in range(21)]
    assert refusal(approvers=phones)[0] == "approvers"
    field, message = refusal(
        approvers=phones[:15], escalation=[{"after": 60, "approvers": phones[15:]}]
    )
    assert field == "escalation" and "21 approvers" in message


def test_an_action_json_cannot_hold_is_refused() -> None:
    field, message = refusal(action={"name": "wire", "arguments": {"amount": float("nan")}})
    assert field == "action.arguments" and "not plain JSON" in message


def test_the_action_digest_is_the_canonical_json_one() -> None:
    action = {"name": "wire", "arguments": {"to": "ACME", "amount": 4200.0, "note": "é"}}
    # RFC 8785: keys sorted, no spaces, UTF-8, 4200.0 written as 4200.
    canonical = '{"arguments":{"amount":4200,"note":"é","to":"ACME"},"name":"wire"}'
    expected = "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    assert action_digest(action) == expected
    assert request(action=action).action_digest == expected
    other = {"name": "wire", "arguments": {"to": "ACME", "amount": 4201, "note": "é"}}
    assert action_digest(other) != expected
    assert request().action_digest is None


def approver(wire: dict[str, str]) -> Approver:
    return Approver.model_validate(wire)


def counted(wire: dict[str, str], decision: str, comment: str | None = None) -> Counted:
    return Counted(approver(wire), decision, comment)  # type: ignore[arg-type]


def test_two_of_three_different_people_approve() -> None:
    rules = Rules.of(request(approvers=[A, B, C], quorum=2))
    tally = Tally.of(rules, [counted(A, "approve")])
    assert tally.outcome is None
    # The same person again, by another channel: counted once.
    assert not tally.add(counted({"channel": "call", "to": A["to"]}, "approve"))
    assert tally.outcome is None
    assert tally.add(counted(B, "approve"))
    assert tally.outcome == "approved"
    assert response_text(tally) == "Approved by +12025550100 and U0123ABCD (2 of 2)."


def test_one_rejection_rejects_unless_reject_quorum_says_more() -> None:
    tally = Tally.of(Rules.of(request(approvers=[A, B, C], quorum=2)))
    tally.add(counted(B, "reject", "not this quarter"))
    assert tally.outcome == "rejected"
    assert response_text(tally) == "Rejected by U0123ABCD: not this quarter."
    tally.add(counted(A, "approve"))
    tally.add(counted(C, "approve"))
    assert tally.outcome == "rejected"  # settled first; later decisions change nothing

    lenient = Tally.of(Rules.of(request(approvers=[A, B, C], quorum=1, rejectQuorum=2)))
    lenient.add(counted(B, "reject"))
    assert lenient.outcome is None
    lenient.add(counted(C, "approve"))
    assert lenient.outcome == "approved"


def test_a_quorum_out_of_reach_rejects() -> None:
    # Three of three needed, two rejections to reject: one rejection leaves it unreachable.
    tally = Tally.of(Rules.of(request(approvers=[A, B, C], quorum=3, rejectQuorum=2)))
    tally.add(counted(A, "reject"))
    assert tally.outcome == "rejected"
    # An escalation tier still to be asked keeps it reachable.
    escalated = request(
        approvers=[A, B],
        quorum=2,
        rejectQuorum=2,
        escalation=[{"after": 60, "approvers": [C]}],
    )
    tally = Tally.of(Rules.of(escalated), [counted(A, "reject")])
    assert tally.outcome is None
    tally.add(counted(C, "approve"))
    assert tally.outcome is None
    tally.add(counted(B, "approve"))
    assert tally.outcome == "approved"


def test_someone_not_asked_is_not_counted() -> None:
    tally = Tally.of(Rules.of(request(approvers=[A])))
    assert not tally.add(counted(B, "approve"))
    assert tally.outcome is None and not tally.approvals


def test_timeout_texts() -> None:
    tally = Tally.of(Rules.of(request(approvers=[A, B], quorum=2)), [counted(A, "approve")])
    assert timeout_text("reject", tally) == "No decision in time: rejected by default."
    assert timeout_text("approve", tally) == "No decision in time: approved by default."
    assert "1 of 2 approvals" in timeout_text("none", tally)


def test_the_response_model_reads_the_wire() -> None:
    approval = Approval.model_validate(
        {
            "interactionId": "int_1",
            "status": "ended",
            "decision": "approved",
            "decisions": [
                {
                    "approver": A,
                    "decision": "approve",
                    "at": "2026-11-25T12:00:00Z",
                    "via": "sms_reply",
                    "comment": None,
                }
            ],
            "actionDigest": "sha256:" + "0" * 64,
            "newerField": 1,
        }
    )
    assert approval.decisions[0].via == "sms_reply" and approval.timed_out is False


def log(count: int) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    prev = GENESIS
    for sequence in range(1, count + 1):
        entry = {
            "sequence": sequence,
            "at": f"2026-11-25T12:00:0{sequence}Z",
            "type": "approval.decision",
            "interactionId": "int_1",
            "actor": A,
            "data": {"decision": "approve", "n": sequence},
        }
        entry["prev"], entry["hash"] = prev, entry_hash(prev, entry)
        prev = entry["hash"]
        entries.append(entry)
    return entries


def test_an_untouched_log_verifies() -> None:
    entries = log(5)
    assert verify(entries) == []
    assert verify(entries, head=(5, entries[-1]["hash"])) == []
    assert verify([]) == []


def test_an_edited_entry_is_found() -> None:
    entries = log(5)
    entries[2]["data"] = {"decision": "reject", "n": 3}
    breaks = verify(entries)
    assert [(b.sequence, "edited" in b.problem) for b in breaks] == [(3, True)]


def test_an_edit_that_rehashes_its_entry_breaks_the_next_link() -> None:
    entries = log(5)
    entries[2]["data"] = {"decision": "reject", "n": 3}
    entries[2]["hash"] = entry_hash(entries[2]["prev"], entries[2])
    breaks = verify(entries)
    assert [b.sequence for b in breaks] == [4]
    assert "prev" in breaks[0].problem


def test_a_removed_entry_is_found() -> None:
    entries = log(5)
    del entries[1]
    breaks = verify(entries)
    assert breaks[0].sequence == 2 and "missing" in breaks[0].problem


def test_a_removed_last_entry_shows_against_the_head() -> None:
    entries = log(5)
    head = (5, entries[-1]["hash"])
    assert verify(entries[:-1]) == []  # the chain alone cannot tell
    breaks = verify(entries[:-1], head=head)
    assert len(breaks) == 1 and "removed from its end" in breaks[0].problem
