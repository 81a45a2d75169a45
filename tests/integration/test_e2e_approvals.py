"""Approval requests end to end: the real service over loopback HTTP on both stores
(``start_service``), driven over plain HTTP: ``POST /approvals``, the approvers' pages
(browser form posts), sms replies through the sandbox, reminders and escalation as steps
of the schedule, ``onTimeout``, ``consume`` and the audit log."""

from __future__ import annotations

import asyncio
import itertools
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest
from e2e_support import HUMAN, StartService

from humanwire.server.approvals.audit import verify
from humanwire.server.delivery import Outbound, Sent
from humanwire.server.delivery.sandbox import SandboxProvider
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing import WebhookReceiver, fast_config
from humanwire.types import ApprovalDecidedEvent
from humanwire.types.approvals import action_digest
from pg_support import STORES, store_database

OTHER = "+12025550111"
THIRD = "+12025550122"
ACTION = {"name": "wire_money", "arguments": {"amount": 4200, "to": "ACME Ltd"}}


@pytest.fixture
def api(start_service: StartService) -> Iterator[httpx.Client]:
    service = start_service()
    key = service.create_account("approvals")
    with httpx.Client(
        base_url=service.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as client:
        yield client


def _ask(api: httpx.Client, **body: Any) -> dict[str, Any]:
    response = api.post("/approvals", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def _page(api: httpx.Client, url: str) -> str:
    return urlparse(url).path


def _decide(api: httpx.Client, url: str, decision: str, comment: str = "") -> httpx.Response:
    return api.post(
        _page(api, url),
        data={"decision": decision, "comment": comment},
        headers={"Authorization": ""},
        follow_redirects=True,
    )


def _deliveries(api: httpx.Client, to: str) -> list[dict[str, Any]]:
    response = api.get("/sandbox/messages", params={"to": to})
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()
    return found


def _until(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _reply(api: httpx.Client, sender: str, body: str, to: str, channel: str = "sms") -> None:
    response = api.post(
        "/sandbox/replies", json={"channel": channel, "from": sender, "to": to, "body": body}
    )
    assert response.status_code == 204, response.text


def _audit(api: httpx.Client) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    after = "0"
    while True:
        page = api.get("/audit", params={"after": after, "limit": 5}).json()
        entries += page["entries"]
        if page["next"] is None:
            return entries
        after = page["next"]


def test_two_of_three_on_their_pages_then_consumed_once(api: httpx.Client) -> None:
    asked = _ask(
        api,
        title="Wire $4,200 to ACME Ltd",
        description="Invoice 118",
        action=ACTION,
        approvers=[
            {"channel": "link", "to": "Ada"},
            {"channel": "link", "to": "Bob"},
            {"channel": "link", "to": "Cy"},
        ],
        quorum=2,
        followUpTime=30,
        metadata={"run": "r1"},
    )
    assert asked["status"] == "pending"
    assert asked["decision"] is None
    assert asked["actionDigest"] == action_digest(ACTION)
    assert [link["to"] for link in asked["links"]] == ["Ada", "Bob", "Cy"]
    assert asked["approvalUrl"] == asked["links"][0]["url"]
    assert asked["metadata"] == {"run": "r1"}
    ada, bob, _cy = (link["url"] for link in asked["links"])
    assert len({ada, bob, _cy}) == 3

    page = api.get(_page(api, ada), headers={"Authorization": ""})
    assert page.status_code == 200
    assert "Wire $4,200 to ACME Ltd" in page.text
    assert "wire_money" in page.text and "ACME Ltd" in page.text
    assert 'value="approve"' in page.text and "<script" not in page.text

    assert "your decision was recorded" in _decide(api, ada, "approve").text
    assert "You decided already" in _decide(api, ada, "reject", "changed my mind").text
    pending = api.get(f"/approvals/{asked['interactionId']}").json()
    assert pending["decision"] is None
    assert pending["response"] == "Waiting for a decision (1 of 2 approvals)."

    consume = f"/approvals/{asked['interactionId']}/consume"
    early = api.post(consume, json={"actionDigest": action_digest(ACTION)})
    assert (early.status_code, early.json()["error"]["code"]) == (409, "not_approved")

    _decide(api, bob, "approve", "fine")
    decided = api.get(f"/approvals/{asked['interactionId']}").json()
    assert decided["status"] == "ended"
    assert decided["decision"] == "approved"
    assert decided["timedOut"] is False
    assert decided["response"] == "Approved by Ada and Bob (2 of 2)."
    assert [(d["approver"]["to"], d["decision"], d["via"]) for d in decided["decisions"]] == [
        ("Ada", "approve", "page"),
        ("Bob", "approve", "page"),
    ]
    assert decided["decisions"][1]["comment"] == "fine"
    assert "no longer open" in _decide(api, _cy, "reject").text

    other = action_digest({**ACTION, "arguments": {"amount": 42000, "to": "ACME Ltd"}})
    wrong = api.post(consume, json={"actionDigest": other})
    assert (wrong.status_code, wrong.json()["error"]["field"]) == (400, "actionDigest")
    first = api.post(consume, json={"actionDigest": action_digest(ACTION)})
    assert (first.status_code, first.json()) == (200, {"consumed": True})
    again = api.post(consume, json={"actionDigest": action_digest(ACTION)})
    assert (again.status_code, again.json()["error"]["code"]) == (409, "already_consumed")

    entries = _audit(api)
    assert [e["type"] for e in entries] == [
        "approval.requested",
        "approval.asked",
        "approval.asked",
        "approval.asked",
        "approval.decision",
        "approval.decision_refused",
        "approval.decision",
        "approval.decided",
        "approval.decision_refused",
        "approval.consumed",
    ]
    assert verify(entries) == []
    assert entries[4]["actor"] == {"channel": "link", "to": "Ada"}
    # Refused decisions are entries too: Ada's second, and Cy's after the request settled.
    assert entries[5]["actor"] == {"channel": "link", "to": "Ada"}
    assert entries[5]["data"] == {"decision": "reject", "via": "page", "reason": "decided_before"}
    assert entries[8]["actor"] == {"channel": "link", "to": "Cy"}
    assert entries[8]["data"] == {"decision": "reject", "via": "page", "reason": "closed"}


def test_a_rejection_with_its_reason(api: httpx.Client) -> None:
    asked = _ask(
        api,
        title="Deploy to production",
        approvers=[{"channel": "link", "to": "Ada"}, {"channel": "link", "to": "Bob"}],
        followUpTime=30,
    )
    _decide(api, asked["links"][1]["url"], "reject", "not this quarter")
    decided = api.get(f"/approvals/{asked['interactionId']}").json()
    assert decided["decision"] == "rejected"
    assert decided["response"] == "Rejected by Bob: not this quarter."
    assert decided["actionDigest"] is None
    consumed = api.post(f"/approvals/{asked['interactionId']}/consume", json={})
    assert consumed.json()["error"]["code"] == "not_approved"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        (
            {"approvers": [{"channel": "sms", "to": HUMAN}, {"channel": "sms", "to": HUMAN}]},
            "approvers[1]",
        ),
        ({"approvers": [{"channel": "link", "to": f"p{i}"} for i in range(21)]}, "approvers"),
        ({"quorum": 2}, "quorum"),
        ({"rejectQuorum": 3}, "rejectQuorum"),
        (
            {
                "escalation": [
                    {"after": 5, "approvers": [{"channel": "link", "to": "Lead"}]},
                    {"after": 5, "approvers": [{"channel": "link", "to": "Boss"}]},
                ]
            },
            "escalation[1].after",
        ),
        ({"onTimeout": "maybe"}, "onTimeout"),
        ({"title": ""}, "title"),
        ({"waitTime": None, "followUpTime": None}, "waitTime"),
        # The innermost field, for a bad address as for an unknown channel.
        (
            {"approvers": [{"channel": "sms", "to": HUMAN}, {"channel": "sms", "to": "12345"}]},
            "approvers[1].to",
        ),
        (
            {"approvers": [{"channel": "sms", "to": HUMAN}, {"channel": "fax", "to": HUMAN}]},
            "approvers[1].channel",
        ),
        ({"approvers": [{"channel": "email", "to": "ada@example"}]}, "approvers[0].to"),
        (
            {"escalation": [{"after": 5, "approvers": [{"channel": "call", "to": "12"}]}]},
            "escalation[0].approvers[0].to",
        ),
    ],
)
def test_bad_requests_name_the_field_and_send_nothing(
    api: httpx.Client, changes: dict[str, Any], field: str
) -> None:
    body = {"title": "Refund", "approvers": [{"channel": "sms", "to": HUMAN}], "followUpTime": 30}
    body.update(changes)
    body = {k: v for k, v in body.items() if v is not None}
    response = api.post("/approvals", json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["field"] == field, error
    assert _deliveries(api, HUMAN) == []


def test_sms_yes_answers_the_held_request(api: httpx.Client) -> None:
    def approver() -> None:
        sent = _until(lambda: _deliveries(api, HUMAN))
        assert "Reply YES or NO" in sent[0]["text"]
        assert "Action: wire_money(amount=4200" in sent[0]["text"]
        _reply(api, HUMAN, "yes", sent[0]["from"])

    thread = threading.Thread(target=approver)
    thread.start()
    held = _ask(
        api,
        title="Wire $4,200",
        action=ACTION,
        approvers=[{"channel": "sms", "to": HUMAN}],
        waitTime=10,
    )
    thread.join()
    assert held["status"] == "ended"
    assert held["decision"] == "approved"
    assert held["decisions"][0]["via"] == "sandbox"  # who played the phone
    assert held["response"] == f"Approved by {HUMAN} (1 of 1)."


def test_one_number_two_requests_needs_the_code(api: httpx.Client) -> None:
    first = _ask(
        api, title="Refund A", approvers=[{"channel": "sms", "to": OTHER}], followUpTime=30
    )
    second = _ask(
        api, title="Refund B", approvers=[{"channel": "sms", "to": OTHER}], followUpTime=30
    )
    texts = [d["text"] for d in reversed(_deliveries(api, OTHER))]
    assert "Reply YES or NO" in texts[0]
    code = re.search(r"Reply YES (\d{4}) or NO \1", texts[1])
    assert code is not None, texts[1]
    sender = _deliveries(api, OTHER)[0]["from"]

    _reply(api, OTHER, "YES", sender)  # which one? never a guess
    clarifying = _until(lambda: len(_deliveries(api, OTHER)) == 3 and _deliveries(api, OTHER))
    assert "could not tell which request" in clarifying[0]["text"]
    assert code.group(1) in clarifying[0]["text"]
    _reply(api, OTHER, "banana", sender)  # unclear: one text back
    _until(lambda: len(_deliveries(api, OTHER)) == 4)
    for approval in (first, second):
        assert api.get(f"/approvals/{approval['interactionId']}").json()["decision"] is None

    _reply(api, OTHER, f"NO {code.group(1)} not this quarter", sender)
    rejected = api.get(f"/approvals/{second['interactionId']}").json()
    assert rejected["decision"] == "rejected"
    assert rejected["decisions"][0]["comment"] == "not this quarter"
    assert api.get(f"/approvals/{first['interactionId']}").json()["decision"] is None
    _reply(api, OTHER, "y", sender)  # one open now: no code needed
    assert api.get(f"/approvals/{first['interactionId']}").json()["decision"] == "approved"


def test_the_same_person_counts_once(api: httpx.Client) -> None:
    asked = _ask(
        api,
        title="Rotate keys",
        approvers=[
            {"channel": "sms", "to": THIRD},
            {"channel": "whatsapp", "to": THIRD},
            {"channel": "link", "to": "Ada"},
        ],
        quorum=2,
        followUpTime=30,
    )
    sender = _deliveries(api, THIRD)[-1]["from"]
    _reply(api, THIRD, "yes", sender)
    view = api.get(f"/approvals/{asked['interactionId']}").json()
    assert view["decision"] is None and len(view["decisions"]) == 1
    _decide(api, asked["links"][0]["url"], "approve")
    assert api.get(f"/approvals/{asked['interactionId']}").json()["decision"] == "approved"


def test_undecided_windows_apply_on_timeout(api: httpx.Client) -> None:
    asked = _ask(
        api,
        title="Ship it",
        approvers=[{"channel": "link", "to": "Ada"}],
        followUpTime=1,
        onTimeout="approve",
    )
    ended = _until(
        lambda: (
            (v := api.get(f"/approvals/{asked['interactionId']}").json())["status"] == "ended" and v
        )
    )
    assert ended["decision"] == "approved"
    assert ended["timedOut"] is True
    assert ended["response"] == "No decision in time: approved by default."
    status = api.get(f"/interactions/{asked['interactionId']}/status").json()
    assert status["kind"] == "approval"
    assert status["result"]["eventType"] == "approval.decided"
    assert status["result"]["payload"]["timedOut"] is True
    assert [e["type"] for e in _audit(api)][-1] == "approval.timed_out"

    none = _ask(
        api,
        title="Maybe",
        approvers=[{"channel": "link", "to": "Ada"}],
        waitTime=1,
        followUpTime=1,
        onTimeout="none",
    )
    assert none["status"] == "pending"  # the held wait ended first
    ended = _until(
        lambda: (
            (v := api.get(f"/approvals/{none['interactionId']}").json())["status"] == "ended" and v
        )
    )
    assert ended["decision"] is None and ended["timedOut"] is True
    assert ended["response"] == "No decision in time (0 of 1 approvals); nothing was decided."


def _at(delivery: dict[str, Any]) -> float:
    """When the service delivered it (unix seconds)."""
    return datetime.fromisoformat(delivery["createdAt"]).timestamp()


def test_reminders_then_escalation_to_the_lead(api: httpx.Client) -> None:
    started = time.time()
    asked = _ask(
        api,
        title="Refund $900",
        approvers=[{"channel": "sms", "to": OTHER}],
        escalation=[{"after": 2.5, "approvers": [{"channel": "sms", "to": THIRD}]}],
        remindEvery=1,
        followUpTime=30,
    )
    while time.time() < started + 2.3:  # not before its ``after``
        assert _deliveries(api, THIRD) == []
        time.sleep(0.05)
    lead = _until(lambda: _deliveries(api, THIRD))
    assert "Approval requested: Refund $900" in lead[-1]["text"]
    # Due 2.5 s after the request was made (which was after ``started``), on time.
    assert started + 2.5 <= _at(lead[-1]) < started + 4.5
    _until(lambda: len(_deliveries(api, OTHER)) == 4, timeout=15)  # asked + 3 reminders
    sent = list(reversed(_deliveries(api, OTHER)))
    assert ["Reminder" in d["text"] for d in sent] == [False, True, True, True]
    gaps = [_at(b) - _at(a) for a, b in itertools.pairwise(sent)]
    assert all(gap >= 0.9 for gap in gaps), gaps  # remindEvery apart
    time.sleep(1.5)
    assert len(_deliveries(api, OTHER)) == 4  # at most 3 reminders
    _reply(api, THIRD, "yes ok", lead[-1]["from"])
    decided = api.get(f"/approvals/{asked['interactionId']}").json()
    assert decided["decision"] == "approved"
    assert decided["decisions"][0]["approver"] == {"channel": "sms", "to": THIRD}
    entries = _audit(api)
    types = [e["type"] for e in entries]
    reminded = [e for e in entries if e["type"] == "approval.reminded"]
    assert [e["data"]["reminder"] for e in reminded if e["actor"]["to"] == OTHER] == [1, 2, 3]
    assert types.count("approval.escalated") == 1
    assert verify(entries) == []


CONSUME_ATTEMPTS = 30


def test_consume_is_exactly_once_under_200_concurrent_calls(api: httpx.Client) -> None:
    asked = _ask(
        api,
        title="Wire",
        action=ACTION,
        approvers=[{"channel": "link", "to": "Ada"}],
        followUpTime=30,
    )
    _decide(api, asked["links"][0]["url"], "approve")
    path = f"/approvals/{asked['interactionId']}/consume"

    async def consume(client: httpx.AsyncClient) -> int:
        # 200 calls at once on 4 PostgreSQL connections: on a loaded machine some wait
        # longer for one than the store allows and are answered 503 (nothing done),
        # which a client retries after Retry-After, as the API says.
        for _attempt in range(CONSUME_ATTEMPTS):
            answer = await client.post(path, json={"actionDigest": action_digest(ACTION)})
            if answer.status_code != 503:
                return answer.status_code
            assert answer.json()["error"]["code"] == "unavailable", answer.text
            await asyncio.sleep(float(answer.headers["retry-after"]))
        raise AssertionError(f"still 503 after {CONSUME_ATTEMPTS} attempts")

    async def race() -> list[int]:
        async with httpx.AsyncClient(
            base_url=str(api.base_url),
            headers=dict(api.headers),
            timeout=240,  # the last of 200 is answered after the others, slowly when loaded
            limits=httpx.Limits(max_connections=200),
        ) as client:
            answers = await asyncio.gather(*(consume(client) for _ in range(200)))
        return list(answers)

    statuses = asyncio.run(race())
    assert statuses.count(200) == 1
    assert statuses.count(409) == 199
    assert [e["type"] for e in _audit(api)].count("approval.consumed") == 1


def test_respond_async_with_a_key_then_the_decision_after_the_wait_goes_to_webhooks(
    api: httpx.Client,
) -> None:
    with WebhookReceiver() as receiver:
        hook = api.post("/webhooks", json={"url": receiver.url, "eventTypes": ["approval.decided"]})
        assert hook.status_code == 201, hook.text
        body = {"title": "Pay", "approvers": [{"channel": "link", "to": "Ada"}], "waitTime": 1}
        headers = {"Prefer": "respond-async", "Idempotency-Key": "pay-1"}
        first = api.post("/approvals", json=body, headers=headers)
        assert first.status_code == 202, first.text
        assert first.headers["Preference-Applied"] == "respond-async"
        accepted = first.json()
        assert accepted["status"] == "pending" and accepted["links"][0]["to"] == "Ada"
        again = api.post("/approvals", json=body, headers=headers)
        assert again.json()["interactionId"] == accepted["interactionId"]
        time.sleep(1.5)  # the held wait is over: the decision goes to the webhooks
        _decide(api, accepted["links"][0]["url"], "approve", "go")
        (event,) = receiver.wait_for("approval.decided", timeout=10)
    assert isinstance(event, ApprovalDecidedEvent)
    assert event.payload.interaction_id == accepted["interactionId"]
    assert event.payload.decision == "approved"
    assert event.payload.response == "Approved by Ada (1 of 1)."
    assert event.payload.decisions[0].comment == "go"
    assert len(_deliveries(api, HUMAN)) == 0


@pytest.mark.parametrize("store", STORES)
def test_escalation_and_reminders_survive_a_restart(store: str, tmp_path: Path) -> None:
    with store_database(store, tmp_path / "restart.db", "hw_approvals") as db:
        config = replace(fast_config(tmp_path / "unused.db"), db_path=db)
        runner = ServiceRunner(config, "127.0.0.1", 0).start()
        port = runner.port
        try:
            key = runner.create_account("restart")
            headers = {"Authorization": f"Bearer {key}"}
            with httpx.Client(base_url=runner.base_url, headers=headers, timeout=30) as api:
                started = time.time()
                asked = _ask(
                    api,
                    title="Refund $900",
                    approvers=[{"channel": "sms", "to": OTHER}],
                    escalation=[{"after": 2, "approvers": [{"channel": "sms", "to": THIRD}]}],
                    remindEvery=1.5,
                    followUpTime=60,
                )
                runner.stop()  # down while the escalation and a reminder fall due
                time.sleep(2.5)
                runner = ServiceRunner(replace(config), "127.0.0.1", port).start()
                lead = _until(lambda: _deliveries(api, THIRD), timeout=15)
                assert "Approval requested: Refund $900" in lead[-1]["text"]
                assert _at(lead[-1]) >= started + 2
                # Every reminder of both, once: the first approver's 3, and the lead's 3
                # (asked by the escalation, reminded from then on).
                _until(lambda: len(_deliveries(api, OTHER)) == 4, timeout=15)
                _until(lambda: len(_deliveries(api, THIRD)) == 4, timeout=15)
                time.sleep(2)  # nothing more comes
                assert len(_deliveries(api, OTHER)) == 4
                assert len(_deliveries(api, THIRD)) == 4
                for to in (OTHER, THIRD):
                    sent = list(reversed(_deliveries(api, to)))
                    assert ["Reminder" in d["text"] for d in sent] == [False, True, True, True]
                _reply(api, THIRD, "no", lead[-1]["from"])
                decided = api.get(f"/approvals/{asked['interactionId']}").json()
                assert decided["decision"] == "rejected"
                entries = _audit(api)
                types = [e["type"] for e in entries]
                assert types.count("approval.escalated") == 1
                assert types.count("approval.asked") == 2
                reminded = [e for e in entries if e["type"] == "approval.reminded"]
                for to in (OTHER, THIRD):
                    numbers = [e["data"]["reminder"] for e in reminded if e["actor"]["to"] == to]
                    assert numbers == [1, 2, 3], (to, numbers)
                assert verify(entries) == []
        finally:
            runner.stop()


def test_hostile_input_is_answered_in_the_documented_shape(api: httpx.Client) -> None:
    anonymous = {"Authorization": ""}
    for token in ("nope", "x" * 3000, "%00", "..%2F..%2Fetc"):
        shown = api.get(f"/a/{token}", headers=anonymous)
        assert shown.status_code == 404
        assert "Approval not found" in shown.text or "no such endpoint" in shown.text
        posted = api.post(f"/a/{token}", data={"decision": "approve"}, headers=anonymous)
        assert posted.status_code == 404
    asked = _ask(api, title="T", approvers=[{"channel": "link", "to": "Ada"}], followUpTime=30)
    path = _page(api, asked["links"][0]["url"])
    for body in ({"decision": "maybe"}, {}, {"decision": "approve" * 1000}):
        assert api.post(path, data=body, headers=anonymous).status_code == 400
    as_json = api.post(path, json={"decision": "approve"}, headers=anonymous)
    assert as_json.status_code == 400
    long = api.post(path, data={"decision": "reject", "comment": "x" * 100_000}, headers=anonymous)
    assert long.status_code in (303, 413)
    if long.status_code == 303:  # recorded, the comment cut to 2,000 characters
        decided = api.get(f"/approvals/{asked['interactionId']}").json()
        assert len(decided["decisions"][0]["comment"]) == 2000
    for params, field in (
        ({"after": "-1"}, "after"),
        ({"limit": "0"}, "limit"),
        ({"limit": "x"}, "limit"),
    ):
        response = api.get("/audit", params=params)
        assert (response.status_code, response.json()["error"]["field"]) == (400, field)
    missing = api.get("/approvals/00000000-0000-0000-0000-000000000000")
    assert missing.json()["error"]["code"] == "not_found"
    consume = api.post("/approvals/nope/consume", json={"actionDigest": "sha256:xyz"})
    assert consume.status_code in (400, 404)


def test_a_call_approver_decides_by_key_or_word(api: httpx.Client) -> None:
    asked = _ask(
        api,
        title="Wire $4,200",
        action=ACTION,
        approvers=[{"channel": "call", "to": THIRD}, {"channel": "call", "to": OTHER}],
        quorum=2,
        remindEvery=1,
        followUpTime=30,
        metadata={"run": "r7"},
    )
    calls = _until(
        lambda: (
            len(_deliveries(api, THIRD) + _deliveries(api, OTHER)) == 2
            and (_deliveries(api, THIRD) + _deliveries(api, OTHER))
        )
    )
    assert all(c["kind"] == "call" for c in calls)
    assert "press 1 to approve or 2 to reject" in calls[0]["text"]
    assert 'wire_money(amount=4200, to="ACME Ltd")' in calls[0]["text"]
    first, second = (c["interactionId"] for c in calls)
    assert asked["interactionId"] not in (first, second)  # each call is its own
    ended = api.post(f"/sandbox/calls/{first}", json={"outcome": "completed", "summary": "1"})
    assert ended.status_code == 200, ended.text
    view = api.get(f"/approvals/{asked['interactionId']}").json()
    assert [d["via"] for d in view["decisions"]] == ["sandbox"]
    unclear = api.post(f"/sandbox/calls/{second}", json={"outcome": "completed", "summary": "hmm"})
    assert unclear.status_code == 200
    assert api.get(f"/approvals/{asked['interactionId']}").json()["decision"] is None
    time.sleep(1.5)  # nobody is called again by a reminder
    assert len(_deliveries(api, THIRD) + _deliveries(api, OTHER)) == 2
    status = api.get(f"/interactions/{first}/status").json()
    assert status["kind"] == "call" and status["metadata"] == {"run": "r7"}


def test_whatsapp_replies_decide_and_name_the_code(api: httpx.Client) -> None:
    alone = _ask(
        api,
        title="Refund $90",
        approvers=[{"channel": "whatsapp", "to": OTHER}],
        followUpTime=30,
    )
    (asked,) = _deliveries(api, OTHER)
    assert asked["channel"] == "whatsapp"
    assert "Reply YES or NO" in asked["text"]
    sender = asked["from"]
    _reply(api, OTHER, "Approve: looks fine", sender, channel="whatsapp")
    approved = api.get(f"/approvals/{alone['interactionId']}").json()
    assert approved["decision"] == "approved"
    assert [(d["via"], d["comment"]) for d in approved["decisions"]] == [("sandbox", "looks fine")]

    first = _ask(
        api, title="Refund A", approvers=[{"channel": "whatsapp", "to": OTHER}], followUpTime=30
    )
    second = _ask(
        api, title="Refund B", approvers=[{"channel": "whatsapp", "to": OTHER}], followUpTime=30
    )
    texts = [d["text"] for d in reversed(_deliveries(api, OTHER))]
    assert len(texts) == 3
    assert "Reply YES or NO" in texts[1]  # alone on the number when asked
    code = re.search(r"Reply YES (\d{4}) or NO \1", texts[2])
    assert code is not None, texts[2]

    _reply(api, OTHER, "no", sender, channel="whatsapp")  # which one? never a guess
    clarifying = _until(lambda: len(_deliveries(api, OTHER)) == 4 and _deliveries(api, OTHER))
    assert clarifying[0]["channel"] == "whatsapp"
    assert "could not tell which request" in clarifying[0]["text"]
    assert code.group(1) in clarifying[0]["text"]
    # The code names a whatsapp approver: an sms from the number decides nothing.
    _reply(api, OTHER, f"NO {code.group(1)}", sender, channel="sms")
    for approval in (first, second):
        assert api.get(f"/approvals/{approval['interactionId']}").json()["decision"] is None

    _reply(api, OTHER, f"NO {code.group(1)} not this quarter", sender, channel="whatsapp")
    rejected = api.get(f"/approvals/{second['interactionId']}").json()
    assert rejected["decision"] == "rejected"
    assert [(d["via"], d["comment"]) for d in rejected["decisions"]] == [
        ("sandbox", "not this quarter")
    ]
    assert api.get(f"/approvals/{first['interactionId']}").json()["decision"] is None
    _reply(api, OTHER, "yes", sender, channel="whatsapp")  # one open now: no code needed
    assert api.get(f"/approvals/{first['interactionId']}").json()["decision"] == "approved"


def test_a_call_approver_decides_by_a_spoken_word(api: httpx.Client) -> None:
    approving = _ask(
        api,
        title="Wire $4,200",
        action=ACTION,
        approvers=[{"channel": "call", "to": THIRD}, {"channel": "call", "to": OTHER}],
        quorum=2,
        followUpTime=30,
    )
    _until(lambda: len(_deliveries(api, THIRD) + _deliveries(api, OTHER)) == 2)
    calls = {c["to"]: c["interactionId"] for c in _deliveries(api, THIRD) + _deliveries(api, OTHER)}
    assert "say approve or reject" in _deliveries(api, THIRD)[0]["text"]
    said = {"outcome": "completed", "summary": "Approve."}
    assert api.post(f"/sandbox/calls/{calls[THIRD]}", json=said).status_code == 200
    said = {"outcome": "completed", "summary": "yes, go ahead"}
    assert api.post(f"/sandbox/calls/{calls[OTHER]}", json=said).status_code == 200
    approved = api.get(f"/approvals/{approving['interactionId']}").json()
    assert approved["decision"] == "approved"
    assert [(d["approver"]["to"], d["decision"], d["via"]) for d in approved["decisions"]] == [
        (THIRD, "approve", "sandbox"),
        (OTHER, "approve", "sandbox"),
    ]

    rejecting = _ask(
        api,
        title="Delete the backups",
        approvers=[{"channel": "call", "to": THIRD}],
        followUpTime=30,
    )
    _until(lambda: len(_deliveries(api, THIRD)) == 2)
    call = _deliveries(api, THIRD)[0]["interactionId"]
    said = {"outcome": "completed", "summary": "reject, not this quarter"}
    assert api.post(f"/sandbox/calls/{call}", json=said).status_code == 200
    rejected = api.get(f"/approvals/{rejecting['interactionId']}").json()
    assert rejected["decision"] == "rejected"
    assert [(d["decision"], d["via"]) for d in rejected["decisions"]] == [("reject", "sandbox")]
    assert rejected["response"].startswith(f"Rejected by {THIRD}")


def test_reject_quorum_takes_that_many_distinct_people(api: httpx.Client) -> None:
    asked = _ask(
        api,
        title="Drop the table",
        approvers=[
            {"channel": "sms", "to": THIRD},
            {"channel": "whatsapp", "to": THIRD},
            {"channel": "link", "to": "Ada"},
            {"channel": "link", "to": "Bob"},
        ],
        quorum=2,
        rejectQuorum=2,
        followUpTime=30,
    )
    path = f"/approvals/{asked['interactionId']}"
    ada, bob = (link["url"] for link in asked["links"])
    sms_from = next(d["from"] for d in _deliveries(api, THIRD) if d["channel"] == "sms")
    wa_from = next(d["from"] for d in _deliveries(api, THIRD) if d["channel"] == "whatsapp")

    _reply(api, THIRD, "no too risky", sms_from)
    one = api.get(path).json()
    assert one["status"] == "pending" and one["decision"] is None
    assert [(d["approver"], d["decision"]) for d in one["decisions"]] == [
        ({"channel": "sms", "to": THIRD}, "reject")
    ]
    # The same person again, by their other channel: still one rejection.
    _reply(api, THIRD, "no", wa_from, channel="whatsapp")
    again = api.get(path).json()
    assert again["status"] == "pending" and again["decision"] is None
    assert len(again["decisions"]) == 1

    assert "your decision was recorded" in _decide(api, ada, "approve").text
    assert api.get(path).json()["decision"] is None  # 1 approval, 1 rejection: open

    _decide(api, bob, "reject", "agreed, too risky")
    rejected = api.get(path).json()
    assert rejected["status"] == "ended"
    assert rejected["decision"] == "rejected"
    assert [(d["approver"]["to"], d["decision"]) for d in rejected["decisions"]] == [
        (THIRD, "reject"),
        ("Ada", "approve"),
        ("Bob", "reject"),
    ]
    types = [e["type"] for e in _audit(api)]
    assert types.count("approval.decision") == 3
    assert types.count("approval.decided") == 1


def test_without_comments_none_is_offered_nor_kept(api: httpx.Client) -> None:
    asked = _ask(
        api,
        title="Restart the cluster",
        approvers=[
            {"channel": "link", "to": "Ada"},
            {"channel": "sms", "to": OTHER},
        ],
        quorum=2,
        remindEvery=1,
        allowComment=False,
        followUpTime=30,
    )
    page = api.get(_page(api, asked["links"][0]["url"]), headers={"Authorization": ""})
    assert page.status_code == 200
    assert 'value="approve"' in page.text
    assert 'name="comment"' not in page.text and "Comment" not in page.text

    (sms,) = _deliveries(api, OTHER)
    assert "Reply YES or NO." in sms["text"]
    assert "reason" not in sms["text"]
    reminders = _until(lambda: len(_deliveries(api, OTHER)) == 2 and _deliveries(api, OTHER))
    assert "Reminder" in reminders[0]["text"] and "reason" not in reminders[0]["text"]
    _reply(api, OTHER, "banana", sms["from"])  # unclear: the clarifying text offers none
    clarifying = _until(lambda: len(_deliveries(api, OTHER)) >= 3 and _deliveries(api, OTHER))
    assert "could not read that" in clarifying[0]["text"]
    assert "reason" not in clarifying[0]["text"]

    # A comment sent anyway is not kept: not on the record, not in the audit log.
    _decide(api, asked["links"][0]["url"], "approve", "ship it")
    _reply(api, OTHER, "yes but only after 6pm", sms["from"])
    decided = api.get(f"/approvals/{asked['interactionId']}").json()
    assert decided["decision"] == "approved"
    assert [(d["via"], d["comment"]) for d in decided["decisions"]] == [
        ("page", None),
        ("sandbox", None),
    ]
    decisions = [e for e in _audit(api) if e["type"] == "approval.decision"]
    assert [e["data"]["comment"] for e in decisions] == [None, None]
    assert "ship it" not in str(_audit(api)) and "6pm" not in str(_audit(api))


def test_an_escalation_interrupted_before_its_text_went_is_asked_again(
    api: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The escalation's step dies after marking the lead asked, before the text goes (as
    a replica killed there would): run again, it asks the lead (their text has no
    ``approval.asked`` entry yet), once, and their reminders follow."""
    lead = "+12025550133"
    failed: list[str] = []
    deliver = SandboxProvider.deliver

    async def dies_once(self: SandboxProvider, item: Outbound) -> Sent:
        if item.to_addr == lead and not failed:
            failed.append(item.text)
            raise RuntimeError("the step died before the text went out")
        return await deliver(self, item)

    monkeypatch.setattr(SandboxProvider, "deliver", dies_once)
    _ask(
        api,
        title="Refund $900",
        approvers=[{"channel": "link", "to": "Ada"}],
        escalation=[{"after": 1, "approvers": [{"channel": "sms", "to": lead}]}],
        remindEvery=1,
        followUpTime=30,
    )
    asked = _until(lambda: _deliveries(api, lead), timeout=15)
    assert failed and "Approval requested: Refund $900" in failed[0]
    assert "Approval requested: Refund $900" in asked[-1]["text"]
    _until(lambda: len(_deliveries(api, lead)) == 4, timeout=15)  # asked + 3 reminders
    time.sleep(1.5)
    sent = list(reversed(_deliveries(api, lead)))
    assert ["Reminder" in d["text"] for d in sent] == [False, True, True, True]
    types = [e["type"] for e in _audit(api)]
    assert (types.count("approval.escalated"), types.count("approval.asked")) == (1, 2)
    assert types.count("approval.reminded") == 3
