"""An address a provider corrects, in headless chromium: the form shows the suggestion,
the person accepts it (with the page's script, and without it), and the corrected
address is what the agent gets. The service checks addresses with Google's contract
fake (``tests/address_fakes.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from browser_helpers import send_form, submitted_values
from playwright.sync_api import Browser, Page, expect

from address_fakes import (
    API_KEY,
    CORRECTED,
    GOOGLE_FORMATTED,
    NOT_FOUND,
    AddressFakeServer,
    GoogleFake,
)
from humanwire import HumanWire
from humanwire.server.config import AddressConfig
from humanwire.server.forms.address import CORRECTED_MESSAGE, NOT_FOUND_MESSAGE
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.service import fast_config

pytestmark = pytest.mark.browser

FIELDS = [
    {"id": "name", "label": "Your name", "type": "text", "required": True},
    {"id": "home", "label": "Delivery address", "type": "address", "required": True},
]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceRunner]:
    with AddressFakeServer(GoogleFake()) as google:
        address = AddressConfig(provider="google", api_key=API_KEY, api_base=google.base_url)
        db = tmp_path_factory.mktemp("address-browser") / "service.db"
        runner = ServiceRunner(replace(fast_config(db), address=address), "127.0.0.1", 0)
        runner.start()
        try:
            yield runner
        finally:
            runner.stop()


@pytest.fixture
def client(service: ServiceRunner) -> Iterator[HumanWire]:
    with HumanWire(api_key=service.create_account(), base_url=service.base_url) as created:
        yield created


def interaction_of(client: HumanWire, form_url: str) -> str:
    [delivery] = [d for d in client.sandbox.deliveries() if d.form_url == form_url]
    assert delivery.interaction_id
    return delivery.interaction_id


def test_a_corrected_address_is_shown_and_accepted(client: HumanWire, page: Page) -> None:
    sent = send_form(client, FIELDS)
    page.goto(sent.form_url)
    page.get_by_label("Your name").fill("Ada Lovelace")
    address = page.get_by_label("Delivery address")
    address.fill(CORRECTED)
    page.get_by_role("button", name="Submit").click()

    # The server asked the provider: the page comes back with its correction.
    error = page.locator("#f-home-error")
    expect(error).to_have_text(CORRECTED_MESSAGE)
    expect(page.locator("#f-home-suggestion")).to_have_text(GOOGLE_FORMATTED)
    expect(address).to_have_value(CORRECTED)
    use = page.get_by_role("checkbox", name="Use this address")
    expect(use).not_to_be_checked()

    use.check()  # the suggestion goes into the box, the message away
    expect(address).to_have_value(GOOGLE_FORMATTED)
    expect(error).to_be_hidden()
    use.uncheck()  # changed their mind: what they typed comes back
    expect(address).to_have_value(CORRECTED)
    use.check()
    page.get_by_role("button", name="Submit").click()

    expect(page.get_by_role("heading", name="Thank you, your answers were sent")).to_be_visible()
    values = submitted_values(client, interaction_of(client, sent.form_url))
    assert values == {"name": "Ada Lovelace", "home": GOOGLE_FORMATTED}


def test_editing_the_address_after_accepting_takes_the_edit(client: HumanWire, page: Page) -> None:
    sent = send_form(client, FIELDS)
    page.goto(sent.form_url)
    page.get_by_label("Your name").fill("Ada Lovelace")
    address = page.get_by_label("Delivery address")
    address.fill(CORRECTED)
    page.get_by_role("button", name="Submit").click()
    use = page.get_by_role("checkbox", name="Use this address")
    use.check()
    address.fill(NOT_FOUND)  # an edit unticks the box: the edit is what is sent
    expect(use).not_to_be_checked()
    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#f-home-error")).to_have_text(NOT_FOUND_MESSAGE)
    expect(address).to_have_value(NOT_FOUND)
    assert client.interactions.status(interaction_of(client, sent.form_url)).status == "pending"


def test_the_suggestion_is_accepted_without_javascript(
    client: HumanWire, browser: Browser, tmp_path: Path
) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        sent = send_form(client, FIELDS)
        page.goto(sent.form_url)
        page.get_by_label("Your name").fill("Ada Lovelace")
        page.get_by_label("Delivery address").fill(CORRECTED)
        page.get_by_role("button", name="Submit").click()
        expect(page.locator("#f-home-suggestion")).to_have_text(GOOGLE_FORMATTED)
        page.get_by_role("checkbox", name="Use this address").check()
        page.get_by_role("button", name="Submit").click()
        expect(
            page.get_by_role("heading", name="Thank you, your answers were sent")
        ).to_be_visible()
    finally:
        context.close()
    values = submitted_values(client, interaction_of(client, sent.form_url))
    assert values["home"] == GOOGLE_FORMATTED
