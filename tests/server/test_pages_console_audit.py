"""The console's audit trail over real HTTP on loopback, on both stores: a signed-in
person reads the entries of the requests they were asked (never another person's, another
account's, nor a request whose escalation has not reached them), filtered by approval,
person, event, action and time, a page at a time, each with its hash link; the check of
the account's chain (the one ``humanwire audit verify`` runs) shown, and where an entry
edited behind the service's back breaks it; the downloads (JSON Lines, CSV) of the same
entries; a standing approval's revocation written to the chain (from the console and by
the API) and shown to whom it concerns; and every refusal: a filter that cannot be read
(400, naming it), an approval that is not theirs (404), hostile strings escaped."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
import rfc8785

from console_support import (
    account_api,
    ask,
    grant_deploy,
    grantable_service,
    person,
    signed_in,
)
from humanwire.server.approvals.audit import entry_hash
from humanwire.server.approvals.checkpoints import generate_key_pair
from humanwire.testing.service import RunningService, fast_config, start_test_service

ADA_PHONE = "+12025550160"
BOB_PHONE = "+12025550161"
HOSTILE = '<script>alert("x")</script>'
FORMULA = "=SUM(1)"
"""A link approver's name a spreadsheet would run."""
DEPLOY = {"name": "deploy", "arguments": {"service": "payments-api"}}


@pytest.fixture
def service(database: str) -> Iterator[RunningService]:
    with grantable_service(database) as running:
        yield running


@pytest.fixture
def api(service: RunningService) -> Iterator[httpx.Client]:
    with account_api(service, "audit console") as client:
        yield client


def _log(api: httpx.Client) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = api.get("/audit", params={"limit": 1000}).json()["entries"]
    return entries


def _shown(page: str) -> list[int]:
    """The sequences of the entries a page lists, in its order."""
    import re

    return [int(found) for found in re.findall(r'data-entry="(\d+)"', page)]


def _execute(database: str, statement: str, params: tuple[Any, ...]) -> list[Any]:
    """Reads or changes the store behind the service's back; the rows read."""
    if database.startswith("postgresql"):
        import psycopg

        with psycopg.connect(database, autocommit=True) as connection:
            cursor = connection.execute(statement.replace("?", "%s").encode(), params)
            return cursor.fetchall() if cursor.description else []
    lite = sqlite3.connect(database)
    try:
        found = lite.execute(statement, params).fetchall()
        lite.commit()
        return found
    finally:
        lite.close()


def _rewrite_and_rehash(database: str, first_hash: str) -> None:
    """What whoever writes the database can do without the key: edit the first entry of
    the account whose first entry hashed ``first_hash``, hash every entry again as the
    service would, and move the head: a chain (and head) that checks alone."""
    [(account_id,)] = _execute(
        database, "SELECT account_id FROM audit WHERE hash = ?", (first_hash,)
    )
    rows = _execute(database, "SELECT entry FROM audit WHERE account_id = ?", (account_id,))
    entries = sorted((json.loads(row[0]) for row in rows), key=lambda e: e["sequence"])
    entries[0]["data"]["title"] = "Nothing to see"
    prev = "sha256:" + "0" * 64
    for entry in entries:
        digest = entry_hash(prev, entry)
        _execute(
            database,
            "UPDATE audit SET entry = ?, prev = ?, hash = ? WHERE account_id = ? AND sequence = ?",
            (rfc8785.dumps(entry).decode(), prev, digest, account_id, entry["sequence"]),
        )
        prev = digest
    _execute(database, "UPDATE audit_heads SET hash = ? WHERE account_id = ?", (prev, account_id))


class World:
    """Ada's account: requests asked of her, one of Bob's alone, one escalating to her
    later; another account's request asking her number."""

    def __init__(self, service: RunningService, api: httpx.Client) -> None:
        self.ada = person(api, "Ada", [("sms", ADA_PHONE)])
        self.bob = person(api, "Bob", [("sms", BOB_PHONE)])
        self.deploy = ask(
            api,
            "Deploy payments",
            [{"person": self.ada}, {"channel": "link", "to": "Cy"}],
            action=DEPLOY,
        )
        self.hostile = ask(
            api,
            HOSTILE,
            [{"person": self.ada}, {"channel": "link", "to": FORMULA}],
            action={"name": "rotate", "arguments": {"note": HOSTILE}},
            allowComment=True,
        )
        self.bobs = ask(api, "Bob alone", [{"person": self.bob}], action=DEPLOY)
        self.later = ask(
            api,
            "Escalated later",
            [{"person": self.bob}],
            escalation=[{"after": 500, "approvers": [{"person": self.ada}]}],
        )
        with account_api(service, "another account") as other:
            self.theirs = ask(other, "Theirs", [{"channel": "sms", "to": ADA_PHONE}])


def test_a_person_reads_the_entries_of_their_requests_alone(
    service: RunningService, api: httpx.Client
) -> None:
    world = World(service, api)
    client, csrf = signed_in(service, api, ADA_PHONE)
    with contextlib.closing(client):
        queue = client.get("/console").text
        assert 'href="/console/audit"' in queue
        decided = client.post(
            f"/console/approvals/{world.hostile}",
            data={"csrf": csrf, "decision": "reject", "comment": HOSTILE},
        )
        assert decided.status_code == 200
        page = client.get("/console/audit")
        assert page.status_code == 200
        log = _log(api)
        mine = [e for e in log if e["interactionId"] in (world.deploy, world.hostile)]
        # Newest first, exactly the entries of her two requests.
        assert _shown(page.text) == [e["sequence"] for e in reversed(mine)]
        for iid in (world.bobs, world.later, world.theirs):
            assert iid not in page.text
        # Hostile strings (a title, a comment) are escaped, never markup.
        assert HOSTILE not in page.text and "&lt;script&gt;" in page.text
        # Each entry with its hash link: shortened, the full values in title and details.
        decision = next(e for e in mine if e["type"] == "approval.decision")
        assert f'title="{decision["hash"]}"' in page.text
        assert f'data-prev="{decision["prev"]}"' in page.text
        assert decision["hash"].removeprefix("sha256:")[:10] + "…" in page.text
        assert "console" in page.text and "Ada (" + world.ada + ")" in page.text
        # The chain's check, over the account's whole log.
        assert f"Chain verified through entry {log[-1]['sequence']}" in page.text


def test_filters_narrow_the_entries(service: RunningService, api: httpx.Client) -> None:
    world = World(service, api)
    client, csrf = signed_in(service, api, ADA_PHONE)
    with contextlib.closing(client):
        client.post(
            f"/console/approvals/{world.deploy}", data={"csrf": csrf, "decision": "approve"}
        )
        log = _log(api)
        of_deploy = [e["sequence"] for e in reversed(log) if e["interactionId"] == world.deploy]
        page = client.get("/console/audit", params={"approval": world.deploy}).text
        assert _shown(page) == of_deploy and len(of_deploy) >= 3
        decisions = [
            e["sequence"]
            for e in reversed(log)
            if e["type"] == "approval.decision" and e["interactionId"] in (world.deploy,)
        ]
        page = client.get("/console/audit", params={"event": "approval.decision"}).text
        assert _shown(page) == decisions
        by_ada = client.get("/console/audit", params={"person": world.ada}).text
        assert set(_shown(by_ada)) == {
            e["sequence"]
            for e in log
            if e["interactionId"] in (world.deploy, world.hostile)
            and (e.get("actor") or {}).get("person") == world.ada
        }
        assert _shown(client.get("/console/audit", params={"person": ADA_PHONE}).text)
        rotate = client.get("/console/audit", params={"action": "rotate"}).text
        assert _shown(rotate) == [
            e["sequence"] for e in reversed(log) if e["interactionId"] == world.hostile
        ]
        future = (datetime.now(timezone.utc) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
        assert _shown(client.get("/console/audit", params={"after": future}).text) == []
        assert len(_shown(client.get("/console/audit", params={"before": future}).text)) == len(
            [e for e in log if e["interactionId"] in (world.deploy, world.hostile)]
        )
        # Paged: the newest entry's sequence as the cursor leaves it out.
        newest = _shown(page)[0]
        older = client.get("/console/audit", params={"event": "approval.decision", "older": newest})
        assert _shown(older.text) == decisions[1:]


def test_refusals(service: RunningService, api: httpx.Client) -> None:
    world = World(service, api)
    client, _csrf = signed_in(service, api, ADA_PHONE)
    with contextlib.closing(client):
        for params, field in (
            ({"event": "approval.nothing"}, "Event"),
            ({"after": "yesterday"}, "After"),
            ({"before": "2026-13-45T99:00"}, "Before"),
            ({"after": "2026-12-04T10:00", "before": "2026-12-04T09:00"}, "Before"),
            ({"approval": "../../etc/passwd"}, "Approval"),
            ({"approval": "x" * 81}, "Approval"),
            ({"person": "p" * 321}, "Person"),
            ({"older": "-3"}, "older"),
            ({"older": "9" * 30}, "older"),
            ({"event": HOSTILE}, "Event"),
            ({"action": "de\x00ploy"}, "Action name"),
            ({"person": "per_\x00"}, "Person"),
        ):
            for path in ("/console/audit", "/console/audit/export.jsonl"):
                refused = client.get(path, params=params)
                assert refused.status_code == 400, (params, refused.text[:500])
                assert field in refused.text and "data-error" in refused.text
                assert HOSTILE not in refused.text
        # A hostile filter is shown back escaped.
        shown = client.get("/console/audit", params={"person": HOSTILE})
        assert shown.status_code == 200 and HOSTILE not in shown.text
        assert "&lt;script&gt;" in shown.text
        # Another person's request, one not reached yet, another account's, none: 404.
        for iid in (world.bobs, world.later, world.theirs, "int_nothing"):
            for path in (
                "/console/audit",
                "/console/audit/export.jsonl",
                "/console/audit/export.csv",
            ):
                assert client.get(path, params={"approval": iid}).status_code == 404, (iid, path)
        assert client.get("/console/audit/export.xml").status_code == 404
    # Signed out: to the sign-in page, nothing shown.
    with httpx.Client(base_url=service.base_url, timeout=30) as anonymous:
        for path in ("/console/audit", "/console/audit/export.jsonl"):
            found = anonymous.get(path)
            assert found.status_code == 303 and found.headers["location"] == "/console/signin"


def test_the_downloads_hold_the_filtered_entries(
    service: RunningService, api: httpx.Client
) -> None:
    world = World(service, api)
    client, csrf = signed_in(service, api, ADA_PHONE)
    with contextlib.closing(client):
        client.post(
            f"/console/approvals/{world.hostile}",
            data={"csrf": csrf, "decision": "approve", "comment": "=HYPERLINK(1)"},
        )
        log = _log(api)
        mine = [e for e in log if e["interactionId"] in (world.deploy, world.hostile)]
        jsonl = client.get("/console/audit/export.jsonl")
        assert jsonl.status_code == 200
        assert jsonl.headers["content-type"].startswith("application/x-ndjson")
        disposition = jsonl.headers["content-disposition"]
        assert disposition.startswith('attachment; filename="humanwire-audit-')
        assert disposition.endswith('.jsonl"')
        rows = [json.loads(line) for line in jsonl.text.splitlines()]
        assert rows == mine  # oldest first, exactly as stored and hashed
        only = client.get("/console/audit/export.jsonl", params={"approval": world.deploy})
        assert [json.loads(line) for line in only.text.splitlines()] == [
            e for e in mine if e["interactionId"] == world.deploy
        ]
        table = client.get("/console/audit/export.csv", params={"event": "approval.decision"})
        assert table.status_code == 200 and table.headers["content-type"].startswith("text/csv")
        assert table.headers["content-disposition"].endswith('.csv"')
        header, *lines = list(csv.reader(io.StringIO(table.text)))
        assert header[:4] == ["sequence", "at", "type", "interactionId"]
        [decision] = [e for e in mine if e["type"] == "approval.decision"]
        assert [line[0] for line in lines] == [str(decision["sequence"])]
        assert lines[0][-1] == decision["hash"] and lines[0][header.index("via")] == "console"
        assert json.loads(lines[0][header.index("data")])["comment"] == "=HYPERLINK(1)"
        # A cell that starts like a formula is never one.
        asked = client.get(
            "/console/audit/export.csv",
            params={"event": "approval.asked", "approval": world.hostile},
        )
        _header, *rows_asked = list(csv.reader(io.StringIO(asked.text)))
        assert sorted(row[header.index("actorTo")] for row in rows_asked) == [
            "'" + ADA_PHONE,  # +1…: a number to a spreadsheet, kept as text
            "'" + FORMULA,
        ]


def test_an_entry_edited_behind_the_services_back_breaks_the_chain_shown(
    service: RunningService, api: httpx.Client, database: str
) -> None:
    world = World(service, api)
    client, _csrf = signed_in(service, api, ADA_PHONE)
    with contextlib.closing(client):
        first = client.get("/console/audit").text
        assert "Chain verified through entry" in first and 'data-chain="verified"' in first
        [edited] = [
            e
            for e in _log(api)
            if e["interactionId"] == world.deploy and e["type"] == "approval.requested"
        ]
        _execute(
            database,
            "UPDATE audit SET entry = replace(entry, 'Deploy payments', 'Deploy nothing') "
            "WHERE hash = ?",
            (edited["hash"],),
        )
        page = client.get("/console/audit").text
        assert 'data-chain="broken"' in page and "Chain verified" not in page
        assert f"The chain breaks at entry {edited['sequence']}" in page
        assert "does not match its hash (edited?)" in page


def test_a_revoked_grant_is_in_the_chain_and_shown_to_whom_it_concerns(
    service: RunningService, api: httpx.Client
) -> None:
    ada = person(api, "Ada", [("sms", ADA_PHONE)])
    bob = person(api, "Bob", [("sms", BOB_PHONE)])
    by_console = grant_deploy(api, ada)
    by_key = grant_deploy(api, ada)
    bobs = grant_deploy(api, bob)
    assert api.delete(f"/approvals/grants/{by_key}").status_code == 204
    assert api.delete(f"/approvals/grants/{bobs}").status_code == 204
    client, csrf = signed_in(service, api, ADA_PHONE)
    with contextlib.closing(client):
        revoked = client.post(f"/console/grants/{by_console}/revoke", data={"csrf": csrf})
        assert revoked.status_code == 200 and "Revoked." in revoked.text
        entries = {
            e["interactionId"]: e for e in _log(api) if e["type"] == "approval.grant_revoked"
        }
        assert set(entries) == {by_console, by_key, bobs}
        assert entries[by_console]["actor"] == {"person": ada}
        assert entries[by_console]["data"] == {
            "grantId": by_console,
            "actionName": "deploy",
            "grantedBy": ada,
            "via": "console",
        }
        assert entries[by_key]["actor"] is None and entries[by_key]["data"]["via"] == "api"
        page = client.get("/console/audit", params={"event": "approval.grant_revoked"}).text
        # Hers (granted by her, revoked by her or by the key), never Bob's grant's.
        assert _shown(page) == [entries[by_console]["sequence"], entries[by_key]["sequence"]]
        assert "Standing approval revoked" in page and bobs not in page
        assert f'<dt>Standing approval</dt><dd><a href="/console/audit?approval={by_key}">' in page
        assert client.get("/console/audit", params={"approval": by_key}).status_code == 200
        assert client.get("/console/audit", params={"approval": bobs}).status_code == 404
        assert "Chain verified through entry" in page


def test_a_rehashed_rewrite_is_found_by_the_services_signed_checkpoints(database: str) -> None:
    signing_key, _public_key = generate_key_pair()
    config = replace(
        fast_config(database), audit_signing_key=signing_key, audit_checkpoint_every=0.5
    )
    service = start_test_service(database, config)
    try:
        with account_api(service, "signed") as api:
            ada = person(api, "Ada", [("sms", ADA_PHONE)])
            ask(api, "Deploy payments", [{"person": ada}], action=DEPLOY)
            log = _log(api)
            client, _csrf = signed_in(service, api, ADA_PHONE)
            with contextlib.closing(client):
                signed = f"signed up to entry {log[-1]['sequence']} (the checkpoint of "
                deadline = time.monotonic() + 60
                page = client.get("/console/audit").text
                while signed not in page:  # the schedule signs the head within a second
                    assert time.monotonic() < deadline, page
                    time.sleep(0.2)
                    page = client.get("/console/audit").text
                assert f"Chain verified through entry {log[-1]['sequence']}, {signed}" in page
                _rewrite_and_rehash(database, log[0]["hash"])
                # The chain and the head agree again: only the signature shows the rewrite.
                page = client.get("/console/audit").text
                assert 'data-chain="broken"' in page, page
                assert f"The chain breaks at entry {log[-1]['sequence']}" in page
                assert "it is not the entry the checkpoint of" in page
    finally:
        service.stop()
