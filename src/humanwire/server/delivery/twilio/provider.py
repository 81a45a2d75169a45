"""``TwilioProvider``: the channels Twilio carries (sms always, whatsapp with a sender,
calls with a voice agent) and the routes Twilio calls back."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

import httpx
from starlette.routing import BaseRoute

from ..base import Credentials, Outbound, Sent
from .jobs import TwilioJobs
from .messaging import send_message
from .numbers import TwilioNumbers
from .rest import TwilioAPIError, TwilioREST
from .voice import TwilioVoice

if TYPE_CHECKING:
    from ...config import TwilioConfig
    from ...voice import VoiceAgent
    from ..port import InboundPort

__all__ = ["ROUTE_PREFIX", "TwilioProvider"]

ROUTE_PREFIX = "/providers/twilio"
CREDENTIALS_TIMEOUT = 5.0

logger = logging.getLogger("humanwire.twilio")


class TwilioProvider:
    name = "twilio"

    def __init__(
        self,
        config: TwilioConfig,
        inbound: InboundPort,
        *,
        public_url: str,
        agent: VoiceAgent | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        voice_mode: str = "gather",
        relay_silence: float = 5.0,
        relay_setup_timeout: float = 10.0,
    ) -> None:
        self.config = config
        self.inbound = inbound
        self.public_url = public_url.rstrip("/")
        self.rest = TwilioREST(
            config.account_sid,
            config.auth_token,
            config.api_base,
            transport=transport,
            metrics=inbound.metrics,
        )
        # Which channels it carries is the wiring's (``delivery.real``); these
        # are the shared senders of the ones it can.
        shared = config.sms_from or ""
        self.senders: Mapping[str, str] = {
            "sms": shared,
            "call": shared,
            "whatsapp": config.whatsapp_from or "",
        }
        self.credentials = Credentials()
        self.jobs = TwilioJobs(self.rest, inbound.state, schedule=inbound.schedule)
        self.numbers = TwilioNumbers(
            self.rest,
            config,
            sms_url=self.url("messages"),
            voice_url=self.url("voice"),
            call_status_url=self.url("call-status"),
            jobs=self.jobs,
        )
        self.voice = TwilioVoice(
            self.rest,
            inbound,
            agent,
            voice_url=self.url("voice"),
            status_url=self.url("call-status"),
            jobs=self.jobs,
            relay_url=self.socket_url("relay") if voice_mode == "relay" else None,
            relay_silence=relay_silence,
            relay_setup_timeout=relay_setup_timeout,
        )

    def socket_url(self, route: str) -> str:
        """The ``wss://`` address Twilio opens for ``route`` (signed as it is)."""
        from .routes import socket_url

        return f"{socket_url(self.public_url)}{ROUTE_PREFIX}/{route}"

    def url(self, route: str) -> str:
        """The address Twilio calls for ``route``, built from ``public_url``: Twilio
        signs the exact URL it called, so it must be the public one."""
        return f"{self.public_url}{ROUTE_PREFIX}/{route}"

    async def deliver(self, item: Outbound) -> Sent:
        if item.channel == "call":
            return await self.voice.place(item)
        return await send_message(
            self.rest, self.config, self.inbound.state, item, self.url("message-status")
        )

    def routes(self) -> list[BaseRoute]:
        from .routes import twilio_routes

        return list(twilio_routes(self))

    async def accepts_sender(self, account_id: str, channel: str, sender: str) -> bool:
        """Its shared numbers (the engine checks the account's reserved one)."""
        return sender in {self.config.sms_from, self.config.whatsapp_from} - {None}

    def placed(self, ref: str) -> bool:
        """A call sid (``CA…``): Twilio's."""
        return ref.startswith("CA")

    async def hang_up(self, ref: str) -> None:
        await self.voice.hang_up(ref)

    async def start(self) -> None:
        """Checks the credentials (``credentials``, for ``/readyz``), then picks up the
        status work a previous run left (``jobs``)."""
        await self._check_credentials()
        await self.jobs.start()

    async def _check_credentials(self) -> None:
        """One cheap authenticated read (a page of one of the account's numbers): Twilio
        answers 401 (20003) to a wrong SID or token. Bounded, so a Twilio that does not
        answer delays the start by seconds at most."""
        try:
            await asyncio.wait_for(self.rest.incoming_numbers_page(1), CREDENTIALS_TIMEOUT)
        except TwilioAPIError as exc:
            if exc.status in (401, 403):
                self.credentials = Credentials(
                    "refused", f"twilio.account_sid and twilio.auth_token refused ({exc})"
                )
                logger.error("Twilio refused twilio.account_sid / twilio.auth_token: %s", exc)
            else:
                self.credentials = Credentials(
                    "unverified", f"Twilio could not be reached at start ({exc})"
                )
                logger.warning("Twilio credentials not verified at start: %s", exc)
        except asyncio.TimeoutError:
            self.credentials = Credentials(
                "unverified", f"Twilio did not answer within {CREDENTIALS_TIMEOUT:g} s at start"
            )
            logger.warning("Twilio credentials not verified at start: no answer in time")
        else:
            self.credentials = Credentials("accepted", "twilio credentials accepted")

    async def aclose(self) -> None:
        await self.voice.aclose()
        await self.jobs.aclose()
        await self.rest.aclose()
