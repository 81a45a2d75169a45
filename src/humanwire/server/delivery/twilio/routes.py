"""The routes Twilio calls: no bearer key, each request verified with the official
``twilio`` request validator over ``public_url`` + path (and query), with the account's
auth token. A missing or wrong ``X-Twilio-Signature`` is 403 and changes nothing; a
callback about a message or call this service does not know is answered harmlessly."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...http_errors import error_response
from .messaging import inbound_text, status_callback
from .provider import ROUTE_PREFIX

if TYPE_CHECKING:
    from .provider import TwilioProvider

__all__ = ["twilio_routes"]

logger = logging.getLogger("humanwire.twilio")

_EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>'


def _twiml(xml: str) -> Response:
    return Response(xml, media_type="text/xml")


def twilio_routes(provider: TwilioProvider) -> list[Route]:
    from twilio.request_validator import RequestValidator  # type: ignore[import-untyped]

    validator = RequestValidator(provider.config.auth_token)

    async def verified(request: Request) -> dict[str, str] | None:
        raw = await request.body()
        try:
            params = dict(parse_qsl(raw.decode("utf-8"), keep_blank_values=True))
        except UnicodeDecodeError:
            return None
        signature = request.headers.get("X-Twilio-Signature", "")
        url = provider.public_url + request.url.path
        if request.url.query:
            url += "?" + request.url.query
        if not signature or not validator.validate(url, params, signature):
            return None
        return params

    def forbidden() -> Response:
        return error_response(403, "forbidden", "missing or invalid X-Twilio-Signature")

    async def messages(request: Request) -> Response:
        params = await verified(request)
        if params is None:
            return forbidden()
        outcome = inbound_text(provider.engine, params)
        logger.debug("inbound message %s: %s", params.get("MessageSid", "?"), outcome)
        return _twiml(_EMPTY_TWIML)

    async def message_status(request: Request) -> Response:
        params = await verified(request)
        if params is None:
            return forbidden()
        status_callback(provider.engine, params)
        return Response(status_code=204)

    async def voice(request: Request) -> Response:
        params = await verified(request)
        if params is None:
            return forbidden()
        return _twiml(await provider.voice.turn(params, request.query_params))

    async def call_status(request: Request) -> Response:
        params = await verified(request)
        if params is None:
            return forbidden()
        provider.voice.status(params, request.query_params)
        return Response(status_code=204)

    return [
        Route(f"{ROUTE_PREFIX}/messages", messages, methods=["POST"]),
        Route(f"{ROUTE_PREFIX}/message-status", message_status, methods=["POST"]),
        Route(f"{ROUTE_PREFIX}/voice", voice, methods=["POST"]),
        Route(f"{ROUTE_PREFIX}/call-status", call_status, methods=["POST"]),
    ]
