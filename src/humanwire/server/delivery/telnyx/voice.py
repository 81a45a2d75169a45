"""Calls through Telnyx's TeXML (``POST /v2/texml/Accounts/{account_sid}/Calls`` on the
TeXML application ``connection_id``), run turn by turn by the same voice agent as
Twilio's (``delivery.call_turns``): TeXML is Twilio-compatible markup, and its callbacks
carry Twilio's parameter names (``CallSid``, ``CallStatus``, ``SpeechResult``,
``AnsweredBy``, ``Direction``), so the turns, transfer, voicemail, summary and the skill's
errors are the same code.

Telnyx's signature covers the timestamp and the body, not the URL: the interaction a
callback's URL names (``?interaction=``) is believed only beside the service's own token
of it (``CallTokens``: an HMAC of the interaction and the turn), which every URL the
service gives Telnyx carries, and only for the ``CallSid`` first seen with it. A callback naming an
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
import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ..base import Outbound, ProviderFailure, Sent
from ..call_turns import CallTurns
from ..jobs import ProviderJobs
from ..relay import SETUP_TIMEOUT, TELNYX_RELAY
from .messaging import refusal
from .rest import TelnyxAPIError, TelnyxREST

if TYPE_CHECKING:
    from ...voice import VoiceAgent
    from ..port import InboundPort

__all__ = ["CALL_SCOPE", "SIGNED_QUERY", "CallTokens", "TelnyxVoice"]

CALL_SCOPE = "telnyx-call"
SID_SCOPE = "telnyx-call-sid"
"""interaction id → the ``CallSid`` Telnyx's callbacks carry: the create answer has none
(the published ``CallCallsResponse`` is ``from``, ``to``, ``status``), so a call's
reference is ``texml-<interaction id>`` until its first callback names it."""
REF_PREFIX = "texml-"


SIGNED_QUERY: Final = ("interaction", "turn", "relay")
"""What the service's token covers of a URL's query: the interaction and where in the
call the URL is (``turn=N``, the relay's end). ``silence`` (added by the markup to a
turn that heard nothing) is not covered: the same signed body again is a replay anyway."""


class CallTokens:
    """The service's word for the query of a URL it gave Telnyx (the callbacks' and the
    relay socket's): ``token``, the HMAC-SHA256 of ``SIGNED_QUERY``'s values under a key
    derived from the account's API key (a secret Telnyx and the service share; nothing
    to store, every replica computes the same). It vouches for that one call, at that
    place in it, only (``RelaySession`` checks the socket's ``setup`` names the call)."""

    def __init__(self, api_key: str) -> None:
        self._key = hmac.new(api_key.encode(), b"humanwire relay socket", hashlib.sha256).digest()

    def token(self, query: Mapping[str, str]) -> str:
        signed = json.dumps([query.get(name, "") for name in SIGNED_QUERY])
        digest = hmac.new(self._key, signed.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def signed(self, query: Mapping[str, str]) -> str | None:
        """What of ``query`` its ``token`` vouches for (``name=value`` of
        ``SIGNED_QUERY``, in order), or None: no token, or not the service's."""
        token = query.get("token", "")
        if not query.get("interaction") or not token or len(token) > 100:
            return None
        if not token.isascii() or not hmac.compare_digest(self.token(query), token):
            return None
        return "&".join(f"{name}={query.get(name, '')}" for name in SIGNED_QUERY)


class TelnyxVoice(CallTurns):
    def __init__(
        self,
        rest: TelnyxREST,
        inbound: InboundPort,
        agent: VoiceAgent | None,
        *,
        connection_id: str,
        voice_url: str,
        status_url: str,
        jobs: ProviderJobs,
        call_tokens: CallTokens,
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
            relay_dialect=TELNYX_RELAY,
            url_token=call_tokens.token,
        )
        self.rest = rest
        self.connection_id = connection_id
        self.call_tokens = call_tokens

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
        unnamed = {name: value for name, value in query.items() if name not in SIGNED_QUERY}
        if not sid or self.call_tokens.signed(query) is None:
            return unnamed
        known = await self.call_sid(interaction_id)
        if known is None:
            # First come, once: of two callbacks racing here only one sid is kept.
            await self.inbound.state.claim_provider_state(
                SID_SCOPE, interaction_id, {"sid": sid}, time.time()
            )
            known = await self.call_sid(interaction_id)
        return query if known == sid else unnamed

    async def call_sid(self, interaction_id: str) -> str | None:
        known = await self.inbound.state.get_provider_state(SID_SCOPE, interaction_id)
        return str(known["sid"]) if known and known.get("sid") else None

    async def turn(self, params: Mapping[str, str], query: Mapping[str, str]) -> str:
        return await super().turn(params, await self._vouched(params, query))

    async def status(self, params: Mapping[str, str], query: Mapping[str, str]) -> None:
        await super().status(params, await self._vouched(params, query))
