"""Approval requests in the inbox over real HTTP (no browser), on both stores: what it
shows of each (escaped), deciding as an approver the way their page would (``via:
inbox``), what it refuses, and the live stream's notice of a decision."""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from humanwire.testing.service import RunningService, fast_config, start_test_service

HOSTILE = "<script>alert(1)</script>"
ACTION = {"name": "wire_money", "arguments": {"amount": 4200, "to": "ACME <Ltd>"}}


@pytest.fixture
def service(database: str) -> Iterator[RunningService]:
    running = start_test_service(database, fast_config(database))
    try:
        yield running
    finally:
        running.stop()


@contextlib.contextmanager
def _logged_in(service: RunningService, key: str) -> Iterator[tuple[httpx.Client, str]]:
    """A cookie-keeping client logged in to the inbox, and its CSRF token."""
    with httpx.Client(base_url=service.base_url, follow_redirects=True, timeout=30) as client:
        page = client.get(f"/inbox?key={key}")
        found = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert found is not None
        yield client, found.group(1)


def _ask(service: RunningService, key: str, **body: Any) -> dict[str, Any]:
    response = httpx.post(
        f"{service.base_url}/approvals",
        json=body,
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def _two_of_three(service: RunningService, key: str) -> dict[str, Any]:
    return _ask(
        service,
        key,
        title=f"Wire $4,200 {HOSTILE}",
        description="Invoice 118",
        action=ACTION,
        approvers=[
            {"channel": "link", "to": "Ada"},
            {"channel": "link", "to": "Bob"},
            {"channel": "link", "to": "Cy"},
        ],
        quorum=2,
        followUpTime=120,
    )


def _flash(page: httpx.Response) -> str:
    found = re.search(r'<div class="flash[^"]*"[^>]*data-flash>(.*?)</div>', page.text)
    assert found is not None, page.text[:2000]
    return found.group(1)


def test_the_inbox_shows_an_approval_and_decides_it_as_two_approvers(
    service: RunningService,
) -> None:
    key = service.create_account("approvals inbox")
    asked = _two_of_three(service, key)
    iid = asked["interactionId"]
    with _logged_in(service, key) as (client, csrf):
        page = client.get("/inbox").text
        assert f'data-approval="{iid}"' in page
        assert HOSTILE not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert "ACME &lt;Ltd&gt;" in page and "wire_money" in page and "Invoice 118" in page
        assert "0 of 2 approvals · 0 of 1 rejections" in page
        assert 'data-approval-state="pending"' in page
        for position, name in enumerate(("Ada", "Bob", "Cy")):
            assert f'<option value="{position}">{name} (Link)</option>' in page

        target = f"/inbox/approvals/{iid}"
        first = client.post(
            target,
            data={"csrf": csrf, "approver": "0", "decision": "approve", "comment": HOSTILE},
        )
        assert first.status_code == 200 and _flash(first) == "Approved as Ada (Link)."
        assert HOSTILE not in first.text
        assert "1 of 2 approvals" in first.text
        assert 'data-approval-state="pending"' in first.text
        assert "approved via the inbox: “&lt;script&gt;" in first.text
        # Ada decided: she is no longer offered, and her first decision stands.
        assert '<option value="0">' not in first.text
        again = client.post(target, data={"csrf": csrf, "approver": "0", "decision": "reject"})
        assert "decided already" in _flash(again)

        second = client.post(target, data={"csrf": csrf, "approver": "2", "decision": "approve"})
        assert _flash(second) == "Approved as Cy (Link)."
        assert 'data-approval-state="approved"' in second.text
        assert f'action="/inbox/approvals/{iid}"' not in second.text  # nothing left to decide
        late = client.post(target, data={"csrf": csrf, "approver": "1", "decision": "reject"})
        assert _flash(late) == "This approval request is no longer open."

    decided = httpx.get(
        f"{service.base_url}/approvals/{iid}", headers={"Authorization": f"Bearer {key}"}
    ).json()
    assert decided["decision"] == "approved" and decided["status"] == "ended"
    assert [(d["approver"]["to"], d["via"]) for d in decided["decisions"]] == [
        ("Ada", "inbox"),
        ("Cy", "inbox"),
    ]
    assert decided["decisions"][0]["comment"] == HOSTILE


def test_the_inbox_refuses_what_is_not_a_decision(service: RunningService) -> None:
    key = service.create_account("approvals refused")
    other_key = service.create_account("someone else")
    iid = _two_of_three(service, key)["interactionId"]
    with _logged_in(service, key) as (client, csrf):
        target = f"/inbox/approvals/{iid}"
        for posted, said in (
            ({"approver": "0", "decision": "maybe"}, "Choose Approve or Reject."),
            ({"approver": "x", "decision": "approve"}, "Choose an approver."),
            ({"approver": "9", "decision": "approve"}, "no such approver of this request"),
        ):
            refused = client.post(target, data={"csrf": csrf, **posted})
            assert refused.status_code == 200 and _flash(refused) == said
        no_csrf = client.post(target, data={"approver": "0", "decision": "approve"})
        assert no_csrf.status_code == 403
        not_one = client.post(
            "/inbox/approvals/nope", data={"csrf": csrf, "approver": "0", "decision": "approve"}
        )
        assert not_one.status_code == 404 and "no interaction" in not_one.text
    # Another account's inbox cannot decide this one, nor see it.
    with _logged_in(service, other_key) as (other, other_csrf):
        assert f'data-approval="{iid}"' not in other.get("/inbox").text
        stranger = other.post(
            f"/inbox/approvals/{iid}",
            data={"csrf": other_csrf, "approver": "0", "decision": "approve"},
        )
        assert stranger.status_code == 404 and "no interaction" in stranger.text
    # Nor with its bearer key (no session, no CSRF): a 404, not a redirect.
    by_key = httpx.post(
        f"{service.base_url}/inbox/approvals/{iid}",
        data={"approver": "0", "decision": "approve"},
        headers={"Authorization": f"Bearer {other_key}"},
    )
    assert by_key.status_code == 404 and "no interaction" in by_key.text
    pending = httpx.get(
        f"{service.base_url}/approvals/{iid}", headers={"Authorization": f"Bearer {key}"}
    ).json()
    assert pending["status"] == "pending" and pending["decisions"] == []


def test_a_decision_is_a_live_change(service: RunningService) -> None:
    key = service.create_account("approvals live")
    iid = _two_of_three(service, key)["interactionId"]
    received: list[str] = []
    connected = threading.Event()

    def listen() -> None:
        with httpx.stream(
            "GET",
            f"{service.base_url}/inbox/events",
            headers={"Authorization": f"Bearer {key}"},
            timeout=10,
        ) as stream:
            for line in stream.iter_lines():
                if line.startswith(": connected"):
                    connected.set()
                if line.startswith("data:") and iid in line:
                    received.append(line)
                    return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    assert connected.wait(5)
    # One approval of two: the request stays pending, yet the inbox hears of it.
    decided = httpx.post(
        f"{service.base_url}/inbox/approvals/{iid}",
        data={"approver": "1", "decision": "approve"},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert decided.status_code == 303
    listener.join(5)
    assert received == [f'data: {{"kind": "approval", "id": "{iid}"}}']


def _state_of(page: str, iid: str) -> str:
    item = page[page.index(f'data-approval="{iid}"') :]
    found = re.search(r'data-approval-state="([a-z_]+)">(.*?)</span>\s*</span>', item)
    assert found is not None
    return found.group(1) + " " + " ".join(re.findall(r">([a-z ]+)</span>", found.group(0)))


def test_timed_out_and_consumed_requests_say_so(service: RunningService) -> None:
    key = service.create_account("approvals states")
    headers = {"Authorization": f"Bearer {key}"}
    base = service.base_url
    quiet = _ask(
        service,
        key,
        title="Nobody answers",
        approvers=[{"channel": "link", "to": "Ada"}],
        followUpTime=1,
        onTimeout="none",
    )["interactionId"]
    used = _ask(
        service,
        key,
        title="Used once",
        action=ACTION,
        approvers=[{"channel": "link", "to": "Ada"}],
        followUpTime=120,
    )
    with _logged_in(service, key) as (client, csrf):
        approved = client.post(
            f"/inbox/approvals/{used['interactionId']}",
            data={"csrf": csrf, "approver": "0", "decision": "approve"},
        )
        assert _flash(approved) == "Approved as Ada (Link)."
        assert _state_of(approved.text, used["interactionId"]) == "approved approved"
        consumed = httpx.post(
            f"{base}/approvals/{used['interactionId']}/consume",
            json={"actionDigest": used["actionDigest"]},
            headers=headers,
        )
        assert consumed.status_code == 200
        deadline = time.monotonic() + 10
        while httpx.get(f"{base}/approvals/{quiet}", headers=headers).json()["status"] == "pending":
            assert time.monotonic() < deadline, "the windows never closed"
            time.sleep(0.05)
        page = client.get("/inbox").text
    assert _state_of(page, used["interactionId"]) == "approved approved consumed"
    assert _state_of(page, quiet) == "timed_out timed out"
    assert "No decision in time (0 of 1 approvals); nothing was decided." in page
    assert f'action="/inbox/approvals/{quiet}"' not in page


def test_without_the_sandbox_the_inbox_shows_approvals_but_decides_none(database: str) -> None:
    config = fast_config(database)
    config.sandbox_enabled = False
    watching = start_test_service(database, config)
    try:
        key = watching.create_account("watch only")
        iid = _two_of_three(watching, key)["interactionId"]
        headers = {"Authorization": f"Bearer {key}"}
        page = httpx.get(f"{watching.base_url}/inbox", headers=headers).text
        assert f'data-approval="{iid}"' in page and "0 of 2 approvals" in page
        assert f'action="/inbox/approvals/{iid}"' not in page
        refused = httpx.post(
            f"{watching.base_url}/inbox/approvals/{iid}",
            data={"approver": "0", "decision": "approve"},
            headers=headers,
        )
        assert refused.status_code == 404
        pending = httpx.get(f"{watching.base_url}/approvals/{iid}", headers=headers).json()
        assert pending["decisions"] == []
    finally:
        watching.stop()
