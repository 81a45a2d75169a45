"""Reserved numbers on Telnyx: the operator's pool (``telnyx.numbers``), reserving one (its
voice pointed at the TeXML application, its texts at the messaging profile), and, only
with ``telnyx.buy_numbers``, buying one Telnyx offers (``/available_phone_numbers``,
``/number_orders``). The rules are the carriers' shared ones
(``delivery.phone_numbers.CarrierNumbers``); here only Telnyx's search and routing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import ProviderFailure
from ..jobs import ProviderJobs
from ..phone_numbers import CarrierNumbers
from .rest import TelnyxAPIError, TelnyxREST

if TYPE_CHECKING:
    from ...config import TelnyxConfig

__all__ = ["TelnyxNumbers"]


class TelnyxNumbers(CarrierNumbers):
    label = "Telnyx"
    ref_key = "id"

    def __init__(self, rest: TelnyxREST, config: TelnyxConfig, *, jobs: ProviderJobs) -> None:
        super().__init__(
            numbers=config.numbers,
            shared=(config.sms_from,),
            buy_numbers=config.buy_numbers,
            jobs=jobs,
        )
        self.rest = rest
        self.config = config

    async def _available(self, country: str, area_code: str | None) -> list[dict[str, Any]]:
        query = {"filter[country_code]": country, "filter[features]": "sms"}
        if area_code and country == "US":
            query["filter[national_destination_code]"] = area_code
        return await self.rest.available(query)

    def _routing(self) -> dict[str, str]:
        routing: dict[str, str] = {}
        if self.config.connection_id:
            routing["connection_id"] = self.config.connection_id
        if self.config.messaging_profile_id:
            routing["messaging_profile_id"] = self.config.messaging_profile_id
        return routing

    async def attach(self, phone_number: str) -> dict[str, Any]:
        """Points the number here (a pool number) or buys it; returns what to keep about
        it (``id``, ``bought``, ``provider``)."""
        routing = self._routing()
        try:
            if self.in_pool(phone_number):
                owned = await self.rest.phone_numbers(phone_number)
                if not owned:
                    raise ProviderFailure(
                        f"{phone_number} is in telnyx.numbers but not in the Telnyx account"
                    )
                number_id = str(owned[0].get("id") or "")
                if "connection_id" in routing:
                    await self.rest.update_number(
                        number_id, {"connection_id": routing["connection_id"]}
                    )
                if "messaging_profile_id" in routing:
                    await self.rest.update_number_messaging(
                        number_id, routing["messaging_profile_id"]
                    )
                return {"id": number_id, "bought": False, "provider": "telnyx"}
            order = await self.rest.order_number(
                {"phone_numbers": [{"phone_number": phone_number}], **routing}
            )
            owned = await self.rest.phone_numbers(phone_number)
        except TelnyxAPIError as exc:
            raise ProviderFailure(f"Telnyx refused the number: {exc}") from None
        number_id = str(owned[0].get("id") or "") if owned else ""
        return {
            "id": number_id,
            "order": str(order.get("id") or ""),
            "bought": True,
            "provider": "telnyx",
        }
