"""Reserved numbers: ``/numbers``."""

from __future__ import annotations

import builtins

from humanwire._http import Flow
from humanwire.errors import invalid_request
from humanwire.types import AvailableNumber, ReservedNumber, ReserveNumberRequest

from ._base import ModeT, Resource, build, endpoint, path_id

__all__ = ["Numbers"]

_COUNTRIES = ("US", "GB")


class Numbers(Resource[ModeT]):
    @endpoint
    def available(
        self, *, country: str | None = None, area_code: str | None = None
    ) -> Flow[builtins.list[AvailableNumber]]:
        """``GET /numbers/available``: numbers that can be reserved; ``[]`` when none match."""
        if country is not None and country not in _COUNTRIES:
            raise invalid_request(
                f"country must be one of {', '.join(_COUNTRIES)}, got {country!r}",
                field="country",
            )
        return self._get(
            "/numbers/available",
            builtins.list[AvailableNumber],
            params={"country": country, "areaCode": area_code},
        )

    @endpoint
    def reserve(
        self, phone_number: str, *, idempotency_key: str | None = None
    ) -> Flow[ReservedNumber]:
        """``POST /numbers/reserve``: one reserved number per account (409 otherwise)."""
        body = build(ReserveNumberRequest, phone_number=phone_number)
        return self._post("/numbers/reserve", body, ReservedNumber, idempotency_key=idempotency_key)

    @endpoint
    def list(self) -> Flow[builtins.list[ReservedNumber]]:
        """``GET /numbers``."""
        return self._get("/numbers", builtins.list[ReservedNumber])

    @endpoint
    def delete(self, number_id: str) -> Flow[None]:
        """``DELETE /numbers/{id}``: release the number so another can be reserved."""
        return self._delete(f"/numbers/{path_id(number_id, 'numberId')}")
