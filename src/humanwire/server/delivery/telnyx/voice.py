"""Calls through Telnyx's TeXML (``POST /v2/texml/Accounts/{account_sid}/Calls`` on the
TeXML application ``connection_id``), run turn by turn by the same voice agent as
Twilio's (``delivery.call_turns``): TeXML is Twilio-compatible markup, and its callbacks
carry Twilio's parameter names (``CallSid``, ``CallStatus``, ``SpeechResult``,
``AnsweredBy``, ``Direction``), so the turns, transfer, voicemail, summary and the skill's
errors are the same code.

In relay mode the answered call is connected to ``/providers/telnyx/relay`` (Telnyx's
``<Connect><ConversationRelay>``, the same session as Twilio's: ``delivery.relay``, with
Telnyx's ``RelayDialect``). Telnyx publishes no signature of the socket's handshake, so
the socket's URL carries a token of the service's own (``RelayTokens``): an HMAC of the
call's interaction id.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..base import Outbound, ProviderFailure, Sent
from ..call_turns import CallTurns
from ..jobs import ProviderJobs
from ..relay import SETUP_TIMEOUT, TELNYX_RELAY
from .messaging import refusal
from .rest import TelnyxAPIError, TelnyxREST

if TYPE_CHECKING:
    from ...engine import Engine
    from ...voice import VoiceAgent

__all__ = ["CALL_SCOPE", "RelayTokens", "TelnyxVoice"]

CALL_SCOPE = "telnyx-call"
SID_SCOPE = "telnyx-call-sid"
"""interaction id → the ``CallSid`` Telnyx's callbacks carry: the create answer has none
(the published ``CallCallsResponse`` is ``from``, ``to``, ``status``), so a call's
reference is ``texml-<interaction id>`` until its first callback names it."""
REF_PREFIX = "texml-"


class RelayTokens:
    """The relay socket's credential on Telnyx: ``token`` in the URL, the HMAC-SHA256 of
    the interaction id under a key derived from the account's API key (a secret Telnyx
    and the service share; nothing to store, every replica computes the same). It opens
    that one call's session only (``RelaySession`` checks the ``setup`` names it)."""

    def __init__(self, api_key: str) -> None:
        self._key = hmac.new(api_key.encode(), b"humanwire relay socket", hashlib.sha256).digest()

    def token(self, interaction_id: str) -> str:
        digest = hmac.new(self._key, interaction_id.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def valid(self, interaction_id: str, token: str) -> bool:
        return hmac.compare_digest(self.token(interaction_id).encode(), token.encode())


class TelnyxVoice(CallTurns):
    def __init__(
        self,
        rest: TelnyxREST,
        engine: Engine,
        agent: VoiceAgent | None,
        *,
        connection_id: str,
        voice_url: str,
        status_url: str,
        jobs: ProviderJobs,
        relay_tokens: RelayTokens,
        relay_url: str | None = None,
        relay_silence: float = 5.0,
        relay_setup_timeout: float = SETUP_TIMEOUT,
    ) -> None:
        super().__init__(
            engine,
            agent,
            scope=CALL_SCOPE,
            voice_url=voice_url,
            status_url=status_url,
            jobs=jobs,
            relay_url=relay_url,
            relay_silence=relay_silence,
            relay_setup_timeout=relay_setup_timeout,
            relay_dialect=TELNYX_RELAY,
        )
        self.rest = rest
        self.connection_id = connection_id
        self.relay_tokens = relay_tokens

    def relay_socket_url(self, interaction_id: str) -> str:
        token = self.relay_tokens.token(interaction_id)
        return f"{super().relay_socket_url(interaction_id)}&token={token}"

    async def place(self, item: Outbound) -> Sent:
        query = f"?interaction={item.interaction_id}"
        body: dict[str, Any] = {
            "ApplicationSid": self.connection_id,
            "To": item.to_addr,
            "From": item.from_addr or "",
            "Url": self.voice_url + query,
            "UrlMethod": "POST",
            "StatusCallback": self.status_url + query,
            "StatusCallbackMethod": "POST",
            "StatusCallbackEvent": "completed",
            "MachineDetection": "Enable",
        }
        limit = await self.time_limit(item)
        if limit is not None:
            body["TimeLimit"] = limit
        try:
            created = await self.rest.create_call(body, account=item.account_id)
        except TelnyxAPIError as exc:
            raise refusal(exc, "call") from None
        if not isinstance(created, dict) or not created.get("status"):
            raise ProviderFailure("Telnyx answered without a call")
        return Sent(ref=f"{REF_PREFIX}{item.interaction_id}", status="queued")

    # -- the CallSid of a call this service placed ---------------------------------------
    async def _learn_sid(self, params: Mapping[str, str], query: Mapping[str, str]) -> None:
        interaction_id, sid = query.get("interaction", ""), params.get("CallSid", "")
        if interaction_id and sid and await self.call_sid(interaction_id) is None:
            await self.engine.store.put_provider_state(
                SID_SCOPE, interaction_id, {"sid": sid}, time.time()
            )

    async def call_sid(self, interaction_id: str) -> str | None:
        known = await self.engine.store.get_provider_state(SID_SCOPE, interaction_id)
        return str(known["sid"]) if known and known.get("sid") else None

    async def turn(self, params: Mapping[str, str], query: Mapping[str, str]) -> str:
        await self._learn_sid(params, query)
        return await super().turn(params, query)

    async def status(self, params: Mapping[str, str], query: Mapping[str, str]) -> None:
        await self._learn_sid(params, query)
        await super().status(params, query)
