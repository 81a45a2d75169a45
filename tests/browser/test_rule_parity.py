"""The browser and the server apply the same rules: the patterns the page hands to its
script behave in JavaScript as they do in Python, and a form's own patterns (JavaScript's
RegExp with the u flag in the page, RE2 in the service) give the same verdict."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from browser_helpers import send_form, submitted_values
from playwright.sync_api import Page

from humanwire import HumanWire
from humanwire.server.forms.address import StructuralAddressValidator
from humanwire.server.forms.countries import countries
from humanwire.server.forms.validate import EMAIL_PATTERN
from humanwire.types._pattern import PatternError, compiled_pattern

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


# A form's own patterns: every construct the dialect takes, where the engines' defaults
# differ most (line terminators, Unicode white space, \d \w \b, astral characters).
PATTERNS = [
    r"^.$",
    r"^.+$",
    r"^a.b$",
    r"^\s$",
    r"^\S+$",
    r"^\d+$",
    r"^\D$",
    r"^\w+$",
    r"^\W$",
    r"\bx",
    r"x\b",
    r"\Bb",
    r"^[^a]$",
    r"^[\s\S]$",
    r"^[\w-]+$",
    r"^[^\s]+$",
    r"^[\D]$",
    r"^[^\W\d]+$",
    r"^[.]$",
    r"^a$",
    r"^$",
    r"a|",
    r"^(?:ab|a)+$",
    r"^(a|b){2,3}$",
    r"^x{2,}?$",
    r"^[😀-😎]$",
    r"^\u{1F600}$",
    r"^\uD83D\uDE00$",
    r"^[\u00e0-\u00ff]+$",
    r"^[\x41-\x5a]$",
    r"[\b]",
    r"^\cJ$",
    r"^\0$",
    r"^[\t\v\f]$",
    r"^[\-.]+$",
    r"\/",
    r"^[a-z]{3}\d{2}$",
    r"^\+44",
    r"^(a+)+$",
    r"^[^\n]*$",
    r"^\n|\r$",
    "^[äöü]$",
]
INPUTS = [
    "",
    "a",
    "aa",
    "aab",
    "abab",
    "x",
    "xx",
    "xxx",
    "b",
    "é",
    "É",
    "٣",
    "5",
    "_",
    "-",
    ".",
    "/",
    " ",
    "\t",
    "\n",
    "\r",
    "\v",
    "\f",
    "\x00",
    "\b",
    "\u00a0",
    "\u1680",
    "\u180e",
    "\u2000",
    "\u200b",
    "\u2028",
    "\u2029",
    "\u202f",
    "\u3000",
    "\ufeff",
    "\u017f",
    "\u212a",
    "😀",
    "😃",
    "😀😀",
    "a\nb",
    "a\rb",
    "a\u2028b",
    "a\n",
    "\na",
    "x!",
    "xb",
    "abc12",
    "+441234",
    "a-b_c",
    "ä",
    "a\u0308",
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
    expected = [StructuralAddressValidator().check(a).message for a in ADDRESSES]
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


def test_form_patterns_give_the_same_verdicts(humanwire_client: HumanWire, page: Page) -> None:
    page.goto(send_form(humanwire_client, [{"id": "t", "label": "T", "type": "text"}]).form_url)
    in_browser = page.evaluate(
        """([ps, xs]) => ps.map(p => {
             const re = new RegExp(p, "u");
             return xs.map(x => re.test(x));
           })""",
        [PATTERNS, INPUTS],
    )
    on_server = [[compiled_pattern(p).search(x) for x in INPUTS] for p in PATTERNS]
    differ = [
        (pattern, text)
        for pattern, browser_row, server_row in zip(PATTERNS, in_browser, on_server, strict=True)
        for text, b, s in zip(INPUTS, browser_row, server_row, strict=True)
        if b != s
    ]
    assert differ == []
    # The table is not trivial: both verdicts occur for most patterns.
    assert sum(1 for row in on_server if any(row) and not all(row)) >= len(PATTERNS) - 2


# Patterns near the edges of the dialect: whatever the service accepts, the page compiles
# (no rule the page would skip while the service applies it).
EDGES = [
    *PATTERNS,
    r"\-",
    r"[\-]",
    "a{",
    "a{,3}",
    "a}",
    "a]",
    "{2}",
    r"[\d-z]",
    r"[z-\w]",
    r"[a-]",
    r"[-a]",
    r"[--a]",
    r"[a--]",
    r"[a-b-c]",
    r"[[]",
    r"[]]",
    "[]",
    "[^]",
    r"\1",
    r"(a)\1",
    r"\07",
    r"\0",
    r"\x4",
    r"\xg0",
    r"\u12",
    r"\u{110000}",
    r"\u{0}",
    r"\uD800",
    r"\uDC00\uD800",
    r"\c",
    r"\c1",
    r"[\c1]",
    r"\e",
    r"\a",
    r"\Z",
    r"\z",
    r"\A",
    r"\p{L}",
    r"\k<n>",
    r"(?<n>a)\k<n>",
    r"(?=a)",
    r"(?<=a)",
    r"(?i)a",
    r"(?i:a)",
    r"(?P<n>a)",
    "a**",
    "a*+",
    "a+?",
    "a??",
    "a{2}?",
    "a{2}{3}",
    "^*",
    "$+",
    r"\b*",
    "(?:)",
    "()",
    "(|a)*",
    "a{0}",
    "a{1000}",
    "a{1001}",
    "x{3,2}",
    "[z-a]",
    r"[\b]",
    r"[\B]",
    "\\",
    "a\\",
    "/",
    r"\/",
    "(",
    ")",
]


def test_what_the_service_accepts_the_page_compiles(
    humanwire_client: HumanWire, page: Page
) -> None:
    page.goto(send_form(humanwire_client, [{"id": "t", "label": "T", "type": "text"}]).form_url)
    compiles = page.evaluate(
        """ps => ps.map(p => {
             try { new RegExp(p, "u"); return true; } catch (e) { return false; }
           })""",
        EDGES,
    )
    accepted = []
    for pattern in EDGES:
        try:
            compiled_pattern(pattern)
        except PatternError:
            accepted.append(False)
        else:
            accepted.append(True)
    assert [p for p, ok, js in zip(EDGES, accepted, compiles, strict=True) if ok and not js] == []
    # Not everything is refused: the table above plus the valid edges.
    assert sum(accepted) > len(PATTERNS)


def test_the_page_applies_a_rule_as_the_service_does(
    humanwire_client: HumanWire, page: Page
) -> None:
    # \w is ASCII in JavaScript (Python's re took "é"); with the u flag an emoji is one
    # character for "." (two UTF-16 units without it).
    title = "One word in ASCII letters, or one symbol"
    rule = {"title": title, "pattern": r"^(?:\w+|.)$"}
    sent = send_form(
        humanwire_client, [{"id": "w", "label": "Word", "type": "text", "validations": [rule]}]
    )
    page.goto(sent.form_url)
    word = page.get_by_label("Word", exact=True)
    shown = {}
    for typed in ("café", "cafe", "ab!", "😀"):
        word.fill(typed)
        word.blur()
        error = page.locator("#f-w-error")
        shown[typed] = error.inner_text() if error.is_visible() else ""
    assert shown == {"café": title, "cafe": "", "ab!": title, "😀": ""}
    for refused in ("café", "ab!"):
        response = httpx.post(sent.form_url, json={"values": {"w": refused}})
        assert (response.status_code, response.json()["error"]["message"]) == (400, title)
    word.press("Enter")
    page.get_by_role("heading", name="Thank you, your answers were sent").wait_for()
    assert submitted_values(humanwire_client, sent.interaction_id) == {"w": "😀"}
