"""``client.approvals`` and ``client.audit`` on both clients, against a scripted transport:
what goes on the wire, how a held wait is timed, the typed errors of ``consume``, and the
audit log read page after page. (End to end against the service: tests/integration.)"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from unit_support import Script, call, error, ok, raises

from humanwire import AlreadyConsumedError, AsyncHumanWire, HumanWire, NotApprovedError
from humanwire.errors import ConflictError, InvalidRequestError
from humanwire.types.approvals import Approval, action_digest

ID = "6f1c7a9e-2b6e-4d3a-9a52-0d7c1c1f0a11"
A = {"channel": "sms", "to": "+12025550100"}
ACTION = {"name": "wire", "arguments": {"amount": 4200, "to": "ACME"}}
DIGEST = action_digest(ACTION)


def approval(status: str = "ended", decision: str | None = "approved", **more: Any) -> dict:
    return {
        "interactionId": ID,
        "status": status,
        "decision": decision,
        "timedOut": False,
        "decisions": [],
        "actionDigest": DIGEST,
        "approvalUrl": "http://127.0.0.1:9/a/x",
        "response": "Approved by +12025550100 (1 of 1).",
        **more,
    }


Client = HumanWire | AsyncHumanWire


async def test_create_sends_the_wire_body_with_a_key_and_holds_for_the_wait(
    client: Client, script: Script
) -> None:
    script.reply(ok(approval()))
    result = await call(
        client.approvals.create(
            title="Wire $4,200 to ACME",
            approvers=[A, {"channel": "slack", "to": "U0123ABCD"}],
            action=ACTION,
            quorum=2,
            reject_quorum=1,
            escalation=[{"after": 120, "approvers": [{"channel": "call", "to": "+12025550111"}]}],
            remind_every=60,
            wait_time=30,
            follow_up_time=600,
            on_timeout="none",
            allow_comment=False,
            metadata={"run": "7"},
            idempotency_key="approve-7",
        )
    )
    assert isinstance(result, Approval) and result.decision == "approved"
    assert result.action_digest == DIGEST
    sent = script.last
    assert sent.method == "POST" and sent.url.path == "/approvals"
    assert sent.headers["Idempotency-Key"] == "approve-7"
    assert script.body() == {
        "title": "Wire $4,200 to ACME",
        "action": ACTION,
        "approvers": [A, {"channel": "slack", "to": "U0123ABCD"}],
        "quorum": 2,
        "rejectQuorum": 1,
        "escalation": [{"after": 120, "approvers": [{"channel": "call", "to": "+12025550111"}]}],
        "remindEvery": 60,
        "waitTime": 30,
        "followUpTime": 600,
        "onTimeout": "none",
        "allowComment": False,
        "metadata": {"run": "7"},
    }
    assert script.read_timeouts()[-1] >= 30  # the read timeout covers the held wait


async def test_a_bad_request_is_refused_before_sending(client: Client, script: Script) -> None:
    refused = await raises(
        InvalidRequestError,
        lambda: client.approvals.create(title="x", approvers=[A, dict(A)], wait_time=10),
    )
    assert refused.field == "approvers[1]" and script.requests == []
    refused = await raises(
        InvalidRequestError, lambda: client.approvals.create(title="x", approvers=[A])
    )
    assert refused.field == "waitTime"


async def test_a_retry_keeps_the_key(client: Client, script: Script) -> None:
    script.reply(error(503, "unavailable"), ok(approval()))
    await call(client.approvals.create(title="x", approvers=[A], wait_time=5))
    keys = script.keys()
    assert len(keys) == 2 and keys[0] == keys[1] and keys[0]


async def test_get_reads_the_record(client: Client, script: Script) -> None:
    script.reply(ok(approval("pending", None)))
    result = await call(client.approvals.get(ID))
    assert result.status == "pending" and result.decision is None
    assert script.last.url.path == f"/approvals/{ID}" and script.last.method == "GET"
    await raises(InvalidRequestError, lambda: client.approvals.get(""))


async def test_wait_holds_the_status_long_poll_until_decided(
    client: Client, script: Script
) -> None:
    status = {"interactionId": ID, "status": "ended", "kind": "approval", "channel": "sms"}
    script.reply(ok(approval("pending", None)), ok(status), ok(approval()))
    result = await call(client.approvals.wait(ID))
    assert result.decision == "approved"
    paths = [(r.method, r.url.path, r.url.params.get("wait")) for r in script.requests]
    assert paths == [
        ("GET", f"/approvals/{ID}", None),
        ("GET", f"/interactions/{ID}/status", "60"),
        ("GET", f"/approvals/{ID}", None),
    ]


async def test_wait_with_a_timeout_returns_the_pending_record(
    client: Client, script: Script
) -> None:
    now = [0.0]
    client._options = client._options.copy(clock=lambda: now[0])

    def status(request: httpx.Request) -> httpx.Response:
        now[0] += float(request.url.params["wait"])
        return ok({"interactionId": ID, "status": "pending", "kind": "approval"})

    script.reply(ok(approval("pending", None)), status, ok(approval("pending", None)))
    result = await call(client.approvals.wait(ID, timeout=5))
    assert result.status == "pending"
    assert [r.url.params.get("wait") for r in script.requests] == [None, "5", None]


async def test_consume_sends_the_digest_and_maps_its_conflicts(
    client: Client, script: Script
) -> None:
    script.reply(
        ok({"consumed": True}),
        error(409, "already_consumed", "used once already"),
        error(409, "not_approved", "rejected"),
    )
    first = await call(client.approvals.consume(ID, action_digest=DIGEST))
    assert first.consumed is True
    assert script.body() == {"actionDigest": DIGEST}
    assert script.last.url.path == f"/approvals/{ID}/consume"
    again = await raises(
        AlreadyConsumedError, lambda: client.approvals.consume(ID, action_digest=DIGEST)
    )
    assert isinstance(again, ConflictError) and again.code == "already_consumed"
    await raises(NotApprovedError, lambda: client.approvals.consume(ID, action_digest=DIGEST))
    keys = script.keys()
    assert len(set(keys)) == 3  # a fresh key per call: a re-run is not a replay
    refused = await raises(
        InvalidRequestError, lambda: client.approvals.consume(ID, action_digest="md5:x")
    )
    assert refused.field == "actionDigest"


def entry(n: int) -> dict[str, Any]:
    return {
        "sequence": n,
        "at": "2026-11-25T12:00:00Z",
        "type": "approval.decision",
        "interactionId": ID,
        "actor": A,
        "data": {"decision": "approve"},
        "prev": "sha256:" + "0" * 64,
        "hash": "sha256:" + f"{n:064x}",
    }


async def test_audit_list_reads_one_page(client: Client, script: Script) -> None:
    script.reply(ok({"entries": [entry(1), entry(2)], "next": "2"}))
    page = await call(client.audit.list(after=0, limit=2))
    assert [e.sequence for e in page.entries] == [1, 2] and page.next == "2"
    assert dict(script.last.url.params) == {"after": "0", "limit": "2"}
    await raises(InvalidRequestError, lambda: client.audit.list(limit=0))


async def test_audit_entries_follow_the_cursor_to_the_end(
    client: Client, script: Script, mode: str
) -> None:
    script.reply(
        ok({"entries": [entry(1), entry(2)], "next": "2"}),
        ok({"entries": [entry(3)], "next": None}),
    )
    if mode == "sync":
        assert isinstance(client, HumanWire)
        sequences = [e.sequence for e in client.audit.entries(page_size=2)]
    else:
        assert isinstance(client, AsyncHumanWire)
        sequences = [e.sequence async for e in client.audit.entries(page_size=2)]
    assert sequences == [1, 2, 3]
    assert [r.url.params.get("after") for r in script.requests] == [None, "2"]


@pytest.mark.parametrize("after", ["", True, 1.5])
async def test_audit_refuses_a_bad_cursor(client: Client, after: Any) -> None:
    await raises(InvalidRequestError, lambda: client.audit.list(after=after))
