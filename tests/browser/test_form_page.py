"""The form a recipient opens from ``formUrl``, driven in headless chromium."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from browser_helpers import (
    PHONE,
    OutsideRequests,
    held,
    latest_form_url,
    send_form,
    submitted_values,
)
from playwright.sync_api import Browser, Dialog, Page, expect

from humanwire import HumanWire
from humanwire.testing.service import RunningService

pytestmark = pytest.mark.browser

EVERY_TYPE: list[dict[str, Any]] = [
    {
        "id": "name",
        "label": "Your name",
        "type": "text",
        "required": True,
        "placeholder": "Ada Lovelace",
        "helperText": "As on your ID",
    },
    {"id": "notes", "label": "Anything else?", "type": "textarea"},
    {"id": "email", "label": "Email", "type": "email", "required": True},
    {"id": "phone", "label": "Phone", "type": "phone_number", "required": True},
    {
        "id": "size",
        "label": "Size",
        "type": "select",
        "required": True,
        "options": [{"label": "Small", "value": "s"}, {"label": "Large", "value": "l"}],
    },
    {"id": "agree", "label": "I agree to the terms", "type": "checkbox", "required": True},
    {"id": "home", "label": "Delivery address", "type": "address", "required": True},
]


def interaction_of(client: HumanWire, form_url: str) -> str:
    deliveries = [d for d in client.sandbox.deliveries() if d.form_url == form_url]
    assert deliveries and deliveries[0].interaction_id, form_url
    return deliveries[0].interaction_id


def status_of(client: HumanWire, form_url: str) -> Any:
    return client.interactions.status(interaction_of(client, form_url))


def values_of(client: HumanWire, form_url: str) -> dict[str, str]:
    return submitted_values(client, interaction_of(client, form_url))


def test_fill_and_submit_every_field_type(
    humanwire_client: HumanWire,
    humanwire_service: RunningService,
    page: Page,
    outside_requests: OutsideRequests,
) -> None:
    logo = f"{humanwire_service.base_url}/static/favicon.svg"
    sent = send_form(
        humanwire_client,
        EVERY_TYPE,
        title="Order details",
        description="Tell us where to send it.",
        brand_image_url=logo,
        submit_label="Send my answers",
    )
    page.goto(sent.form_url)

    expect(page.get_by_role("heading", name="Order details")).to_be_visible()
    expect(page.get_by_text("Tell us where to send it.")).to_be_visible()
    expect(page.locator("img.brand")).to_have_attribute("src", logo)
    assert page.locator("img.brand").evaluate("img => img.naturalWidth") > 0
    name = page.get_by_label("Your name")
    expect(name).to_have_attribute("placeholder", "Ada Lovelace")
    expect(page.get_by_text("As on your ID")).to_be_visible()
    # Labels are bound to their inputs, helper text is announced with them.
    expect(name).to_have_attribute("aria-describedby", re.compile("f-name-help"))
    expect(page.locator("label[for=f-name] .required")).to_have_text("*")

    name.fill("Ada Lovelace")
    page.get_by_label("Anything else?").fill("Ring twice.\nThanks")
    page.get_by_label("Email").fill("ada@example.com")
    picker = page.get_by_role("combobox", name=re.compile("Country code for Phone"))
    picker.fill("united kingdom")
    picker.press("Enter")
    expect(picker).to_have_value("GB +44")
    page.get_by_role("textbox", name="Phone", exact=True).fill("020 7946 0018")
    page.get_by_label("Size").select_option(label="Large")
    page.get_by_label("I agree to the terms").check()
    page.get_by_label("Delivery address").fill("10 Downing Street, London SW1A 2AA")
    page.get_by_role("button", name="Send my answers").click()

    expect(page.get_by_role("heading", name="Thank you, your answers were sent")).to_be_visible()
    assert status_of(humanwire_client, sent.form_url).status == "ended"
    assert values_of(humanwire_client, sent.form_url) == {
        "name": "Ada Lovelace",
        "notes": "Ring twice.\nThanks",
        "email": "ada@example.com",
        "phone": "+442079460018",
        "size": "l",
        "agree": "true",
        "home": "10 Downing Street, London SW1A 2AA",
    }
    assert list(outside_requests) == []


def test_required_fields_block_submission(humanwire_client: HumanWire, page: Page) -> None:
    sent = send_form(humanwire_client, EVERY_TYPE)
    page.goto(sent.form_url)
    page.get_by_role("button", name="Submit").click()

    summary = page.get_by_role("alert")
    expect(summary).to_contain_text("Please fix 6 answers")
    expect(page.locator("#f-name-error")).to_have_text("This field is required.")
    expect(page.locator("#f-agree-error")).to_have_text("Tick this box to continue.")
    expect(page.get_by_label("Your name")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Your name")).to_be_focused()
    assert page.url == sent.form_url
    assert status_of(humanwire_client, sent.form_url).status == "pending"

    # Fixing a field clears its message as the person types.
    page.get_by_label("Your name").fill("Ada")
    expect(page.locator("#f-name-error")).to_be_hidden()


def test_failed_patterns_and_types_block_submission(
    humanwire_client: HumanWire, page: Page
) -> None:
    fields: list[dict[str, Any]] = [
        {
            "id": "code",
            "label": "Booking code",
            "type": "text",
            "validations": [
                {"title": "Must be 3 letters and 3 digits", "pattern": "^[A-Z]{3}[0-9]{3}$"}
            ],
        },
        {"id": "email", "label": "Email", "type": "email"},
        {"id": "home", "label": "Address", "type": "address"},
    ]
    sent = send_form(humanwire_client, fields)
    page.goto(sent.form_url)
    page.get_by_label("Booking code").fill("ab12")
    page.get_by_label("Email").fill("ada@localhost")
    page.get_by_label("Address").fill("Main Street")
    page.get_by_role("button", name="Submit").click()

    expect(page.locator("#f-code-error")).to_have_text("Must be 3 letters and 3 digits")
    expect(page.locator("#f-email-error")).to_contain_text("Enter a valid email address")
    expect(page.locator("#f-home-error")).to_have_text(
        "This address is missing a house or building number, a town or city (after a comma) "
        "and a postal code."
    )
    assert status_of(humanwire_client, sent.form_url).status == "pending"

    page.get_by_label("Booking code").fill("ABC123")
    page.get_by_label("Email").fill("ada@example.org")
    page.get_by_label("Address").fill("221B Baker Street, London NW1 6XE")
    page.get_by_role("button", name="Submit").click()
    expect(page.get_by_role("heading", name="Thank you, your answers were sent")).to_be_visible()
    values = values_of(humanwire_client, sent.form_url)
    assert values["code"] == "ABC123"


def test_server_rejects_what_the_browser_would_and_keeps_the_input(
    humanwire_client: HumanWire, browser: Browser
) -> None:
    """Without JavaScript the browser checks nothing: the server applies the same rules
    and re-renders the page with the person's answers and the messages."""
    fields: list[dict[str, Any]] = [
        {"id": "name", "label": "Name", "type": "text", "required": True},
        {
            "id": "code",
            "label": "Code",
            "type": "text",
            "validations": [{"title": "Digits only", "pattern": "^[0-9]+$"}],
        },
        {"id": "phone", "label": "Phone", "type": "phone_number"},
    ]
    sent = send_form(humanwire_client, fields)
    context = browser.new_context(java_script_enabled=False, viewport=PHONE)  # type: ignore[arg-type]
    try:
        page = context.new_page()
        page.goto(sent.form_url)
        page.get_by_label("Name").fill("Ada <b>")
        page.get_by_label("Code", exact=True).fill("12a")
        page.locator("select.country").select_option("FR")
        page.get_by_role("textbox", name="Phone", exact=True).fill("12")
        # The native required check is the browser's; leave it out to reach the server.
        page.get_by_label("Name").evaluate("e => e.closest('form').noValidate = true")
        with page.expect_response(lambda r: r.request.method == "POST") as posted:
            page.get_by_role("button", name="Submit").click()
        assert posted.value.status == 400
        expect(page.locator("#f-code-error")).to_have_text("Digits only")
        expect(page.locator("#f-phone-error")).to_have_text(
            "Enter a valid phone number for the chosen country."
        )
        expect(page.get_by_label("Name")).to_have_value("Ada <b>")
        expect(page.get_by_label("Code", exact=True)).to_have_value("12a")
        expect(page.locator("select.country")).to_have_value("FR")
        expect(page.get_by_role("alert")).to_contain_text("Please fix 2 answers")

        page.get_by_label("Code", exact=True).fill("12")
        page.get_by_role("textbox", name="Phone", exact=True).fill("6 12 34 56 78")
        page.get_by_role("button", name="Submit").click()
        expect(
            page.get_by_role("heading", name="Thank you, your answers were sent")
        ).to_be_visible()
    finally:
        context.close()
    values = values_of(humanwire_client, sent.form_url)
    assert values == {"name": "Ada <b>", "code": "12", "phone": "+33612345678"}


def test_phone_country_search(humanwire_client: HumanWire, page: Page) -> None:
    sent = send_form(humanwire_client, [{"id": "tel", "label": "Mobile", "type": "phoneNumber"}])
    page.goto(sent.form_url)
    picker = page.get_by_role("combobox")
    # The default country is the recipient's (+1 202 …: United States).
    expect(picker).to_have_value("US +1")
    listbox = page.get_by_role("listbox")

    picker.fill("germ")
    expect(listbox).to_be_visible()
    expect(listbox.get_by_role("option").first).to_contain_text("Germany")
    picker.fill("jp")  # the ISO code
    expect(listbox.get_by_role("option").first).to_contain_text("Japan")
    picker.fill("+91")  # the calling code
    expect(listbox.get_by_role("option").first).to_contain_text("India")
    picker.fill("zzzz")
    expect(listbox).to_contain_text("No country matches")

    # Keyboard only: open, move, choose; Escape restores the choice.
    picker.fill("switz")
    picker.press("ArrowDown")
    picker.press("Enter")
    expect(picker).to_have_value("CH +41")
    expect(picker).to_have_attribute("aria-expanded", "false")
    picker.fill("fra")
    picker.press("Escape")
    expect(picker).to_have_value("CH +41")
    assert page.locator("select.country").input_value() == "CH"

    # By mouse too.
    picker.fill("new zea")
    listbox.get_by_role("option", name=re.compile("New Zealand")).click()
    expect(picker).to_have_value("NZ +64")

    page.get_by_role("textbox", name="Mobile").fill("21 123 4567")
    page.get_by_role("textbox", name="Mobile").press("Enter")
    expect(page.get_by_role("heading", name="Thank you, your answers were sent")).to_be_visible()
    values = values_of(humanwire_client, sent.form_url)
    assert values == {"tel": "+64211234567"}


def test_countdown_then_follow_up_then_expired(
    humanwire_client: HumanWire, page: Page, background: ThreadPoolExecutor
) -> None:
    fields = [{"id": "ok", "label": "OK?", "type": "text"}]
    waiting = held(background, send_form, humanwire_client, fields, wait_time=3, follow_up_time=3)
    deadline = time.monotonic() + 5
    form_url = None
    while form_url is None and time.monotonic() < deadline:
        try:
            form_url = latest_form_url(humanwire_client)
        except AssertionError:
            time.sleep(0.05)
    assert form_url is not None
    page.goto(form_url)

    timer = page.get_by_role("timer")
    expect(timer).to_have_text(re.compile(r"Time left to answer: 0:0[1-3]"))
    first = timer.inner_text()
    expect(timer).not_to_have_text(first, timeout=2500)  # it counts down live
    expect(timer).to_have_text(
        re.compile(r"You can still send this form for 0:0[1-3]"), timeout=4000
    )
    result = waiting.result(timeout=5)
    assert result.responded is False
    assert result.response == "Human did not respond. Continue where you left off."

    expect(page.get_by_role("heading", name="This form has expired")).to_be_visible(timeout=5000)
    expect(page.locator("form.hw-form")).to_be_hidden()
    # The server is the authority: the page and a JSON post both say 410.
    response = page.reload()
    assert response is not None and response.status == 410
    expect(page.get_by_role("heading", name="This form has expired")).to_be_visible()
    late = httpx.post(form_url, json={"values": {"ok": "yes"}})
    assert late.status_code == 410
    assert late.json()["error"]["code"] == "gone"


def test_submission_inside_the_follow_up_window_is_accepted(
    humanwire_client: HumanWire, page: Page, background: ThreadPoolExecutor
) -> None:
    fields = [{"id": "ok", "label": "OK?", "type": "text"}]
    waiting = held(background, send_form, humanwire_client, fields, wait_time=1, follow_up_time=30)
    result = waiting.result(timeout=5)
    assert result.responded is False
    page.goto(result.form_url)
    expect(page.get_by_role("timer")).to_have_text(
        re.compile(r"You can still send this form for 0:[23]\d")
    )
    page.get_by_label("OK?").fill("late but here")
    page.get_by_role("button", name="Submit").click()
    expect(page.get_by_role("heading", name="Thank you, your answers were sent")).to_be_visible()
    assert submitted_values(humanwire_client, result.interaction_id) == {"ok": "late but here"}


def test_second_submission_refused_with_a_clear_page(
    humanwire_client: HumanWire, context: Any
) -> None:
    sent = send_form(humanwire_client, [{"id": "a", "label": "Answer", "type": "text"}])
    first, second = context.new_page(), context.new_page()
    first.goto(sent.form_url)
    second.goto(sent.form_url)
    first.get_by_label("Answer").fill("first")
    first.get_by_role("button", name="Submit").click()
    expect(first.get_by_role("heading", name="Thank you, your answers were sent")).to_be_visible()

    second.get_by_label("Answer").fill("second")
    with second.expect_response(lambda r: r.request.method == "POST") as posted:
        second.get_by_role("button", name="Submit").click()
    assert posted.value.status == 409
    expect(second.get_by_role("heading", name="This form was already submitted")).to_be_visible()
    expect(second.get_by_text("this one was not recorded")).to_be_visible()
    values = values_of(humanwire_client, sent.form_url)
    assert values == {"a": "first"}


def test_request_text_is_escaped(humanwire_client: HumanWire, page: Page) -> None:
    xss = "<img src=x onerror=alert(1)>"
    sent = send_form(
        humanwire_client,
        [
            {
                "id": "pick",
                "label": xss,
                "type": "select",
                "helperText": "<script>alert(2)</script>",
                "placeholder": '"><b>bold</b>',
                "options": [{"label": "<i>one</i>", "value": "\"'><svg onload=alert(3)>"}],
            },
            {
                "id": "t",
                "label": "T",
                "type": "text",
                "validations": [{"title": "<u>rule</u>", "pattern": "^x$"}],
            },
        ],
        title="<script>alert(4)</script>",
        description="<iframe src=/inbox></iframe>",
        submit_label="<em>Go</em>",
    )
    dialogs: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.goto(sent.form_url)

    expect(page.get_by_text(xss, exact=True)).to_be_visible()
    expect(page.get_by_role("heading", name="<script>alert(4)</script>")).to_be_visible()
    expect(page.get_by_text("<iframe src=/inbox></iframe>")).to_be_visible()
    expect(page.get_by_text("<script>alert(2)</script>")).to_be_visible()
    expect(page.get_by_role("button", name="<em>Go</em>")).to_be_visible()
    assert page.locator("main img, main script, main iframe, main svg, main em").count() == 0
    page.get_by_label(xss).select_option(label="<i>one</i>")
    page.get_by_label("T", exact=True).fill("nope")
    page.get_by_role("button", name="<em>Go</em>").click()
    expect(page.locator("#f-t-error")).to_have_text("<u>rule</u>")
    assert page.locator("main u").count() == 0
    assert dialogs == []


def test_keyboard_only_with_visible_focus(humanwire_client: HumanWire, page: Page) -> None:
    fields: list[dict[str, Any]] = [
        {"id": "name", "label": "Name", "type": "text", "required": True},
        {"id": "tel", "label": "Phone", "type": "phone_number"},
        {
            "id": "size",
            "label": "Size",
            "type": "select",
            "options": [{"label": "Small", "value": "s"}, {"label": "Large", "value": "l"}],
        },
        {"id": "agree", "label": "Agree", "type": "checkbox", "required": True},
    ]
    sent = send_form(humanwire_client, fields)
    page.goto(sent.form_url)
    page.wait_for_selector("form[data-countries-loaded]")
    page.keyboard.press("Tab")
    name = page.get_by_role("textbox", name="Name")
    expect(name).to_be_focused()
    outline = name.evaluate("e => getComputedStyle(e).outlineWidth")
    assert outline not in ("0px", ""), outline  # the focus is visible
    page.keyboard.type("Grace")
    page.keyboard.press("Tab")
    expect(page.get_by_role("combobox", name=re.compile("Country code"))).to_be_focused()
    page.keyboard.type("ireland")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page.get_by_role("combobox", name=re.compile("Country code"))).to_have_value("IE +353")
    page.keyboard.press("Tab")
    expect(page.get_by_role("textbox", name="Phone", exact=True)).to_be_focused()
    page.keyboard.type("085 123 4567")
    page.keyboard.press("Tab")
    expect(page.get_by_label("Size")).to_be_focused()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Tab")
    expect(page.get_by_label("Agree")).to_be_focused()
    page.keyboard.press("Space")
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Submit")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Thank you, your answers were sent")).to_be_visible()
    assert values_of(humanwire_client, sent.form_url) == {
        "name": "Grace",
        "tel": "+353851234567",
        "size": "l",
        "agree": "true",
    }
