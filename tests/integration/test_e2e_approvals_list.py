"""``GET /approvals`` end to end: the real service over loopback HTTP on both stores
(``start_service``; the session service for the clients). Pages cross the whole list
with nothing lost or repeated and the cursor then finds only what came since; each filter
keeps what it names; one account never sees another's requests; hostile or malformed
parameters are a 400 ``invalid_request`` naming the parameter, never a 500, and a filter's
value is only ever a value (nothing is run from it)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest
from e2e_support import StartService

from humanwire import AsyncHumanWire, HumanWire
from humanwire.errors import InvalidRequestError
from humanwire.testing import RunningService

WIRE = {"name": "wire_money", "arguments": {"amount": 4200}}
SHIP = {"name": "ship_order", "arguments": {"order": 118}}


@pytest.fixture
def service(start_service: StartService) -> RunningService:
    return start_service()


def _client(service: RunningService, name: str) -> httpx.Client:
    key = service.create_account(name)
    return httpx.Client(
        base_url=service.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )


@pytest.fixture
def api(service: RunningService) -> Iterator[httpx.Client]:
    with _client(service, "lister") as client:
        yield client


def _ask(
    api: httpx.Client,
    title: str,
    action: dict[str, Any] | None = None,
    metadata: dict[str, str] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "title": title,
        "approvers": [{"channel": "link", "to": "Ada"}],
        "followUpTime": 60,
    }
    if action is not None:
        body["action"] = action
    if metadata is not None:
        body["metadata"] = metadata
    response = api.post("/approvals", json=body)
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


def _decide(api: httpx.Client, asked: dict[str, Any], decision: str) -> None:
    page = urlparse(asked["approvalUrl"]).path
    response = api.post(
        page, data={"decision": decision}, headers={"Authorization": ""}, follow_redirects=True
    )
    assert response.status_code == 200, response.text


def _list(api: httpx.Client, **params: Any) -> dict[str, Any]:
    response = api.get("/approvals", params=params)
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


def _ids(page: dict[str, Any]) -> list[str]:
    return [approval["interactionId"] for approval in page["approvals"]]


def _every(api: httpx.Client, limit: int, **filters: Any) -> tuple[list[str], int, str]:
    """Every id page after page: the ids, the number of pages read, the last cursor."""
    ids: list[str] = []
    cursor, pages = "0", 0
    while True:
        page = _list(api, after=cursor, limit=limit, **filters)
        pages += 1
        ids += _ids(page)
        if len(page["approvals"]) < limit:
            return ids, pages, page["cursor"]
        cursor = page["cursor"]


def test_pages_cross_the_list_in_order_with_nothing_lost_or_repeated(api: httpx.Client) -> None:
    made = [_ask(api, f"Request {n}", WIRE)["interactionId"] for n in range(7)]
    first = _list(api, limit=3)
    assert _ids(first) == made[:3]
    ids, pages, cursor = _every(api, 3)
    assert ids == made  # in the order they were made, each once
    assert pages == 3  # 3 + 3 + 1
    assert _every(api, 7)[1] == 2  # a full last page: the next one is empty

    # The end's cursor stays where it is, then finds only the requests made since.
    empty = _list(api, after=cursor)
    assert empty == {"approvals": [], "cursor": cursor}
    later = _ask(api, "Request 7", WIRE)["interactionId"]
    since = _list(api, after=cursor)
    assert _ids(since) == [later]
    assert since["cursor"] != cursor

    # Each listed request reads as GET /approvals/{id} does.
    assert first["approvals"][0] == api.get(f"/approvals/{made[0]}").json()
    assert _list(api)["approvals"][0]["status"] == "pending"  # no after: from the first
    assert len(_list(api)["approvals"]) == 8  # the default limit holds them all


def test_each_filter_keeps_what_it_names(api: httpx.Client) -> None:
    approved = _ask(api, "Wire, approved", WIRE)
    rejected = _ask(api, "Ship, rejected", SHIP)
    waiting = _ask(api, "Wire, waiting", WIRE)
    bare = _ask(api, "No action")
    _decide(api, approved, "approve")
    _decide(api, rejected, "reject")
    every = [a["interactionId"] for a in (approved, rejected, waiting, bare)]
    a, r, w, b = every

    assert _ids(_list(api)) == every
    assert _ids(_list(api, status="pending")) == [w, b]
    assert _ids(_list(api, status="ended")) == [a, r]
    assert _ids(_list(api, decision="approved")) == [a]
    assert _ids(_list(api, decision="rejected")) == [r]
    assert _ids(_list(api, actionName="wire_money")) == [a, w]
    assert _ids(_list(api, actionName="ship_order")) == [r]
    assert _ids(_list(api, actionName="wire")) == []  # the whole name, not a prefix
    assert _ids(_list(api, actionName="wire_money", status="pending")) == [w]
    assert _ids(_list(api, actionName="ship_order", decision="approved")) == []
    # No approver is a person yet (approvers are addresses): a person's id finds none.
    assert _ids(_list(api, personId="per_0123456789")) == []

    listed = {x["interactionId"]: x for x in _list(api, status="ended")["approvals"]}
    assert listed[a]["decision"] == "approved" and listed[r]["decision"] == "rejected"
    # Filtered pages page too: the cursor passes over what the filter left out.
    ids, pages, _ = _every(api, 1, actionName="wire_money")
    assert (ids, pages) == ([a, w], 3)


def test_an_account_never_sees_another_accounts_requests(
    service: RunningService, api: httpx.Client
) -> None:
    mine = [_ask(api, f"Mine {n}", WIRE)["interactionId"] for n in range(3)]
    with _client(service, "other") as other:
        assert _list(other) == {"approvals": [], "cursor": "0"}
        for filters in ({"status": "pending"}, {"actionName": "wire_money"}, {"after": "0"}):
            assert _list(other, **filters)["approvals"] == []
        theirs = _ask(other, "Theirs", WIRE)["interactionId"]
        assert _ids(_list(other)) == [theirs]
        # A cursor from the other account's pages shows nothing of this one's.
        assert _ids(_list(other, after=_list(api, limit=1)["cursor"])) == [theirs]
    assert _ids(_list(api)) == mine


def _meta(**pairs: str) -> dict[str, str]:
    return {f"metadata[{key}]": value for key, value in pairs.items()}


def test_a_metadata_filter_keeps_the_requests_holding_that_value(api: httpx.Client) -> None:
    hostile = {"k'ey": "' OR '1'='1", "$.run": "%", "a]b[c": '"_"', "ünï": "naïve", "e": ""}
    first = _ask(api, "Run 1", WIRE, {"run": "r1", "tenant": "acme", **hostile})
    second = _ask(api, "Run 2", SHIP, {"run": "r2", "tenant": "acme"})
    bare = _ask(api, "No metadata", WIRE)
    _decide(api, second, "approve")
    f, s, b = (x["interactionId"] for x in (first, second, bare))

    assert _ids(_list(api, **_meta(run="r1"))) == [f]
    assert _ids(_list(api, **_meta(tenant="acme"))) == [f, s]
    assert _ids(_list(api, **_meta(tenant="acme", run="r2"))) == [s]  # each must hold
    assert _ids(_list(api, **_meta(tenant="acme", run="r3"))) == []
    assert _ids(_list(api, **_meta(tenant="Acme"))) == []  # exact: case counts
    assert _ids(_list(api, **_meta(tenant="acm"))) == []  # the whole value
    assert _ids(_list(api, **_meta(missing=""))) == []  # a key not there is not ""
    for key, value in hostile.items():
        assert _ids(_list(api, **{f"metadata[{key}]": value})) == [f]
    assert _ids(_list(api, **_meta(run="%"))) == []  # not a pattern
    # With the other filters, and paged: the cursor passes over what they leave out.
    assert _ids(_list(api, **_meta(tenant="acme"), decision="approved")) == [s]
    assert _ids(_list(api, **_meta(tenant="acme"), actionName="wire_money")) == [f]
    ids, pages, _ = _every(api, 1, **_meta(tenant="acme"))
    assert (ids, pages) == ([f, s], 3)
    assert _ids(_list(api)) == [f, s, b]  # nothing was run from a value


def test_another_accounts_metadata_is_never_found(
    service: RunningService, api: httpx.Client
) -> None:
    mine = _ask(api, "Mine", WIRE, {"run": "r1"})["interactionId"]
    with _client(service, "other") as other:
        assert _list(other, **_meta(run="r1")) == {"approvals": [], "cursor": "0"}
        theirs = _ask(other, "Theirs", WIRE, {"run": "r1"})["interactionId"]
        assert _ids(_list(other, **_meta(run="r1"))) == [theirs]
    assert _ids(_list(api, **_meta(run="r1"))) == [mine]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"metadata[]": "x"}, "metadata"),
        ({"metadata[" + "k" * 41 + "]": "x"}, "metadata"),
        ({"metadata[k\x00]": "x"}, "metadata"),
        ({"metadata[k]": "v" * 501}, "metadata[k]"),
        ({"metadata[k]": "v\x00"}, "metadata[k]"),
        ({f"metadata[k{n}]": "v" for n in range(21)}, "metadata"),
        ({"metadata": "x"}, "metadata"),
        ({"metadata[k": "x"}, "metadata[k"),
        ({"status": "open"}, "status"),
        ({"status": ""}, "status"),
        ({"status": "PENDING"}, "status"),
        ({"decision": "approve"}, "decision"),
        ({"decision": "null"}, "decision"),
        ({"limit": "0"}, "limit"),
        ({"limit": "501"}, "limit"),
        ({"limit": "-1"}, "limit"),
        ({"limit": "2.5"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"limit": "²"}, "limit"),
        ({"limit": ""}, "limit"),
        ({"limit": "9" * 40}, "limit"),
        ({"after": "-1"}, "after"),
        ({"after": "1 OR 1=1"}, "after"),
        ({"after": ""}, "after"),
        ({"after": "9" * 19}, "after"),
        ({"after": "١٢"}, "after"),
        ({"actionName": ""}, "actionName"),
        ({"actionName": "x" * 201}, "actionName"),
        ({"actionName": "wire_money\x00"}, "actionName"),
        ({"personId": "'; DROP TABLE approvals; --"}, "personId"),
        ({"personId": "per_"}, "personId"),
        ({"sort": "seq"}, "sort"),
    ],
)
def test_a_bad_parameter_is_a_400_naming_it(
    api: httpx.Client, params: dict[str, str], field: str
) -> None:
    response = api.get("/approvals", params=params)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["code"], error["field"]) == ("invalid_request", field)


def test_a_parameter_twice_and_no_key_are_refused(
    service: RunningService, api: httpx.Client
) -> None:
    twice = api.get("/approvals?status=pending&status=ended")
    assert (twice.status_code, twice.json()["error"]["field"]) == (400, "status")
    twice = api.get("/approvals?metadata[run]=r1&metadata[run]=r2")
    assert (twice.status_code, twice.json()["error"]["field"]) == (400, "metadata[run]")
    most = api.get("/approvals", params={f"metadata[k{n}]": "v" for n in range(20)})
    assert (most.status_code, most.json()["approvals"]) == (200, [])  # 20: allowed
    anonymous = httpx.get(f"{service.base_url}/approvals", timeout=30)
    assert anonymous.status_code == 401


def test_a_filter_value_is_only_a_value(api: httpx.Client) -> None:
    asked = _ask(api, "Kept", WIRE)
    for hostile in (
        "wire_money' OR '1'='1",
        "x'); DELETE FROM approvals; --",
        '" OR 1=1 --',
        "%",
        "_",
    ):
        assert _list(api, actionName=hostile)["approvals"] == []
    # Nothing was run from them: the request is still there, as it was.
    assert _ids(_list(api)) == [asked["interactionId"]]
    assert api.get(f"/approvals/{asked['interactionId']}").json() == asked
    named = _ask(api, "Quoted", {"name": 'it\'s "quoted" %_', "arguments": {}})
    assert _ids(_list(api, actionName='it\'s "quoted" %_')) == [named["interactionId"]]


def test_the_clients_list_page_after_page(humanwire_client: HumanWire) -> None:
    ids = [
        humanwire_client.approvals.create(
            title=f"Client {n}",
            action=WIRE,
            approvers=[{"channel": "link", "to": "Ada"}],
            follow_up_time=60,
        ).interaction_id
        for n in range(3)
    ]
    first = humanwire_client.approvals.list(limit=2)
    assert [a.interaction_id for a in first.approvals] == ids[:2]
    rest = humanwire_client.approvals.list(after=first.cursor, limit=2)
    assert [a.interaction_id for a in rest.approvals] == ids[2:]
    found = humanwire_client.approvals.list(status="pending", action_name="wire_money")
    assert [a.interaction_id for a in found.approvals] == ids
    assert humanwire_client.approvals.list(decision="approved").approvals == []
    tagged = humanwire_client.approvals.create(
        title="Client, tagged",
        approvers=[{"channel": "link", "to": "Ada"}],
        follow_up_time=60,
        metadata={"run": "client-r1", "step": "2"},
    ).interaction_id
    found = humanwire_client.approvals.list(metadata={"run": "client-r1", "step": "2"})
    assert [a.interaction_id for a in found.approvals] == [tagged]
    other_step = humanwire_client.approvals.list(metadata={"run": "client-r1", "step": "3"})
    assert other_step.approvals == []
    with pytest.raises(InvalidRequestError) as refused:
        humanwire_client.approvals.list(metadata={"run": "x\x00"})
    assert refused.value.field == "metadata[run]"  # the service's answer
    with pytest.raises(InvalidRequestError) as refused:
        humanwire_client.approvals.list(metadata={"step": 2})  # type: ignore[dict-item]
    assert refused.value.field == "metadata"  # the client's: a number is not sent as text
    with pytest.raises(InvalidRequestError) as refused:
        humanwire_client.approvals.list(limit=0)
    assert refused.value.field == "limit"
    with pytest.raises(InvalidRequestError) as refused:
        humanwire_client.approvals.list(status="open")  # type: ignore[arg-type]
    assert refused.value.field == "status"  # the service's answer


async def test_the_async_clients_list_too(async_humanwire_client: AsyncHumanWire) -> None:
    made = await async_humanwire_client.approvals.create(
        title="Async",
        action=SHIP,
        approvers=[{"channel": "link", "to": "Ada"}],
        follow_up_time=60,
    )
    page = await async_humanwire_client.approvals.list(action_name="ship_order")
    assert [a.interaction_id for a in page.approvals] == [made.interaction_id]
    assert page.approvals[0].action_digest == made.action_digest
    empty = await async_humanwire_client.approvals.list(after=page.cursor)
    assert (empty.approvals, empty.cursor) == ([], page.cursor)
    tagged = await async_humanwire_client.approvals.create(
        title="Async, tagged",
        approvers=[{"channel": "link", "to": "Ada"}],
        follow_up_time=60,
        metadata={"run": "async-r1"},
    )
    found = await async_humanwire_client.approvals.list(metadata={"run": "async-r1"})
    assert [a.interaction_id for a in found.approvals] == [tagged.interaction_id]


def test_a_request_that_timed_out_is_listed_by_what_on_timeout_settled(
    api: httpx.Client,
) -> None:
    def ask(on_timeout: str) -> str:
        body = {
            "title": f"Undecided, {on_timeout}",
            "action": WIRE,
            "approvers": [{"channel": "link", "to": "Ada"}],
            "followUpTime": 1,
            "onTimeout": on_timeout,
        }
        response = api.post("/approvals", json=body)
        assert response.status_code == 200, response.text
        found: str = response.json()["interactionId"]
        return found

    rejected, nothing = ask("reject"), ask("none")
    deadline = time.monotonic() + 15
    while _ids(_list(api, status="ended")) != [rejected, nothing]:
        assert time.monotonic() < deadline, "the windows did not close"
        time.sleep(0.1)
    assert _ids(_list(api, decision="rejected")) == [rejected]
    assert _ids(_list(api, decision="approved")) == []  # onTimeout none settles nothing
    listed = _list(api, status="ended")["approvals"]
    assert [(a["decision"], a["timedOut"]) for a in listed] == [("rejected", True), (None, True)]
    assert _list(api, status="pending")["approvals"] == []


@pytest.mark.parametrize("limit", ["²", "١٠", "0", "1001"])
def test_the_audit_log_refuses_a_limit_of_other_digits_too(api: httpx.Client, limit: str) -> None:
    """``GET /audit`` shares the list's limit check: a digit that is not ASCII ("²" is a
    digit to ``str.isdigit``, not to ``int``) was a 500."""
    response = api.get("/audit", params={"limit": limit})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["field"] == "limit"
