"""``client.approvals`` and ``client.audit`` against the real service on both stores:
a request held and decided on its page, one decided after the hold by two of two
approvers, consumed once (``AlreadyConsumedError``), refused when rejected
(``NotApprovedError``) or for another action (400), replayed under its key, and the
account's audit log read page after page, its chain intact, also to ``humanwire audit
verify`` on the service's own database."""

from __future__ import annotations

import httpx
import pytest

from approval_support import decide_next, decide_on_page
from humanwire import AlreadyConsumedError, AsyncHumanWire, HumanWire, NotApprovedError
from humanwire.cli import main
from humanwire.errors import InvalidRequestError
from humanwire.server.approvals.audit import verify
from humanwire.testing import RunningService
from humanwire.types.approvals import action_digest

ACTION = {"name": "wire", "arguments": {"amount": 4200, "to": "ACME Ltd"}}
DIGEST = action_digest(ACTION)
PHONE = "+12025550100"


def test_held_request_decided_on_the_page_then_consumed_once(
    humanwire_client: HumanWire,
) -> None:
    decider = decide_next(humanwire_client, "approve", "ok by me")
    approval = humanwire_client.approvals.create(
        title="Wire $4,200 to ACME Ltd",
        action=ACTION,
        approvers=[{"channel": "sms", "to": PHONE}],
        wait_time=10,
        metadata={"run": "r-1"},
        idempotency_key="wire-r-1",
    )
    decider.wait()
    assert approval.status == "ended" and approval.decision == "approved"
    assert approval.action_digest == DIGEST and approval.metadata == {"run": "r-1"}
    (decided,) = approval.decisions
    assert decided.decision == "approve" and decided.comment == "ok by me"
    assert decided.approver.to == PHONE
    assert approval.response and "Approved" in approval.response

    # The same key and body: the first answer again, nobody asked twice.
    again = humanwire_client.approvals.create(
        title="Wire $4,200 to ACME Ltd",
        action=ACTION,
        approvers=[{"channel": "sms", "to": PHONE}],
        wait_time=10,
        metadata={"run": "r-1"},
        idempotency_key="wire-r-1",
    )
    assert again.interaction_id == approval.interaction_id
    assert len(humanwire_client.sandbox.deliveries(to=PHONE)) == 1

    other = {"name": "wire", "arguments": {"amount": 42000, "to": "ACME Ltd"}}
    with pytest.raises(InvalidRequestError) as refused:
        humanwire_client.approvals.consume(
            approval.interaction_id, action_digest=action_digest(other)
        )
    assert refused.value.field == "actionDigest"
    used = humanwire_client.approvals.consume(approval.interaction_id, action_digest=DIGEST)
    assert used.consumed is True
    with pytest.raises(AlreadyConsumedError):
        humanwire_client.approvals.consume(approval.interaction_id, action_digest=DIGEST)


def test_two_of_two_after_the_hold_and_a_rejection(humanwire_client: HumanWire) -> None:
    pending = humanwire_client.approvals.create(
        title="Deploy 1.4 to production",
        action={"name": "deploy", "arguments": {"version": "1.4"}},
        approvers=[{"channel": "link", "to": "alice"}, {"channel": "link", "to": "bob"}],
        quorum=2,
        follow_up_time=120,
    )
    assert pending.status == "pending" and pending.decision is None
    alice, bob = pending.links
    assert (alice.to, bob.to) == ("alice", "bob") and pending.approval_url == alice.url
    decide_on_page(alice.url, "approve")
    halfway = humanwire_client.approvals.wait(pending.interaction_id, timeout=1)
    assert halfway.status == "pending" and len(halfway.decisions) == 1
    with pytest.raises(NotApprovedError):  # pending: not approved yet
        humanwire_client.approvals.consume(
            pending.interaction_id, action_digest=pending.action_digest
        )
    decide_on_page(bob.url, "approve")
    decided = humanwire_client.approvals.wait(pending.interaction_id, timeout=10)
    assert decided.decision == "approved" and [d.approver.to for d in decided.decisions] == [
        "alice",
        "bob",
    ]

    rejected = humanwire_client.approvals.create(
        title="Drop the users table",
        approvers=[{"channel": "link", "to": "dba"}],
        follow_up_time=120,
    )
    decide_on_page(rejected.approval_url or "", "reject", "not this quarter")
    closed = humanwire_client.approvals.wait(rejected.interaction_id, timeout=10)
    assert closed.decision == "rejected" and closed.action_digest is None
    assert closed.decisions[0].comment == "not this quarter"
    with pytest.raises(NotApprovedError):
        humanwire_client.approvals.consume(rejected.interaction_id)


def test_no_decision_in_time_is_decided_by_on_timeout(humanwire_client: HumanWire) -> None:
    held = humanwire_client.approvals.create(
        title="Rotate the logs",
        approvers=[{"channel": "link", "to": "ops"}],
        wait_time=1,
        follow_up_time=1,
        on_timeout="approve",
    )
    assert held.status == "pending"  # the hold ended; the windows close a second later
    lenient = humanwire_client.approvals.wait(held.interaction_id, timeout=15)
    assert lenient.status == "ended" and lenient.decision == "approved" and lenient.timed_out
    assert humanwire_client.approvals.consume(lenient.interaction_id).consumed
    strict = humanwire_client.approvals.create(
        title="Rotate the logs", approvers=[{"channel": "link", "to": "ops"}], follow_up_time=1
    )
    closed = humanwire_client.approvals.wait(strict.interaction_id, timeout=15)
    assert closed.decision == "rejected" and closed.timed_out


async def test_the_async_client(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire
) -> None:
    pending = await async_humanwire_client.approvals.create(
        title="Refund order 118",
        action=ACTION,
        approvers=[{"channel": "link", "to": "finance"}],
        follow_up_time=60,
    )
    decide_on_page(pending.approval_url or "", "approve")
    decided = await async_humanwire_client.approvals.wait(pending.interaction_id, timeout=10)
    assert decided.decision == "approved"
    assert (await async_humanwire_client.approvals.get(pending.interaction_id)) == decided
    consumed = await async_humanwire_client.approvals.consume(
        pending.interaction_id, action_digest=DIGEST
    )
    assert consumed.consumed
    entries = [entry async for entry in async_humanwire_client.audit.entries(page_size=2)]
    assert [e.sequence for e in entries] == list(range(1, len(entries) + 1))
    assert entries[-1].type == "approval.consumed"


def test_the_audit_log_pages_and_verifies(
    humanwire_client: HumanWire,
    humanwire_service: RunningService,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pending = humanwire_client.approvals.create(
        title="Wire $4,200 to ACME Ltd",
        action=ACTION,
        approvers=[{"channel": "link", "to": "cfo"}],
        follow_up_time=60,
    )
    decide_on_page(pending.approval_url or "", "approve", "fine")
    humanwire_client.approvals.wait(pending.interaction_id, timeout=10)
    humanwire_client.approvals.consume(pending.interaction_id, action_digest=DIGEST)

    everything = list(humanwire_client.audit.entries())
    types = [e.type for e in everything if e.interaction_id == pending.interaction_id]
    for expected in ("approval.requested", "approval.decision", "approval.decided"):
        assert expected in types
    assert types[-1] == "approval.consumed"
    paged = list(humanwire_client.audit.entries(page_size=1))
    assert paged == everything
    first = humanwire_client.audit.list(limit=1)
    assert len(first.entries) == 1 and first.next is not None
    rest = humanwire_client.audit.list(after=first.next)
    assert [e.sequence for e in rest.entries] == [e.sequence for e in everything[1:]]
    # Anyone holding the log checks it with nothing but the rule (the entries as sent).
    raw = httpx.get(
        f"{humanwire_client.base_url}/audit",
        params={"limit": 1000},
        headers={"Authorization": f"Bearer {humanwire_client.api_key}"},
        timeout=10,
    ).json()["entries"]
    assert [e["sequence"] for e in raw] == [e.sequence for e in everything]
    assert verify(raw) == []

    # The operator's side: the service's own database, while it runs. Its config, not
    # ``humanwire_config``: the session's service is whichever one the worker started
    # first, maybe under another directory's override of that fixture (another database).
    code = main(["audit", "verify", "--db", humanwire_service.config.db_path])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "chain intact" in out
