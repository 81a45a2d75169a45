"""Reserved numbers."""

from __future__ import annotations

from typing import Literal

from ._base import E164, RequestModel, ResponseModel, Timestamp

__all__ = ["AvailableNumber", "Country", "ReserveNumberRequest", "ReservedNumber"]

Country = Literal["US", "GB"]


class AvailableNumber(ResponseModel):
    phone_number: str
    country: Country
    area_code: str


class ReserveNumberRequest(RequestModel):
    phone_number: E164


class ReservedNumber(ResponseModel):
    id: str
    phone_number: str
    created_at: Timestamp
    updated_at: Timestamp
