"""Claims and reassignment in the approvers' console, in-process over ASGI on both stores
(the engine at hand for the schedule): "I'm on it" shown to the others asked, in the
audit chain, the others' reminders stopped (their steps cancelled, and a step that runs
anyway sends nothing) and armed again at its release; a request handed to another person
of the directory, who is asked on their address and decides as themselves; and every
refusal (not an approver, another account, no CSRF token, oneself, someone asked already,
an unknown person, a settled request)."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from http_support import AppUnderTest, svc_fixture

from humanwire.server.engine.approvals import REMIND
from humanwire.server.store.records import StepRecord

__all__ = ["svc_fixture"]  # the fixture, imported to be found

ANA = "+12025550170"
BOB = "+12025550171"
CY = "+12025550172"
DAN = "+12025550173"


async def _person(client: httpx.AsyncClient, svc: AppUnderTest, name: str, phone: str) -> str:
    made = await client.post(
        "/people", json={"name": name, "addresses": [{"channel": "sms", "to": phone}]}
    )
    assert made.status_code == 201, made.text
    person_id: str = made.json()["personId"]
    sent = await client.post(f"/people/{person_id}/confirm", json={"channel": "sms"})
    assert sent.status_code == 200, sent.text
    deliveries = (await client.get("/sandbox/messages")).json()
    [delivery] = [d for d in deliveries if d["interactionId"] == sent.json()["interactionId"]]
    code = re.search(r"\b\d{6}\b", delivery["text"])
    assert code is not None
    reply = {"channel": "sms", "from": phone, "to": delivery["from"], "body": code.group(0)}
    assert (await client.post("/sandbox/replies", json=reply)).status_code < 300
    return person_id


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None, html[:2000]
    return found.group(1)


async def _texts_to(
    svc: AppUnderTest, phone: str, api: httpx.AsyncClient | None = None
) -> list[str]:
    """What the sandbox delivered to ``phone`` for the account of ``api`` (else svc's)."""
    found = (await (api or svc.client).get("/sandbox/messages")).json()
    ordered = sorted(found, key=lambda d: str(d["createdAt"]))
    return [d["text"] for d in ordered if d["to"] == phone]


async def _reminders(svc: AppUnderTest, phone: str) -> int:
    return sum(1 for text in await _texts_to(svc, phone) if text.startswith("Reminder"))


class Console:
    """A browser of one signed-in person: its cookies and its page's CSRF token."""

    def __init__(self, client: httpx.AsyncClient, csrf: str) -> None:
        self.client = client
        self.csrf = csrf

    async def post(self, path: str, **data: str) -> httpx.Response:
        return await self.client.post(path, data={"csrf": self.csrf, **data})

    async def queue(self) -> str:
        page = await self.client.get("/console")
        assert page.status_code == 200, page.text
        return page.text


@pytest.fixture
async def signed_in(svc: AppUnderTest) -> AsyncIterator[Any]:
    opened: list[httpx.AsyncClient] = []

    async def sign_in(phone: str, api: httpx.AsyncClient | None = None) -> Console:
        client = svc.anonymous()
        client.follow_redirects = True
        opened.append(client)
        csrf = _csrf((await client.get("/console/signin")).text)
        sent = await client.post("/console/signin", data={"csrf": csrf, "address": phone})
        assert sent.status_code == 200, sent.text
        code = next(
            found.group(1)
            for text in reversed(await _texts_to(svc, phone, api))
            if (found := re.search(r"sign-in code is (\d{6})", text))
        )
        queue = await client.post(
            "/console/code", data={"csrf": csrf, "address": phone, "code": code}
        )
        assert queue.status_code == 200 and queue.url.path == "/console", queue.text
        return Console(client, _csrf(queue.text))

    yield sign_in
    for client in opened:
        await client.aclose()


async def _ask(svc: AppUnderTest, people: list[str], **body: Any) -> str:
    response = await svc.client.post(
        "/approvals",
        json={
            "title": "Deploy payments",
            "approvers": [{"person": p} for p in people],
            "followUpTime": 600,
            **body,
        },
    )
    assert response.status_code == 200, response.text
    interaction_id: str = response.json()["interactionId"]
    return interaction_id


async def _entries(svc: AppUnderTest, interaction_id: str, kind: str) -> list[dict[str, Any]]:
    log = (await svc.client.get("/audit")).json()["entries"]
    return [e for e in log if e["interactionId"] == interaction_id and e["type"] == kind]


async def test_a_claim_is_shown_to_the_others_and_stops_only_their_reminders(
    svc: AppUnderTest, signed_in: Any
) -> None:
    ana = await _person(svc.client, svc, "Ana", ANA)
    bob = await _person(svc.client, svc, "Bob", BOB)
    await _person(svc.client, svc, "Cy", CY)
    iid = await _ask(svc, [ana, bob], quorum=2, remindEvery=3600)
    schedule, store = svc.engine.schedule, svc.engine.store
    assert await store.get_step(REMIND, f"{iid}:0") is not None
    assert await store.get_step(REMIND, f"{iid}:1") is not None
    ana_console, bob_console = await signed_in(ANA), await signed_in(BOB)
    assert 'data-action="claim"' in await bob_console.queue()

    claimed = await ana_console.post(f"/console/approvals/{iid}/claim")
    assert claimed.status_code == 200 and "You are on it" in claimed.text, claimed.text
    assert 'data-claim="mine"' in claimed.text
    seen = await bob_console.queue()
    assert 'data-claim="other"' in seen and "<strong>Ana</strong> is on it since" in seen
    assert re.search(r"<time datetime=\"[^\"]+\" title=\"[^\"]+\">\d\d:\d\d UTC</time>", seen)
    # In the chain, as Ana's.
    [entry] = await _entries(svc, iid, "approval.claimed")
    assert entry["actor"]["person"] == ana and entry["data"] == {"person": ana}

    # Bob's reminders stop (his step is gone); Ana's stay.
    assert await store.get_step(REMIND, f"{iid}:1") is None
    assert await store.get_step(REMIND, f"{iid}:0") is not None
    # A step of Bob's that runs anyway (claimed by another replica before the cancel)
    # sends nothing; Ana's sends her reminder. No real time waited: the handler is run.
    before_bob, before_ana = await _reminders(svc, BOB), await _reminders(svc, ANA)
    await schedule.handlers[REMIND](StepRecord(REMIND, f"{iid}:1", time.time()))
    await schedule.handlers[REMIND](StepRecord(REMIND, f"{iid}:0", time.time()))
    assert await _reminders(svc, BOB) == before_bob == 0
    assert await _reminders(svc, ANA) == before_ana + 1 == 1

    # Bob cannot take it from her; claiming again is hers as it was.
    taken = await bob_console.post(f"/console/approvals/{iid}/claim")
    assert taken.status_code == 409 and "someone else is on this request" in taken.text
    assert (await bob_console.post(f"/console/approvals/{iid}/release")).status_code == 409
    assert (await ana_console.post(f"/console/approvals/{iid}/claim")).status_code == 200
    assert len(await _entries(svc, iid, "approval.claimed")) == 1

    # Released: Bob's reminders are armed again, and his step reminds him.
    released = await ana_console.post(f"/console/approvals/{iid}/release")
    assert released.status_code == 200 and "Released." in released.text
    assert 'data-claim="other"' not in await bob_console.queue()
    [entry] = await _entries(svc, iid, "approval.claim_released")
    assert entry["actor"]["person"] == ana
    step = await store.get_step(REMIND, f"{iid}:1")
    assert step is not None and step.due_at > time.time() + 3000
    await schedule.handlers[REMIND](step)
    assert await _reminders(svc, BOB) == 1


async def test_claims_are_refused_to_whoever_is_not_asked(
    svc: AppUnderTest, signed_in: Any
) -> None:
    ana = await _person(svc.client, svc, "Ana", ANA)
    await _person(svc.client, svc, "Cy", CY)
    iid = await _ask(svc, [ana])
    cy = await signed_in(CY)  # of the account, not asked
    for path in ("claim", "release", "reassign"):
        answer = await cy.post(f"/console/approvals/{iid}/{path}", person=ana)
        assert answer.status_code == 404, (path, answer.text)
        assert "no approval request of yours" in answer.text
    assert (await cy.client.get(f"/console/approvals/{iid}/reassign")).status_code == 404
    # A person of another account, asked their own account's request only.
    other = await svc.new_account("other")
    async with other:
        dan = await _person(other, svc, "Dan", DAN)
        theirs = await other.post(
            "/approvals",
            json={"title": "Theirs", "approvers": [{"person": dan}], "followUpTime": 600},
        )
        assert theirs.status_code == 200, theirs.text
        dan_console = await signed_in(DAN, other)
    assert (await dan_console.post(f"/console/approvals/{iid}/claim")).status_code == 404
    mine = theirs.json()["interactionId"]
    ana_console = await signed_in(ANA)
    assert (await ana_console.post(f"/console/approvals/{mine}/claim")).status_code == 404
    assert (await ana_console.post("/console/approvals/int_nothing/claim")).status_code == 404
    # Without the page's CSRF token: 403, nothing claimed.
    bare = await ana_console.client.post(f"/console/approvals/{iid}/claim", data={})
    assert bare.status_code == 403
    assert await svc.engine.store.get_claim(iid) is None
    # Decided already, by one of two: nothing to be on (409).
    pair = await _ask(svc, [ana, await _person(svc.client, svc, "Bob", BOB)], quorum=2)
    await ana_console.post(f"/console/approvals/{pair}", decision="approve")
    late = await ana_console.post(f"/console/approvals/{pair}/claim")
    assert late.status_code == 409 and "you decided this request already" in late.text
    # Settled: 409.
    assert (
        await ana_console.post(f"/console/approvals/{iid}", decision="approve")
    ).status_code == 200
    closed = await ana_console.post(f"/console/approvals/{iid}/claim")
    assert closed.status_code == 409 and "no longer open" in closed.text
    assert await _entries(svc, iid, "approval.claimed") == []


async def test_a_request_handed_to_another_person_asks_them_in_the_givers_place(
    svc: AppUnderTest, signed_in: Any
) -> None:
    ana = await _person(svc.client, svc, "Ana", ANA)
    bob = await _person(svc.client, svc, "Bob", BOB)
    dan = await _person(svc.client, svc, "Dan", DAN)
    iid = await _ask(svc, [ana, bob], quorum=2, remindEvery=3600)
    [ana_row] = [r for r in await svc.engine.store.approvers_of(iid) if r.person_id == ana]
    ana_console = await signed_in(ANA)
    claimed = await ana_console.post(f"/console/approvals/{iid}/claim")
    assert claimed.status_code == 200
    form = await ana_console.client.get(f"/console/approvals/{iid}/reassign")
    assert form.status_code == 200
    # Offered: Dan only (Ana and Bob are asked already).
    offered = re.findall(r'<option value="([^"]+)">([^<]+)</option>', form.text)
    assert offered == [(dan, "Dan")]

    handed = await ana_console.post(f"/console/approvals/{iid}/reassign", person=dan)
    assert handed.status_code == 200 and "Handed to Dan" in handed.text, handed.text
    assert f'data-approval="{iid}"' not in handed.text  # no longer Ana's
    # Dan is asked on his number, through the same delivery as every approver.
    [ask] = [t for t in await _texts_to(svc, DAN) if "Deploy payments" in t]
    assert "/a/" in ask
    # Ana's page link opens nothing now; her claim went with her place.
    assert (await svc.anonymous().get(f"/a/{ana_row.token}")).status_code == 404
    assert await svc.engine.store.get_claim(iid) is None
    [entry] = await _entries(svc, iid, "approval.reassigned")
    assert entry["actor"]["person"] == ana
    assert entry["data"]["from"]["person"] == ana
    assert entry["data"]["to"] == {"channel": "sms", "to": DAN, "person": dan}
    asked = await _entries(svc, iid, "approval.asked")
    assert [e["actor"]["person"] for e in asked] == [ana, bob, dan]
    # Dan's reminders run from now on, in Ana's place (her step's key).
    step = await svc.engine.store.get_step(REMIND, f"{iid}:{ana_row.position}")
    assert step is not None
    # Dan decides as himself, and counts once toward the quorum of people.
    dan_console = await signed_in(DAN)
    assert f'data-approval="{iid}"' in await dan_console.queue()
    decided = await dan_console.post(f"/console/approvals/{iid}", decision="approve")
    assert "Approved." in decided.text
    ana_again = await ana_console.post(f"/console/approvals/{iid}", decision="approve")
    assert ana_again.status_code == 404
    approval = (await svc.client.get(f"/approvals/{iid}")).json()
    assert [d["approver"]["person"] for d in approval["decisions"]] == [dan]
    assert approval["status"] == "pending"
    # Bob's approval makes the quorum of two people: Dan's counted in Ana's place.
    bob_console = await signed_in(BOB)
    await bob_console.post(f"/console/approvals/{iid}", decision="approve")
    approval = (await svc.client.get(f"/approvals/{iid}")).json()
    assert approval["decision"] == "approved", approval
    assert [d["approver"]["person"] for d in approval["decisions"]] == [dan, bob]


async def test_reassigning_is_refused_naming_the_field(svc: AppUnderTest, signed_in: Any) -> None:
    ana = await _person(svc.client, svc, "Ana", ANA)
    bob = await _person(svc.client, svc, "Bob", BOB)
    dan = await _person(svc.client, svc, "Dan", DAN)
    iid = await _ask(svc, [ana, bob], quorum=2)
    before = await svc.engine.store.approvers_of(iid)
    ana_console = await signed_in(ANA)
    other = await svc.new_account("other")
    async with other:
        theirs = await _person(other, svc, "Cy", CY)
    refused = {
        ana: (400, "person: you cannot hand a request to yourself"),
        bob: (400, "person: Bob is an approver of this request already"),
        "per_nobody": (404, "person: no person"),
        theirs: (404, "person: no person"),
        "": (400, "person: choose whom to hand it to"),
    }
    for to, (status, text) in refused.items():
        answer = await ana_console.post(f"/console/approvals/{iid}/reassign", person=to)
        assert answer.status_code == status and text in answer.text, (to, answer.text)
    assert await svc.engine.store.approvers_of(iid) == before
    assert await _entries(svc, iid, "approval.reassigned") == []
    # Once Ana decided, her place is hers: 409.
    await ana_console.post(f"/console/approvals/{iid}", decision="approve")
    decided = await ana_console.post(f"/console/approvals/{iid}/reassign", person=dan)
    assert decided.status_code == 409 and "decided this request already" in decided.text
    # Settled: 409 for Bob too.
    bob_console = await signed_in(BOB)
    await bob_console.post(f"/console/approvals/{iid}", decision="approve")
    settled = await bob_console.post(f"/console/approvals/{iid}/reassign", person=dan)
    assert settled.status_code == 409 and "no longer open" in settled.text
    assert not [t for t in await _texts_to(svc, DAN) if "Deploy payments" in t]


async def test_hostile_posts_to_the_new_routes_get_a_page_never_a_500(
    svc: AppUnderTest, signed_in: Any
) -> None:
    ana = await _person(svc.client, svc, "Ana", ANA)
    iid = await _ask(svc, [ana])
    console = await signed_in(ANA)
    wild = ["\x00" * 50, "<script>x</script>", "per_" + "x" * 5000, "../../etc", "%00", "é" * 30]
    for value in wild:
        for path, data in (
            (f"/console/approvals/{iid}/reassign", {"person": value}),
            ("/console/away", {"delegate": value, "until": value, "from": value}),
            ("/console/away", {"delegate": ana, "until": "2026-13-45T99:99"}),
            (f"/console/away/{quote(value[:200], safe='')}/end", {}),
            (f"/console/approvals/{quote(value[:200], safe='')}/claim", {}),
            (f"/console/approvals/{quote(value[:200], safe='')}", {"decision": "approve"}),
        ):
            answer = await console.post(path, **data)
            assert answer.status_code in (400, 404, 405), (path, value[:20], answer.text[:300])
            if answer.headers["content-type"].startswith("text/html"):
                assert "<script>x" not in answer.text
    assert (await console.client.get(f"/console/approvals/{'x' * 300}/reassign")).status_code == 404
    assert await _entries(svc, iid, "approval.reassigned") == []
