"""Reserved numbers on Twilio: the operator's pool (``twilio.numbers``), reserving one
(its SMS and voice webhooks pointed at this service), releasing it, and, only with
``twilio.buy_numbers``, buying one Twilio offers (``AvailablePhoneNumbers``).

A pool number keeps its webhooks pointed here when released: a text or call to a number
nobody holds is answered harmlessly. A bought number is released back to Twilio when the
account deletes it (it stops costing money), retried in the background if Twilio fails.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..base import ProviderFailure
from ..phone_numbers import NumberOffer, describe
from .jobs import TwilioJobs
from .rest import TwilioAPIError, TwilioREST

if TYPE_CHECKING:
    from ...config import TwilioConfig

__all__ = ["NumberOffer", "TwilioNumbers", "describe"]

logger = logging.getLogger("humanwire.twilio")


class TwilioNumbers:
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
        self.jobs = jobs
        self.rest = rest
        self.config = config
        self.sms_url = sms_url
        self.voice_url = voice_url
        self.call_status_url = call_status_url
        # The shared senders are everybody's: never one account's, even if listed.
        self._shared = {config.sms_from, config.whatsapp_from} - {None}
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
        """Numbers Twilio would sell (only with ``buy_numbers``)."""
        if not self.config.buy_numbers:
            return []
        offers: list[NumberOffer] = []
        for code in [country] if country else ["US", "GB"]:
            params = {"AreaCode": area_code} if area_code and code == "US" else {}
            try:
                found = await self.rest.available_local(code, params)
            except TwilioAPIError as exc:
                raise ProviderFailure(f"Twilio could not list numbers: {exc}") from None
            for entry in found:
                offer = describe(str(entry.get("phone_number") or ""))
                if offer is None or offer[0] in self._shared:
                    continue
                if not area_code or offer[2] == area_code:
                    offers.append(offer)
        return offers

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

    async def detach(self, data: dict[str, Any]) -> None:
        """Releases a bought number back to Twilio: a stored job, retried until Twilio
        takes it. A pool number stays the operator's (nothing to do)."""
        sid = str(data.get("sid") or "")
        if data.get("bought") and sid:
            await self.jobs.add("release_number", sid)
