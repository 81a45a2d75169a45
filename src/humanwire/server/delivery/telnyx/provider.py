"""``TelnyxProvider``: the channels Telnyx carries (sms; calls with a TeXML application and
a voice agent) and the routes Telnyx calls back."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

import httpx
from starlette.routing import BaseRoute

from ..base import Credentials, Outbound, Sent
from ..jobs import ProviderJobs
from .messaging import send_message
from .numbers import TelnyxNumbers
from .rest import TelnyxAPIError, TelnyxREST
from .routes import ROUTE_PREFIX
from .voice import REF_PREFIX, CallTokens, TelnyxVoice

if TYPE_CHECKING:
    from ...config import TelnyxConfig
    from ...voice import VoiceAgent
    from ..port import InboundPort

__all__ = ["JOB_SCOPE", "TelnyxProvider"]

JOB_SCOPE = "telnyx-jobs"
CREDENTIALS_TIMEOUT = 5.0

logger = logging.getLogger("humanwire.telnyx")


class TelnyxProvider:
    name = "telnyx"

    def __init__(
        self,
        config: TelnyxConfig,
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
        self.rest = TelnyxREST(
            config.api_key,
            config.api_base,
            account_sid=config.account_sid,
            transport=transport,
            metrics=inbound.metrics,
        )
        shared = config.sms_from or ""
        self.senders: Mapping[str, str] = {"sms": shared, "call": shared}
        self.credentials = Credentials()
        self.jobs = ProviderJobs(
            inbound.state,
            scope=JOB_SCOPE,
            label="Telnyx",
            do=self._job,
            error=TelnyxAPIError,
            schedule=inbound.schedule,
        )
        self.numbers = TelnyxNumbers(self.rest, config, jobs=self.jobs)
        self.call_tokens = CallTokens(config.api_key)
        self.voice = TelnyxVoice(
            self.rest,
            inbound,
            agent,
            connection_id=config.connection_id or "",
            voice_url=self.url("voice"),
            status_url=self.url("call-status"),
            jobs=self.jobs,
            call_tokens=self.call_tokens,
            relay_url=self.socket_url("relay") if voice_mode == "relay" else None,
            relay_silence=relay_silence,
            relay_setup_timeout=relay_setup_timeout,
        )

    def socket_url(self, route: str) -> str:
        """The ``wss://`` address Telnyx opens for ``route``."""
        from ..provider_routes import socket_url

        return f"{socket_url(self.public_url)}{ROUTE_PREFIX}/{route}"

    def url(self, route: str) -> str:
        """The address Telnyx calls for ``route``, built from ``public_url``."""
        return f"{self.public_url}{ROUTE_PREFIX}/{route}"

    async def deliver(self, item: Outbound) -> Sent:
        if item.channel == "call":
            return await self.voice.place(item)
        return await send_message(self.rest, self.config, item, self.url("messages"))

    def routes(self) -> list[BaseRoute]:
        from .routes import telnyx_routes

        return list(telnyx_routes(self))

    async def accepts_sender(self, account_id: str, channel: str, sender: str) -> bool:
        """Its shared number: a ``from`` naming it goes out through Telnyx."""
        return bool(self.config.sms_from) and sender == self.config.sms_from

    def placed(self, ref: str) -> bool:
        """Its calls' references are ``texml-<interaction id>`` (``voice``)."""
        return ref.startswith(REF_PREFIX)

    async def hang_up(self, ref: str) -> None:
        await self.voice.hang_up(ref)

    async def _job(self, kind: str, ref: str) -> None:
        if kind == "hang_up":
            sid = ref
            if ref.startswith(REF_PREFIX):
                found = await self.voice.call_sid(ref.removeprefix(REF_PREFIX))
                if found is None:  # not answered yet: no CallSid to end; try again later
                    raise TelnyxAPIError(0, None, "the call has no CallSid yet")
                sid = found
            await self.rest.update_call(sid, {"Status": "completed"})
        elif kind == "release_number":
            await self.rest.release_number(ref)

    async def start(self) -> None:
        """Checks the API key (``credentials``, for ``/readyz``), then picks up the status
        work a previous run left."""
        try:
            await asyncio.wait_for(self.rest.phone_numbers(), CREDENTIALS_TIMEOUT)
        except TelnyxAPIError as exc:
            if exc.status in (401, 403):
                self.credentials = Credentials("refused", f"telnyx.api_key refused ({exc})")
                logger.error("Telnyx refused telnyx.api_key: %s", exc)
            else:
                self.credentials = Credentials(
                    "unverified", f"Telnyx could not be reached at start ({exc})"
                )
                logger.warning("Telnyx credentials not verified at start: %s", exc)
        except asyncio.TimeoutError:
            self.credentials = Credentials(
                "unverified", f"Telnyx did not answer within {CREDENTIALS_TIMEOUT:g} s at start"
            )
            logger.warning("Telnyx credentials not verified at start: no answer in time")
        else:
            self.credentials = Credentials("accepted", "telnyx credentials accepted")
        await self.jobs.start()

    async def aclose(self) -> None:
        await self.voice.aclose()
        await self.jobs.aclose()
        await self.rest.aclose()
