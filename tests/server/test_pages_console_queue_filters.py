"""The console queue's filters, over real HTTP on loopback, on both stores: by the
action's name, by one metadata entry (``key=value``), most urgent or newest first, as the
query of a GET form that holds them (escaped); a value that cannot be read is a 400 page
naming the field, never a 500."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from console_support import ask, csrf_in, person, sign_in_code
from humanwire.testing.service import RunningService, fast_config, start_test_service

ADA_PHONE = "+12025550161"


@pytest.fixture
def service(database: str) -> Iterator[RunningService]:
    running = start_test_service(database, fast_config(database))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def setup(service: RunningService) -> Iterator[tuple[httpx.Client, dict[str, str]]]:
    key = service.create_account("filters")
    with httpx.Client(
        base_url=service.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as api:
        ada = person(api, "Ada", [("sms", ADA_PHONE)])

        def request(title: str, action: str, agent: str, follow_up: int) -> str:
            body: dict[str, Any] = {
                "action": {"name": action, "arguments": {"service": "api"}},
                "metadata": {"agent": agent},
                "followUpTime": follow_up,
            }
            return ask(api, title, [{"person": ada}], **body)

        # Made in this order; the first made has the nearest deadline.
        ids = {
            "deploy-billing": request("Deploy billing", "deploy", "billing", 300),
            "restart-ops": request("Restart ops", "restart", "ops", 900),
            "deploy-ops": request("Deploy ops", "deploy", "ops", 600),
        }
        client = httpx.Client(base_url=service.base_url, follow_redirects=True, timeout=30)
        csrf = csrf_in(client.get("/console/signin").text)
        client.post("/console/signin", data={"csrf": csrf, "address": ADA_PHONE})
        code = sign_in_code(api, ADA_PHONE)
        queue = client.post(
            "/console/code", data={"csrf": csrf, "address": ADA_PHONE, "code": code}
        )
        assert queue.url.path == "/console", queue.text
        try:
            yield client, ids
        finally:
            client.close()


def _shown(client: httpx.Client, ids: dict[str, str], **query: str) -> list[str]:
    page = client.get("/console", params=query)
    assert page.status_code == 200, page.text
    names = {v: k for k, v in ids.items()}
    return [names[i] for i in re.findall(r'<li class="msg" data-approval="([^"]+)"', page.text)]


def test_filters_by_action_and_metadata_and_orders(
    setup: tuple[httpx.Client, dict[str, str]],
) -> None:
    client, ids = setup
    urgent = ["deploy-billing", "deploy-ops", "restart-ops"]
    assert _shown(client, ids) == urgent
    assert _shown(client, ids, sort="urgent") == urgent
    assert _shown(client, ids, sort="newest") == ["deploy-ops", "restart-ops", "deploy-billing"]
    assert _shown(client, ids, action="deploy") == ["deploy-billing", "deploy-ops"]
    assert _shown(client, ids, meta="agent=ops") == ["deploy-ops", "restart-ops"]
    assert _shown(client, ids, action="deploy", meta="agent=billing") == ["deploy-billing"]
    assert _shown(client, ids, action="nothing") == []
    assert _shown(client, ids, meta="team=ops") == []
    page = client.get("/console", params={"action": "deploy", "sort": "newest"}).text
    assert 'name="action" value="deploy"' in page
    assert '<option value="newest" selected>' in page and "Waiting for you (2)" in page
    # Each request shows its metadata, each entry a link that filters by it.
    whole = client.get("/console").text
    assert whole.count('href="/console?meta=agent%3Dops"') == 2
    assert whole.count('href="/console?meta=agent%3Dbilling"') == 1


def test_the_form_escapes_what_it_holds(setup: tuple[httpx.Client, dict[str, str]]) -> None:
    client, _ids = setup
    page = client.get("/console", params={"action": '"><script>x()</script>'})
    assert page.status_code == 200
    assert "<script>x()" not in page.text
    assert 'value="&quot;&gt;&lt;script&gt;x()&lt;/script&gt;"' in page.text


UNREADABLE = [
    ({"sort": "oldest"}, "sort"),
    ({"sort": "<b>"}, "sort"),
    ({"meta": "agent"}, "meta"),
    ({"meta": "=ops"}, "meta"),
    ({"meta": "k" * 41 + "=v"}, "meta"),
    ({"meta": "agent=" + "v" * 600}, "meta"),
    ({"action": "de\x01ploy"}, "action"),
    ({"action": "d" * 201}, "action"),
]


def test_a_value_that_cannot_be_read_is_a_400_naming_the_field(
    setup: tuple[httpx.Client, dict[str, str]],
) -> None:
    client, _ids = setup
    for query, field in UNREADABLE:
        page = client.get("/console", params=query)
        assert page.status_code == 400, (query, page.text)
        assert f"{field}:" in page.text and "Filter not understood" in page.text, query
        assert "<b>" not in page.text
