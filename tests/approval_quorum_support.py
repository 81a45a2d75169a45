"""Two approvers, a quorum of two and an escalation tier, as every adapter forwards them
to ``POST /approvals``; and what the service recorded of them, read back through the
client (``GET /approvals/{id}`` and the audit log), from inside the gated action.

``GET /approvals/{id}`` does not echo the request's approvers, quorum or escalation: what
the service did with them is the evidence. The approvers it asked (``approval.asked``,
each with its tier), the tier it escalated to (``approval.escalated``), the decisions that
made the quorum (``decisions``, and the tally in ``response``: "(2 of 2)").
"""

from __future__ import annotations

from typing import Any

from approval_support import PageDecider, decide_next
from humanwire import AsyncHumanWire, HumanWire
from humanwire.types.approvals import Approval, AuditEntry

FIRST = "+12025550111"
SECOND = "+12025550122"
LEAD = "+12025550133"
TWO = [{"channel": "sms", "to": FIRST}, {"channel": "sms", "to": SECOND}]
ESCALATION = [{"after": 1, "approvers": [{"channel": "sms", "to": LEAD}]}]
OPTIONS: dict[str, Any] = {"approvers": TWO, "quorum": 2, "escalation": ESCALATION}
"""What each adapter is built with (besides its client and times)."""

SECOND_DELAY = 3.0
"""The second approver decides this long after their text: the tier (``after`` 1 s) has
been asked by then, and the first approval alone has been seen not to decide."""


def both_approve(client: HumanWire) -> tuple[PageDecider, PageDecider]:
    """The first approver approves on their page at once, the second ``SECOND_DELAY`` later;
    the escalated lead stays silent."""
    return (
        decide_next(client, "approve", to=FIRST, timeout=30),
        decide_next(client, "approve", to=SECOND, delay=SECOND_DELAY, timeout=30),
    )


def _observed(approval: Approval, entries: list[AuditEntry]) -> dict[str, Any]:
    mine = [e for e in entries if e.interaction_id == approval.interaction_id]
    return {
        "decision": approval.decision,
        "approved_by": sorted(d.approver.to for d in approval.decisions if d.decision == "approve"),
        "tally": "(2 of 2)" in (approval.response or ""),
        "asked": sorted(
            (e.actor.to, e.data.get("tier"))
            for e in mine
            if e.type == "approval.asked" and e.actor is not None
        ),
        "escalated": [e.data.get("approvers") for e in mine if e.type == "approval.escalated"],
        "consumed": sum(1 for e in mine if e.type == "approval.consumed"),
    }


def _the_request(entries: list[AuditEntry]) -> str:
    (requested,) = [e for e in entries if e.type == "approval.requested"]
    return requested.interaction_id


def observe(client: HumanWire) -> dict[str, Any]:
    """What the service recorded of this account's one approval request, now."""
    entries = list(client.audit.entries())
    return _observed(client.approvals.get(_the_request(entries)), entries)


async def aobserve(client: AsyncHumanWire) -> dict[str, Any]:
    """:func:`observe` on the async client."""
    entries = [e async for e in client.audit.entries()]
    return _observed(await client.approvals.get(_the_request(entries)), entries)


EXPECTED: dict[str, Any] = {
    "decision": "approved",
    "approved_by": [FIRST, SECOND],
    "tally": True,
    "asked": [(FIRST, 0), (SECOND, 0), (LEAD, 1)],
    "escalated": [[{"channel": "sms", "to": LEAD}]],
    "consumed": 1,
}
"""What the gated action sees when it runs: both approved (the quorum), the tier asked,
and the approval already consumed, once."""
