"""The console queue's live parts over real HTTP on loopback, on both stores: the queue's
list alone (``/console/queue``, what ``console.js`` polls), with the page's own filters,
refused to anyone not signed in (a 401, never the sign-in page a script would swap in)
and never another person's requests; and, under each request, the escalation still to
come (when each tier asks, and whom), gone once the tier is reached, escaped."""

from __future__ import annotations

import contextlib
import re
import sqlite3
import time
from collections.abc import Iterator
from datetime import datetime

import httpx
import pytest

from console_support import account_api, ask, console_service, csrf_in, person, signed_in
from humanwire.testing.service import RunningService

ADA_PHONE = "+12025550186"
BOB_PHONE = "+12025550187"
CY_MAIL = "cy@example.com"


@pytest.fixture
def service(database: str) -> Iterator[RunningService]:
    with console_service(database) as running:
        yield running


@pytest.fixture
def api(service: RunningService) -> Iterator[httpx.Client]:
    with account_api(service, "console live") as client:
        yield client


def _console(service: RunningService, api: httpx.Client, address: str) -> httpx.Client:
    """Signed in, following no redirects: a 401 or a redirect shows as such."""
    return signed_in(service, api, address, follow_redirects=False)[0]


def _ids(html: str) -> list[str]:
    return re.findall(r'<li class="msg" data-approval="([^"]+)"', html)


def _item(html: str, interaction_id: str) -> str:
    """The queue's element of one request."""
    start = html.index(f'<li class="msg" data-approval="{interaction_id}"')
    rest = html[start + 1 :]
    ends = [i for i in (rest.find('<li class="msg" '), rest.find("</ul></div>")) if i >= 0]
    return html[start : start + 1 + min(ends)]


def _execute(database: str, statement: str) -> None:
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


def test_the_fragment_is_the_queue_with_the_page_filters(
    service: RunningService, api: httpx.Client
) -> None:
    ada = person(api, "Ada", [("sms", ADA_PHONE)])
    deploy = ask(api, "Deploy", [{"person": ada}], action={"name": "deploy", "arguments": {}})
    restart = ask(api, "Restart", [{"person": ada}], action={"name": "restart", "arguments": {}})
    with contextlib.closing(_console(service, api, ADA_PHONE)) as client:
        page = client.get("/console", params={"action": "deploy", "sort": "newest"})
        assert page.status_code == 200
        # The page names its fragment with its own query, and loads its script (local).
        assert 'data-live-src="/console/queue?action=deploy&amp;sort=newest"' in page.text
        assert '<script src="/static/console.js" defer></script>' in page.text
        assert 'role="status" data-live-announce' in page.text
        script = client.get("/static/console.js")
        assert script.status_code == 200 and "data-live-src" in script.text

        whole = client.get("/console/queue")
        assert whole.status_code == 200 and whole.headers["cache-control"] == "no-store"
        assert whole.text.startswith('<div data-live-queue data-count="2">')
        assert sorted(_ids(whole.text)) == sorted([deploy, restart])
        assert "<html" not in whole.text and "Standing approvals" not in whole.text
        narrowed = client.get("/console/queue", params={"action": "deploy", "sort": "newest"})
        assert _ids(narrowed.text) == [deploy] and 'data-count="1"' in narrowed.text
        # The same list as the page's own.
        assert narrowed.text in page.text
        none = client.get("/console/queue", params={"action": "nothing"})
        assert 'data-count="0"' in none.text and "Nothing waits for you." in none.text
        bad = client.get("/console/queue", params={"sort": "<b>"})
        assert bad.status_code == 400 and "sort:" in bad.text and "<b>" not in bad.text


def test_the_fragment_refuses_without_a_session_and_shows_only_ones_own(
    service: RunningService, api: httpx.Client, database: str
) -> None:
    ada = person(api, "Ada", [("sms", ADA_PHONE)])
    bob = person(api, "Bob", [("sms", BOB_PHONE)])
    adas = ask(api, "Ada's", [{"person": ada}])
    bobs = ask(api, "Bob's", [{"person": bob}])
    later = ask(
        api,
        "Bob's, Ada later",
        [{"person": bob}],
        escalation=[{"after": 500, "approvers": [{"person": ada}]}],
    )
    with httpx.Client(base_url=service.base_url, timeout=30) as nobody:
        refused = nobody.get("/console/queue")
        assert refused.status_code == 401 and "data-approval" not in refused.text
        nobody.cookies.set("hw_console_session", "not-a-session", path="/console")
        stale = nobody.get("/console/queue")
        assert stale.status_code == 401 and "data-approval" not in stale.text
        assert 'hw_console_session=""' in stale.headers.get("set-cookie", "")

    with contextlib.closing(_console(service, api, BOB_PHONE)) as bob_client:
        theirs = _ids(bob_client.get("/console/queue").text)
        assert sorted(theirs) == sorted([bobs, later]) and adas not in theirs
    with contextlib.closing(_console(service, api, ADA_PHONE)) as client:
        assert _ids(client.get("/console/queue").text) == [adas]  # not Bob's, nor later
        # Signed out: the token a copy of the cookie holds opens nothing.
        token = client.cookies.get("hw_console_session", path="/console")
        csrf = csrf_in(client.get("/console").text)
        assert client.post("/console/signout", data={"csrf": csrf}).status_code == 303
        client.cookies.set("hw_console_session", str(token), path="/console")
        assert client.get("/console/queue").status_code == 401
    with contextlib.closing(_console(service, api, ADA_PHONE)) as client:
        assert client.get("/console/queue").status_code == 200
        _execute(database, "UPDATE console_sessions SET expires_at = 1")  # expired
        expired = client.get("/console/queue")
        assert expired.status_code == 401 and adas not in expired.text


def test_each_request_shows_the_escalation_still_to_come(
    service: RunningService, api: httpx.Client
) -> None:
    ada = person(api, "Ada", [("sms", ADA_PHONE)])
    bob = person(api, "Bob", [("sms", BOB_PHONE)])
    before = time.time()
    iid = ask(
        api,
        "Deploy payments",
        [{"person": ada}],
        followUpTime=900,
        escalation=[
            {"after": 2, "approvers": [{"person": bob}]},
            {"after": 600, "approvers": [{"channel": "email", "to": CY_MAIL}]},
        ],
    )
    after = time.time()

    def tiers(client: httpx.Client, path: str) -> dict[str, tuple[float, str]]:
        html = client.get(path).text
        found = re.findall(
            r'<li data-escalation-tier="(\d)"><time datetime="([^"]+)">[^<]*</time>: ([^<]*)</li>',
            html,
        )
        return {t: (datetime.fromisoformat(at).timestamp(), who) for t, at, who in found}

    with contextlib.closing(_console(service, api, ADA_PHONE)) as client:
        # Tier 1 may be reached already; tier 2 is ten minutes away.
        shown = tiers(client, "/console")
        assert shown["2"][1] == f"{CY_MAIL} (Email)"
        assert before + 600 - 1 <= shown["2"][0] <= after + 600 + 1
        assert tiers(client, f"/console/approvals/{iid}")["2"] == shown["2"]
        assert "Escalation to come" in client.get(f"/console/approvals/{iid}").text
        # Reached, tier 1 is no longer to come (Bob is asked); tier 2 still is.
        deadline = time.monotonic() + 30
        while "1" in shown and time.monotonic() < deadline:
            time.sleep(0.2)
            shown = tiers(client, "/console/queue")
        assert set(shown) == {"2"}
    with contextlib.closing(_console(service, api, BOB_PHONE)) as bob_client:
        assert _ids(bob_client.get("/console/queue").text) == [iid]


def test_the_escalation_to_come_before_it_is_reached_names_whom(
    service: RunningService, api: httpx.Client
) -> None:
    ada = person(api, "Ada", [("sms", ADA_PHONE)])
    bob = person(api, "Bob", [("sms", BOB_PHONE)])
    iid = ask(
        api,
        "Deploy <b>payments</b>",
        [{"person": ada}],
        escalation=[
            {"after": 300, "approvers": [{"person": bob}, {"channel": "email", "to": CY_MAIL}]}
        ],
    )
    plain = ask(api, "No escalation", [{"person": ada}])
    with contextlib.closing(_console(service, api, ADA_PHONE)) as client:
        page = client.get("/console").text
        item = _item(page, iid)
        assert f": {BOB_PHONE} (SMS), {CY_MAIL} (Email)</li>" in item
        assert "Escalation to come" in item
        assert "<b>payments" not in page and "&lt;b&gt;payments" in page
        assert "data-escalation" not in _item(page, plain)
