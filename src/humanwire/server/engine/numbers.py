"""The numbers role (``engine.numbers``): the pool of available numbers, reserve (one
per account), list, delete."""

from __future__ import annotations

import uuid

from pydantic_core import PydanticCustomError

from humanwire.types import (
    AvailableNumber,
    ReservedNumber,
    check_e164,
)

from ..delivery import ProviderFailure
from ..errors import (
    Conflict,
    InvalidRequest,
    InvalidToNumber,
    NotFound,
    ProviderError,
)
from ..numbers import pool, pool_entry
from ..store.protocol import Duplicate
from ..store.records import NumberRecord
from ._common import Account
from .runtime import Runtime, _timestamp

NUMBER_SCOPE = "reserved-number"
"""provider_state: what the number source keeps about a reserved number (its sid)."""


class Numbers:
    """The account's reserved numbers, from the sandbox's pool or a real provider's."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._store = runtime.store

    def _offers(self) -> list[tuple[str, str, str]]:
        if self._runtime.carriers.numbers is not None:
            return self._runtime.carriers.numbers.pool()
        return [(e.phone_number, e.country, e.area_code) for e in pool()]

    async def available(
        self, country: str | None = None, area_code: str | None = None
    ) -> list[AvailableNumber]:
        """Every free number of the pool (``US``, then ``GB``), filtered: the sandbox's
        fictional numbers, or the operator's (``twilio.numbers``) with Twilio."""
        if country is not None and country not in ("US", "GB"):
            raise InvalidRequest("country must be US or GB", field="country")
        return await self._free(self._offers(), country, area_code)

    async def _free(
        self, offers: list[tuple[str, str, str]], country: str | None, area_code: str | None
    ) -> list[AvailableNumber]:
        taken = await self._store.reserved_phone_numbers()
        seen: set[str] = set()
        free: list[AvailableNumber] = []
        for phone_number, offer_country, offer_area in offers:
            if (
                (country is None or offer_country == country)
                and (not area_code or offer_area == area_code)
                and phone_number not in taken
                and phone_number not in seen
            ):
                seen.add(phone_number)
                free.append(
                    AvailableNumber(
                        phone_number=phone_number,
                        country=offer_country,
                        area_code=offer_area,
                    )
                )
        return free

    async def find(
        self, country: str | None = None, area_code: str | None = None
    ) -> list[AvailableNumber]:
        """``available`` plus, when the provider may buy numbers, the ones it
        offers for sale (the pool first)."""
        if self._runtime.carriers.numbers is None:
            return await self.available(country, area_code)
        if country is not None and country not in ("US", "GB"):
            raise InvalidRequest("country must be US or GB", field="country")
        offers = self._runtime.carriers.numbers.pool()
        try:
            offers += await self._runtime.carriers.numbers.search(country, area_code)
        except ProviderFailure as exc:
            raise ProviderError(exc.message, retry_after=exc.retry_after) from None
        return await self._free(offers, country, area_code)

    async def _check_reservable(self, account: Account, phone_number: str) -> None:
        try:
            check_e164(phone_number)
        except PydanticCustomError:
            raise InvalidToNumber(field="phoneNumber") from None
        source = self._runtime.carriers.numbers
        offered = (
            pool_entry(phone_number) is not None
            if source is None
            else source.in_pool(phone_number) or source.buyable(phone_number)
        )
        if not offered:
            raise InvalidRequest(
                f"{phone_number} is not an available number (GET /numbers/available)",
                field="phoneNumber",
            )
        own = await self._store.numbers_of(account.id)
        if own:
            if own[0].phone_number == phone_number:
                raise Conflict("this number is already reserved by this account")
            raise Conflict(
                "the account already has a reserved number: delete it first "
                "(one number per account)"
            )
        holder = await self._store.number_by_phone(phone_number)
        if holder is not None:
            raise Conflict("this number is taken")

    async def reserve_from_pool(self, account: Account, phone_number: str) -> ReservedNumber:
        """Reserves a number of the sandbox's pool (``reserve`` is the API's: it also
        does a real provider's part)."""
        await self._check_reservable(account, phone_number)
        return await self._store_number(account, phone_number)

    async def _store_number(self, account: Account, phone_number: str) -> ReservedNumber:
        now = self._runtime.clock()
        record = NumberRecord(
            id=str(uuid.uuid4()),
            account_id=account.id,
            phone_number=phone_number,
            created_at=now,
            updated_at=now,
        )
        try:
            await self._store.insert_number(record)
        except Duplicate:
            # Replicas: another request of this account may have reserved one meanwhile
            # (a shared store allows one number per account).
            if any(
                n.phone_number != phone_number for n in await self._store.numbers_of(account.id)
            ):
                raise Conflict(
                    "the account already has a reserved number: delete it first "
                    "(one number per account)"
                ) from None
            raise Conflict("this number is taken") from None
        self._runtime.notices.notify(account.id, "number", record.id)
        return self._reserved(record)

    async def reserve(self, account: Account, phone_number: str) -> ReservedNumber:
        """``POST /numbers/reserve``: with a real provider, the number's webhooks are
        pointed here (or it is bought) before it is the account's; a provider failure is
        502 and nothing is reserved."""
        source = self._runtime.carriers.numbers
        if source is None:
            return await self.reserve_from_pool(account, phone_number)
        await self._check_reservable(account, phone_number)
        try:
            data = await source.attach(phone_number)
        except ProviderFailure as exc:
            raise ProviderError(exc.message, retry_after=exc.retry_after) from None
        try:
            await self._check_reservable(account, phone_number)  # another request may have won
            reserved = await self._store_number(account, phone_number)
        except Conflict:
            await source.detach(data)
            raise
        await self._store.put_provider_state(
            NUMBER_SCOPE, phone_number, data, self._runtime.clock()
        )
        return reserved

    @staticmethod
    def _reserved(record: NumberRecord) -> ReservedNumber:
        return ReservedNumber(
            id=record.id,
            phone_number=record.phone_number,
            created_at=_timestamp(record.created_at),
            updated_at=_timestamp(record.updated_at),
        )

    async def of(self, account: Account) -> list[ReservedNumber]:
        return [self._reserved(record) for record in await self._store.numbers_of(account.id)]

    async def delete(self, account: Account, number_id: str) -> None:
        """Releases the reservation; a number the provider bought for it is released
        back to the provider (in the background)."""
        held = [r for r in await self._store.numbers_of(account.id) if r.id == number_id]
        if not await self._store.delete_number(account.id, number_id):
            raise NotFound(f"no reserved number {number_id!r}", field="numberId")
        if held and self._runtime.carriers.numbers is not None:
            data = await self._store.get_provider_state(NUMBER_SCOPE, held[0].phone_number)
            if data is not None:
                await self._runtime.carriers.numbers.detach(data)
        self._runtime.notices.notify(account.id, "number", number_id)
