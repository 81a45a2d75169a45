"""The pool of reservable numbers of the embedded service: fictional numbers that
``phonenumbers`` still counts as valid, so they pass every E.164 check.

US: ``+1 <real area code> 555 01XX`` (555-0100..0199 is reserved for fiction); GB: the
London drama range ``+44 20 7946 0XXX``. The inbox's default human and the shared
numbers are never handed out.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import phonenumbers

from .config import (
    DEFAULT_HUMAN_PHONE,
    SHARED_SMS_NUMBER,
    SHARED_WHATSAPP_NUMBER,
)

__all__ = ["US_AREA_CODES", "PoolNumber", "in_pool", "pool", "pool_entry"]

US_AREA_CODES: tuple[str, ...] = ("202", "212", "312", "415", "617", "646", "718")
GB_AREA_CODE = "20"

_EXCLUDED = frozenset({DEFAULT_HUMAN_PHONE, SHARED_SMS_NUMBER, SHARED_WHATSAPP_NUMBER})


@dataclass(frozen=True)
class PoolNumber:
    phone_number: str
    country: str
    area_code: str


def _valid(number: str) -> bool:
    return bool(phonenumbers.is_valid_number(phonenumbers.parse(number, None)))


@lru_cache(maxsize=1)
def pool() -> tuple[PoolNumber, ...]:
    """Every number of the pool, US first, each checked with ``is_valid_number``."""
    candidates: list[PoolNumber] = []
    for area_code in US_AREA_CODES:
        for last in range(100):
            candidates.append(PoolNumber(f"+1{area_code}55501{last:02d}", "US", area_code))
    for last in range(1000):
        candidates.append(PoolNumber(f"+44207946{last:04d}", "GB", GB_AREA_CODE))
    return tuple(
        entry
        for entry in candidates
        if entry.phone_number not in _EXCLUDED and _valid(entry.phone_number)
    )


@lru_cache(maxsize=1)
def _by_number() -> dict[str, PoolNumber]:
    return {entry.phone_number: entry for entry in pool()}


def pool_entry(phone_number: str) -> PoolNumber | None:
    return _by_number().get(phone_number)


def in_pool(phone_number: str) -> bool:
    return phone_number in _by_number()
