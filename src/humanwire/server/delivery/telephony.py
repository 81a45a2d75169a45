"""Two telephony carriers at once (Twilio and Telnyx): who carries what.

``[telephony] order`` names the carrier of the shared sends (the first configured one);
a number goes out through the carrier that owns it: a shared number is its carrier's, a
pool number its pool's, a bought number the carrier that sold it (recorded with the
reservation, ``provider``). Reserved numbers come from every pool; buying goes through the
first carrier in order that may buy. The engine sees one ``Provider`` for sms and calls
and one ``NumberSource``: nothing in it knows how many carriers there are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .base import NumberSource, Outbound, Provider, Sent
from .phone_numbers import NumberOffer

if TYPE_CHECKING:
    from ..store.protocol import Store

__all__ = ["Carrier", "CarrierNumbers", "TelephonyRouter", "owner_of_number"]


class CarrierNumberSource(NumberSource, Protocol):
    @property
    def buys(self) -> bool:
        """Whether it may buy numbers (``buy_numbers``)."""
        ...


class Carrier(Provider, Protocol):
    """A telephony provider: a ``Provider`` with reserved numbers, which can tell a call
    it placed by its reference."""

    @property
    def numbers(self) -> CarrierNumberSource: ...
    def placed(self, ref: str) -> bool: ...


async def owner_of_number(carriers: Sequence[Carrier], store: Store, number: str) -> Carrier:
    """The carrier ``number`` goes out through (the first, for a number none owns)."""
    from ..engine.numbers import NUMBER_SCOPE

    for carrier in carriers:
        if number and number == carrier.senders.get("sms"):
            return carrier
    for carrier in carriers:
        if carrier.numbers.in_pool(number):
            return carrier
    kept = await store.get_provider_state(NUMBER_SCOPE, number) if number else None
    if kept is not None:
        for carrier in carriers:
            if carrier.name == kept.get("provider"):
                return carrier
    return carriers[0]


class TelephonyRouter:
    """sms and calls over ``carriers`` (in ``[telephony] order``)."""

    def __init__(self, carriers: Sequence[Carrier], store: Store) -> None:
        self.carriers = list(carriers)
        self.store = store
        self.name = self.carriers[0].name

    @property
    def senders(self) -> Mapping[str, str]:
        return self.carriers[0].senders

    async def deliver(self, item: Outbound) -> Sent:
        owner = await owner_of_number(self.carriers, self.store, item.from_addr or "")
        return await owner.deliver(item)

    async def accepts_sender(self, account_id: str, channel: str, sender: str) -> bool:
        for carrier in self.carriers:
            if await carrier.accepts_sender(account_id, channel, sender):
                return True
        return False

    async def hang_up(self, ref: str) -> None:
        for carrier in self.carriers:
            if carrier.placed(ref):
                await carrier.hang_up(ref)
                return


class CarrierNumbers:
    """Every carrier's pool; buying through the first that may buy."""

    def __init__(self, carriers: Sequence[Carrier]) -> None:
        self.carriers = list(carriers)

    def _buyer(self, phone_number: str | None = None) -> Carrier | None:
        for carrier in self.carriers:
            if carrier.numbers.buys:
                if phone_number is None or carrier.numbers.buyable(phone_number):
                    return carrier
                return None  # only the first buyer buys
        return None

    def pool(self) -> list[NumberOffer]:
        return [offer for carrier in self.carriers for offer in carrier.numbers.pool()]

    def in_pool(self, phone_number: str) -> bool:
        return any(carrier.numbers.in_pool(phone_number) for carrier in self.carriers)

    def buyable(self, phone_number: str) -> bool:
        return self._buyer(phone_number) is not None

    async def search(self, country: str | None, area_code: str | None) -> list[NumberOffer]:
        buyer = self._buyer()
        return await buyer.numbers.search(country, area_code) if buyer is not None else []

    async def attach(self, phone_number: str) -> dict[str, Any]:
        owner = next((c for c in self.carriers if c.numbers.in_pool(phone_number)), None)
        owner = owner or self._buyer(phone_number) or self.carriers[0]
        return {**await owner.numbers.attach(phone_number), "provider": owner.name}

    async def detach(self, data: dict[str, Any]) -> None:
        name = data.get("provider", "twilio")  # kept before there were two carriers
        for carrier in self.carriers:
            if carrier.name == name:
                await carrier.numbers.detach(data)
                return
