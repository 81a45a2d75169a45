"""Server-side validation of a submitted form, with the rules the browser applies too
(``static/form.js`` mirrors each rule; the server is the authority).

The engine calls ``validate_off_loop`` from ``submit_form``; the form page calls
``check_submission`` first to re-render a refused submission with the person's input,
the messages and any suggested address. Addresses are checked first, on the event loop
(a provider is asked over the network, asynchronously, within its timeout); then the
rest runs in a worker thread with those verdicts: the form's own patterns are matched by
RE2 (``humanwire.types._pattern``), in linear time."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import phonenumbers
from email_validator import SPECIAL_USE_DOMAIN_NAMES, EmailNotValidError, validate_email

from humanwire.types import Form, FormField
from humanwire.types.rules import PatternError, compiled_pattern

from .address import AddressCheck, AddressValidator, StructuralAddressValidator
from .worker import off_loop

__all__ = [
    "EMAIL_PATTERN",
    "FALSE_VALUES",
    "MAX_VALUE_LENGTH",
    "SPECIAL_USE_DOMAINS",
    "TRUE_VALUES",
    "SubmissionCheck",
    "check_submission",
    "format_content",
    "normalize_phone",
    "validate_off_loop",
    "validate_submission",
]

MAX_VALUE_LENGTH = 10_000
"""Longest accepted answer to one field (characters)."""

TRUE_VALUES = frozenset({"true", "on", "yes", "1"})
"""What a checkbox may be posted as when ticked (a browser sends ``on``)."""
FALSE_VALUES = frozenset({"false", "off", "no", "0", ""})

# The shape of an address, in the dialect Python ``re`` and JavaScript ``RegExp`` share:
# the browser tests it as is; the server tests it and then ``email_validator`` (which
# knows more rules), so the browser never accepts what the server refuses by shape.
_ATOM = "A-Za-z0-9\\u0080-\\uFFFF"
_LABEL = f"[{_ATOM}](?:[{_ATOM}-]{{0,61}}[{_ATOM}])?"
EMAIL_PATTERN = (
    r"^(?!\.)(?!.*\.\.)[" + _ATOM + r".!#$%&'*+/=?^_`{|}~-]+(?<!\.)@(?=[^@]{1,253}$)"
    rf"(?:{_LABEL}\.)+[A-Za-z\u0080-\uFFFF](?:[{_ATOM}-]{{0,61}}[{_ATOM}])?$"
)
SPECIAL_USE_DOMAINS: tuple[str, ...] = tuple(SPECIAL_USE_DOMAIN_NAMES)
"""Top-level names no mailbox lives under (``localhost``, ``test``, ...)."""

REQUIRED_MESSAGE = "This field is required."
CHECKBOX_REQUIRED_MESSAGE = "Tick this box to continue."
EMAIL_MESSAGE = "Enter a valid email address, like name@example.com."
PHONE_MESSAGE = "Enter a valid phone number for the chosen country."
PHONE_COUNTRY_MESSAGE = "Choose a country code, or start the number with + and the country code."
SELECT_MESSAGE = "Choose one of the options."
CHECKBOX_MESSAGE = "A checkbox is either ticked or not."
TOO_LONG_MESSAGE = f"This answer is too long (at most {MAX_VALUE_LENGTH} characters)."
NOT_TEXT_MESSAGE = "This answer holds characters that are not text."
UNKNOWN_FIELD_MESSAGE = "This form has no such field."


_STRUCTURAL = StructuralAddressValidator()


def validate_submission(
    form: Form,
    raw: Mapping[str, str],
    *,
    address_checks: Mapping[str, AddressCheck] | None = None,
) -> tuple[dict[str, str], dict[str, str]]:
    """Checks ``raw`` (field id → submitted text, as a browser or JSON post sends it)
    against ``form``: required, email, phone number (parsed, stored as E.164), select
    value among the options, checkbox, regex rules (search semantics), address (the
    verdict in ``address_checks`` by field id, made beforehand by the service's
    validator; the structural check for a field without one). Unknown field ids are an
    error.

    Returns ``(values, errors)``: ``values`` normalized for storage (checkbox
    ``"true"``/``"false"``, phone in E.164, unanswered optional fields left out);
    ``errors`` maps field id to the message shown under the field. Empty ``errors``
    means the submission is accepted.

    A phone number is posted as one string: E.164 or ``+`` and the country code
    followed by the national number as typed (``+44 020 7946 0018``); the form page
    joins its country dropdown and number input that way.
    """
    checks = address_checks or {}
    known = {f.id for f in form.fields}
    values: dict[str, str] = {}
    errors: dict[str, str] = {}
    for field_id in raw:
        if field_id not in known:
            errors[field_id] = UNKNOWN_FIELD_MESSAGE
    for form_field in form.fields:
        text = raw.get(form_field.id)
        value, error = _check_field(form_field, text, checks.get(form_field.id))
        if error is not None:
            errors[form_field.id] = error
        elif value is not None:
            values[form_field.id] = value
    return values, errors


@dataclass
class SubmissionCheck:
    """What ``check_submission`` found: ``values`` and ``errors`` as
    ``validate_submission`` returns them, the addresses a provider offered a correction
    for (``suggestions``: field id → the corrected address) and the fields whose address
    could not be checked (``unchecked``: accepted as typed, or refused saying so)."""

    values: dict[str, str]
    errors: dict[str, str]
    suggestions: dict[str, str] = field(default_factory=dict)
    unchecked: list[str] = field(default_factory=list)


async def check_submission(
    form: Form, raw: Mapping[str, str], addresses: AddressValidator | None = None
) -> SubmissionCheck:
    """Checks the address fields with ``addresses`` (the service's validator; the
    structural check by default) on the loop, all at once, then the whole submission on
    the answers' worker thread (``worker.off_loop``): RE2 is linear, but a 10,000-character
    answer against a pattern near its size limit still takes tens of milliseconds, and a
    form has up to 50 of them."""
    validator = addresses or _STRUCTURAL
    asked: dict[str, str] = {}
    for form_field in form.fields:
        if form_field.type == "address":
            answer = _clean_answer(raw.get(form_field.id))
            if answer:
                asked[form_field.id] = answer
    verdicts = await asyncio.gather(*(validator.validate(a) for a in asked.values()))
    checks = dict(zip(asked, verdicts, strict=True))
    values, errors = await off_loop("answers", _validate_with, form, raw, checks)
    return SubmissionCheck(
        values=values,
        errors=errors,
        suggestions={k: c.suggestion for k, c in checks.items() if c.suggestion and k in errors},
        unchecked=[k for k, c in checks.items() if c.unchecked],
    )


def _validate_with(
    form: Form, raw: Mapping[str, str], checks: Mapping[str, AddressCheck]
) -> tuple[dict[str, str], dict[str, str]]:
    return validate_submission(form, raw, address_checks=checks)


async def validate_off_loop(
    form: Form, raw: Mapping[str, str], addresses: AddressValidator | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """``(values, errors)`` of ``check_submission``."""
    checked = await check_submission(form, raw, addresses)
    return checked.values, checked.errors


def _clean_answer(text: object) -> str:
    """The answer a field's checks see, or "" when it is unanswered or refused before
    any check (not text, too long, lone surrogates)."""
    if not isinstance(text, str) or len(text) > MAX_VALUE_LENGTH or not _is_text(text):
        return ""
    # Browsers post a textarea's line breaks as CRLF; store them as typed: \n.
    return text.replace("\r\n", "\n").strip()


def _check_field(
    form_field: FormField, text: str | None, address_check: AddressCheck | None
) -> tuple[str | None, str | None]:
    """``(normalized value or None when unanswered, error message or None)``."""
    if text is not None and not isinstance(text, str):
        return None, "Send this answer as text."
    if text is not None and len(text) > MAX_VALUE_LENGTH:
        return None, TOO_LONG_MESSAGE
    if text is not None and not _is_text(text):
        return None, NOT_TEXT_MESSAGE
    if form_field.type == "checkbox":
        return _check_checkbox(form_field, text)
    answer = _clean_answer(text)
    if not answer:
        return None, REQUIRED_MESSAGE if form_field.required else None

    if form_field.type == "email":
        if not re.search(EMAIL_PATTERN, answer):
            return None, EMAIL_MESSAGE
        try:
            answer = validate_email(answer, check_deliverability=False).normalized
        except EmailNotValidError:
            return None, EMAIL_MESSAGE
    elif form_field.type == "phone_number":
        phone, error = normalize_phone(answer)
        if error is not None:
            return None, error
        answer = phone
    elif form_field.type == "select":
        if answer not in {o.value for o in form_field.options or ()}:
            return None, SELECT_MESSAGE
    elif form_field.type == "address":
        check = address_check or _STRUCTURAL.check(answer)
        if not check.ok:
            return None, check.message or "Enter a full address."
        answer = check.normalized or answer

    for rule in form_field.validations or ():
        # Search semantics, as JavaScript's RegExp.test: the author anchors with ^…$.
        try:
            pattern = compiled_pattern(rule.pattern)
        except PatternError:
            continue  # stored before the dialect: the page skips it too (STORED_FORM)
        if not pattern.search(answer):
            return None, rule.title
    return answer, None


def _is_text(text: str) -> bool:
    """No lone surrogates: the JSON post of the form page can carry ``"\\ud800"``, which
    RE2 cannot match and neither store can write (a 500 before)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_checkbox(form_field: FormField, text: str | None) -> tuple[str | None, str | None]:
    flag = (text or "").strip().lower()
    if flag in TRUE_VALUES:
        return "true", None
    if flag not in FALSE_VALUES:
        return None, CHECKBOX_MESSAGE
    if form_field.required:
        return None, CHECKBOX_REQUIRED_MESSAGE
    # An unticked box is an answer ("No"): browsers simply leave it out of the post.
    return "false", None


def normalize_phone(text: str) -> tuple[str, str | None]:
    """``(E.164, None)`` or ``("", message)``. ``00`` is taken as the international
    prefix; without a country code the number cannot be placed."""
    compact = text.strip()
    if compact.startswith("00"):
        compact = "+" + compact[2:]
    if not compact.startswith("+"):
        return "", PHONE_COUNTRY_MESSAGE
    try:
        parsed = phonenumbers.parse(compact, None)
    except phonenumbers.NumberParseException:
        return "", PHONE_MESSAGE
    if not phonenumbers.is_valid_number(parsed):
        return "", PHONE_MESSAGE
    return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164), None


def format_content(form: Form, values: Mapping[str, str]) -> str:
    """One ``label: value`` line per answered field, in field order; a select shows its
    option's label, a checkbox ``Yes`` or ``No``."""
    lines: list[str] = []
    for form_field in form.fields:
        value = values.get(form_field.id)
        if value is None:
            continue
        if form_field.type == "checkbox":
            shown = "Yes" if value == "true" else "No"
        elif form_field.type == "select":
            labels = {o.value: o.label for o in form_field.options or ()}
            shown = labels.get(value, value)
        else:
            shown = value
        lines.append(f"{form_field.label}: {shown}")
    return "\n".join(lines)
