"""The route Discord reaches: ``/providers/discord/interactions``, the application's
interactions endpoint (set in the Developer Portal).

It carries no bearer key. Discord signs every request with the application's Ed25519
key: ``X-Signature-Ed25519`` (hex) over ``X-Signature-Timestamp`` + the raw body, checked
here with the public key of ``[discord] public_key`` (``DiscordSignature``) through
``signed_route`` before anything else is read: a missing, malformed or wrong signature,
or a timestamp further than ``MAX_SKEW`` from now, is **401** (Discord checks that its
endpoint answers a bad signature so, when the URL is saved). A verified body that is no
interaction of the shape ``interaction_shape`` checks is 400. A PING is answered PONG;
any other interaction is taken once by its id (Discord sends each once: a second is a
replay, 403) and answered in the response, as Discord requires within 3 s.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..provider_routes import Malformed, ProviderRoute, Unverified, json_value, signed_route
from .provider import ROUTE_PREFIX

if TYPE_CHECKING:
    from .provider import DiscordProvider

__all__ = [
    "MAX_SKEW",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "DiscordSignature",
    "discord_routes",
    "interaction_shape",
]

logger = logging.getLogger("humanwire.discord")

SIGNATURE_HEADER = "X-Signature-Ed25519"
TIMESTAMP_HEADER = "X-Signature-Timestamp"
MAX_SKEW = 300
"""Seconds a signature's timestamp may be from now: Discord sets no window, this bounds
a replay of a captured request (whose id is refused anyway)."""
PING, COMMAND, COMPONENT, AUTOCOMPLETE, MODAL_SUBMIT = 1, 2, 3, 4, 5


class DiscordSignature:
    """Discord's Ed25519 signature of an interaction, by the application's key."""

    header = SIGNATURE_HEADER

    def __init__(self, public_key_hex: str) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        self._key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key_hex))

    def verify(self, request: Request, body: bytes) -> None:
        from cryptography.exceptions import InvalidSignature

        signature = request.headers.get(SIGNATURE_HEADER)
        stamp = request.headers.get(TIMESTAMP_HEADER)
        if not signature or not stamp:
            raise Unverified(f"missing {SIGNATURE_HEADER} or {TIMESTAMP_HEADER}")
        # ASCII digits only: int() would take "١٧", "+5" or " 5 " as well.
        if not (stamp.isascii() and stamp.isdigit() and len(stamp) <= 12):
            raise Unverified(f"invalid {TIMESTAMP_HEADER}")
        if abs(time.time() - int(stamp)) > MAX_SKEW:
            raise Unverified(f"{TIMESTAMP_HEADER} is too far from now")
        if len(signature) != 128 or not signature.isascii():
            raise Unverified(f"invalid {SIGNATURE_HEADER}")
        try:
            self._key.verify(bytes.fromhex(signature), stamp.encode() + body)
        except (InvalidSignature, ValueError):
            raise Unverified(f"invalid {SIGNATURE_HEADER}") from None


def _object(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise Malformed(f"{field} must be an object", field=field)
    return value


def _string(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise Malformed(f"{field} must be a string", field=field)
    return value


def _optional_string(parent: Mapping[str, Any], key: str, field: str) -> None:
    if parent.get(key) is not None:
        _string(parent[key], field)


def interaction_shape(request: Request, body: bytes) -> dict[str, Any]:
    """An interaction with what ``DiscordProvider.on_interaction`` reads checked: its
    ``type`` and (but for a PING) ``id`` and ``token``; who acted (``member.user.id`` or
    ``user.id``); ``channel_id``, ``guild_id``; ``data.custom_id`` of a click or a modal
    and a modal's inputs; the ``message`` clicked (``id``, ``content``)."""
    payload = json_value(body)
    if not isinstance(payload, dict):
        raise Malformed("the body must be a JSON object (an interaction)")
    kind = payload.get("type")
    if isinstance(kind, bool) or kind not in (PING, COMMAND, COMPONENT, AUTOCOMPLETE, MODAL_SUBMIT):
        raise Malformed("type must be an interaction type (1 to 5)", field="type")
    if kind == PING:
        return payload
    _string(payload.get("id"), "id")
    _string(payload.get("token"), "token")
    _optional_string(payload, "channel_id", "channel_id")
    _optional_string(payload, "guild_id", "guild_id")
    if "member" in payload:
        member = _object(payload["member"], "member")
        _string(_object(member.get("user"), "member.user").get("id"), "member.user.id")
    elif "user" in payload:
        _string(_object(payload["user"], "user").get("id"), "user.id")
    elif kind in (COMPONENT, MODAL_SUBMIT):
        raise Malformed("an interaction needs member or user", field="user")
    if kind in (COMPONENT, MODAL_SUBMIT):
        data = _object(payload.get("data"), "data")
        _string(data.get("custom_id"), "data.custom_id")
    if "message" in payload:
        message = _object(payload["message"], "message")
        _string(message.get("id"), "message.id")
        _optional_string(message, "channel_id", "message.channel_id")
        if message.get("content") is not None and not isinstance(message["content"], str):
            raise Malformed("message.content must be a string", field="message.content")
    if kind == MODAL_SUBMIT:
        rows = payload["data"].get("components")
        if not isinstance(rows, list):
            raise Malformed("data.components must be a list", field="data.components")
        for i, row in enumerate(rows):
            where = f"data.components[{i}]"
            items = _object(row, where).get("components")
            if not isinstance(items, list):
                raise Malformed(f"{where}.components must be a list", field=f"{where}.components")
            for j, item in enumerate(items):
                spot = f"{where}.components[{j}]"
                _string(_object(item, spot).get("custom_id"), f"{spot}.custom_id")
                if not isinstance(item.get("value", ""), str):
                    raise Malformed(f"{spot}.value must be a string", field=f"{spot}.value")
    return payload


def discord_routes(provider: DiscordProvider) -> list[ProviderRoute]:
    async def interactions(request: Request, payload: dict[str, Any]) -> Response:
        if payload["type"] == PING:
            return JSONResponse({"type": 1})
        if not await provider.first_delivery(str(payload["id"])):
            # The documented error body (the HTTP layer's shape; delivery may not import it).
            refusal = {
                "code": "forbidden",
                "message": "this interaction was already received (a replay)",
                "field": None,
            }
            return JSONResponse({"error": refusal}, status_code=403)
        try:
            answer = await provider.on_interaction(payload)
        except Exception:
            # Never a 500: the person is told, and the log says why.
            logger.exception("Discord interaction %s failed", payload["id"])
            answer = {
                "type": 4,
                "data": {"content": "Something went wrong: try again.", "flags": 64},
            }
        return JSONResponse(answer)

    return [
        signed_route(
            f"{ROUTE_PREFIX}/interactions",
            interactions,
            provider="discord",
            verifier=DiscordSignature(provider.config.public_key),
            parse=interaction_shape,
            unverified_status=401,
        )
    ]
