"""The routes Telnyx calls: no bearer key, each request verified through
``signed_route`` with Ed25519 over ``"{telnyx-timestamp}|{raw body}"`` (headers
``telnyx-signature-ed25519``, ``telnyx-timestamp``) and the account's public key, the
timestamp within 300 s. A request that is unsigned, wrongly signed or stale is 403 and
changes nothing; one whose signed content (timestamp and body) was already acted on (a
replay inside the 300 s, at any path or query of the route: Telnyx does not sign the URL)
is 403 too (``ReplayGuard``). Of a TeXML callback's URL only what the service's own token
covers counts (``voice.CallTokens``: the interaction, the turn): the same body at two
URLs the service gave (two turns of a call in one second) is two requests, at any other
query a replay, and the interaction a URL names without the token is not believed
(``TelnyxVoice``). A turn asked again, freshly signed, is answered as before without
changing anything (``delivery.call_turns``). A callback about a message or call this
service does not know is answered harmlessly.

The relay socket of real-time calls (``/providers/telnyx/relay``): Telnyx publishes no
signature for a ConversationRelay handshake, so its URL carries the service's own token
(``voice.CallTokens``, an HMAC of the interaction it names); a handshake without a valid
one, or for a call that has had its socket or has ended, is 403 before the socket is
accepted (``signed_websocket_route``, ``CallTurns.take_relay``).

Verified with ``cryptography`` rather than ``telnyx.lib.webhook_verification``: that
helper needs PyNaCl, decodes the body as text (a body that is not UTF-8 would be its
error, not a refusal) and reads the clock itself; the rule is the same.
"""

from __future__ import annotations

import base64
import binascii
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from ..provider_routes import (
    ProviderRoute,
    ReplayGuard,
    Unverified,
    form_params,
    json_value,
    relay_route,
    signed_route,
    without_nul,
)
from .messaging import TelnyxEvent, message_event, parse_event
from .voice import CallTokens

if TYPE_CHECKING:
    from .provider import TelnyxProvider

__all__ = [
    "ROUTE_PREFIX",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "TOLERANCE",
    "RelayToken",
    "TelnyxCallback",
    "TelnyxSignature",
    "telnyx_routes",
]

logger = logging.getLogger("humanwire.telnyx")

ROUTE_PREFIX = "/providers/telnyx"
SIGNATURE_HEADER = "telnyx-signature-ed25519"
TIMESTAMP_HEADER = "telnyx-timestamp"
TOLERANCE = 300.0
"""Seconds a signed request stays acceptable either side of its timestamp."""
REPLAY_SCOPE = "telnyx-seen"


class TelnyxSignature:
    header = SIGNATURE_HEADER

    def __init__(
        self,
        public_key: str,
        *,
        tolerance: float = TOLERANCE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        self._key = Ed25519PublicKey.from_public_bytes(base64.b64decode(public_key))
        self._tolerance = tolerance
        self._clock = clock

    def verify(self, request: Request, body: bytes) -> None:
        from cryptography.exceptions import InvalidSignature

        signature = request.headers.get(SIGNATURE_HEADER, "")
        stamp = request.headers.get(TIMESTAMP_HEADER, "")
        if not signature or not stamp:
            raise Unverified(f"missing {SIGNATURE_HEADER} or {TIMESTAMP_HEADER}")
        # Digits only (int() would take "١٧٠٠", "+5", " 5", "1_0"), and a sane length.
        if not (stamp.isascii() and stamp.isdigit() and len(stamp) <= 12):
            raise Unverified(f"{TIMESTAMP_HEADER} is not a unix time")
        if abs(self._clock() - int(stamp)) > self._tolerance:
            raise Unverified(
                f"{TIMESTAMP_HEADER} is more than {self._tolerance:g} s away (stale or replayed)"
            )
        try:
            raw = base64.b64decode(signature.encode("ascii"), validate=True)
        except (binascii.Error, ValueError, UnicodeEncodeError):
            raise Unverified(f"{SIGNATURE_HEADER} is not base64") from None
        if len(raw) != 64:
            raise Unverified(f"missing or invalid {SIGNATURE_HEADER}")
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            raise Unverified("the body is not UTF-8 (Telnyx signs UTF-8 payloads)") from None
        try:
            self._key.verify(raw, self.covered(request, body))
        except InvalidSignature:
            raise Unverified(f"missing or invalid {SIGNATURE_HEADER}") from None

    @staticmethod
    def covered(request: Request, body: bytes) -> bytes:
        """What the signature covers: ``"{timestamp}|{body}"`` (not the URL)."""
        return request.headers.get(TIMESTAMP_HEADER, "").encode("ascii") + b"|" + body


class RelayToken:
    """The relay socket's handshake check: ``interaction`` and its ``token`` in the
    query (``voice.CallTokens``)."""

    header = "token"

    def __init__(self, tokens: CallTokens) -> None:
        self._tokens = tokens

    def verify_handshake(self, connection: HTTPConnection) -> None:
        if self._tokens.signed(connection.query_params) is None:
            raise Unverified("missing or invalid token")


@dataclass(frozen=True)
class TelnyxCallback:
    """A verified TeXML callback's POST parameters and query (the interaction a call's
    URLs name), without NUL characters."""

    params: Mapping[str, str]
    query: Mapping[str, str]


def _callback(request: Request, body: bytes) -> TelnyxCallback:
    return TelnyxCallback(
        params=without_nul(form_params(body)), query=without_nul(dict(request.query_params))
    )


def _event(request: Request, body: bytes) -> TelnyxEvent:
    return parse_event(json_value(body))


def _texml(xml: str) -> Response:
    return Response(xml, media_type="text/xml")


def telnyx_routes(provider: TelnyxProvider) -> list[BaseRoute]:
    verifier = TelnyxSignature(provider.config.public_key)
    tokens = provider.call_tokens
    replays = ReplayGuard(
        provider.inbound.state,
        scope=REPLAY_SCOPE,
        tolerance=TOLERANCE,
        covered=verifier.covered,
        vouched=lambda request: tokens.signed(request.query_params),
    )

    async def messages(request: Request, event: TelnyxEvent) -> Response:
        outcome = await message_event(provider.inbound, event)
        logger.debug("telnyx %s %s: %s", event.event_type, event.message_id or "?", outcome)
        return Response(status_code=204)

    async def voice(request: Request, callback: TelnyxCallback) -> Response:
        return _texml(await provider.voice.turn(callback.params, callback.query))

    async def call_status(request: Request, callback: TelnyxCallback) -> Response:
        await provider.voice.status(callback.params, callback.query)
        return Response(status_code=204)

    def signed(
        name: str,
        handler: Callable[[Request, Any], Awaitable[Response]],
        parse: Callable[[Request, bytes], Any],
    ) -> ProviderRoute:
        return signed_route(
            f"{ROUTE_PREFIX}/{name}",
            handler,
            provider="telnyx",
            verifier=verifier,
            parse=parse,
            replays=replays,
        )

    return [
        signed("messages", messages, _event),
        signed("voice", voice, _callback),
        signed("call-status", call_status, _callback),
        relay_route(
            f"{ROUTE_PREFIX}/relay",
            provider.voice,
            provider="telnyx",
            verifier=RelayToken(tokens),
        ),
    ]
