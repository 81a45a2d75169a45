"""What the carriers' reserved numbers share: the offers they make, described alike."""

from __future__ import annotations

import phonenumbers

__all__ = ["NumberOffer", "describe"]

NumberOffer = tuple[str, str, str]
"""``(phone number, country, area code)``."""


def describe(phone_number: str) -> NumberOffer | None:
    """Country (``US`` / ``GB``) and area code of an E.164 number; None for others."""
    try:
        parsed = phonenumbers.parse(phone_number, None)
    except phonenumbers.NumberParseException:
        return None
    country = phonenumbers.region_code_for_number(parsed)
    if country not in ("US", "GB"):
        return None
    national = str(parsed.national_number)
    length = 3 if country == "US" else phonenumbers.length_of_geographical_area_code(parsed)
    return phone_number, country, national[: length or 0]
