"""What the approval parts share about an approval's rows: an approver as the wire names
them, the decisions in the order they came, the tally, the approval as the wire gives it,
a fresh sms short code."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

from humanwire.types.approvals import (
    Approval,
    ApprovalDecision,
    ApprovalOutcome,
    ApprovalRequest,
    Approver,
)

from ..approvals.tally import Counted, Rules, Tally
from ..store.records import ApproverRecord

__all__ = ["REPLY_CHANNELS", "approval_wire"]

REPLY_CHANNELS = ("sms", "whatsapp")
"""Approvers who decide by a reply (short codes when one number has several open)."""

_OUTCOME: dict[str, ApprovalOutcome | None] = {
    "approve": "approved",
    "reject": "rejected",
    "none": None,
}


def _approver(row: ApproverRecord) -> Approver:
    # With its person: the tally counts the person once, whichever address decided.
    return Approver.model_construct(channel=row.channel, to=row.to_addr, person=row.person_id)


def _actor(row: ApproverRecord) -> dict[str, Any]:
    actor = {"channel": row.channel, "to": row.to_addr}
    return actor if row.person_id is None else {**actor, "person": row.person_id}


def _decided(rows: Sequence[ApproverRecord]) -> list[tuple[ApproverRecord, ApprovalDecision]]:
    """The decisions, in the order they came: each approver with theirs."""
    found = [(r, r.decision) for r in rows if r.decision is not None and r.decided_at is not None]
    return sorted(found, key=lambda found: (found[0].decided_at or 0.0, found[0].position))


def _tally(request: ApprovalRequest, rows: Sequence[ApproverRecord]) -> Tally:
    counted = [Counted(_approver(r), decision, r.comment) for r, decision in _decided(rows)]
    # Over the rows, not the request: a place handed to another person is theirs now.
    return Tally.of(Rules.asking(request, [_approver(r) for r in rows]), counted)


def approval_wire(approval: Approval) -> dict[str, Any]:
    """The approval as the wire gives it: ``decision``, ``actionDigest``, ``approvalUrl``
    and a decision's ``comment`` are null when unset (not left out); ``metadata`` only
    when the request had some."""
    wire = approval.model_dump(mode="json", by_alias=True)
    if wire.get("metadata") is None:
        wire.pop("metadata", None)
    for decision in wire["decisions"]:
        if decision.get("grantId") is None:  # only a grant's decision names one
            decision.pop("grantId", None)
        if decision.get("onBehalfOf") is None:  # only a delegate's decision names one
            decision.pop("onBehalfOf", None)
    return wire


def _decided_event(approval: Approval) -> dict[str, Any]:
    return {"eventType": "approval.decided", "payload": approval_wire(approval)}


def _code(taken: set[str]) -> str:
    while True:
        code = f"{secrets.randbelow(9000) + 1000}"
        if code not in taken:
            return code
