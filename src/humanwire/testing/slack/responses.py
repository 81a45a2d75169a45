"""The fake Slack's Web API over HTTP: each request read (query, form or JSON body; the
token as a bearer or a parameter), held to the description (``spec``) and to what Slack's
documentation states in prose (scopes, ``text`` or ``blocks``, Block Kit's limits, the
bot a member where it posts), then applied to the fake's state (``FakeSlack``) and
answered as Slack answers. The consent page ``/oauth/v2/authorize`` and the
``response_url`` of clicks are here too. Nothing here keeps state of its own."""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlparse

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from .records import (
    MAX_TEXT,
    Failure,
    FakeAuthorization,
    FakeChannel,
    FakeEphemeral,
    FakeRequest,
    FakeWorkspace,
    Refused,
    Violation,
)
from .spec import Method, SpecViolation

if TYPE_CHECKING:
    from .fake import FakeSlack

__all__ = ["SlackResponses"]

_SCOPE_ALIASES = {"chat:write:bot": "chat:write", "chat:write:user": "chat:write"}
_BLOCK_TYPES = {
    "section",
    "actions",
    "context",
    "divider",
    "header",
    "image",
    "input",
    "rich_text",
    "file",
    "video",
}


class SlackResponses:
    """The HTTP face of ``fake``: the Web API, the consent page and ``response_url``."""

    def __init__(self, fake: FakeSlack) -> None:
        self.fake = fake

    def routes(self) -> list[Route]:
        return [
            Route("/api/{method}", self._api, methods=["GET", "POST"]),
            Route("/oauth/v2/authorize", self._consent, methods=["GET"]),
            Route("/actions/{id}", self._action_response, methods=["POST"]),
        ]

    async def _api(self, request: Request) -> Response:
        name = request.path_params["method"]
        raw = await request.body()
        with self.fake.lock:
            delay = self.fake._delay
        if delay:
            await asyncio.sleep(delay)
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        values: dict[str, Any] = dict(request.query_params)
        json_body = content_type == "application/json"
        token, client = self._credentials(request)
        try:
            if raw:
                values.update(self._body(raw, content_type))
            if not json_body and "token" in values:
                token = token or str(values.get("token"))
            values.pop("token", None)
            with self.fake.lock:
                self.fake.requests.append(
                    FakeRequest(name, dict(values), token, request.method, content_type)
                )
            method = self.fake.spec.method(name)
            if request.method not in method.http_methods:
                raise SpecViolation("invalid_post_type", f"{request.method} {name}")
            failure = self._take_failure(name)
            if failure is not None:
                headers = {}
                if failure.retry_after is not None:
                    headers["Retry-After"] = str(int(failure.retry_after))
                body = {"ok": False, "error": failure.error}
                return JSONResponse(body, failure.status, headers=headers)
            params = self.fake.spec.check_params(method, values, json_body=json_body)
            with self.fake.lock:
                answer = self._operate(method, token, client, params)
        except SpecViolation as exc:
            self._violate(name, values, exc.error, exc.message)
            answer = {"ok": False, "error": exc.error}
        except Refused as exc:
            if exc.violation:
                self._violate(name, values, exc.error, str(exc.extra.pop("why", exc.error)))
            answer = {"ok": False, "error": exc.error, **exc.extra}
        for problem in self.fake.spec.check_response(name, answer):
            self.fake.error(f"answer of {name}: {problem}")
        return JSONResponse(answer)

    @staticmethod
    def _body(raw: bytes, content_type: str) -> dict[str, Any]:
        if content_type == "application/json":
            try:
                body = json.loads(raw)
            except ValueError:
                raise SpecViolation("invalid_json", "the body is not JSON") from None
            if not isinstance(body, dict):
                raise SpecViolation("json_not_object", "the JSON body is not an object")
            return body
        if content_type == "application/x-www-form-urlencoded":
            return dict(parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True))
        if not content_type:
            raise SpecViolation("missing_post_type", "a body without a Content-Type")
        raise SpecViolation("invalid_post_type", f"a {content_type} body")

    @staticmethod
    def _credentials(request: Request) -> tuple[str | None, tuple[str, str] | None]:
        header = request.headers.get("authorization", "")
        if header.startswith("Bearer "):
            return header[7:].strip() or None, None
        if header.startswith("Basic "):
            try:
                decoded = base64.b64decode(header[6:], validate=True).decode()
            except (ValueError, UnicodeDecodeError):
                return None, None
            user, _, password = decoded.partition(":")
            return None, (user, password)
        return None, None

    def _take_failure(self, name: str) -> Failure | None:
        with self.fake.lock:
            for failure in self.fake._failures:
                if failure.method == name and failure.times > 0:
                    failure.times -= 1
                    if failure.times == 0:
                        self.fake._failures.remove(failure)
                    return failure
        return None

    def _violate(self, name: str, values: dict[str, Any], error: str, message: str) -> None:
        with self.fake.lock:
            self.fake.violations.append(Violation(name, dict(values), error, message))

    def _operate(
        self,
        method: Method,
        token: str | None,
        client: tuple[str, str] | None,
        params: dict[str, Any],
    ) -> dict[str, Any]:
        if method.name == "oauth.v2.access":
            return self._oauth_access(client, params)
        workspace = self._authenticate(method, token)
        if method.name == "auth.test":
            return {
                "ok": True,
                "url": f"https://{workspace.domain}.slack.com/",
                "team": workspace.name,
                "user": "humanwire",
                "team_id": workspace.team_id,
                "user_id": workspace.bot_user_id,
                "bot_id": workspace.bot_id,
                "is_enterprise_install": False,
            }
        if method.name == "conversations.open":
            return self._open(workspace, params)
        if method.name == "chat.postMessage":
            return self._post_message(workspace, params)
        if method.name == "chat.update":
            return self._update(workspace, params)
        if method.name == "chat.postEphemeral":
            return self._ephemeral(workspace, params)
        self.fake.error(f"{method.name} is not played by the fake")
        raise Refused("unknown_method")

    def _authenticate(self, method: Method, token: str | None) -> FakeWorkspace:
        if not token:
            raise Refused("not_authed", violation=True, why="no token")
        for workspace in self.fake.workspaces.values():
            if token in workspace.revoked_tokens:
                raise Refused("token_revoked")
            if workspace.installed and secrets.compare_digest(token, workspace.bot_token):
                break
        else:
            raise Refused("invalid_auth", violation=True, why="an unknown token")
        needed = {_SCOPE_ALIASES.get(scope, scope) for scope in method.scopes}
        if needed and not needed & set(workspace.scopes):
            raise Refused(
                "missing_scope",
                violation=True,
                why=f"{method.name} needs one of {sorted(needed)}",
                needed=",".join(sorted(needed)),
                provided=",".join(workspace.scopes),
            )
        return workspace

    def _open(self, workspace: FakeWorkspace, params: dict[str, Any]) -> dict[str, Any]:
        users = [u for u in str(params.get("users") or "").split(",") if u]
        if not users:
            raise Refused("users_list_not_supplied", violation=True)
        if len(users) > 1:
            raise Refused("too_many_users")  # group DMs are not played
        member = self.fake.members.get(users[0])
        if member is None or member.team != workspace.team_id:
            raise Refused("user_not_found")
        if member.deleted:
            raise Refused("user_disabled")
        if member.is_bot:
            raise Refused("cannot_dm_bot")
        channel, existed = self.fake._dm(workspace, member.id)
        return {
            "ok": True,
            "no_op": existed,
            "already_open": existed,
            "channel": {"id": channel.id},
        }

    def _content(self, params: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        text, blocks = params.get("text"), params.get("blocks")
        if not text and not blocks:
            raise Refused("no_text", violation=True, why="neither text nor blocks")
        if text and len(text) > MAX_TEXT:
            raise Refused("msg_too_long", violation=True)
        if blocks:
            _check_blocks(blocks)
        return text, blocks

    def _post_message(self, workspace: FakeWorkspace, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._conversation(workspace, str(params["channel"]))
        if workspace.bot_user_id not in channel.members:
            raise Refused("not_in_channel")
        if channel.archived:
            raise Refused("is_archived")
        text, blocks = self._content(params)
        message = self.fake._add_message(
            channel,
            text,
            user=workspace.bot_user_id,
            blocks=blocks,
            thread_ts=params.get("thread_ts"),
            bot_id=workspace.bot_id,
        )
        shown: dict[str, Any] = {
            "type": "message",
            "text": text or "",
            "user": workspace.bot_user_id,
            "bot_id": workspace.bot_id,
            "ts": message.ts,
            "team": workspace.team_id,
        }
        if blocks:
            shown["blocks"] = blocks
        if message.thread_ts:
            shown["thread_ts"] = message.thread_ts
        event = self.fake._message_event(channel, message)
        event["app_id"] = self.fake.app_id
        self.fake.events.send_event(channel, event)
        return {"ok": True, "channel": channel.id, "ts": message.ts, "message": shown}

    def _update(self, workspace: FakeWorkspace, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._conversation(workspace, str(params["channel"]))
        try:
            message = self.fake.message(channel.id, str(params["ts"]))
        except KeyError:
            raise Refused("message_not_found") from None
        if message.user != workspace.bot_user_id:
            raise Refused("cant_update_message", violation=True, why="not the bot's message")
        text, blocks = self._content(params)
        if text is not None:
            message.text = text
        if "blocks" in params:
            message.blocks = blocks or None
        message.updates.append({"text": text, "blocks": blocks})
        return {
            "ok": True,
            "channel": channel.id,
            "ts": message.ts,
            "text": message.text or "",
            "message": {"text": message.text or ""},
        }

    def _ephemeral(self, workspace: FakeWorkspace, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._conversation(workspace, str(params["channel"]))
        user = str(params["user"])
        if user not in channel.members:
            raise Refused("user_not_in_channel")
        if workspace.bot_user_id not in channel.members:
            raise Refused("channel_not_found")
        text, blocks = self._content(params)
        self.fake.ephemerals.append(
            FakeEphemeral(workspace.team_id, channel.id, user, text, blocks)
        )
        return {"ok": True, "message_ts": self.fake._ts()}

    def _oauth_access(
        self, client: tuple[str, str] | None, params: dict[str, Any]
    ) -> dict[str, Any]:
        client_id, client_secret = client or (
            str(params.get("client_id") or ""),
            str(params.get("client_secret") or ""),
        )
        if client_id != self.fake.client_id:
            raise Refused("invalid_client_id", violation=True)
        if not secrets.compare_digest(client_secret, self.fake.client_secret):
            raise Refused("bad_client_secret", violation=True)
        grant = self.fake._codes.pop(str(params["code"]), None)
        if grant is None:
            raise Refused("invalid_code")
        redirect_uri = params.get("redirect_uri")
        if grant.redirect_uri and redirect_uri != grant.redirect_uri:
            raise Refused("bad_redirect_uri", violation=True, why="not the consent's redirect_uri")
        workspace = self.fake.workspaces[grant.team]
        if workspace.bot_token in workspace.revoked_tokens:
            workspace.bot_token = self.fake._new_token()
        workspace.installed = True
        workspace.scopes = grant.scopes
        return {
            "ok": True,
            "app_id": self.fake.app_id,
            "authed_user": {"id": workspace.admin},
            "scope": ",".join(grant.scopes),
            "token_type": "bot",
            "access_token": workspace.bot_token,
            "bot_user_id": workspace.bot_user_id,
            "team": {"id": workspace.team_id, "name": workspace.name},
            "enterprise": None,
            "is_enterprise_install": False,
        }

    async def _consent(self, request: Request) -> Response:
        """Slack's "allow this app" page, allowed at once."""
        query = request.query_params

        def refuse(error: str) -> Response:
            self._violate("oauth/v2/authorize", dict(query), error, error)
            return HTMLResponse(f"<h1>Something went wrong</h1><p>{error}</p>", 400)

        if query.get("client_id") != self.fake.client_id:
            return refuse("invalid_client_id")
        scopes = tuple(s for s in (query.get("scope") or "").split(",") if s)
        if not scopes or any(s not in self.fake.spec.known_scopes for s in scopes):
            return refuse("invalid_scope")
        redirect_uri = query.get("redirect_uri") or ""
        if urlparse(redirect_uri).scheme not in ("http", "https"):
            return refuse("bad_redirect_uri")
        with self.fake.lock:
            team = self.fake.next_install_team
            self.fake.next_install_team = None
            if team is None:
                team = self.fake.add_workspace(f"Workspace {len(self.fake.workspaces) + 1}").team_id
            code = f"{secrets.randbelow(10**12)}.{secrets.token_hex(20)}"
            grant = FakeAuthorization(team, scopes, redirect_uri, query.get("state") or "", code)
            self.fake._codes[code] = grant
            self.fake.authorizations.append(grant)
        back = {"code": code, **({"state": grant.state} if grant.state else {})}
        separator = "&" if "?" in redirect_uri else "?"
        return RedirectResponse(f"{redirect_uri}{separator}{urlencode(back)}", 302)

    async def _action_response(self, request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError:
            return JSONResponse({"ok": False, "error": "invalid_json"}, 400)
        with self.fake.lock:
            self.fake.action_responses.append(body)
        return JSONResponse({"ok": True})

    def _conversation(self, workspace: FakeWorkspace, target: str) -> FakeChannel:
        """The conversation a bot posts in: a channel id or ``#name``, a DM id, or a
        member id (the DM with them)."""
        member = self.fake.members.get(target)
        if member is not None and member.team == workspace.team_id and not member.is_bot:
            return self.fake._dm(workspace, target)[0]
        for channel in self.fake.channels.values():
            if channel.team == workspace.team_id and (
                channel.id == target or (target.startswith("#") and channel.name == target[1:])
            ):
                if channel.is_im and workspace.bot_user_id not in channel.members:
                    break
                return channel
        raise Refused("channel_not_found")


def _check_blocks(blocks: list[dict[str, Any]]) -> None:
    """Block Kit's limits (api.slack.com/reference/block-kit): what the loose ``blocks``
    definition of the description does not say."""

    def refuse(why: str) -> Refused:
        return Refused("invalid_blocks", violation=True, why=why)

    if len(blocks) > 50:
        raise refuse("more than 50 blocks")
    action_ids: set[str] = set()
    block_ids: set[str] = set()
    for index, block in enumerate(blocks):
        kind = block.get("type")
        if kind not in _BLOCK_TYPES:
            raise refuse(f"block {index}: unknown type {kind!r}")
        block_id = block.get("block_id")
        if block_id is not None:
            if not isinstance(block_id, str) or len(block_id) > 255 or block_id in block_ids:
                raise refuse(f"block {index}: bad or repeated block_id")
            block_ids.add(block_id)
        text = block.get("text")
        if kind in ("section", "header") and text is None and not block.get("fields"):
            raise refuse(f"block {index}: a {kind} needs text")
        if text is not None:
            _check_text(text, 3000 if kind == "section" else 150, refuse, index)
        elements = block.get("elements")
        if kind in ("actions", "context"):
            if not isinstance(elements, list) or not elements:
                raise refuse(f"block {index}: {kind} needs elements")
            if len(elements) > (25 if kind == "actions" else 10):
                raise refuse(f"block {index}: too many elements")
            for element in elements:
                if kind == "context" and element.get("type") in ("plain_text", "mrkdwn"):
                    _check_text(element, 3000, refuse, index)
                    continue
                if element.get("type") == "button":
                    _check_button(element, refuse, index)
                action_id = element.get("action_id")
                if action_id is not None:
                    if len(str(action_id)) > 255 or action_id in action_ids:
                        raise refuse(f"block {index}: bad or repeated action_id")
                    action_ids.add(action_id)


def _check_text(text: Any, limit: int, refuse: Callable[[str], Refused], index: int) -> None:
    if not isinstance(text, dict) or text.get("type") not in ("plain_text", "mrkdwn"):
        raise refuse(f"block {index}: text must be a plain_text or mrkdwn object")
    value = text.get("text")
    if not isinstance(value, str) or not value or len(value) > limit:
        raise refuse(f"block {index}: text must be 1 to {limit} characters")


def _check_button(button: dict[str, Any], refuse: Callable[[str], Refused], index: int) -> None:
    text = button.get("text")
    if not isinstance(text, dict) or text.get("type") != "plain_text":
        raise refuse(f"block {index}: a button's text is plain_text")
    if not isinstance(text.get("text"), str) or not 0 < len(text["text"]) <= 75:
        raise refuse(f"block {index}: a button's text is 1 to 75 characters")
    if "url" in button and (
        not isinstance(button["url"], str)
        or len(button["url"]) > 3000
        or urlparse(button["url"]).scheme not in ("http", "https")
    ):
        raise refuse(f"block {index}: a button's url")
    if "value" in button and len(str(button["value"])) > 2000:
        raise refuse(f"block {index}: a button's value is 2000 characters at most")
    if button.get("style") not in (None, "primary", "danger"):
        raise refuse(f"block {index}: a button's style is primary or danger")
