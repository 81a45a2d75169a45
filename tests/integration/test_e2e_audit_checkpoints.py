"""The service's signed checkpoints end to end, on both stores: with ``[audit]
signing_key`` the schedule signs each account's head as it moves, the checkpoint reaches
the account's webhooks as an ``audit.checkpoint`` event (what a receiver keeps outside the
database) and ``humanwire audit verify --public-key`` passes the untouched log, signed up
to its head. A refused late decision is an entry of the log the checkpoint signs."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from e2e_support import StartService

from humanwire.cli import main
from humanwire.server.approvals.checkpoints import Checkpoint, checkpoint_marks, generate_key_pair
from humanwire.testing import WebhookReceiver
from humanwire.types import AuditCheckpointEvent

SIGNING_KEY, PUBLIC_KEY = generate_key_pair()


def _audit(api: httpx.Client) -> list[dict[str, Any]]:
    page = api.get("/audit", params={"after": 0, "limit": 100})
    assert page.status_code == 200, page.text
    entries: list[dict[str, Any]] = page.json()["entries"]
    return entries


def _ask(api: httpx.Client, approver: str) -> dict[str, Any]:
    body = {"title": "Ship it", "approvers": [{"channel": "link", "to": approver}]}
    asked = api.post("/approvals", json={**body, "followUpTime": 60})
    assert asked.status_code == 200, asked.text
    found: dict[str, Any] = asked.json()
    return found


def _checkpoint_at(receiver: WebhookReceiver, sequence: int) -> Checkpoint:
    """The first checkpoint event signing entry ``sequence`` (waiting for it)."""
    count = 1
    while True:
        events = receiver.wait_for("audit.checkpoint", count=count, timeout=30)
        for event in events:
            assert isinstance(event, AuditCheckpointEvent)
            if event.payload.sequence == sequence:
                return Checkpoint.from_wire(event.payload.model_dump(by_alias=True))
        count = len(events) + 1


def test_heads_are_signed_as_they_move_and_published_to_webhooks(
    start_service: StartService, capsys: pytest.CaptureFixture[str]
) -> None:
    service = start_service(audit_signing_key=SIGNING_KEY, audit_checkpoint_every=0.5)
    key = service.create_account("audited")
    auth = {"Authorization": f"Bearer {key}"}
    with (
        WebhookReceiver() as receiver,
        httpx.Client(base_url=service.base_url, headers=auth, timeout=30) as api,
    ):
        hook = api.post("/webhooks", json={"url": receiver.url, "eventTypes": ["audit.checkpoint"]})
        assert hook.status_code == 201, hook.text
        page = _ask(api, "Ada")["links"][0]["url"].split("/", 3)[3]
        for decision in ("approve", "reject"):  # the second comes after the request settled
            answer = api.post(
                f"/{page}",
                data={"decision": decision},
                headers={"Authorization": ""},
                follow_redirects=True,
            )
            assert answer.status_code == 200, answer.text
        entries = _audit(api)
        assert [e["type"] for e in entries][-2:] == [
            "approval.decided",
            "approval.decision_refused",
        ]
        assert entries[-1]["data"]["reason"] == "closed"

        first = _checkpoint_at(receiver, entries[-1]["sequence"])
        assert first.hash == entries[-1]["hash"]
        marks, breaks = checkpoint_marks([first], [PUBLIC_KEY])
        assert breaks == [] and len(marks) == 1

        _ask(api, "Bo")
        entries = _audit(api)
        later = _checkpoint_at(receiver, entries[-1]["sequence"])  # the head moved: signed again
        assert later.hash == entries[-1]["hash"] and later.sequence > first.sequence

    code = main(["audit", "verify", "--db", service.config.db_path, "--public-key", PUBLIC_KEY])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"{len(entries)} entries, chain intact, signed up to entry {len(entries)}" in out
