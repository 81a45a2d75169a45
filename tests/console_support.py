"""Helpers of the console's tests (HTTP and browser): people confirmed through the
sandbox, approval requests asking them, and the sign-in code read from what was sent."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx

from humanwire.testing.service import RunningService, fast_config, start_test_service

CODE = re.compile(r"sign-in code is (\d{6})")


def deliveries(api: httpx.Client, to: str) -> list[dict[str, Any]]:
    response = api.get("/sandbox/messages")
    assert response.status_code == 200, response.text
    found = [d for d in response.json() if d["to"].lower() == to.lower()]
    return sorted(found, key=lambda d: str(d["createdAt"]))


def _reply(api: httpx.Client, delivery: dict[str, Any], body: str) -> None:
    reply: dict[str, Any] = {
        "channel": delivery["channel"],
        "from": delivery["to"],
        "to": delivery["from"],
        "body": body,
    }
    if delivery["channel"] == "email":
        reply["interactionId"] = delivery["interactionId"]
    response = api.post("/sandbox/replies", json=reply)
    assert response.status_code < 300, response.text


def person(
    api: httpx.Client, name: str, addresses: list[tuple[str, str]], *, confirmed: bool = True
) -> str:
    """A person of the directory with these ``(channel, to)`` addresses, each confirmed by
    the code it was sent (unless ``confirmed`` is False)."""
    made = api.post(
        "/people",
        json={"name": name, "addresses": [{"channel": c, "to": t} for c, t in addresses]},
    )
    assert made.status_code == 201, made.text
    person_id: str = made.json()["personId"]
    for channel, to in addresses if confirmed else ():
        sent = api.post(f"/people/{person_id}/confirm", json={"channel": channel, "to": to})
        assert sent.status_code == 200, sent.text
        [delivery] = [
            d for d in deliveries(api, to) if d["interactionId"] == sent.json()["interactionId"]
        ]
        code = re.search(r"\b\d{6}\b", delivery["text"])
        assert code is not None
        _reply(api, delivery, code.group(0))
    shown = api.get(f"/people/{person_id}").json()
    assert all(a["confirmed"] is confirmed for a in shown["addresses"]), shown
    return person_id


def ask(api: httpx.Client, title: str, approvers: list[dict[str, Any]], **body: Any) -> str:
    """An approval request; its interaction id."""
    response = api.post(
        "/approvals",
        json={"title": title, "approvers": approvers, "followUpTime": 600, **body},
    )
    assert response.status_code == 200, response.text
    interaction_id: str = response.json()["interactionId"]
    return interaction_id


def sign_in_code(api: httpx.Client, to: str) -> str | None:
    """The code of the last sign-in message sent to ``to`` (None: none was)."""
    for delivery in reversed(deliveries(api, to)):
        found = CODE.search(delivery["text"])
        if found is not None:
            return found.group(1)
    return None


def csrf_in(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None, html[:2000]
    return found.group(1)


@contextlib.contextmanager
def console_service(database: str, **settings: Any) -> Iterator[RunningService]:
    """The testing kit's service on ``database`` (``settings``: fields of its config)."""
    running = start_test_service(database, replace(fast_config(database), **settings))
    try:
        yield running
    finally:
        running.stop()


def grantable_service(
    database: str, **settings: Any
) -> contextlib.AbstractContextManager[RunningService]:
    """A service on ``database`` whose accounts may grant standing approvals of
    ``deploy`` (and ``settings`` more of the config's fields)."""
    return console_service(database, approvals_grantable=("deploy",), **settings)


def signed_in(
    service: RunningService, api: httpx.Client, address: str, *, follow_redirects: bool = True
) -> tuple[httpx.Client, str]:
    """A cookie-keeping client signed in to the console as the person at ``address`` (the
    code read from what ``api``'s account sent), and its CSRF token. Without
    ``follow_redirects`` a 401 or a redirect shows as such."""
    client = httpx.Client(base_url=service.base_url, follow_redirects=follow_redirects, timeout=30)
    csrf = csrf_in(client.get("/console/signin").text)
    sent = client.post("/console/signin", data={"csrf": csrf, "address": address})
    assert sent.status_code == 200, sent.text
    code = sign_in_code(api, address)
    assert code is not None
    opened = client.post("/console/code", data={"csrf": csrf, "address": address, "code": code})
    if not follow_redirects:
        assert opened.status_code == 303 and opened.headers["location"] == "/console", opened.text
        return client, csrf
    assert opened.status_code == 200 and opened.url.path == "/console", opened.text
    return client, csrf_in(opened.text)


def account_api(service: RunningService, name: str) -> httpx.Client:
    """An HTTP client of a new account of ``service``, signed with its key."""
    key = service.create_account(name)
    return httpx.Client(
        base_url=service.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )


def grant_deploy(api: httpx.Client, person_id: str) -> str:
    """A standing approval of ``deploy`` where ``service`` is ``payments-api``, for 30
    minutes, granted by ``person_id``: its id."""
    expires = (datetime.now(timezone.utc) + timedelta(minutes=30)).isoformat()
    made = api.post(
        "/approvals/grants",
        json={
            "actionName": "deploy",
            "match": {"service": "payments-api"},
            "expiresAt": expires,
            "grantedBy": person_id,
        },
    )
    assert made.status_code == 201, made.text
    grant_id: str = made.json()["grantId"]
    return grant_id
