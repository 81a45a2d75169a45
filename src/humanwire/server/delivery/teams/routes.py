"""The route Teams reaches: ``/providers/teams/messages``, the bot's messaging endpoint
(set on the Azure Bot resource).

It carries no humanwire key. The Bot Framework signs every activity's bearer token
(``auth.BotFrameworkToken``), checked through ``signed_route`` before the body is read:
a missing, malformed, foreign or expired token is **401** (as the Bot Framework's own
SDKs answer). A verified body that is no activity of the shape ``activity_shape`` checks
is 400; a token that does not speak for the activity (its ``serviceurl`` another, its key
not endorsing the channel) is 401; an activity of a tenant a single-tenant bot does not
serve is 403. An activity is taken once by its conversation and id (a second is a
replay, 403). An invoke is answered in the response (the card showing the outcome);
anything else with an empty 200.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..provider_routes import Malformed, ProviderRoute, Unverified, json_value, signed_route
from .auth import BotFrameworkToken, Token
from .provider import ROUTE_PREFIX

if TYPE_CHECKING:
    from .provider import TeamsProvider

__all__ = ["activity_shape", "teams_routes"]

logger = logging.getLogger("humanwire.teams")
refusals = logging.getLogger("humanwire.providers")
"""Where ``signed_route`` logs its refusals: the token's check against the activity is
one of them, made here once the body is read."""

MAX_ID = 512


def _object(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise Malformed(f"{field} must be an object", field=field)
    return value


def _string(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_ID:
        raise Malformed(f"{field} must be a string", field=field)
    return value


def activity_shape(request: Request, body: bytes) -> dict[str, Any]:
    """An activity with what ``TeamsProvider.on_activity`` reads checked: ``type``,
    ``id``, ``serviceUrl`` (an https or, for tests, http URL), ``from.id``,
    ``recipient.id``, ``conversation.id``; a message's ``text``; an invoke's
    ``value.action`` (an object)."""
    payload = json_value(body)
    if not isinstance(payload, dict):
        raise Malformed("the body must be a JSON object (an activity)")
    kind = _string(payload.get("type"), "type")
    _string(payload.get("id"), "id")
    service_url = _string(payload.get("serviceUrl"), "serviceUrl")
    if not service_url.startswith(("https://", "http://")):
        raise Malformed("serviceUrl must be an http(s) URL", field="serviceUrl")
    _string(_object(payload.get("from"), "from").get("id"), "from.id")
    _string(_object(payload.get("recipient"), "recipient").get("id"), "recipient.id")
    conversation = _object(payload.get("conversation"), "conversation")
    _string(conversation.get("id"), "conversation.id")
    kind_of = conversation.get("conversationType")
    if kind_of is not None and not isinstance(kind_of, str):
        raise Malformed("conversation.conversationType must be a string")
    if kind == "message" and not isinstance(payload.get("text", ""), str | None):
        raise Malformed("text must be a string", field="text")
    if kind == "conversationUpdate" and payload.get("membersAdded") is not None:
        added = payload["membersAdded"]
        if not isinstance(added, list) or not all(isinstance(m, Mapping) for m in added):
            raise Malformed("membersAdded must be a list of accounts", field="membersAdded")
    if kind == "invoke" and payload.get("name") == "adaptiveCard/action":
        value = _object(payload.get("value"), "value")
        _object(value.get("action"), "value.action")
    return payload


PATH = f"{ROUTE_PREFIX}/messages"


def _refused(status: int, code: str, message: str) -> Response:
    # The documented error body (the HTTP layer's shape; delivery may not import it).
    return JSONResponse(
        {"error": {"code": code, "message": message, "field": None}}, status_code=status
    )


def teams_routes(provider: TeamsProvider) -> list[ProviderRoute]:
    async def messages(request: Request, activity: dict[str, Any]) -> Response:
        token: Token = request.state.teams_token
        try:
            token.check(activity)
        except Unverified as exc:
            refusals.info("teams %s refused (401): %s", PATH, exc.message)
            return _refused(401, "unauthorized", exc.message)
        if not provider.tenant_allowed(activity):
            return _refused(403, "forbidden", "this bot serves another tenant")
        if not await provider.first_delivery(activity):
            return _refused(403, "forbidden", "this activity was already received (a replay)")
        try:
            answer = await provider.on_activity(activity)
        except Exception:
            # Never a 500: the person is told (an invoke), and the log says why.
            logger.exception("Teams activity %s failed", activity["id"])
            if activity["type"] != "invoke":
                return Response(status_code=200)
            answer = {
                "statusCode": 200,
                "type": "application/vnd.microsoft.activity.message",
                "value": "Something went wrong: try again.",
            }
        return Response(status_code=200) if answer is None else JSONResponse(answer)

    return [
        signed_route(
            PATH,
            messages,
            provider="teams",
            verifier=BotFrameworkToken(provider.config.app_id, provider.keys),
            parse=activity_shape,
            unverified_status=401,
        )
    ]
