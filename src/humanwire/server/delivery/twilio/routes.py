"""The routes Twilio calls: no bearer key, each request verified with the official
``twilio`` request validator over ``public_url`` + path (and query), with the account's
auth token, through ``signed_route``. A missing or wrong ``X-Twilio-Signature`` (or a
body that is not UTF-8, which cannot be checked) is 403 and changes nothing; a callback
about a message or call this service does not know is answered harmlessly."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from ..provider_routes import (
    Malformed,
    ProviderRoute,
    Unverified,
    form_params,
    relay_route,
    signed_route,
    socket_url,
    without_nul,
)
from .messaging import inbound_text, status_callback
from .provider import ROUTE_PREFIX

if TYPE_CHECKING:
    from .provider import TwilioProvider

__all__ = ["TwilioCallback", "TwilioSignature", "socket_url", "twilio_routes"]

logger = logging.getLogger("humanwire.twilio")

_EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>'


def _twiml(xml: str) -> Response:
    return Response(xml, media_type="text/xml")


class TwilioSignature:
    """Twilio's request signing: ``X-Twilio-Signature``, the base64 HMAC of the URL it
    called and the POST parameters, with the auth token."""

    header = "X-Twilio-Signature"

    def __init__(self, auth_token: str, public_url: str) -> None:
        from twilio.request_validator import RequestValidator  # type: ignore[import-untyped]

        self._validator = RequestValidator(auth_token)
        self._public_url = public_url

    def verify(self, request: Request, body: bytes) -> None:
        signature = request.headers.get(self.header, "")
        if not signature:
            raise Unverified(f"missing or invalid {self.header}")
        try:
            params = form_params(body)
        except Malformed:
            raise Unverified("the body is not UTF-8 (Twilio signs UTF-8 parameters)") from None
        url = self._public_url + request.url.path
        if request.url.query:
            url += "?" + request.url.query
        if not self._validator.validate(url, params, signature):
            raise Unverified(f"missing or invalid {self.header}")

    def verify_handshake(self, connection: HTTPConnection) -> None:
        """The relay's WebSocket: Twilio signs the ``wss://`` URL it opened, with no
        parameters."""
        signature = connection.headers.get(self.header, "")
        if not signature:
            raise Unverified(f"missing or invalid {self.header}")
        url = socket_url(self._public_url) + connection.url.path
        if connection.url.query:
            url += "?" + connection.url.query
        if not self._validator.validate(url, {}, signature):
            raise Unverified(f"missing or invalid {self.header}")


@dataclass(frozen=True)
class TwilioCallback:
    """A verified callback's POST parameters and query (the interaction a call's URLs
    name), without NUL characters."""

    params: Mapping[str, str]
    query: Mapping[str, str]


def _callback(request: Request, body: bytes) -> TwilioCallback:
    return TwilioCallback(
        params=without_nul(form_params(body)), query=without_nul(dict(request.query_params))
    )


def twilio_routes(provider: TwilioProvider) -> list[BaseRoute]:
    verifier = TwilioSignature(provider.config.auth_token, provider.public_url)

    async def messages(request: Request, callback: TwilioCallback) -> Response:
        outcome = await inbound_text(provider.inbound, callback.params)
        logger.debug("inbound message %s: %s", callback.params.get("MessageSid", "?"), outcome)
        return _twiml(_EMPTY_TWIML)

    async def message_status(request: Request, callback: TwilioCallback) -> Response:
        await status_callback(provider.inbound, callback.params)
        return Response(status_code=204)

    async def voice(request: Request, callback: TwilioCallback) -> Response:
        return _twiml(await provider.voice.turn(callback.params, callback.query))

    async def call_status(request: Request, callback: TwilioCallback) -> Response:
        await provider.voice.status(callback.params, callback.query)
        return Response(status_code=204)

    def signed(
        name: str, handler: Callable[[Request, TwilioCallback], Awaitable[Response]]
    ) -> ProviderRoute:
        return signed_route(
            f"{ROUTE_PREFIX}/{name}",
            handler,
            provider="twilio",
            verifier=verifier,
            parse=_callback,
        )

    return [
        signed("messages", messages),
        signed("message-status", message_status),
        signed("voice", voice),
        signed("call-status", call_status),
        relay_route(f"{ROUTE_PREFIX}/relay", provider.voice, provider="twilio", verifier=verifier),
    ]
