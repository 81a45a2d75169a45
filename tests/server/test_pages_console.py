"""The approvers' console over real HTTP on loopback (no browser), on both stores: a
person of the directory signs in by a code sent to a confirmed address (SMS, email), sees
the requests they are asked across the account's agents, the nearest deadline first, and
decides them exactly as from a message (quorum by people, ``via: console`` in the
decision and the audit, consumed once); and every refusal: another's request (404 on
every route), a session ended, a code wrong, expired, reused or asked too often, a POST
without its CSRF token, and the same answer for an address nobody has."""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from console_support import ask, csrf_in, deliveries, person, sign_in_code
from humanwire.testing.service import RunningService, fast_config, start_test_service

ADA_PHONE = "+12025550140"
ADA_MAIL = "ada@example.com"
BOB_PHONE = "+12025550141"
ACTION = {"name": "deploy", "arguments": {"service": "payments-api", "note": "<b>now</b>"}}


@pytest.fixture
def database_url(database: str) -> str:
    return database


@pytest.fixture
def service(database: str) -> Iterator[RunningService]:
    running = start_test_service(database, fast_config(database))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def api(service: RunningService) -> Iterator[httpx.Client]:
    key = service.create_account("console")
    with httpx.Client(
        base_url=service.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as client:
        yield client


def _execute(database: str, statement: str) -> None:
    """Changes the store behind the service's back (an expiry passed)."""
    if database.startswith("postgresql"):
        import psycopg

        with psycopg.connect(database, autocommit=True) as connection:
            connection.execute(statement)
        return
    lite = sqlite3.connect(database)
    try:
        lite.execute(statement)
        lite.commit()
    finally:
        lite.close()


def _browser(service: RunningService) -> httpx.Client:
    return httpx.Client(base_url=service.base_url, follow_redirects=True, timeout=30)


def _ask_code(client: httpx.Client, address: str) -> tuple[httpx.Response, str]:
    csrf = csrf_in(client.get("/console/signin").text)
    return client.post("/console/signin", data={"csrf": csrf, "address": address}), csrf


def _signed_in(
    service: RunningService, api: httpx.Client, address: str, to: str
) -> tuple[httpx.Client, str]:
    """A cookie-keeping client signed in as the person at ``to``; its queue's CSRF token."""
    client = _browser(service)
    sent, csrf = _ask_code(client, address)
    assert sent.status_code == 200, sent.text
    code = sign_in_code(api, to)
    assert code is not None
    queue = client.post("/console/code", data={"csrf": csrf, "address": address, "code": code})
    assert queue.status_code == 200 and queue.url.path == "/console", queue.text
    return client, csrf_in(queue.text)


def _people(api: httpx.Client) -> tuple[str, str]:
    ada = person(api, "Ada", [("sms", ADA_PHONE), ("email", ADA_MAIL)])
    bob = person(api, "Bob", [("sms", BOB_PHONE)])
    return ada, bob


def _decisions(api: httpx.Client, interaction_id: str) -> list[dict[str, Any]]:
    decisions: list[dict[str, Any]] = api.get(f"/approvals/{interaction_id}").json()["decisions"]
    return decisions


def test_a_person_signs_in_by_sms_and_decides_from_the_queue(
    service: RunningService, api: httpx.Client
) -> None:
    ada, bob = _people(api)
    both = ask(
        api,
        "Deploy payments",
        [{"person": ada}, {"person": bob}],
        quorum=2,
        action=ACTION,
        followUpTime=900,
    )
    sooner = ask(api, "Rotate keys", [{"person": ada}], followUpTime=300)
    bobs = ask(api, "Bob alone", [{"person": bob}])
    # Typed as people type a number: spaces and dashes.
    client, csrf = _signed_in(service, api, "+1 202-555-0140", ADA_PHONE)
    with contextlib.closing(client):
        session = next(c for c in client.cookies.jar if c.name == "hw_console_session")
        assert session.path == "/console" and session.has_nonstandard_attr("HttpOnly")
        assert str(session.get_nonstandard_attr("SameSite")).lower() == "strict"
        page = client.get("/console").text
        assert "Waiting for you (2)" in page and "Ada" in page
        # The nearest deadline first; Bob's alone is not hers.
        assert page.index(f'data-approval="{sooner}"') < page.index(f'data-approval="{both}"')
        assert bobs not in page
        assert "payments-api" in page and "&lt;b&gt;now&lt;/b&gt;" in page and "<b>now" not in page
        assert "0 of 2 approvals · 0 of 1 rejections" in page

        decided = client.post(
            f"/console/approvals/{both}",
            data={"csrf": csrf, "decision": "approve", "comment": "looks fine"},
        )
        assert decided.status_code == 200 and "Approved." in decided.text
        assert "1 of 2 approvals" in decided.text and "You decided" in decided.text
        again = client.post(f"/console/approvals/{both}", data={"csrf": csrf, "decision": "reject"})
        assert "You decided already" in again.text

    # Counted as Ada's, once, from the console; pending until Bob (a distinct person).
    [by_ada] = _decisions(api, both)
    assert by_ada["via"] == "console" and by_ada["approver"]["person"] == ada
    assert by_ada["comment"] == "looks fine"
    assert api.get(f"/approvals/{both}").json()["decision"] is None
    # Ada's own approval page now finds her decided: no second approval.
    asked_ada = [d for d in deliveries(api, ADA_PHONE) if "Deploy payments" in d["text"]][-1]
    ada_page = re.search(r"(http://\S+/a/\S+)", asked_ada["text"])
    assert ada_page is not None, asked_ada["text"]
    httpx.post(ada_page.group(1), data={"decision": "approve"})
    assert len(_decisions(api, both)) == 1
    assert api.get(f"/approvals/{both}").json()["decision"] is None
    asked_bob = [d for d in deliveries(api, BOB_PHONE) if "Deploy payments" in d["text"]][-1]
    # Bob (a distinct person) approves on his approval page: the quorum is reached.
    bob_page = re.search(r"(http://\S+/a/\S+)", asked_bob["text"])
    assert bob_page is not None, asked_bob["text"]
    assert httpx.post(bob_page.group(1), data={"decision": "approve"}).status_code == 303
    view = api.get(f"/approvals/{both}").json()
    assert view["decision"] == "approved", view
    assert [d["via"] for d in view["decisions"]] == ["console", "page"]
    digest = {"actionDigest": view["actionDigest"]}
    assert api.post(f"/approvals/{both}/consume", json=digest).status_code == 200
    assert api.post(f"/approvals/{both}/consume", json=digest).status_code == 409
    entries = api.get("/audit", params={"limit": 500}).json()["entries"]
    [entry] = [
        e for e in entries if e["type"] == "approval.decision" and e["data"]["via"] == "console"
    ]
    assert entry["interactionId"] == both and entry["actor"]["person"] == ada


def test_a_person_signs_in_by_email(service: RunningService, api: httpx.Client) -> None:
    ada, _bob = _people(api)
    rejected = ask(api, "Drop the table", [{"person": ada}])
    client, csrf = _signed_in(service, api, "Ada@Example.com", ADA_MAIL)
    with contextlib.closing(client):
        assert rejected in client.get("/console").text
        done = client.post(
            f"/console/approvals/{rejected}",
            data={"csrf": csrf, "decision": "reject", "comment": "not today"},
        )
        assert "Rejected." in done.text and "Nothing waits for you." in done.text
    view = api.get(f"/approvals/{rejected}").json()
    assert view["decision"] == "rejected"
    assert view["decisions"][0]["via"] == "console"


def test_nobody_learns_whether_an_address_is_known(
    service: RunningService, api: httpx.Client
) -> None:
    _people(api)
    unconfirmed = "+12025550149"
    person(api, "Cy", [("sms", unconfirmed)], confirmed=False)
    pages = {}
    with _browser(service) as client:
        for address in (ADA_PHONE, "+12025550148", unconfirmed, "nobody@example.com"):
            sent, _csrf = _ask_code(client, address)
            assert sent.status_code == 200
            pages[address] = sent.text.replace(address, "ADDRESS").replace(
                csrf_in(sent.text), "CSRF"
            )
    assert len(set(pages.values())) == 1
    assert sign_in_code(api, ADA_PHONE) is not None
    assert sign_in_code(api, unconfirmed) is None  # never through an unconfirmed address


def test_a_wrong_expired_or_reused_code_is_refused(
    service: RunningService, api: httpx.Client, database_url: str
) -> None:
    _people(api)
    with _browser(service) as client:
        _sent, csrf = _ask_code(client, ADA_PHONE)
        code = sign_in_code(api, ADA_PHONE)
        assert code is not None
        wrong = f"{(int(code) + 1) % 1_000_000:06d}"
        for given in (wrong, "abc", ""):
            refused = client.post(
                "/console/code", data={"csrf": csrf, "address": ADA_PHONE, "code": given}
            )
            assert refused.status_code == 400 and "wrong, expired or used" in refused.text
        assert client.get("/console").url.path == "/console/signin"
        posted = {"csrf": csrf, "address": ADA_PHONE, "code": code}
        assert client.post("/console/code", data=posted).url.path == "/console"
    with _browser(service) as other:
        reused = other.post(
            "/console/code", data={**posted, "csrf": csrf_in(other.get("/console/signin").text)}
        )
        assert reused.status_code == 400
        # Expired: a new code, its expiry passed.
        _sent, csrf = _ask_code(other, ADA_PHONE)
        fresh = sign_in_code(api, ADA_PHONE)
        assert fresh is not None
        _execute(database_url, "UPDATE console_codes SET expires_at = 1")
        late = other.post("/console/code", data={"csrf": csrf, "address": ADA_PHONE, "code": fresh})
        assert late.status_code == 400
        # Void after five wrong answers, even the right one.
        _sent, csrf = _ask_code(other, ADA_PHONE)
        last = sign_in_code(api, ADA_PHONE)
        assert last is not None
        miss = f"{(int(last) + 1) % 1_000_000:06d}"
        for _ in range(5):
            other.post("/console/code", data={"csrf": csrf, "address": ADA_PHONE, "code": miss})
        void = other.post("/console/code", data={"csrf": csrf, "address": ADA_PHONE, "code": last})
        assert void.status_code == 400


def test_codes_are_rate_limited_known_or_not(service: RunningService, api: httpx.Client) -> None:
    _people(api)
    with _browser(service) as client:
        for address in (BOB_PHONE, "+12025550147"):
            statuses = [_ask_code(client, address)[0].status_code for _ in range(6)]
            assert statuses == [200] * 5 + [429], (address, statuses)
    assert len([d for d in deliveries(api, BOB_PHONE) if "sign-in code" in d["text"]]) == 5


def test_every_post_needs_its_csrf_token(service: RunningService, api: httpx.Client) -> None:
    ada, _bob = _people(api)
    iid = ask(api, "Deploy payments", [{"person": ada}])
    with _browser(service) as client:
        client.get("/console/signin")
        assert client.post("/console/signin", data={"address": ADA_PHONE}).status_code == 403
        assert sign_in_code(api, ADA_PHONE) is None
        forged = client.post("/console/signin", data={"address": ADA_PHONE, "csrf": "forged"})
        assert forged.status_code == 403
    client, _csrf = _signed_in(service, api, ADA_PHONE, ADA_PHONE)
    with contextlib.closing(client):
        refused = client.post(f"/console/approvals/{iid}", data={"decision": "approve"})
        assert refused.status_code == 403
        assert client.post("/console/signout", data={}).status_code == 403
    assert _decisions(api, iid) == []


def test_a_person_sees_only_what_they_are_asked(service: RunningService, api: httpx.Client) -> None:
    ada, bob = _people(api)
    bobs = ask(api, "Bob alone", [{"person": bob}])
    later = ask(
        api,
        "Escalated later",
        [{"person": bob}],
        escalation=[{"after": 500, "approvers": [{"person": ada}]}],
    )
    message = api.post("/messages/sms", json={"to": BOB_PHONE, "message": "hi"}).json()
    key = service.create_account("another account")
    with httpx.Client(
        base_url=service.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as other_api:
        # Another account's request, asking the same number (another account's person).
        theirs = ask(other_api, "Theirs", [{"channel": "sms", "to": ADA_PHONE}])
    client, csrf = _signed_in(service, api, ADA_PHONE, ADA_PHONE)
    with contextlib.closing(client):
        page = client.get("/console").text
        assert "Nothing waits for you." in page
        for iid in (bobs, later, theirs, message["interactionId"], "int_nothing"):
            assert client.get(f"/console/approvals/{iid}").status_code == 404, iid
            posted = {"csrf": csrf, "decision": "approve"}
            assert client.post(f"/console/approvals/{iid}", data=posted).status_code == 404
    for iid in (bobs, later):
        assert _decisions(api, iid) == []


def test_a_session_ends_at_once(
    service: RunningService, api: httpx.Client, database_url: str
) -> None:
    ada, _bob = _people(api)
    iid = ask(api, "Deploy payments", [{"person": ada}])

    def still_in(client: httpx.Client, csrf: str) -> bool:
        """Whether the session opens the request's page and takes a POST (a decision
        not understood: 400 signed in, 401 signed out; nothing is decided)."""
        shown = client.get(f"/console/approvals/{iid}")
        posted = client.post(f"/console/approvals/{iid}", data={"csrf": csrf, "decision": "?"})
        assert (shown.url.path == "/console/signin") is (posted.status_code == 401), posted
        return shown.url.path != "/console/signin"

    # Signed out: the token a copy of the cookie holds opens nothing.
    client, csrf = _signed_in(service, api, ADA_PHONE, ADA_PHONE)
    with contextlib.closing(client):
        assert still_in(client, csrf)
        token = client.cookies.get("hw_console_session", path="/console")
        assert client.post("/console/signout", data={"csrf": csrf}).url.path == "/console/signin"
        client.cookies.set("hw_console_session", str(token), path="/console")
        assert not still_in(client, csrf)
    # Rotated: signing in again ends the session the browser had.
    client, csrf = _signed_in(service, api, ADA_PHONE, ADA_PHONE)
    with contextlib.closing(client):
        before = client.cookies.get("hw_console_session", path="/console")
        _sent, csrf = _ask_code(client, ADA_PHONE)
        client.post(
            "/console/code",
            data={"csrf": csrf, "address": ADA_PHONE, "code": sign_in_code(api, ADA_PHONE)},
        )
        after = client.cookies.get("hw_console_session", path="/console")
        assert before != after
        with _browser(service) as copy:
            copy.cookies.set("hw_console_session", str(before), path="/console")
            assert copy.get("/console").url.path == "/console/signin"
        # Expired.
        _execute(database_url, "UPDATE console_sessions SET expires_at = 1")
        assert client.get("/console").url.path == "/console/signin"
    # The person deleted from the directory.
    client, csrf = _signed_in(service, api, ADA_MAIL, ADA_MAIL)
    with contextlib.closing(client):
        assert client.get("/console").url.path == "/console"
        assert api.delete(f"/people/{ada}").status_code == 204
        assert client.get("/console").url.path == "/console/signin"
    assert _decisions(api, iid) == []
