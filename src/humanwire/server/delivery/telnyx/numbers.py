"""Reserved numbers on Telnyx: the operator's pool (``telnyx.numbers``), reserving one (its
voice pointed at the TeXML application, its texts at the messaging profile), and, only
with ``telnyx.buy_numbers``, buying one Telnyx offers (``/available_phone_numbers``,
``/number_orders``). The same rules as Twilio's (``delivery.phone_numbers``): a pool
number stays pointed here when released; a bought one is released back to Telnyx when
the account deletes it, retried in the background if Telnyx fails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import ProviderFailure
from ..jobs import ProviderJobs
from ..phone_numbers import NumberOffer, describe
from .rest import TelnyxAPIError, TelnyxREST

if TYPE_CHECKING:
    from ...config import TelnyxConfig

__all__ = ["TelnyxNumbers"]


class TelnyxNumbers:
    def __init__(self, rest: TelnyxREST, config: TelnyxConfig, *, jobs: ProviderJobs) -> None:
        self.rest = rest
        self.config = config
        self.jobs = jobs
        self._shared = {config.sms_from} - {None}
        self._pool = [
            offer
            for n in config.numbers
            if n not in self._shared and (offer := describe(n)) is not None
        ]

    @property
    def buys(self) -> bool:
        return self.config.buy_numbers

    def pool(self) -> list[NumberOffer]:
        return list(self._pool)

    def in_pool(self, phone_number: str) -> bool:
        return any(offer[0] == phone_number for offer in self._pool)

    def buyable(self, phone_number: str) -> bool:
        return (
            self.config.buy_numbers
            and phone_number not in self._shared
            and describe(phone_number) is not None
        )

    async def search(self, country: str | None, area_code: str | None) -> list[NumberOffer]:
        """Numbers Telnyx would sell (only with ``buy_numbers``)."""
        if not self.config.buy_numbers:
            return []
        offers: list[NumberOffer] = []
        for code in [country] if country else ["US", "GB"]:
            query = {"filter[country_code]": code, "filter[features]": "sms"}
            if area_code and code == "US":
                query["filter[national_destination_code]"] = area_code
            try:
                found = await self.rest.available(query)
            except TelnyxAPIError as exc:
                raise ProviderFailure(f"Telnyx could not list numbers: {exc}") from None
            for entry in found:
                offer = describe(str(entry.get("phone_number") or ""))
                if offer is None or offer[0] in self._shared:
                    continue
                if not area_code or offer[2] == area_code:
                    offers.append(offer)
        return offers

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

    async def detach(self, data: dict[str, Any]) -> None:
        """Releases a bought number back to Telnyx (a stored job); a pool number stays the
        operator's."""
        number_id = str(data.get("id") or "")
        if data.get("bought") and number_id:
            await self.jobs.add("release_number", number_id)
