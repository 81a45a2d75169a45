"""The browser and the server apply the same rules: the patterns the page hands to its
script behave in JavaScript as they do in Python."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from browser_helpers import send_form, submitted_values
from playwright.sync_api import Page

from humanwire import HumanWire
from humanwire.server.forms.address import StructuralAddressValidator
from humanwire.server.forms.countries import countries
from humanwire.server.forms.validate import EMAIL_PATTERN

pytestmark = pytest.mark.browser

EMAILS = [
    "ada@example.com",
    "o'neil+tag@mail.co.uk",
    "Ä@bücher.de",
    "a@b.c",
    "ada",
    "ada@",
    "@x.io",
    "a..b@x.io",
    ".a@x.io",
    "a.@x.io",
    "a@-x.io",
    "a b@x.io",
    "a@1.23",
    "a@example",
]
ADDRESSES = [
    "10 Downing Street, London SW1A 2AA",
    "1600 Amphitheatre Parkway, Mountain View, CA 94043",
    "Hauptstraße 5\n10115 Berlin",
    "Rue de Rivoli 12, 75001 Paris",
    "Flat 3, 12 High St, Oxford OX1 4AA",
    "Main Street",
    "12",
    "12 Main Street",
    "London SW1A 2AA",
    "5 Elm St Springfield",
]


def page_config(page: Page) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(
        page.locator("form.hw-form").get_attribute("data-config") or "{}"
    )
    return config


def test_email_pattern_same_in_both_dialects(humanwire_client: HumanWire, page: Page) -> None:
    page.goto(send_form(humanwire_client, [{"id": "e", "label": "E", "type": "email"}]).form_url)
    config = page_config(page)
    assert config["email"]["pattern"] == EMAIL_PATTERN
    in_browser = page.evaluate(
        "([p, xs]) => xs.map(x => new RegExp(p).test(x))", [EMAIL_PATTERN, EMAILS]
    )
    assert in_browser == [bool(re.search(EMAIL_PATTERN, e)) for e in EMAILS]


def test_address_rules_same_in_both_dialects(humanwire_client: HumanWire, page: Page) -> None:
    page.goto(send_form(humanwire_client, [{"id": "a", "label": "A", "type": "address"}]).form_url)
    expected = [StructuralAddressValidator().validate(a).message for a in ADDRESSES]
    shown = []
    field = page.get_by_label("A", exact=True)
    for address in ADDRESSES:
        field.fill(address)
        field.blur()
        error = page.locator("#f-a-error")
        shown.append(error.inner_text() if error.is_visible() else "")
    assert shown == expected


def test_every_country_pattern_compiles_in_javascript(
    humanwire_client: HumanWire, page: Page
) -> None:
    page.goto(
        send_form(humanwire_client, [{"id": "p", "label": "P", "type": "phone_number"}]).form_url
    )
    patterns = [
        p
        for c in countries()
        for p in (c.general_pattern, c.valid_pattern, c.national_prefix_for_parsing or "")
    ]
    failures = page.evaluate(
        """ps => ps.filter(p => { try { new RegExp('^(?:' + p + ')$'); return false; }
                                  catch (e) { return true; } })""",
        patterns,
    )
    assert failures == []


@pytest.mark.parametrize(
    ("region", "typed", "e164"),
    [
        ("GB", "020 7946 0018", "+442079460018"),
        ("FR", "06 12 34 56 78", "+33612345678"),
        ("DE", "030 123456", "+4930123456"),
        ("US", "(202) 555-0123", "+12025550123"),
        ("JP", "090-1234-5678", "+819012345678"),
    ],
)
def test_phone_numbers_the_browser_accepts_the_server_stores_alike(
    humanwire_client: HumanWire, page: Page, region: str, typed: str, e164: str
) -> None:
    fields = [
        {
            "id": "p",
            "label": "P",
            "type": "phone_number",
            # A rule on the E.164 form: passes only when the browser computed the same.
            "validations": [{"title": "wrong E.164", "pattern": "^" + re.escape(e164) + "$"}],
        }
    ]
    sent = send_form(humanwire_client, fields)
    page.goto(sent.form_url)
    page.wait_for_selector("form[data-countries-loaded]")  # the browser checks numbers too
    picker = page.get_by_role("combobox")
    picker.fill(region.lower())
    picker.press("Enter")
    assert picker.input_value().startswith(region + " +")
    number = page.get_by_role("textbox", name="P", exact=True)
    number.fill(typed)
    number.blur()
    # The browser's E.164 meets the rule (no message), then the server's does too.
    assert page.locator("#f-p-error").is_hidden()
    number.press("Enter")
    page.get_by_role("heading", name="Thank you, your answers were sent").wait_for()
    assert submitted_values(humanwire_client, sent.interaction_id) == {"p": e164}


def test_a_wrong_number_is_refused_in_the_browser(humanwire_client: HumanWire, page: Page) -> None:
    sent = send_form(humanwire_client, [{"id": "p", "label": "P", "type": "phone_number"}])
    page.goto(sent.form_url)
    page.wait_for_selector("form[data-countries-loaded]")
    number = page.get_by_role("textbox", name="P", exact=True)
    for typed in ("555 555 0100", "12", "+44 12"):
        number.fill(typed)
        number.blur()
        assert page.locator("#f-p-error").inner_text() == (
            "Enter a valid phone number for the chosen country."
        ), typed
