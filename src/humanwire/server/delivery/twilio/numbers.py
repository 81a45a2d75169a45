"""Reserved numbers on Twilio: the operator's pool (``twilio.numbers``), reserving one
(its SMS and voice webhooks pointed at this service), releasing it, and, only with
``twilio.buy_numbers``, buying one Twilio offers (``AvailablePhoneNumbers``).

The rules (the pool first, buying only when allowed, a bought number released back when
the account deletes it, so it stops costing money) are the carriers' shared ones
(``delivery.phone_numbers.CarrierNumbers``); here only Twilio's search and webhooks.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..base import ProviderFailure
from ..phone_numbers import CarrierNumbers, NumberOffer, describe
from .jobs import TwilioJobs
from .rest import TwilioAPIError, TwilioREST

if TYPE_CHECKING:
    from ...config import TwilioConfig

__all__ = ["NumberOffer", "TwilioNumbers", "describe"]

logger = logging.getLogger("humanwire.twilio")


class TwilioNumbers(CarrierNumbers):
    label = "Twilio"
    ref_key = "sid"

    def __init__(
        self,
        rest: TwilioREST,
        config: TwilioConfig,
        *,
        sms_url: str,
        voice_url: str,
        call_status_url: str,
        jobs: TwilioJobs,
    ) -> None:
        super().__init__(
            numbers=config.numbers,
            shared=(config.sms_from, config.whatsapp_from),
            buy_numbers=config.buy_numbers,
            jobs=jobs,
        )
        self.rest = rest
        self.config = config
        self.sms_url = sms_url
        self.voice_url = voice_url
        self.call_status_url = call_status_url

    async def _available(self, country: str, area_code: str | None) -> list[dict[str, Any]]:
        params = {"AreaCode": area_code} if area_code and country == "US" else {}
        return await self.rest.available_local(country, params)

    def _webhooks(self) -> dict[str, str]:
        return {
            "SmsUrl": self.sms_url,
            "SmsMethod": "POST",
            "VoiceUrl": self.voice_url,
            "VoiceMethod": "POST",
            # where the end of an inbound call is reported: the summary goes out then
            "StatusCallback": self.call_status_url,
            "StatusCallbackMethod": "POST",
        }

    async def attach(self, phone_number: str) -> dict[str, Any]:
        """Points the number's webhooks here (a pool number) or buys it; returns what to
        keep about it (``sid``, ``bought``)."""
        try:
            if self.in_pool(phone_number):
                owned = await self.rest.incoming_numbers(phone_number)
                if not owned:
                    raise ProviderFailure(
                        f"{phone_number} is in twilio.numbers but not in the Twilio account"
                    )
                sid = str(owned[0]["sid"])
                await self.rest.update_number(sid, self._webhooks())
                return {"sid": sid, "bought": False}
            bought = await self.rest.buy_number({"PhoneNumber": phone_number, **self._webhooks()})
        except TwilioAPIError as exc:
            raise ProviderFailure(f"Twilio refused the number: {exc}") from None
        return {"sid": str(bought.get("sid") or ""), "bought": True}
