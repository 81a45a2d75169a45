"""Reserved numbers: the pool of available numbers, reserve (one per account), list,
delete."""

from __future__ import annotations

import time
import uuid

from pydantic_core import PydanticCustomError

from humanwire.types import (
    AvailableNumber,
    ReservedNumber,
    check_e164,
)

from ..errors import (
    Conflict,
    InvalidRequest,
    InvalidToNumber,
    NotFound,
)
from ..numbers import pool, pool_entry
from ..store.base import (
    Duplicate,
    NumberRecord,
)
from ._common import Account, _timestamp
from .core import EngineCore


class Numbers(EngineCore):
    def available_numbers(
        self, country: str | None = None, area_code: str | None = None
    ) -> list[AvailableNumber]:
        """Every free number of the pool (``US``, then ``GB``), filtered."""
        if country is not None and country not in ("US", "GB"):
            raise InvalidRequest("country must be US or GB", field="country")
        taken = self.store.reserved_phone_numbers()
        return [
            AvailableNumber(
                phone_number=entry.phone_number,
                country=entry.country,  # type: ignore[arg-type]
                area_code=entry.area_code,
            )
            for entry in pool()
            if (country is None or entry.country == country)
            and (not area_code or entry.area_code == area_code)
            and entry.phone_number not in taken
        ]

    def reserve_number(self, account: Account, phone_number: str) -> ReservedNumber:
        try:
            check_e164(phone_number)
        except PydanticCustomError:
            raise InvalidToNumber(field="phoneNumber") from None
        if pool_entry(phone_number) is None:
            raise InvalidRequest(
                f"{phone_number} is not an available number (GET /numbers/available)",
                field="phoneNumber",
            )
        own = self.store.numbers_of(account.id)
        if own:
            if own[0].phone_number == phone_number:
                raise Conflict("this number is already reserved by this account")
            raise Conflict(
                "the account already has a reserved number: delete it first "
                "(one number per account)"
            )
        holder = self.store.number_by_phone(phone_number)
        if holder is not None:
            raise Conflict("this number is taken")
        now = time.time()
        record = NumberRecord(
            id=str(uuid.uuid4()),
            account_id=account.id,
            phone_number=phone_number,
            created_at=now,
            updated_at=now,
        )
        try:
            self.store.insert_number(record)
        except Duplicate:
            raise Conflict("this number is taken") from None
        self._notify(account.id, "number", record.id)
        return self._reserved(record)

    @staticmethod
    def _reserved(record: NumberRecord) -> ReservedNumber:
        return ReservedNumber(
            id=record.id,
            phone_number=record.phone_number,
            created_at=_timestamp(record.created_at),
            updated_at=_timestamp(record.updated_at),
        )

    def list_numbers(self, account: Account) -> list[ReservedNumber]:
        return [self._reserved(record) for record in self.store.numbers_of(account.id)]

    def delete_number(self, account: Account, number_id: str) -> None:
        if not self.store.delete_number(account.id, number_id):
            raise NotFound(f"no reserved number {number_id!r}", field="numberId")
        self._notify(account.id, "number", number_id)
