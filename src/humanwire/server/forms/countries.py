"""Country data for the phone-number dropdown, built from ``phonenumbers``' own metadata
(regions, calling codes, number patterns) and its English region names, so the page
and the server agree on what a valid number is without any external fetch."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

import phonenumbers
from phonenumbers import geocoder

__all__ = ["Country", "countries", "countries_json", "country_by_region", "default_region"]

# Regions phonenumbers knows but has no English display name for.
_NAME_FALLBACKS = {
    "AC": "Ascension Island",
    "TA": "Tristan da Cunha",
    "XK": "Kosovo",
}

_TYPE_DESCS = (
    "fixed_line",
    "mobile",
    "toll_free",
    "premium_rate",
    "shared_cost",
    "personal_number",
    "voip",
    "pager",
    "uan",
    "voicemail",
)


@dataclass(frozen=True)
class Country:
    region: str
    """ISO 3166-1 alpha-2 code, as ``phonenumbers`` names regions."""
    name: str
    calling_code: int
    national_prefix_for_parsing: str | None
    """Regex stripped from the start of a national number (the trunk prefix)."""
    general_pattern: str
    """Every number of the region matches ``^(?:general_pattern)$``."""
    valid_pattern: str
    """A valid number also matches one of the number types: their patterns joined."""

    def to_json(self) -> dict[str, object]:
        return {
            "region": self.region,
            "name": self.name,
            "code": self.calling_code,
            "prefix": self.national_prefix_for_parsing,
            "general": self.general_pattern,
            "valid": self.valid_pattern,
        }


def _name(region: str) -> str:
    example = phonenumbers.example_number(region)
    name = geocoder.country_name_for_number(example, "en") if example is not None else ""
    return name or _NAME_FALLBACKS.get(region, region)


def _country(region: str) -> Country | None:
    metadata = phonenumbers.PhoneMetadata.metadata_for_region(region)
    if metadata is None or metadata.general_desc is None:
        return None
    general = metadata.general_desc.national_number_pattern
    if not general:
        return None
    types = []
    for attribute in _TYPE_DESCS:
        desc = getattr(metadata, attribute, None)
        if desc is not None and desc.national_number_pattern:
            types.append(f"(?:{desc.national_number_pattern})")
    prefix = metadata.national_prefix_for_parsing or metadata.national_prefix or None
    return Country(
        region=region,
        name=_name(region),
        calling_code=phonenumbers.country_code_for_region(region),
        national_prefix_for_parsing=prefix,
        general_pattern=general,
        valid_pattern="|".join(types) if types else general,
    )


@lru_cache(maxsize=1)
def countries() -> tuple[Country, ...]:
    """Every region ``phonenumbers`` supports, sorted by name."""
    built = (_country(region) for region in phonenumbers.SUPPORTED_REGIONS)
    return tuple(sorted((c for c in built if c is not None), key=lambda c: c.name.casefold()))


@lru_cache(maxsize=1)
def countries_json() -> bytes:
    """The list as the browser loads it (``/static/countries.json``)."""
    return json.dumps([c.to_json() for c in countries()], separators=(",", ":")).encode()


def country_by_region(region: str) -> Country | None:
    for country in countries():
        if country.region == region.upper():
            return country
    return None


def default_region() -> str:
    return "US"
