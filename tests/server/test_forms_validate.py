"""Server-side form validation: the rules the browser applies too."""

from __future__ import annotations

from typing import Any

import pytest

from humanwire.server.forms.address import AddressCheck, StructuralAddressValidator
from humanwire.server.forms.validate import (
    check_submission,
    format_content,
    normalize_phone,
    validate_submission,
)
from humanwire.types import Form


def make_form(*fields: dict[str, Any]) -> Form:
    return Form.model_validate({"title": "T", "fields": list(fields), "waitTime": 5})


ALL_TYPES = make_form(
    {"id": "name", "label": "Name", "type": "text", "required": True},
    {"id": "notes", "label": "Notes", "type": "textarea"},
    {"id": "email", "label": "Email", "type": "email", "required": True},
    {"id": "phone", "label": "Phone", "type": "phoneNumber"},
    {
        "id": "size",
        "label": "Size",
        "type": "select",
        "options": [{"label": "Small", "value": "s"}, {"label": "Large", "value": "l"}],
    },
    {"id": "agree", "label": "I agree", "type": "checkbox", "required": True},
    {"id": "news", "label": "Newsletter", "type": "checkbox"},
    {"id": "home", "label": "Address", "type": "address"},
)


def test_every_type_normalized() -> None:
    values, errors = validate_submission(
        ALL_TYPES,
        {
            "name": "  Ada  ",
            "notes": "line 1\r\nline 2",
            "email": "ada@Example.COM",
            "phone": "+44 020 7946 0018",
            "size": "l",
            "agree": "on",
            "home": "10 Downing Street,  London SW1A 2AA",
        },
    )
    assert errors == {}
    assert values == {
        "name": "Ada",
        "notes": "line 1\nline 2",
        "email": "ada@example.com",
        "phone": "+442079460018",
        "size": "l",
        "agree": "true",
        "news": "false",
        "home": "10 Downing Street, London SW1A 2AA",
    }
    assert format_content(ALL_TYPES, values) == "\n".join(
        [
            "Name: Ada",
            "Notes: line 1\nline 2",
            "Email: ada@example.com",
            "Phone: +442079460018",
            "Size: Large",
            "I agree: Yes",
            "Newsletter: No",
            "Address: 10 Downing Street, London SW1A 2AA",
        ]
    )


def test_required_fields_and_optional_left_out() -> None:
    values, errors = validate_submission(ALL_TYPES, {"name": "   ", "agree": "false"})
    assert errors == {
        "name": "This field is required.",
        "email": "This field is required.",
        "agree": "Tick this box to continue.",
    }
    assert "notes" not in values and "phone" not in values and "size" not in values


@pytest.mark.parametrize("email", ["ada", "ada@", "ada@localhost", "ada@exa mple.com", "@x.io"])
def test_bad_email(email: str) -> None:
    form = make_form({"id": "e", "label": "E", "type": "email"})
    assert validate_submission(form, {"e": email})[1] == {
        "e": "Enter a valid email address, like name@example.com."
    }


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("+1 202-555-0100", "+12025550100"),
        ("0044 20 7946 0018", "+442079460018"),
        ("+33 6 12 34 56 78", "+33612345678"),
    ],
)
def test_phone_to_e164(typed: str, expected: str) -> None:
    assert normalize_phone(typed) == (expected, None)


@pytest.mark.parametrize("typed", ["+1 555 555 0100", "+44 12", "+999 1234567", "+1abc"])
def test_bad_phone(typed: str) -> None:
    phone, error = normalize_phone(typed)
    assert phone == "" and error == "Enter a valid phone number for the chosen country."


def test_phone_needs_country_code() -> None:
    assert normalize_phone("202 555 0100")[1] is not None


def test_select_value_must_be_an_option_value_not_label() -> None:
    assert validate_submission(ALL_TYPES, {"size": "Large"})[1]["size"] == (
        "Choose one of the options."
    )


def test_checkbox_garbage_refused() -> None:
    assert "news" in validate_submission(ALL_TYPES, {"news": "maybe"})[1]


def test_unknown_field_refused() -> None:
    _, errors = validate_submission(
        make_form({"id": "a", "label": "A", "type": "text"}), {"a": "x", "zzz": "1"}
    )
    assert errors == {"zzz": "This form has no such field."}


def test_regex_rules_search_semantics_and_title() -> None:
    form = make_form(
        {
            "id": "code",
            "label": "Code",
            "type": "text",
            "validations": [
                {"title": "Must contain a digit", "pattern": r"\d"},
                {"title": "Exactly 4 characters", "pattern": "^.{4}$"},
            ],
        }
    )
    assert validate_submission(form, {"code": "ab3d"}) == ({"code": "ab3d"}, {})
    assert validate_submission(form, {"code": "abcd"})[1] == {"code": "Must contain a digit"}
    assert validate_submission(form, {"code": "a3"})[1] == {"code": "Exactly 4 characters"}
    # Rules do not fire on an optional field left empty.
    assert validate_submission(form, {"code": ""}) == ({}, {})


def test_phone_rules_apply_to_e164() -> None:
    form = make_form(
        {
            "id": "p",
            "label": "P",
            "type": "phone_number",
            "validations": [{"title": "UK numbers only", "pattern": r"^\+44"}],
        }
    )
    assert validate_submission(form, {"p": "+1 202 555 0100"})[1] == {"p": "UK numbers only"}
    assert validate_submission(form, {"p": "+44 20 7946 0018"})[0] == {"p": "+442079460018"}


def test_too_long_refused() -> None:
    form = make_form({"id": "t", "label": "T", "type": "textarea"})
    assert "t" in validate_submission(form, {"t": "x" * 10_001})[1]


@pytest.mark.parametrize(
    ("address", "missing"),
    [
        ("Main Street", ["house or building number", "town or city", "postal code"]),
        ("12 Main Street", ["town or city", "postal code"]),
        ("12 Main Street, Springfield", ["postal code"]),
        ("London SW1A 2AA", ["house or building number"]),
    ],
)
def test_structural_address_says_what_is_missing(address: str, missing: list[str]) -> None:
    check = StructuralAddressValidator().check(address)
    assert not check.ok
    for part in missing:
        assert part in check.message
    form = make_form({"id": "a", "label": "A", "type": "address"})
    assert validate_submission(form, {"a": address})[1] == {"a": check.message}


@pytest.mark.parametrize(
    "address",
    [
        "1600 Amphitheatre Parkway, Mountain View, CA 94043",
        "221B Baker Street, London NW1 6XE",
        "Hauptstraße 5\n10115 Berlin",
        "Rue de Rivoli 12, 75001 Paris",
    ],
)
def test_structural_address_accepts_real_shapes(address: str) -> None:
    assert StructuralAddressValidator().check(address).ok


async def test_address_validator_is_pluggable() -> None:
    class OnlyBakerStreet:
        name = "baker"

        async def validate(self, address: str) -> AddressCheck:
            if "baker" in address.lower():
                return AddressCheck(ok=True, normalized="221B Baker St, London NW1 6XE, UK")
            return AddressCheck(ok=False, message="Address not found.")

        async def aclose(self) -> None:
            return None

    form = make_form({"id": "a", "label": "A", "type": "address"})
    baker = OnlyBakerStreet()
    checked = await check_submission(form, {"a": "221b baker"}, baker)
    assert checked.values == {"a": "221B Baker St, London NW1 6XE, UK"}
    checked = await check_submission(form, {"a": "10 Downing St, London SW1A 2AA"}, baker)
    assert checked.errors == {"a": "Address not found."}
    # Without a validator: the structural check.
    assert (await check_submission(form, {"a": "10 Downing St, London SW1A 2AA"})).errors == {}
