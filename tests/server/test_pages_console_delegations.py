"""Out-of-office delegations in the approvers' console, in-process over ASGI on both
stores: while Ana is away, a request asking her asks Bob in her place (on his number),
Bob decides as himself for her (``onBehalfOf`` in the decision and the audit chain); a
delegation followed through a second one, not used where the delegate is asked already,
not before it starts, not once ended; and every refusal (oneself, an unknown or another
account's person, a loop, a period that ends before it starts, an overlapping one of
one's own, no CSRF token, another's delegation ended)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from http_support import AppUnderTest, svc_fixture
from test_pages_console_claims import (
    ANA,
    BOB,
    CY,
    DAN,
    _ask,
    _entries,
    _person,
    _texts_to,
    signed_in,
)

__all__ = ["signed_in", "svc_fixture"]  # the fixtures, imported to be found


def _moment(**delta: float) -> str:
    return (datetime.now(timezone.utc) + timedelta(**delta)).strftime("%Y-%m-%dT%H:%M")


def _asks(texts: list[str]) -> int:
    return sum(1 for t in texts if "Deploy payments" in t and not t.startswith("Reminder"))


@pytest.fixture
async def people(svc: AppUnderTest) -> dict[str, str]:
    return {
        name: await _person(svc.client, svc, name, phone)
        for name, phone in (("Ana", ANA), ("Bob", BOB), ("Cy", CY))
    }


async def test_while_ana_is_away_bob_is_asked_and_decides_for_her(
    svc: AppUnderTest, signed_in: Any, people: dict[str, str]
) -> None:
    ana, bob, cy = people["Ana"], people["Bob"], people["Cy"]
    ana_console = await signed_in(ANA)
    page = await ana_console.client.get("/console/away")
    assert page.status_code == 200 and "No delegation holds." in page.text
    made = await ana_console.post("/console/away", delegate=bob, until=_moment(days=2))
    assert made.status_code == 200 and "Delegated." in made.text, made.text
    assert "Your requests go to <strong>Bob</strong>" in made.text

    iid = await _ask(svc, [ana, cy], quorum=2)
    assert _asks(await _texts_to(svc, ANA)) == 0
    assert _asks(await _texts_to(svc, BOB)) == 1  # on his number, in her place
    [entry] = await _entries(svc, iid, "approval.delegated")
    assert entry["actor"]["person"] == ana and entry["data"]["to"]["person"] == bob
    assert f'data-approval="{iid}"' not in await ana_console.queue()

    bob_console = await signed_in(BOB)
    queue = await bob_console.queue()
    assert f'data-approval="{iid}"' in queue
    assert "Asked of you for <strong>Ana</strong> (away)" in queue
    away = (await bob_console.client.get("/console/away")).text
    assert "<strong>Ana</strong>'s requests come to you" in away
    assert 'action="/console/away/' not in away  # hers to end, not his
    decided = await bob_console.post(f"/console/approvals/{iid}", decision="approve")
    assert "Approved." in decided.text
    [decision] = (await svc.client.get(f"/approvals/{iid}")).json()["decisions"]
    assert decision["approver"]["person"] == bob and decision["onBehalfOf"] == ana
    [logged] = await _entries(svc, iid, "approval.decision")
    assert logged["actor"]["person"] == bob and logged["data"]["onBehalfOf"] == ana
    # A decision of someone not standing in for anyone names no one.
    cy_console = await signed_in(CY)
    await cy_console.post(f"/console/approvals/{iid}", decision="approve")
    approval = (await svc.client.get(f"/approvals/{iid}")).json()
    assert approval["decision"] == "approved", approval
    assert "onBehalfOf" not in approval["decisions"][1]

    # Ended: the next request asks Ana herself.
    [delegation] = re.findall(
        r'data-delegation="([^"]+)"', (await ana_console.client.get("/console/away")).text
    )
    ended = await ana_console.post(f"/console/away/{delegation}/end")
    assert ended.status_code == 200 and "No delegation holds." in ended.text
    await _ask(svc, [ana])
    assert _asks(await _texts_to(svc, ANA)) == 1


async def test_a_delegation_is_followed_not_doubled_and_not_before_it_starts(
    svc: AppUnderTest, signed_in: Any, people: dict[str, str]
) -> None:
    ana, bob, cy = people["Ana"], people["Bob"], people["Cy"]
    ana_console, bob_console = await signed_in(ANA), await signed_in(BOB)
    assert (
        await ana_console.post("/console/away", delegate=bob, until=_moment(days=1))
    ).status_code == 200
    assert (
        await bob_console.post("/console/away", delegate=cy, until=_moment(days=1))
    ).status_code == 200
    # Ana away to Bob, Bob away to Cy: Cy is asked.
    await _ask(svc, [ana])
    assert (_asks(await _texts_to(svc, ANA)), _asks(await _texts_to(svc, BOB))) == (0, 0)
    assert _asks(await _texts_to(svc, CY)) == 1
    # Cy asked already: Ana is asked herself (one person, one place).
    iid = await _ask(svc, [ana, cy], quorum=2)
    assert _asks(await _texts_to(svc, ANA)) == 1
    assert await _entries(svc, iid, "approval.delegated") == []
    # A delegation to come does not move today's requests.
    dan = await _person(svc.client, svc, "Dan", DAN)
    cy_console = await signed_in(CY)
    later = await cy_console.post(
        "/console/away", delegate=dan, until=_moment(days=3), **{"from": _moment(days=2)}
    )
    assert later.status_code == 200, later.text
    await _ask(svc, [cy])
    assert _asks(await _texts_to(svc, DAN)) == 0


async def test_delegations_are_refused_naming_the_field(
    svc: AppUnderTest, signed_in: Any, people: dict[str, str]
) -> None:
    ana, bob = people["Ana"], people["Bob"]
    ana_console, bob_console = await signed_in(ANA), await signed_in(BOB)
    other = await svc.new_account("other")
    async with other:
        theirs = await _person(other, svc, "Dan", DAN)
    until = _moment(days=1)
    refused: list[tuple[dict[str, str], int, str]] = [
        ({"delegate": ana, "until": until}, 400, "delegate: you cannot delegate to yourself"),
        ({"delegate": "per_nobody", "until": until}, 404, "delegate: no person"),
        ({"delegate": theirs, "until": until}, 404, "delegate: no person"),
        ({"delegate": "", "until": until}, 400, "delegate: choose whom"),
        ({"delegate": bob, "until": "tomorrow"}, 400, "until: give a date and time"),
        ({"delegate": bob, "until": _moment(hours=-1)}, 400, "until: the end must be after"),
        (
            {"delegate": bob, "from": _moment(days=2), "until": _moment(days=1)},
            400,
            "until: the end must be after",
        ),
        ({"delegate": bob, "until": _moment(days=100)}, 400, "until: a delegation lasts 90 days"),
    ]
    for data, status, text in refused:
        answer = await ana_console.post("/console/away", **data)
        assert answer.status_code == status and text in answer.text, (data, answer.text)
    bare = await ana_console.client.post("/console/away", data={"delegate": bob, "until": until})
    assert bare.status_code == 403
    assert "No delegation holds." in (await ana_console.client.get("/console/away")).text

    assert (await ana_console.post("/console/away", delegate=bob, until=until)).status_code == 200
    again = await ana_console.post("/console/away", delegate=people["Cy"], until=until)
    assert again.status_code == 400 and "from: you have a delegation for that time" in again.text
    loop = await bob_console.post("/console/away", delegate=ana, until=until)
    assert loop.status_code == 400 and "delegate: Ana delegates back to you" in loop.text
    # Bob cannot end Ana's delegation.
    [delegation] = re.findall(
        r'data-delegation="([^"]+)"', (await ana_console.client.get("/console/away")).text
    )
    assert (await bob_console.post(f"/console/away/{delegation}/end")).status_code == 404
    assert "Your requests go to" in (await ana_console.client.get("/console/away")).text
