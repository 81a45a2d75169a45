"""The fake Teams over HTTP: the Connector under the service URL (``/amer/v3/...``), each
request found in the description, authorised by a bot token the fake issued, its body
held to the description, handed to :class:`~humanwire.testing.teams.state.TeamsState`,
and its answer held to the description's response schema; beside it the two Microsoft
endpoints a bot uses: the token endpoint (client credentials: the secret or a client
assertion signed with an uploaded certificate's key, as
``login.microsoftonline.com``) and the Bot Framework's key set (as
``login.botframework.com``). Nothing here keeps state of its own."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .certificates import ASSERTION_TYPE
from .spec import ConnectorSpec, Operation, SpecViolation
from .state import ISSUER, TOKEN_SECONDS, TeamsError, TeamsState

__all__ = ["JWKS_PATH", "OPENID_PATH", "REGION", "TeamsResponses", "token_path"]

REGION = "/amer"
"""The service URL's path: regional, as ``https://smba.trafficmanager.net/amer/`` is."""
JWKS_PATH = "/v1/.well-known/keys"
OPENID_PATH = "/v1/.well-known/openidconfiguration"

Handler = Callable[[dict[str, str], dict[str, Any]], tuple[int, Any]]


def token_path(tenant: str) -> str:
    return f"/{tenant}/oauth2/v2.0/token"


class TeamsResponses:
    def __init__(self, state: TeamsState, spec: ConnectorSpec) -> None:
        self.state = state
        self.spec = spec
        self.handlers: dict[str, Handler] = {
            "Conversations_CreateConversation": self._create_conversation,
            "Conversations_SendToConversation": self._send,
            "Conversations_ReplyToActivity": self._reply,
            "Conversations_UpdateActivity": self._update,
            "Conversations_DeleteActivity": self._delete,
        }

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route(
                    REGION + "/{path:path}",
                    self._serve,
                    methods=["GET", "POST", "PUT", "DELETE", "PATCH"],
                ),
                Route("/{tenant}/oauth2/v2.0/token", self._token, methods=["POST"]),
                Route(JWKS_PATH, self._keys, methods=["GET"]),
                Route(OPENID_PATH, self._openid, methods=["GET"]),
            ]
        )

    # -- Microsoft's endpoints ---------------------------------------------------------
    async def _token(self, request: Request) -> Response:
        form = await request.form()
        if form.get("grant_type") != "client_credentials":
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        try:
            if "client_assertion" in form or "client_assertion_type" in form:
                if form.get("client_assertion_type") != ASSERTION_TYPE or "client_secret" in form:
                    raise TeamsError(
                        400,
                        "invalid_request",
                        f"AADSTS50027: client_assertion_type must be {ASSERTION_TYPE}, "
                        "without a client_secret",
                    )
                token = self.state.issue_token_by_assertion(
                    str(form.get("client_id", "")),
                    str(form.get("client_assertion", "")),
                    str(form.get("scope", "")),
                    audience=str(request.url.replace(query="")),
                )
            else:
                token = self.state.issue_token(
                    str(form.get("client_id", "")),
                    str(form.get("client_secret", "")),
                    str(form.get("scope", "")),
                )
        except TeamsError as refused:
            return JSONResponse(
                {"error": refused.code, "error_description": refused.message},
                status_code=refused.status,
            )
        return JSONResponse(
            {
                "token_type": "Bearer",
                "expires_in": TOKEN_SECONDS,
                "ext_expires_in": TOKEN_SECONDS,
                "access_token": token,
            }
        )

    async def _keys(self, request: Request) -> Response:
        return JSONResponse(self.state.jwks())

    async def _openid(self, request: Request) -> Response:
        base = str(request.base_url).rstrip("/")
        return JSONResponse(
            {
                "issuer": ISSUER,
                "jwks_uri": base + JWKS_PATH,
                "id_token_signing_alg_values_supported": ["RS256"],
                "token_endpoint_auth_methods_supported": ["private_key_jwt"],
            }
        )

    # -- the Connector -----------------------------------------------------------------
    async def _serve(self, request: Request) -> Response:
        path = "/" + request.path_params["path"]
        raw = await request.body()
        body: Any = None
        try:
            operation, values = self.spec.operation(request.method, path)
            if raw:
                try:
                    body = json.loads(raw)
                except ValueError as exc:
                    raise SpecViolation("the body is not JSON") from exc
            with self.state.lock:
                self.state.requests.append((request.method, path, body))
            scheme, _, token = request.headers.get("authorization", "").partition(" ")
            if scheme != "Bearer" or not self.state.token_valid(token):
                raise TeamsError(401, "Unauthorized", "Authorization has been denied")
            checked = self.spec.check_body(operation, body)
            card_problem = self.spec.check_cards(checked)
            if card_problem is not None:
                raise SpecViolation(card_problem)
            status, answer = self.handlers[operation.operation_id](values, checked)
        except SpecViolation as violation:
            with self.state.lock:
                self.state.violations.append(f"{request.method} {path}: {violation.message}")
            return JSONResponse(violation.body(), status_code=violation.status)
        except TeamsError as refused:
            return JSONResponse(refused.body(), status_code=refused.status)
        return self._answer(operation, status, answer)

    def _answer(self, operation: Operation, status: int, answer: Any) -> Response:
        if answer is None:
            return Response(status_code=status)
        problem = self.spec.check_response(operation, status, answer)
        if problem is not None:
            with self.state.lock:
                self.state.errors.append(f"{operation.operation_id} answer: {problem}")
        return JSONResponse(answer, status_code=status)

    @staticmethod
    def _outgoing(body: dict[str, Any]) -> None:
        if body.get("type") != "message":
            raise TeamsError(400, "BadArgument", "Unknown activity type")
        if not body.get("text") and not body.get("attachments"):
            raise TeamsError(400, "BadArgument", "Activity has no text and no attachments")

    def _create_conversation(self, values: dict[str, str], body: dict[str, Any]) -> tuple[int, Any]:
        members = body.get("members") or []
        if len(members) != 1:
            raise TeamsError(400, "BadArgument", "a personal conversation takes one member")
        user = self.state.users.get(str(members[0].get("id")))
        if user is None:
            raise TeamsError(404, "NotFound", "Member not found")
        if body.get("tenantId") not in (None, self.state.tenant_id):
            raise TeamsError(403, "Forbidden", "The bot is not installed in that tenant")
        conversation = self.state.personal_conversation(user)
        if not conversation.installed:
            raise TeamsError(403, "Forbidden", "The bot is not installed for the user")
        return 201, {"id": conversation.id, "serviceUrl": self.state.service_url}

    def _send(self, values: dict[str, str], body: dict[str, Any]) -> tuple[int, Any]:
        self._outgoing(body)
        conversation = self.state.conversation(values["conversationId"])
        activity = self.state.add_activity(conversation.id, self.state.bot_id, body)
        return 201, {"id": activity.id}

    def _reply(self, values: dict[str, str], body: dict[str, Any]) -> tuple[int, Any]:
        self._outgoing(body)
        conversation = self.state.conversation(values["conversationId"])
        self.state.activity(conversation.id, values["activityId"])
        activity = self.state.add_activity(
            conversation.id, self.state.bot_id, body, reply_to=values["activityId"]
        )
        return 201, {"id": activity.id}

    def _update(self, values: dict[str, str], body: dict[str, Any]) -> tuple[int, Any]:
        self._outgoing(body)
        activity = self.state.activity(values["conversationId"], values["activityId"])
        if activity.from_id != self.state.bot_id:
            raise TeamsError(403, "Forbidden", "The bot can update only its own activities")
        with self.state.lock:
            activity.edits.append(body)
        return 200, {"id": activity.id}

    def _delete(self, values: dict[str, str], body: dict[str, Any]) -> tuple[int, Any]:
        activity = self.state.activity(values["conversationId"], values["activityId"])
        with self.state.lock:
            activity.deleted = True
        return 200, None
