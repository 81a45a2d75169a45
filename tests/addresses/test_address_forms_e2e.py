"""The real service, on each store, checking a form's address with a provider's contract
fake, over loopback HTTP: the browser post without JavaScript (the page re-rendered with
the message or the suggestion, the suggestion accepted with its box), the JSON post,
and a provider too slow (refused with the input kept, or accepted as typed and the
person told) while the service keeps answering."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from html import unescape
from pathlib import Path
from typing import Any

import httpx
import pytest

from address_fakes import (
    API_KEY,
    AUTH_ID,
    AUTH_TOKEN,
    CORRECTED,
    GOOGLE_FORMATTED,
    NOT_FOUND,
    OSM_SUGGESTION,
    SLOW,
    SMARTY_LINE,
    VALID,
    AddressFakeServer,
    GoogleFake,
    NominatimFake,
    SmartyFake,
)
from humanwire import HumanWire
from humanwire.server.config import AddressConfig
from humanwire.server.forms.address import (
    CORRECTED_MESSAGE,
    NOT_FOUND_MESSAGE,
    UNAVAILABLE_MESSAGE,
    UNCHECKED_NOTICE,
    corrected_message_for_json,
)
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.service import fast_config
from humanwire.types import FormReceivedPayload
from pg_support import STORES, store_database

TIMEOUT = 1.0
FIELDS: list[dict[str, Any]] = [
    {"id": "name", "label": "Name", "type": "text", "required": True},
    {"id": "home", "label": "Delivery address", "type": "address", "required": True},
]


@pytest.fixture(scope="module")
def google() -> Iterator[AddressFakeServer]:
    with AddressFakeServer(GoogleFake(delay=TIMEOUT * 4)) as server:
        yield server


def start_service(database: str, address: AddressConfig) -> ServiceRunner:
    runner = ServiceRunner(replace(fast_config(database), address=address), "127.0.0.1", 0)
    runner.start()
    # The first async request of a process loads httpx's async machinery: not timed.
    with httpx.Client(base_url=runner.base_url) as warm:
        warm.get("/healthz")
    return runner


def google_config(base_url: str, **changes: Any) -> AddressConfig:
    return AddressConfig(
        provider="google", api_key=API_KEY, api_base=base_url, timeout=TIMEOUT, **changes
    )


@pytest.fixture(scope="module", params=STORES)
def service(
    request: pytest.FixtureRequest,
    google: AddressFakeServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ServiceRunner]:
    """The service checking addresses with Google's fake (unchecked ones refused)."""
    db_file = tmp_path_factory.mktemp("addresses") / "service.db"
    with store_database(request.param, db_file, "hw_addr") as database:
        runner = start_service(database, google_config(google.base_url))
        try:
            yield runner
        finally:
            runner.stop()


@pytest.fixture
def client(service: ServiceRunner) -> Iterator[HumanWire]:
    with HumanWire(api_key=service.create_account(), base_url=service.base_url) as created:
        yield created


def send(client: HumanWire) -> Any:
    return client.forms.sms(to="+12025550100", title="Where to?", fields=FIELDS, follow_up_time=60)


def post(url: str, data: dict[str, str]) -> httpx.Response:
    return httpx.post(url, data=data, follow_redirects=False, timeout=30)


def values_of(client: HumanWire, interaction_id: str) -> dict[str, str]:
    result = client.interactions.status(interaction_id).result
    assert result is not None and isinstance(result.payload, FormReceivedPayload), result
    return dict(result.payload.values)


def field_error(html: str, field: str) -> str:
    found = re.search(rf'<p class="error" id="f-{field}-error">([^<]*)</p>', html)
    return unescape(found.group(1)) if found else ""


def test_the_page_leaves_the_check_to_the_server(client: HumanWire) -> None:
    html = httpx.get(send(client).form_url).text
    config = unescape(re.search(r'data-config="([^"]+)"', html).group(1))  # type: ignore[union-attr]
    assert '"check":"google"' in config.replace(" ", "")


def test_a_valid_address_is_stored_as_the_provider_writes_it(client: HumanWire) -> None:
    sent = send(client)
    response = post(sent.form_url, {"name": "Ada", "home": VALID})
    assert response.status_code == 303
    assert response.headers["location"].endswith(sent.form_url.rsplit("/", 1)[1])
    assert values_of(client, sent.interaction_id) == {"name": "Ada", "home": GOOGLE_FORMATTED}


def test_an_address_not_found_is_refused_with_the_input_kept(client: HumanWire) -> None:
    sent = send(client)
    response = post(sent.form_url, {"name": "Ada", "home": NOT_FOUND})
    assert response.status_code == 400
    assert field_error(response.text, "home") == NOT_FOUND_MESSAGE
    assert NOT_FOUND in unescape(response.text)  # what was typed stays in the box
    as_json = httpx.post(sent.form_url, json={"values": {"name": "Ada", "home": NOT_FOUND}})
    assert as_json.status_code == 400
    assert as_json.json()["error"] == {
        "code": "invalid_request",
        "message": NOT_FOUND_MESSAGE,
        "field": "home",
    }
    assert client.interactions.status(sent.interaction_id).status == "pending"


def test_a_corrected_address_is_offered_and_accepted_without_javascript(
    client: HumanWire,
) -> None:
    sent = send(client)
    refused = post(sent.form_url, {"name": "Ada", "home": CORRECTED})
    assert refused.status_code == 400
    html = unescape(refused.text)
    assert field_error(refused.text, "home") == CORRECTED_MESSAGE
    assert f'<p class="suggested" id="f-home-suggestion">{GOOGLE_FORMATTED}</p>' in html
    box = re.search(r'<input type="checkbox" id="f-home-use" name="([^"]+)" value="([^"]+)"', html)
    assert box is not None and box.groups() == ("home:use-suggestion", GOOGLE_FORMATTED)
    assert CORRECTED in html  # the typed address is still in the box, unticked
    as_json = httpx.post(sent.form_url, json={"values": {"name": "Ada", "home": CORRECTED}})
    assert as_json.status_code == 400
    assert as_json.json()["error"]["message"] == corrected_message_for_json(GOOGLE_FORMATTED)
    # Ticking "Use this address" and sending again: the suggestion is the answer.
    accepted = post(
        sent.form_url, {"name": "Ada", "home": CORRECTED, "home:use-suggestion": GOOGLE_FORMATTED}
    )
    assert accepted.status_code == 303, field_error(accepted.text, "home")
    assert values_of(client, sent.interaction_id) == {"name": "Ada", "home": GOOGLE_FORMATTED}


def test_an_accepted_suggestion_stays_in_the_box_when_another_answer_is_refused(
    client: HumanWire,
) -> None:
    sent = send(client)
    refused = post(
        sent.form_url, {"name": "", "home": CORRECTED, "home:use-suggestion": GOOGLE_FORMATTED}
    )
    assert refused.status_code == 400
    assert field_error(refused.text, "home") == ""
    textarea = re.search(r'<textarea[^>]*id="f-home"[^>]*>([^<]*)</textarea>', refused.text)
    assert textarea is not None and unescape(textarea.group(1)) == GOOGLE_FORMATTED


def test_a_slow_provider_refuses_with_the_input_kept_and_holds_nothing_else(
    service: ServiceRunner, client: HumanWire
) -> None:
    sent = send(client)
    slowest = 0.0
    done = threading.Event()

    def probe() -> None:
        nonlocal slowest
        with httpx.Client(base_url=service.base_url) as prober:
            while not done.is_set():
                started = time.monotonic()
                assert prober.get("/healthz").status_code == 200
                slowest = max(slowest, time.monotonic() - started)
                time.sleep(0.02)

    prober = threading.Thread(target=probe)
    prober.start()
    started = time.monotonic()
    try:
        response = post(sent.form_url, {"name": "Ada", "home": SLOW})
    finally:
        done.set()
        prober.join()
    assert TIMEOUT * 0.9 < time.monotonic() - started < TIMEOUT * 3
    assert response.status_code == 400
    assert field_error(response.text, "home") == UNAVAILABLE_MESSAGE
    assert SLOW in unescape(response.text) and 'value="Ada"' in response.text
    # The check waited on the provider, not on the loop: the service kept answering.
    assert slowest < TIMEOUT / 2
    assert client.interactions.status(sent.interaction_id).status == "pending"


@pytest.mark.parametrize("store", STORES)
def test_a_slow_provider_accepts_as_typed_and_says_so(
    store: str, google: AddressFakeServer, tmp_path: Path
) -> None:
    with store_database(store, tmp_path / "accept.db", "hw_addr") as database:
        runner = start_service(database, google_config(google.base_url, on_unavailable="accept"))
        try:
            with HumanWire(api_key=runner.create_account(), base_url=runner.base_url) as client:
                sent = send(client)
                started = time.monotonic()
                response = post(sent.form_url, {"name": "Ada", "home": SLOW})
                # The page's check and the engine's: one timeout, not two.
                assert time.monotonic() - started < TIMEOUT * 1.8
                assert response.status_code == 303
                assert response.headers["location"].endswith("?address=unchecked")
                notice = httpx.get(runner.base_url + response.headers["location"])
                assert UNCHECKED_NOTICE in unescape(notice.text)
                assert values_of(client, sent.interaction_id) == {"name": "Ada", "home": SLOW}
        finally:
            runner.stop()


@pytest.mark.parametrize("provider", ["smarty", "nominatim"])
def test_the_other_providers_offer_and_take_their_correction(provider: str, tmp_path: Path) -> None:
    fake: Any = SmartyFake() if provider == "smarty" else NominatimFake()
    with AddressFakeServer(fake) as server:
        if provider == "smarty":
            address = AddressConfig(
                provider="smarty", auth_id=AUTH_ID, auth_token=AUTH_TOKEN, api_base=server.base_url
            )
            suggestion = SMARTY_LINE
        else:
            address = AddressConfig(provider="nominatim", url=server.base_url)
            suggestion = OSM_SUGGESTION
        runner = start_service(str(tmp_path / "other.db"), address)
        try:
            with HumanWire(api_key=runner.create_account(), base_url=runner.base_url) as client:
                sent = send(client)
                refused = post(sent.form_url, {"name": "Ada", "home": CORRECTED})
                assert refused.status_code == 400
                assert f'value="{suggestion}"' in unescape(refused.text)
                # OpenStreetMap's data is shown: its licence asks for the credit.
                credit = "Address data © OpenStreetMap contributors (ODbL)"
                assert (credit in unescape(refused.text)) == (provider == "nominatim")
                accepted = post(
                    sent.form_url,
                    {"name": "Ada", "home": CORRECTED, "home:use-suggestion": suggestion},
                )
                assert accepted.status_code == 303
                assert values_of(client, sent.interaction_id)["home"] == suggestion
        finally:
            runner.stop()
