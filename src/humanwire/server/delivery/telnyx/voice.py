"""Calls through Telnyx's TeXML (``POST /v2/texml/Accounts/{account_sid}/Calls`` on the
TeXML application ``connection_id``), run turn by turn by the same voice agent as
Twilio's (``delivery.call_turns``): TeXML is Twilio-compatible markup, and its callbacks
carry Twilio's parameter names (``CallSid``, ``CallStatus``, ``SpeechResult``,
``AnsweredBy``, ``Direction``), so the turns, transfer, voicemail, summary and the skill's
errors are the same code.

Telnyx's signature covers the timestamp and the body, not the URL: the interaction a
callback's URL names (``?interaction=``) is believed only beside the service's own token
of it (``RelayTokens``: an HMAC of the interaction id), which every URL the service gives
Telnyx carries, and only for the ``CallSid`` first seen with it. A callback naming an
interaction without its token, or for another ``CallSid`` than the one stored, is taken
as naming none: a signed callback of a call this service never placed (another TeXML
application's, say) cannot end or speak for one of its calls.

In relay mode the answered call is connected to ``/providers/telnyx/relay`` (Telnyx's
``<Connect><ConversationRelay>``, the same session as Twilio's: ``delivery.relay``, with
Telnyx's ``RelayDialect``). Telnyx publishes no signature of the socket's handshake, so
the socket's URL carries the same token.
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
    """The service's word for the interaction a Telnyx URL names (the callbacks' and the
    relay socket's): ``token`` in the URL, the HMAC-SHA256 of the interaction id under a
    key derived from the account's API key (a secret Telnyx and the service share;
    nothing to store, every replica computes the same). It vouches for that one call
    only (``RelaySession`` checks the socket's ``setup`` names it)."""

    def __init__(self, api_key: str) -> None:
        self._key = hmac.new(api_key.encode(), b"humanwire relay socket", hashlib.sha256).digest()

    def token(self, interaction_id: str) -> str:
        digest = hmac.new(self._key, interaction_id.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def valid(self, interaction_id: str, token: str) -> bool:
        if not token or len(token) > 100 or not token.isascii():
            return False
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
            url_token=relay_tokens.token,
        )
        self.rest = rest
        self.connection_id = connection_id
        self.relay_tokens = relay_tokens

    async def place(self, item: Outbound) -> Sent:
        query = f"?{self.interaction_query(str(item.interaction_id))}"
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
    async def _vouched(
        self, params: Mapping[str, str], query: Mapping[str, str]
    ) -> Mapping[str, str]:
        """``query`` with its interaction only when the service's token vouches for it
        and the callback's ``CallSid`` is the interaction's (the first one seen with it,
        stored then). Otherwise the callback names no interaction: it reaches only a
        call known by its ``CallSid`` (or, inbound, the number called)."""
        interaction_id, sid = query.get("interaction", ""), params.get("CallSid", "")
        if not interaction_id:
            return query
        unnamed = {name: value for name, value in query.items() if name != "interaction"}
        if not sid or not self.relay_tokens.valid(interaction_id, query.get("token", "")):
            return unnamed
        known = await self.call_sid(interaction_id)
        if known is None:
            # First come, once: of two callbacks racing here only one sid is kept.
            await self.engine.store.claim_provider_state(
                SID_SCOPE, interaction_id, {"sid": sid}, time.time()
            )
            known = await self.call_sid(interaction_id)
        return query if known == sid else unnamed

    async def call_sid(self, interaction_id: str) -> str | None:
        known = await self.engine.store.get_provider_state(SID_SCOPE, interaction_id)
        return str(known["sid"]) if known and known.get("sid") else None

    async def turn(self, params: Mapping[str, str], query: Mapping[str, str]) -> str:
        return await super().turn(params, await self._vouched(params, query))

    async def status(self, params: Mapping[str, str], query: Mapping[str, str]) -> None:
        await super().status(params, await self._vouched(params, query))
