"""The inbox routes: pages, the human's actions (reply, text, answer a call, call the
reserved number, channel cards) and the live change stream (server-sent events).

Every route is ``async``: the engine and its SQLite connection belong to the event
loop's thread."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from humanwire.types import (
    ChannelCardCreateRequest,
    SandboxCallOutcomeRequest,
    SandboxInboundCallRequest,
    SandboxReplyRequest,
    detail_from_validation_error,
)

from ..config import (
    SHARED_SLACK_WORKSPACE,
    SHARED_SMS_NUMBER,
    SHARED_WHATSAPP_NUMBER,
    ServiceConfig,
)
from ..delivery import WorkspaceInstaller
from ..delivery.chat import CHAT_CHANNELS
from ..engine import Engine
from ..errors import InvalidRequest, LiveChannel, NotFound, RateLimited, ServiceError
from ..forms.html import SECURITY_HEADERS
from ..forms.web import html_response, read_urlencoded
from .approvals import approver_label
from .auth import (
    CSRF_FIELD,
    Viewer,
    clear_flash,
    clear_session,
    cookie_secure,
    csrf_ok,
    forget_legacy_cookie,
    identify,
    read_flash,
    session_token,
    set_flash,
    set_session,
)
from .channels_page import render_channels_page
from .data import gather_inbox
from .inbox_page import render_inbox_page
from .slack_page import SlackWorkspaces, render_slack_page
from .views import render_login_page, render_problem_page, render_suspended_page

__all__ = ["SSE_KEEPALIVE", "SSE_LIFETIME", "InboxPages", "inbox_routes"]

SSE_KEEPALIVE = 15.0
MAX_COMMENT = 2000
"""An approver's comment, as their page takes it."""
SSE_LIFETIME = 300.0
"""A stream ends after this long and the browser reconnects: no connection lives on."""

Handler = Callable[[Request, Viewer], Awaitable[Response]]


def _safe_next(path: str | None) -> str:
    """Only inbox paths: the login never redirects off-site."""
    if path and path.startswith("/inbox") and not path.startswith("//"):
        return path
    return "/inbox"


def _redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303, headers=dict(SECURITY_HEADERS))


def _problem(status: int, heading: str, text: str) -> Response:
    headers = {"WWW-Authenticate": 'Bearer realm="humanwire"'} if status == 401 else None
    return html_response(render_problem_page(heading, text), status, headers)


def _describe(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        detail = detail_from_validation_error(exc)
        return detail.message
    if isinstance(exc, ServiceError):
        return exc.message
    return str(exc)


class InboxPages:
    def __init__(self, engine: Engine, config: ServiceConfig) -> None:
        self.engine = engine
        self.config = config

    # -- authentication ------------------------------------------------------------

    def page(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """A GET page: a ``?key=`` sets the session and is dropped from the address;
        without a session, the login page."""

        async def endpoint(request: Request) -> Response:
            key = request.query_params.get("key")
            if key is not None:
                return await self._login_by_query(request, key)
            viewer = await identify(request, self.engine)
            if viewer is None:
                if request.headers.get("authorization"):
                    return _problem(401, "Wrong API key", "The bearer key is not valid.")
                target = request.url.path
                if request.url.query:
                    target += "?" + request.url.query
                response = _redirect("/inbox/login?" + urlencode({"next": target}))
                forget_legacy_cookie(request, response)
                return response
            if viewer.account.suspended:
                return html_response(render_suspended_page(viewer), 403)
            return await handler(request, viewer)

        return endpoint

    def action(
        self, handler: Handler, *, plays_the_human: bool = False, limited: bool = True
    ) -> Callable[[Request], Awaitable[Response]]:
        """A POST action: the session (or bearer key) and the CSRF token. Playing the
        human needs the sandbox (on in the embedded service), like the sandbox API.
        ``limited``: the account must be active and within its rate limit (logging out
        needs neither)."""

        async def endpoint(request: Request) -> Response:
            if plays_the_human and not self.config.sandbox_enabled:
                return _problem(
                    404, "Sandbox disabled", "This service does not let the inbox play the human."
                )
            viewer = await identify(request, self.engine)
            if viewer is None:
                return _problem(401, "Not logged in", "Log in to the inbox with the API key.")
            try:
                # Acting as the human counts like the sandbox API does.
                if limited:
                    await self.engine.accounts.check_limits(viewer.account)
            except RateLimited as exc:
                problem = _problem(429, "Too many requests", exc.message)
                problem.headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after)))
                return problem
            except ServiceError as exc:
                return _problem(exc.status, "Not allowed", exc.message)
            try:
                posted = await read_urlencoded(request)
            except InvalidRequest as exc:
                return _problem(400, "Unreadable request", exc.message)
            if not csrf_ok(viewer, posted.get(CSRF_FIELD)):
                return _problem(
                    403, "Expired page", "This page is out of date. Reload it and try again."
                )
            request.state.posted = posted
            return await handler(request, viewer)

        return endpoint

    def _secure(self, request: Request) -> bool:
        return cookie_secure(request, self.config.public_url)

    async def _logged_in(self, request: Request, key: str, target: str) -> Response | None:
        """Opens a session for the key and goes to ``target`` with its cookie; None
        when the key opens no account."""
        opened = await self.engine.sessions.open(key)
        if opened is None:
            return None
        _account, token = opened
        response = _redirect(target)
        set_session(
            response,
            request,
            token,
            secure=self._secure(request),
            max_age=int(self.config.inbox_session_lifetime),
        )
        return response

    async def _login_by_query(self, request: Request, key: str) -> Response:
        # Drop the key from the address bar and history.
        params = [(k, v) for k, v in request.query_params.multi_items() if k != "key"]
        target = request.url.path + ("?" + urlencode(params) if params else "")
        response = await self._logged_in(request, key, target)
        if response is None:
            return html_response(render_login_page("That API key is not valid."), 401)
        return response

    async def login_form(self, request: Request) -> Response:
        next_path = _safe_next(request.query_params.get("next"))
        if await identify(request, self.engine) is not None:
            return _redirect(next_path)
        return html_response(render_login_page(next_path=next_path))

    async def login(self, request: Request) -> Response:
        try:
            posted = await read_urlencoded(request)
        except InvalidRequest as exc:
            return html_response(render_login_page(exc.message), 400)
        key = posted.get("key", "").strip()
        next_path = _safe_next(posted.get("next"))
        response = await self._logged_in(request, key, next_path) if key else None
        if response is None:
            return html_response(render_login_page("That API key is not valid.", next_path), 401)
        return response

    async def logout(self, request: Request, viewer: Viewer) -> Response:
        """Ends the session in the store: its cookie opens nothing from now on, even
        if a copy of it outlives the browser's deleting it."""
        token = session_token(request)
        if token is not None:
            await self.engine.sessions.close(token)
        response = _redirect("/inbox/login")
        clear_session(response, request, secure=self._secure(request))
        return response

    # -- pages ---------------------------------------------------------------------

    async def inbox(self, request: Request, viewer: Viewer) -> Response:
        channel = request.query_params.get("channel") or None
        recipient = request.query_params.get("to") or None
        data = await gather_inbox(
            self.engine,
            viewer.account,
            channel=channel,
            recipient=recipient,
            sandbox=self.config.sandbox_enabled,
        )
        response = html_response(render_inbox_page(data, viewer, read_flash(request)))
        clear_flash(request, response)
        return response

    async def channels(self, request: Request, viewer: Viewer) -> Response:
        cards = await self.engine.channel_cards.of(viewer.account)
        page = render_channels_page(cards, viewer, flash=read_flash(request))
        response = html_response(page)
        clear_flash(request, response)
        return response

    def _installer(self) -> WorkspaceInstaller | None:
        slack = self.engine.providers["slack"]
        return slack if isinstance(slack, WorkspaceInstaller) else None

    async def slack(self, request: Request, viewer: Viewer) -> Response:
        installer = self._installer()
        shown = None
        if installer is not None:
            shown = SlackWorkspaces(
                shared_team=installer.shared_team,
                oauth_enabled=installer.oauth_enabled,
                installed=[
                    (found.team_id, found.team_name, found.installed_at)
                    for found in await installer.workspaces(viewer.account.id)
                ],
            )
        response = html_response(render_slack_page(shown, viewer, flash=read_flash(request)))
        clear_flash(request, response)
        return response

    async def slack_install(self, request: Request, viewer: Viewer) -> Response:
        installer = self._installer()
        if installer is None or not installer.oauth_enabled:
            return _problem(404, "Slack installs are off", "This service has no Slack OAuth.")
        return _redirect(await installer.install_url(viewer.account.id))

    async def slack_disconnect(self, request: Request, viewer: Viewer) -> Response:
        posted: dict[str, str] = request.state.posted
        team = posted.get("team", "")

        async def run() -> str:
            installer = self._installer()
            if installer is None or not await installer.disconnect(viewer.account.id, team):
                raise InvalidRequest(f"No workspace {team} of yours is connected.")
            return f"Disconnected {team}: its token is forgotten."

        return await self._act(request, run, back="/inbox/slack")

    # -- actions -------------------------------------------------------------------

    async def _act(
        self,
        request: Request,
        run: Callable[[], Awaitable[str]],
        back: str = "/inbox",
        *,
        named_in_path: bool = False,
    ) -> Response:
        """Runs an action and goes back with a notice of how it went. A channel a real
        provider carries is its 403 page instead (``LiveChannel``), and so is a
        ``NotFound`` when the path names what the action is on (``named_in_path``):
        another account's, or nobody's, is a 404 as on the API, never a redirect."""
        try:
            done = await run()
            ok = True
        except LiveChannel as exc:
            return _problem(exc.status, "Not on the sandbox", exc.message)
        except NotFound as exc:
            if named_in_path:
                return _problem(exc.status, "Not found", exc.message)
            done, ok = exc.message, False
        except (ValidationError, ServiceError) as exc:
            done, ok = _describe(exc), False
        response = _redirect(back)
        set_flash(response, done, secure=self._secure(request), ok=ok)
        return response

    async def reply(self, request: Request, viewer: Viewer) -> Response:
        posted: dict[str, str] = request.state.posted

        async def run() -> str:
            body: dict[str, Any] = {
                "channel": posted.get("channel", ""),
                "from": posted.get("from", ""),
                "to": posted.get("to", ""),
                "body": posted.get("body", ""),
            }
            if posted.get("interactionId"):
                body["interactionId"] = posted["interactionId"]
            if not body["body"].strip():
                raise InvalidRequest("Write a reply first.")
            await self.engine.sandbox.reply(
                viewer.account, SandboxReplyRequest.model_validate(body), via="inbox"
            )
            return f"Replied as {body['from']}."

        return await self._act(request, run)

    async def _account_address(self, viewer: Viewer, channel: str) -> str:
        """Where an unsolicited text goes when no ``to`` is given."""
        if channel == "slack":
            return SHARED_SLACK_WORKSPACE
        if channel == "email" or channel in CHAT_CHANNELS:
            return self.engine.providers[channel].senders[channel]
        numbers = await self.engine.numbers.of(viewer.account)
        if numbers:
            return numbers[0].phone_number
        return SHARED_WHATSAPP_NUMBER if channel == "whatsapp" else SHARED_SMS_NUMBER

    async def text(self, request: Request, viewer: Viewer) -> Response:
        posted: dict[str, str] = request.state.posted

        async def run() -> str:
            channel = posted.get("channel", "sms")
            to = posted.get("to", "").strip() or await self._account_address(viewer, channel)
            request_body = SandboxReplyRequest.model_validate(
                {
                    "channel": channel,
                    "from": posted.get("from", "").strip(),
                    "to": to,
                    "body": posted.get("body", ""),
                }
            )
            if not request_body.body.strip():
                raise InvalidRequest("Write a message first.")
            self.engine.sandbox.check_answers(channel, field="channel")
            # /start <token> on telegram opens a person's start link (docs/people.md).
            binding = await self.engine.people.open_start_text(
                channel, request_body.from_, request_body.body
            )
            if binding is not None:
                if not binding.bound:
                    raise InvalidRequest(binding.text, field="body")
                return binding.text
            await self.engine.sandbox.reply(viewer.account, request_body, via="inbox")
            return f"Text sent to {to}."

        return await self._act(request, run)

    async def end_call(self, request: Request, viewer: Viewer) -> Response:
        posted: dict[str, str] = request.state.posted
        interaction_id = request.path_params["interaction_id"]

        async def run() -> str:
            body: dict[str, Any] = {"outcome": posted.get("outcome", "")}
            if posted.get("summary", "").strip():
                body["summary"] = posted["summary"].strip()
            outcome = SandboxCallOutcomeRequest.model_validate(body)
            await self.engine.sandbox.end_call(viewer.account, interaction_id, outcome, via="inbox")
            return {
                "completed": "Call answered and ended.",
                "no_answer": "Call not answered.",
                "transferred": "Call transferred.",
            }[outcome.outcome]

        return await self._act(request, run, named_in_path=True)

    async def inbound_call(self, request: Request, viewer: Viewer) -> Response:
        posted: dict[str, str] = request.state.posted

        async def run() -> str:
            call = SandboxInboundCallRequest.model_validate(
                {
                    "from": posted.get("from", "").strip(),
                    "to": posted.get("to", "").strip(),
                    "summary": posted.get("summary", "").strip(),
                }
            )
            if not call.summary:
                raise InvalidRequest("Say what the caller says.")
            await self.engine.sandbox.inbound_call(viewer.account, call)
            return f"Called {call.to}."

        return await self._act(request, run)

    async def decide_approval(self, request: Request, viewer: Viewer) -> Response:
        """Decides as the approver picked, as their page would (``via: inbox``)."""
        posted: dict[str, str] = request.state.posted
        interaction_id = request.path_params["interaction_id"]

        async def run() -> str:
            decision = posted.get("decision", "")
            if decision not in ("approve", "reject"):
                raise InvalidRequest("Choose Approve or Reject.", field="decision")
            try:
                position = int(posted.get("approver", ""))
            except ValueError:
                raise InvalidRequest("Choose an approver.", field="approver") from None
            comment = posted.get("comment", "").strip()[:MAX_COMMENT] or None
            result, approver = await self.engine.approvals.decide_in_inbox(
                viewer.account, interaction_id, position, decision, comment
            )
            if result == "already":
                raise InvalidRequest("That approver decided already: their first decision stands.")
            if result == "closed":
                raise InvalidRequest("This approval request is no longer open.")
            verb = "Approved" if decision == "approve" else "Rejected"
            return f"{verb} as {approver_label(approver)}."

        return await self._act(request, run, named_in_path=True)

    async def create_channel(self, request: Request, viewer: Viewer) -> Response:
        posted: dict[str, str] = request.state.posted
        body: dict[str, Any] = {"type": posted.get("type", ""), "to": posted.get("to", "").strip()}
        try:
            for name in ("waitTime", "followUpTime"):
                text = posted.get(name, "").strip()
                if text:
                    try:
                        number = float(text)
                    except ValueError:
                        raise InvalidRequest(f"{name} must be a number of seconds") from None
                    body[name] = int(number) if number.is_integer() else number
            for name in ("messageTemplate", "responseTemplate", "noResponseTemplate"):
                if posted.get(name, "").strip():
                    body[name] = posted[name]
            body["replyLink"] = posted.get("replyLink") == "true"
            card = await self.engine.channel_cards.create(
                viewer.account, ChannelCardCreateRequest.model_validate(body)
            )
        except (ValidationError, ServiceError) as exc:
            cards = await self.engine.channel_cards.of(viewer.account)
            page = render_channels_page(cards, viewer, posted=posted, error=_describe(exc))
            return html_response(page, 400)
        response = _redirect("/inbox/channels")
        set_flash(response, f"Created channel card {card.id}.", secure=self._secure(request))
        return response

    async def delete_channel(self, request: Request, viewer: Viewer) -> Response:
        channel_id = request.path_params["channel_id"]

        async def run() -> str:
            await self.engine.channel_cards.delete(viewer.account, channel_id)
            return f"Deleted channel card {channel_id}."

        return await self._act(request, run, back="/inbox/channels", named_in_path=True)

    # -- live changes -----------------------------------------------------------------

    async def events(self, request: Request, viewer: Viewer) -> Response:
        account = viewer.account
        engine = self.engine

        async def stream() -> AsyncIterator[str]:
            yield "retry: 1000\n: connected\n\n"
            changes = engine.subscribe(account).__aiter__()
            deadline = time.monotonic() + SSE_LIFETIME
            pending: asyncio.Task[Any] | None = None
            try:
                while time.monotonic() < deadline:
                    if pending is None:
                        pending = asyncio.ensure_future(changes.__anext__())
                    done, _ = await asyncio.wait({pending}, timeout=SSE_KEEPALIVE)
                    if not done:
                        yield ": keepalive\n\n"
                        continue
                    task, pending = pending, None
                    try:
                        change = task.result()
                    except StopAsyncIteration:
                        break
                    data = json.dumps({"kind": change.kind, "id": change.id})
                    yield f"event: change\ndata: {data}\n\n"
            finally:
                if pending is not None:
                    pending.cancel()
                    with contextlib.suppress(BaseException):
                        await pending
                closer = getattr(changes, "aclose", None)
                if closer is not None:
                    with contextlib.suppress(Exception):
                        await closer()

        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)


def inbox_routes(engine: Engine, config: ServiceConfig) -> list[BaseRoute]:
    pages = InboxPages(engine, config)
    return [
        Route("/inbox", pages.page(pages.inbox), methods=["GET"]),
        Route("/inbox/", pages.page(pages.inbox), methods=["GET"]),
        Route("/inbox/login", pages.login_form, methods=["GET"]),
        Route("/inbox/login", pages.login, methods=["POST"]),
        Route("/inbox/logout", pages.action(pages.logout, limited=False), methods=["POST"]),
        Route("/inbox/events", pages.page(pages.events), methods=["GET"]),
        Route("/inbox/reply", pages.action(pages.reply, plays_the_human=True), methods=["POST"]),
        Route("/inbox/text", pages.action(pages.text, plays_the_human=True), methods=["POST"]),
        Route(
            "/inbox/calls/{interaction_id}",
            pages.action(pages.end_call, plays_the_human=True),
            methods=["POST"],
        ),
        Route(
            "/inbox/approvals/{interaction_id}",
            pages.action(pages.decide_approval, plays_the_human=True),
            methods=["POST"],
        ),
        Route(
            "/inbox/inbound-call",
            pages.action(pages.inbound_call, plays_the_human=True),
            methods=["POST"],
        ),
        Route("/inbox/slack", pages.page(pages.slack), methods=["GET"]),
        Route("/inbox/slack/install", pages.page(pages.slack_install), methods=["GET"]),
        Route("/inbox/slack/disconnect", pages.action(pages.slack_disconnect), methods=["POST"]),
        Route("/inbox/channels", pages.page(pages.channels), methods=["GET"]),
        Route("/inbox/channels", pages.action(pages.create_channel), methods=["POST"]),
        Route(
            "/inbox/channels/{channel_id}/delete",
            pages.action(pages.delete_channel),
            methods=["POST"],
        ),
    ]
