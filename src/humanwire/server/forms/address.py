"""Address checking for ``address`` form fields, behind one protocol.

``structural`` (the default) checks the shape of an address offline and tells the
person what is missing (house number, street, town, postal code); the browser applies
the same rules (``static/form.js``). A real provider (``[address] provider``: Google,
Smarty, a self-hosted Nominatim or Photon; ``address_providers``) checks it against real
addresses over the network; the browser then leaves the check to the server.

A check has four outcomes (docs/guides/checking-addresses.md): valid (``normalized`` is
stored), corrected (``suggestion`` is shown for the person to accept), not found
(``message`` under the field), and unavailable (the provider was slow or down: the
person is told, and ``[address] on_unavailable`` accepts the address as typed or refuses
it until it can be checked).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, runtime_checkable

__all__ = [
    "CANNOT_CHECK_MESSAGE",
    "CORRECTED_MESSAGE",
    "NOT_FOUND_MESSAGE",
    "UNAVAILABLE_MESSAGE",
    "UNCHECKED_NOTICE",
    "AddressCheck",
    "AddressValidator",
    "StructuralAddressValidator",
    "corrected_message_for_json",
    "country_name",
    "country_of",
    "same_address",
]

NOT_FOUND_MESSAGE = "We could not find this address. Check it and try again."
CORRECTED_MESSAGE = (
    "We found a closer match for this address. Use the suggested address below, "
    "or correct what you typed."
)


def corrected_message_for_json(suggestion: str) -> str:
    """The corrected-address message of a JSON post, which has no page to show the
    suggestion on."""
    return f"We found a closer match for this address: {suggestion}. Send that address to use it."


UNAVAILABLE_MESSAGE = (
    "We could not check this address just now. Your answers are kept: send the form "
    "again in a moment."
)
CANNOT_CHECK_MESSAGE = (
    "This address cannot be checked here: its country may not be covered. Check that it "
    "is complete and names its country, or ask the sender."
)
UNCHECKED_NOTICE = "Your address could not be checked, so it was sent as you typed it."


@dataclass(frozen=True)
class AddressCheck:
    """The verdict on one address.

    ``ok``: accepted; ``normalized`` is what gets stored (empty: the text as typed).
    Refused: ``message`` is shown under the field; ``suggestion`` (corrected) is the
    provider's version, offered for the person to accept. ``unchecked``: the provider
    could not be asked (with ``ok`` the address was accepted as typed, without it it
    was refused until it can be checked)."""

    ok: bool
    normalized: str = ""
    message: str = ""
    suggestion: str = ""
    unchecked: bool = False

    @classmethod
    def valid(cls, normalized: str) -> AddressCheck:
        return cls(ok=True, normalized=normalized)

    @classmethod
    def corrected(cls, suggestion: str) -> AddressCheck:
        return cls(ok=False, message=CORRECTED_MESSAGE, suggestion=suggestion)

    @classmethod
    def not_found(cls, message: str = NOT_FOUND_MESSAGE) -> AddressCheck:
        return cls(ok=False, message=message)


@runtime_checkable
class AddressValidator(Protocol):
    """Checks one address as typed, on the event loop: a provider asks over the network
    (async, within its timeout) and never blocks the loop."""

    @property
    def name(self) -> str:
        """``"structural"`` makes the browser run the same structural rules."""
        ...

    async def validate(self, address: str) -> AddressCheck: ...

    async def aclose(self) -> None:
        """Releases connections; the service calls it at shutdown."""
        ...


def same_address(a: str, b: str) -> bool:
    """Equal but for case, spacing and punctuation: a suggestion posted back is taken
    as accepted even if the provider would format it a little differently again."""

    def key(text: str) -> str:
        return " ".join(re.sub(r"[^\w]+", " ", text.casefold()).split())

    return key(a) == key(b)


_COUNTRY_ALIASES = {
    "usa": "US",
    "us": "US",
    "u.s.a.": "US",
    "u.s.": "US",
    "united states of america": "US",
    "america": "US",
    "uk": "GB",
    "u.k.": "GB",
    "great britain": "GB",
    "england": "GB",
    "scotland": "GB",
    "wales": "GB",
    "northern ireland": "GB",
    "deutschland": "DE",
    "españa": "ES",
    "italia": "IT",
    "nederland": "NL",
    "schweiz": "CH",
    "suisse": "CH",
    "österreich": "AT",
}


@lru_cache(maxsize=1)
def _country_names() -> dict[str, str]:
    from .countries import countries

    names = {c.name.casefold(): c.region for c in countries()}
    return names | _COUNTRY_ALIASES


def country_name(region: str) -> str:
    """The English name of an ISO 3166-1 alpha-2 code (``GB`` → ``United Kingdom``), or
    the code itself when unknown."""
    from .countries import country_by_region

    country = country_by_region(region.upper())
    return country.name if country is not None else region.upper()


def country_of(address: str) -> str | None:
    """The ISO 3166-1 alpha-2 code of the country an address names in its last part
    (``…, United Kingdom``, ``…, USA``), else None. Two-letter codes are not read as
    countries (``Mountain View, CA`` is California, not Canada), except US and UK."""
    parts = [p.strip() for p in re.split(PART_SEPARATOR_PATTERN, address) if p.strip()]
    if len(parts) < 2:
        return None
    last = parts[-1].casefold().strip(" .")
    return _country_names().get(last) or _country_names().get(last + ".")


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

    def check(self, address: str) -> AddressCheck:
        missing = self.missing_parts(address)
        if missing:
            return AddressCheck(ok=False, message=_missing_message(missing))
        normalized = ", ".join(
            " ".join(p.split()) for p in re.split(PART_SEPARATOR_PATTERN, address) if p.strip()
        )
        return AddressCheck(ok=True, normalized=normalized)

    async def validate(self, address: str) -> AddressCheck:
        return self.check(address)

    async def aclose(self) -> None:
        return None


def _missing_message(missing: list[str]) -> str:
    listed = missing[0] if len(missing) == 1 else ", ".join(missing[:-1]) + " and " + missing[-1]
    return f"This address is missing {listed}."
