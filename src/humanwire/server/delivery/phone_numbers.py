"""What the carriers' reserved numbers share (Twilio's and Telnyx's): the offers they make,
described alike, and the rules around them.

The operator's pool (``<carrier>.numbers``, less the shared senders) is offered first; a
number is bought only with ``<carrier>.buy_numbers``, from what the carrier offers in the
US or GB (an area code only narrows a US search). A pool number keeps pointing here when
released (a text or call to a number nobody holds is answered harmlessly); a bought one
is released back to the carrier when the account deletes it, as a stored job retried
until the carrier takes it. A carrier's ``…Numbers`` keeps only what differs: how its
offers are listed (``_available``) and how a number is pointed here or bought
(``attach``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

import phonenumbers

from .base import ProviderFailure
from .carrier_rest import CarrierAPIError
from .jobs import ProviderJobs

__all__ = ["CarrierNumbers", "NumberOffer", "describe"]

NumberOffer = tuple[str, str, str]
"""``(phone number, country, area code)``."""

_BUYABLE_COUNTRIES = ("US", "GB")


def describe(phone_number: str) -> NumberOffer | None:
    """Country (``US`` / ``GB``) and area code of an E.164 number; None for others."""
    try:
        parsed = phonenumbers.parse(phone_number, None)
    except phonenumbers.NumberParseException:
        return None
    country = phonenumbers.region_code_for_number(parsed)
    if country not in _BUYABLE_COUNTRIES:
        return None
    national = str(parsed.national_number)
    length = 3 if country == "US" else phonenumbers.length_of_geographical_area_code(parsed)
    return phone_number, country, national[: length or 0]


class CarrierNumbers(ABC):
    """A carrier's reserved numbers: the pool, what may be bought, the search, the
    release of a bought number (``ref_key`` names its id in the number's stored data)."""

    label = "the carrier"
    """The carrier in messages: ``Twilio``."""
    ref_key = "id"

    def __init__(
        self,
        *,
        numbers: Iterable[str],
        shared: Iterable[str | None],
        buy_numbers: bool,
        jobs: ProviderJobs,
    ) -> None:
        self.jobs = jobs
        self.buy_numbers = buy_numbers
        # The shared senders are everybody's: never one account's, even if listed.
        self._shared = set(shared) - {None}
        self._pool = [
            offer for n in numbers if n not in self._shared and (offer := describe(n)) is not None
        ]

    @property
    def buys(self) -> bool:
        return self.buy_numbers

    def pool(self) -> list[NumberOffer]:
        return list(self._pool)

    def in_pool(self, phone_number: str) -> bool:
        return any(offer[0] == phone_number for offer in self._pool)

    def buyable(self, phone_number: str) -> bool:
        return (
            self.buy_numbers
            and phone_number not in self._shared
            and describe(phone_number) is not None
        )

    @abstractmethod
    async def _available(self, country: str, area_code: str | None) -> list[dict[str, Any]]:
        """What the carrier offers in ``country`` (its entries carry ``phone_number``)."""

    async def search(self, country: str | None, area_code: str | None) -> list[NumberOffer]:
        """Numbers the carrier would sell (only with ``buy_numbers``)."""
        if not self.buy_numbers:
            return []
        offers: list[NumberOffer] = []
        for code in [country] if country else list(_BUYABLE_COUNTRIES):
            try:
                found = await self._available(code, area_code)
            except CarrierAPIError as exc:
                raise ProviderFailure(f"{self.label} could not list numbers: {exc}") from None
            for entry in found:
                offer = describe(str(entry.get("phone_number") or ""))
                if offer is None or offer[0] in self._shared:
                    continue
                if not area_code or offer[2] == area_code:
                    offers.append(offer)
        return offers

    @abstractmethod
    async def attach(self, phone_number: str) -> dict[str, Any]:
        """Points the number here (a pool number) or buys it; returns what to keep about
        it (its id under ``ref_key``, ``bought``)."""

    async def detach(self, data: dict[str, Any]) -> None:
        """Releases a bought number back to the carrier: a stored job, retried until the
        carrier takes it. A pool number stays the operator's (nothing to do)."""
        ref = str(data.get(self.ref_key) or "")
        if data.get("bought") and ref:
            await self.jobs.add("release_number", ref)
