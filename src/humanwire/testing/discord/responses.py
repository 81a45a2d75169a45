"""The fake Discord's REST API over HTTP (``/api/v10/...``): each request found in the
description, authorised, its body held to the description, then handed to
:class:`~humanwire.testing.discord.state.DiscordState`; each answer held to the
description's response schema. Nothing here keeps state of its own."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .spec import DiscordSpec, Operation, SpecViolation
from .state import DiscordError, DiscordState, FakeChannel, FakeDiscordMessage, FakeInteraction

__all__ = ["API_PREFIX", "DiscordResponses"]

API_PREFIX = "/api/v10"

Handler = Callable[[dict[str, str], dict[str, Any], Request], tuple[int, Any]]


class DiscordResponses:
    """The HTTP face of ``state``: ``app()`` is a Starlette app serving the REST API."""

    def __init__(self, state: DiscordState, spec: DiscordSpec) -> None:
        self.state = state
        self.spec = spec
        self.handlers: dict[str, Handler] = {
            "get_my_user": self._get_my_user,
            "get_my_oauth2_application": self._get_application,
            "get_user": self._get_user,
            "create_dm": self._create_dm,
            "create_message": self._create_message,
            "update_message": self._update_message,
            "create_interaction_response": self._interaction_callback,
            "execute_webhook": self._followup,
            "get_original_webhook_message": self._get_original,
            "update_original_webhook_message": self._update_original,
            "delete_original_webhook_message": self._delete_original,
            "update_webhook_message": self._update_webhook_message,
        }

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route(
                    API_PREFIX + "/{path:path}",
                    self._serve,
                    methods=["GET", "POST", "PATCH", "DELETE", "PUT"],
                )
            ]
        )

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
                    raise SpecViolation(
                        "400: Bad Request (the body is not JSON)", code=50109
                    ) from exc
            with self.state.lock:
                self.state.requests.append((request.method, path, body))
            if operation.bot_token or "authorization" in request.headers:
                self._authorise(request)
            checked = self.spec.check_body(operation, body)
            status, answer = self.handlers[operation.operation_id](values, checked, request)
        except SpecViolation as violation:
            with self.state.lock:
                self.state.violations.append(f"{request.method} {path}: {violation.message}")
            return JSONResponse(violation.body(), status_code=violation.status)
        except DiscordError as refused:
            return JSONResponse(refused.body(), status_code=refused.status)
        return self._answer(operation, status, answer)

    def _answer(self, operation: Operation, status: int, answer: Any) -> Response:
        if status == 204:
            # No JSON Content-Type on an empty answer: discord.py would try to parse it.
            return Response(status_code=204)
        problem = self.spec.check_response(operation, status, answer)
        if problem is not None:
            with self.state.lock:
                self.state.errors.append(f"{operation.operation_id} answer: {problem}")
        return JSONResponse(answer, status_code=status)

    def _authorise(self, request: Request) -> None:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme != "Bot" or not secrets.compare_digest(
            token.encode(), self.state.bot_token.encode()
        ):
            raise DiscordError(401, 0, "401: Unauthorized")

    # -- the bot and users -------------------------------------------------------------
    def _get_my_user(self, values: dict[str, str], body: Any, request: Request) -> tuple[int, Any]:
        return 200, {**self.state.bot.to_json(), "mfa_enabled": False, "locale": "en-US"}

    def _get_application(
        self, values: dict[str, str], body: Any, request: Request
    ) -> tuple[int, Any]:
        state = self.state
        return 200, {
            "id": state.application_id,
            "name": "humanwire",
            "icon": None,
            "description": "",
            "type": None,
            "verify_key": state.public_key_hex,
            "flags": 0,
            "flags_new": "0",
            "redirect_uris": [],
            "interactions_endpoint_url": None,
            "role_connections_verification_url": None,
            "owner": state.bot.to_json(),
            "approximate_guild_count": len(state.guilds),
            "approximate_user_install_count": 0,
            "approximate_user_authorization_count": 0,
            "explicit_content_filter": 0,
            "team": None,
            "eligible_oauth2_scopes": ["bot", "applications.commands"],
            "bot": state.bot.to_json(),
            "bot_public": False,
            "bot_require_code_grant": False,
        }

    def _get_user(self, values: dict[str, str], body: Any, request: Request) -> tuple[int, Any]:
        return 200, self.state.user(values["user_id"]).to_json()

    def _create_dm(self, values: dict[str, str], body: Any, request: Request) -> tuple[int, Any]:
        recipient = body.get("recipient_id")
        if not recipient:
            raise SpecViolation("Invalid Form Body: recipient_id is required")
        return 200, self._channel_json(self.state.open_dm(str(recipient)))

    def _channel_json(self, channel: FakeChannel) -> dict[str, Any]:
        recipients = [self.state.users[channel.recipient].to_json()] if channel.recipient else []
        return {"id": channel.id, "type": channel.type, "flags": 0, "recipients": recipients}

    # -- messages ----------------------------------------------------------------------
    def _create_message(
        self, values: dict[str, str], body: Any, request: Request
    ) -> tuple[int, Any]:
        message = self.state.create_message(values["channel_id"], body)
        return 200, self.message_json(message)

    def _update_message(
        self, values: dict[str, str], body: Any, request: Request
    ) -> tuple[int, Any]:
        message = self.state.message(values["channel_id"], values["message_id"])
        return 200, self.message_json(self.state.edit_message(message, body))

    def message_json(self, message: FakeDiscordMessage) -> dict[str, Any]:
        """A message as Discord answers it (``MessageResponse``)."""
        edited = self.state.now_iso() if message.edits else None
        return {
            "type": 0,
            "content": message.content,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "timestamp": message.timestamp,
            "edited_timestamp": edited,
            "flags": 0,
            "components": message.components,
            "id": message.id,
            "channel_id": message.channel_id,
            "author": self.state.users[message.author].to_json(),
            "pinned": False,
            "mention_everyone": False,
            "tts": False,
        }

    # -- interactions: callbacks and followups -----------------------------------------
    def _interaction_callback(
        self, values: dict[str, str], body: Any, request: Request
    ) -> tuple[int, Any]:
        interaction = self.state.interaction(values["interaction_id"], values["interaction_token"])
        self.state.answer(interaction, 200, body)
        if request.query_params.get("with_response") not in ("1", "true", "True"):
            return 204, None
        return 200, self._callback_json(interaction)

    def _callback_json(self, interaction: FakeInteraction) -> dict[str, Any]:
        answer = interaction.answer if isinstance(interaction.answer, dict) else {}
        described: dict[str, Any] = {
            "interaction": {
                "id": interaction.id,
                "type": interaction.type,
                "response_message_id": interaction.original_message_id,
                "response_message_loading": False,
                "response_message_ephemeral": False,
            }
        }
        if interaction.original_message_id is not None:
            channel_id = str(interaction.payload.get("channel_id"))
            message = self.state.message(channel_id, interaction.original_message_id)
            described["resource"] = {
                "type": answer.get("type"),
                "message": self.message_json(message),
            }
        return described

    def _followup(self, values: dict[str, str], body: Any, request: Request) -> tuple[int, Any]:
        interaction = self.state.by_token(values["webhook_id"], values["webhook_token"])
        channel_id = str(interaction.payload.get("channel_id"))
        message = self.state.create_message(channel_id, body)
        message.interaction_id = interaction.id
        if request.query_params.get("wait") in ("1", "true", "True"):
            return 200, self.message_json(message)
        return 204, None

    def _original(self, values: dict[str, str]) -> FakeDiscordMessage:
        interaction = self.state.by_token(values["webhook_id"], values["webhook_token"])
        if interaction.original_message_id is None:
            raise DiscordError(404, 10008, "Unknown Message")
        channel_id = str(interaction.payload.get("channel_id"))
        return self.state.message(channel_id, interaction.original_message_id)

    def _get_original(self, values: dict[str, str], body: Any, request: Request) -> tuple[int, Any]:
        return 200, self.message_json(self._original(values))

    def _update_original(
        self, values: dict[str, str], body: Any, request: Request
    ) -> tuple[int, Any]:
        message = self._original(values)
        return 200, self.message_json(self.state.edit_message(message, body))

    def _delete_original(
        self, values: dict[str, str], body: Any, request: Request
    ) -> tuple[int, Any]:
        message = self._original(values)
        with self.state.lock:
            self.state.messages.remove(message)
        return 204, None

    def _update_webhook_message(
        self, values: dict[str, str], body: Any, request: Request
    ) -> tuple[int, Any]:
        interaction = self.state.by_token(values["webhook_id"], values["webhook_token"])
        channel_id = str(interaction.payload.get("channel_id"))
        message = self.state.message(channel_id, values["message_id"])
        if message.interaction_id != interaction.id:
            raise DiscordError(404, 10008, "Unknown Message")
        return 200, self.message_json(self.state.edit_message(message, body))
