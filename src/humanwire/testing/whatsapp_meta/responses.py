"""The fake Graph API over HTTP: ``POST /{version}/{phone number id}/messages`` held to
the description (``spec``), then handed to :class:`~.state.MetaState`; and
``GET /{version}/{phone number id}`` (the number, for a credentials check; not in the
description's subset). A send outside the person's 24-hour window that is not a
template is taken (200) and then failed by a ``failed`` status with 131047, as Meta
does; others get ``sent`` then ``delivered``."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .spec import MetaSpec, SpecViolation
from .state import MetaError, MetaState, WhatsAppPerson, WhatsAppSent

__all__ = ["API_VERSION", "MetaResponses"]

API_VERSION = "v23.0"

Sent = Callable[[WhatsAppSent, WhatsAppPerson], None]


class MetaResponses:
    """The HTTP face of ``state``; ``on_sent`` is told of each message taken (the fake
    sends its statuses)."""

    def __init__(self, state: MetaState, spec: MetaSpec, on_sent: Sent) -> None:
        self.state = state
        self.spec = spec
        self.on_sent = on_sent

    def app(self, lifespan: Any = None) -> Starlette:
        return Starlette(
            routes=[
                Route("/{version}/{phone}/messages", self._messages, methods=["POST"]),
                Route("/{version}/{phone}", self._phone, methods=["GET"]),
            ],
            lifespan=lifespan,
        )

    def _authorise(self, request: Request) -> None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme != "Bearer" or not secrets.compare_digest(
            token.encode(), self.state.access_token.encode()
        ):
            raise MetaError(401, 190, "Invalid OAuth access token - Cannot parse access token")

    def _number(self, request: Request) -> None:
        if request.path_params["version"] != API_VERSION:
            raise MetaError(400, 2635, f"(#2635) this fake plays {API_VERSION} only")
        if request.path_params["phone"] != self.state.phone_number_id:
            raise MetaError(400, 100, "(#100) Unsupported post request: unknown phone number id")

    async def _phone(self, request: Request) -> Response:
        try:
            self._authorise(request)
            self._number(request)
        except MetaError as refused:
            return JSONResponse(refused.body(), status_code=refused.status)
        state = self.state
        return JSONResponse(
            {
                "id": state.phone_number_id,
                "display_phone_number": state.display_phone_number,
                "verified_name": "humanwire",
            }
        )

    async def _messages(self, request: Request) -> Response:
        raw = await request.body()
        body: Any = None
        try:
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                raise SpecViolation("the body is not JSON") from None
            with self.state.lock:
                self.state.requests.append(("POST", request.url.path, body))
            self._authorise(request)
            self._number(request)
            if not request.headers.get("content-type", "").startswith("application/json"):
                raise SpecViolation("Content-Type must be application/json")
            self.spec.check_send(body)
            sent, person = self.state.send(body)
        except SpecViolation as violation:
            with self.state.lock:
                self.state.violations.append(f"POST {request.url.path}: {violation.message}")
            return JSONResponse(violation.body(), status_code=violation.status)
        except MetaError as refused:
            return JSONResponse(refused.body(), status_code=refused.status)
        answer = {
            "messaging_product": "whatsapp",
            "contacts": [{"input": body["to"], "wa_id": person.wa_id}],
            "messages": [{"id": sent.id, "message_status": "accepted"}],
        }
        problem = self.spec.check_send_answer(answer)
        if problem is not None:
            with self.state.lock:
                self.state.errors.append(f"sendMessage answer: {problem}")
        self.on_sent(sent, person)
        return JSONResponse(answer)
