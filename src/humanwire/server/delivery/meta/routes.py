"""The route Meta reaches: ``/providers/meta/whatsapp``, the app's webhook.

``POST`` carries no bearer key: Meta signs the raw body, ``X-Hub-Signature-256:
sha256=<hex HMAC-SHA256 with the app secret>``, checked here in constant time over the
bytes as they arrived (``HubSignature``, through ``signed_route``): a missing or wrong
signature is 403, a verified body that is no webhook of the shape ``payload_shape``
checks is 400, and either changes nothing. The work is done in the background, so Meta
has its 200 at once (it retries what it got no 200 for: each message is taken once, by
its id).

``GET`` is the subscription handshake Meta makes when the webhook is saved:
``hub.mode=subscribe``, ``hub.verify_token`` (compared in constant time with
``whatsapp.verify_token``) and ``hub.challenge``, echoed as plain text; anything else is
403.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from ..provider_routes import Malformed, ProviderRoute, Unverified, json_value, signed_route
from .provider import ROUTE_PREFIX

if TYPE_CHECKING:
    from .provider import MetaWhatsAppProvider

__all__ = ["SIGNATURE_HEADER", "HubSignature", "meta_routes", "payload_shape"]

logger = logging.getLogger("humanwire.meta")

SIGNATURE_HEADER = "X-Hub-Signature-256"
_HEX = frozenset("0123456789abcdef")


class HubSignature:
    """Meta's webhook signing; on ``GET``, the handshake's verify token instead."""

    header = SIGNATURE_HEADER

    def __init__(self, app_secret: str, verify_token: str) -> None:
        self._secret = app_secret.encode()
        self._verify_token = verify_token.encode()

    def verify(self, request: Request, body: bytes) -> None:
        if request.method == "GET":
            query = request.query_params
            given = query.get("hub.verify_token", "").encode("utf-8", "replace")
            if query.get("hub.mode") != "subscribe" or not hmac.compare_digest(
                given, self._verify_token
            ):
                raise Unverified("missing or invalid hub.mode / hub.verify_token")
            return
        signature = request.headers.get(self.header, "")
        hexdigest = signature.removeprefix("sha256=")
        if not signature.startswith("sha256=") or len(hexdigest) != 64 or set(hexdigest) - _HEX:
            raise Unverified(f"missing or invalid {self.header}")
        expected = hmac.new(self._secret, body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(hexdigest.encode(), expected.encode()):
            raise Unverified(f"missing or invalid {self.header}")


def _object(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise Malformed(f"{field} must be an object", field=field)
    return value


def _list(value: Any, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise Malformed(f"{field} must be an array", field=field)
    return value


def _string(value: Any, field: str, *, required: bool = True) -> None:
    if value is None and not required:
        return
    if not isinstance(value, str):
        raise Malformed(f"{field} must be a string", field=field)


def _message(message: Any, field: str) -> None:
    message = _object(message, field)
    _string(message.get("id"), f"{field}.id")
    _string(message.get("type"), f"{field}.type")
    _string(message.get("from"), f"{field}.from", required=False)
    _string(message.get("from_user_id"), f"{field}.from_user_id", required=False)
    if "context" in message:
        _string(
            _object(message["context"], f"{field}.context").get("id"),
            f"{field}.context.id",
            required=False,
        )
    kind = message["type"]
    if kind == "text":
        _string(_object(message.get("text"), f"{field}.text").get("body"), f"{field}.text.body")
    elif kind == "button":
        _string(
            _object(message.get("button"), f"{field}.button").get("text"),
            f"{field}.button.text",
            required=False,
        )
    elif kind == "interactive":
        interactive = _object(message.get("interactive"), f"{field}.interactive")
        if "button_reply" in interactive:
            reply = _object(interactive["button_reply"], f"{field}.interactive.button_reply")
            _string(reply.get("id"), f"{field}.interactive.button_reply.id")


def _status(status: Any, field: str) -> None:
    status = _object(status, field)
    _string(status.get("id"), f"{field}.id")
    _string(status.get("status"), f"{field}.status")
    _list(status.get("errors"), f"{field}.errors")


def payload_shape(request: Request, body: bytes) -> dict[str, Any]:
    """On ``GET``, the challenge. On ``POST``, a ``WebhookPayload`` with what
    ``MetaWhatsAppProvider.on_payload`` reads checked: each entry's changes; a change's
    metadata, contacts (``wa_id``, ``user_id``), messages (id, type, sender, quoted
    message, text, button) and statuses (id, status, errors)."""
    if request.method == "GET":
        return {"challenge": request.query_params.get("hub.challenge", "")}
    payload = json_value(body)
    if not isinstance(payload, dict):
        raise Malformed("the body must be a JSON object (a webhook payload)")
    entries = payload.get("entry")
    if not isinstance(entries, list):
        raise Malformed("entry must be an array", field="entry")
    for i, entry in enumerate(entries):
        changes = _object(entry, f"entry[{i}]").get("changes")
        for j, change in enumerate(_list(changes, f"entry[{i}].changes")):
            where = f"entry[{i}].changes[{j}]"
            change = _object(change, where)
            if change.get("field") != "messages":
                continue
            value = _object(change.get("value"), f"{where}.value")
            metadata = _object(value.get("metadata"), f"{where}.value.metadata")
            _string(metadata.get("phone_number_id"), f"{where}.value.metadata.phone_number_id")
            for k, contact in enumerate(_list(value.get("contacts"), f"{where}.value.contacts")):
                contact = _object(contact, f"{where}.value.contacts[{k}]")
                _string(contact.get("wa_id"), f"{where}.value.contacts[{k}].wa_id", required=False)
                _string(
                    contact.get("user_id"), f"{where}.value.contacts[{k}].user_id", required=False
                )
            for k, message in enumerate(_list(value.get("messages"), f"{where}.value.messages")):
                _message(message, f"{where}.value.messages[{k}]")
            for k, status in enumerate(_list(value.get("statuses"), f"{where}.value.statuses")):
                _status(status, f"{where}.value.statuses[{k}]")
    return payload


def meta_routes(provider: MetaWhatsAppProvider) -> list[ProviderRoute]:
    async def webhook(request: Request, payload: dict[str, Any]) -> Response:
        if request.method == "GET":
            return PlainTextResponse(str(payload["challenge"]))

        async def work() -> None:
            outcomes = await provider.on_payload(payload)
            logger.debug("Meta webhook: %s", outcomes)

        provider.spawn(work())
        return Response(status_code=200)

    return [
        signed_route(
            f"{ROUTE_PREFIX}/whatsapp",
            webhook,
            provider="meta",
            verifier=HubSignature(provider.config.app_secret, provider.config.verify_token),
            parse=payload_shape,
            methods=("GET", "POST"),
        )
    ]
