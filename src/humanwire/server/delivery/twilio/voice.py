"""Calls through Twilio (``POST /Calls.json``), run turn by turn by the voice agent
(``delivery.call_turns``, shared with Telnyx's TeXML).

A call is created with answering-machine detection on and status callbacks to
``/providers/twilio/call-status``; its TwiML comes from ``/providers/twilio/voice``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base import Outbound, ProviderFailure, Sent
from ..call_turns import CallTurns
from ..relay import SETUP_TIMEOUT, TWILIO_RELAY
from .jobs import TwilioJobs
from .messaging import refusal
from .rest import TwilioAPIError, TwilioREST

if TYPE_CHECKING:
    from ...voice import VoiceAgent
    from ..port import InboundPort

__all__ = ["CALL_SCOPE", "TwilioVoice"]

CALL_SCOPE = "twilio-call"


class TwilioVoice(CallTurns):
    def __init__(
        self,
        rest: TwilioREST,
        inbound: InboundPort,
        agent: VoiceAgent | None,
        *,
        voice_url: str,
        status_url: str,
        jobs: TwilioJobs,
        relay_url: str | None = None,
        relay_silence: float = 5.0,
        relay_setup_timeout: float = SETUP_TIMEOUT,
    ) -> None:
        super().__init__(
            inbound,
            agent,
            scope=CALL_SCOPE,
            voice_url=voice_url,
            status_url=status_url,
            jobs=jobs,
            relay_url=relay_url,
            relay_silence=relay_silence,
            relay_setup_timeout=relay_setup_timeout,
            relay_dialect=TWILIO_RELAY,
        )
        self.rest = rest

    async def place(self, item: Outbound) -> Sent:
        query = f"?{self.interaction_query(str(item.interaction_id))}"
        params: list[tuple[str, str]] = [
            ("To", item.to_addr),
            ("From", item.from_addr or ""),
            ("Url", self.voice_url + query),
            ("Method", "POST"),
            ("StatusCallback", self.status_url + query),
            ("StatusCallbackMethod", "POST"),
            ("StatusCallbackEvent", "completed"),
            ("MachineDetection", "Enable"),
        ]
        limit = await self.time_limit(item)
        if limit is not None:
            params.append(("TimeLimit", str(limit)))
        try:
            created = await self.rest.create_call(params, account=item.account_id)
        except TwilioAPIError as exc:
            raise refusal(exc, "call") from None
        sid = str(created.get("sid") or "")
        if not sid:
            raise ProviderFailure("Twilio answered without a call sid")
        return Sent(ref=sid, status="queued")
