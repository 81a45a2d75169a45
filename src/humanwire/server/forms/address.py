"""Address checking for ``address`` form fields, behind a pluggable protocol.

The embedded service has no address-validation provider, so the default validator is a
structural check that tells the person what is missing (house number, street, town,
postal code). A deployment plugs a real provider in with ``set_address_validator``.
The browser applies the same structural rules (``static/form.js``) while the default
validator is in use; with another validator the browser leaves the check to the server.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "AddressCheck",
    "AddressValidator",
    "StructuralAddressValidator",
    "get_address_validator",
    "set_address_validator",
]


@dataclass(frozen=True)
class AddressCheck:
    """The verdict on one address: ``normalized`` is what gets stored when ``ok``;
    ``message`` is shown under the field when not."""

    ok: bool
    normalized: str = ""
    message: str = ""


@runtime_checkable
class AddressValidator(Protocol):
    """Checks one address as typed. Called from the form submission path, so a
    provider backed by a network service must answer quickly (or cache)."""

    @property
    def name(self) -> str:
        """``"structural"`` makes the browser run the same structural rules."""
        ...

    def validate(self, address: str) -> AddressCheck: ...


# These patterns are written once and used in both dialects: the form page passes them
# to the browser, so keep them to syntax Python ``re`` and JavaScript ``RegExp`` share.
HOUSE_NUMBER_PATTERN = r"(^|[\s,#])\d+[A-Za-z]?([\s,/-]|$)"
STREET_NAME_PATTERN = r"[^\d\s,.#/-]{2,}"
POSTAL_CODE_PATTERN = (
    r"(^|[\s,])(\d{4,6}(-\d{3,4})?|[A-Za-z]{1,2}\d[A-Za-z\d]?\s?\d[A-Za-z]{2}"
    r"|[A-Za-z]\d[A-Za-z]\s?\d[A-Za-z]\d)([\s,]|$)"
)
PART_SEPARATOR_PATTERN = r"[,\n;]+"

MISSING_HOUSE_NUMBER = "a house or building number"
MISSING_STREET_NAME = "a street name"
MISSING_TOWN = "a town or city (after a comma)"
MISSING_POSTAL_CODE = "a postal code"


@dataclass(frozen=True)
class StructuralAddressValidator:
    """The default: an address needs a street line with a house number and a street
    name, then at least one more part (the town), and a postal code. Parts are
    separated by commas or new lines: ``10 Downing Street, London SW1A 2AA``."""

    require_postal_code: bool = True
    name: str = "structural"

    def missing_parts(self, address: str) -> list[str]:
        parts = [p.strip() for p in re.split(PART_SEPARATOR_PATTERN, address) if p.strip()]
        missing: list[str] = []
        first = parts[0] if parts else ""
        # "Flat 3, 12 High St": the number may sit in the second part.
        if not any(re.search(HOUSE_NUMBER_PATTERN, p) for p in parts[:2]):
            missing.append(MISSING_HOUSE_NUMBER)
        if not re.search(STREET_NAME_PATTERN, first):
            missing.append(MISSING_STREET_NAME)
        if not re.search(STREET_NAME_PATTERN, " ".join(parts[1:])):
            missing.append(MISSING_TOWN)
        if self.require_postal_code and not re.search(POSTAL_CODE_PATTERN, address):
            missing.append(MISSING_POSTAL_CODE)
        return missing

    def validate(self, address: str) -> AddressCheck:
        missing = self.missing_parts(address)
        if missing:
            return AddressCheck(ok=False, message=_missing_message(missing))
        normalized = ", ".join(
            " ".join(p.split()) for p in re.split(PART_SEPARATOR_PATTERN, address) if p.strip()
        )
        return AddressCheck(ok=True, normalized=normalized)


def _missing_message(missing: list[str]) -> str:
    listed = missing[0] if len(missing) == 1 else ", ".join(missing[:-1]) + " and " + missing[-1]
    return f"This address is missing {listed}."


_validator: AddressValidator = StructuralAddressValidator()


def get_address_validator() -> AddressValidator:
    return _validator


def set_address_validator(validator: AddressValidator) -> AddressValidator:
    """Installs ``validator`` for every form of this process; returns the previous one
    (so a test can restore it)."""
    global _validator
    previous = _validator
    _validator = validator
    return previous
