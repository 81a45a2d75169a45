"""The reply page of channel cards with ``replyLink`` (``/r/{token}``): the recipient
reads the agent's message and answers on the page instead of in the channel. Like a
form, the unguessable token is the credential."""

from __future__ import annotations

import json
import time

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from ..config import ServiceConfig
from ..delivery.chat import CHAT_CHANNELS
from ..engine import Engine, ReplyLinkView
from ..errors import InvalidRequest, NotFound, ServiceError
from ..forms.html import SECURITY_HEADERS, Html, document, render
from ..forms.render import format_duration
from ..forms.web import html_response, json_error, read_urlencoded

__all__ = ["ReplyPages", "render_reply_page", "reply_routes"]

MAX_REPLY_LENGTH = 10_000
CHANNEL_NAMES = {
    "sms": "SMS",
    "whatsapp": "WhatsApp",
    "slack": "Slack",
    "email": "Email",
    **{channel.name: channel.title for channel in CHAT_CHANNELS.values()},
}


def render_reply_page(
    view: ReplyLinkView | None,
    *,
    error: str | None = None,
    draft: str = "",
    notice: str | None = None,
    now: float | None = None,
) -> Html:
    now = time.time() if now is None else now
    if view is None:
        inner = Html(
            '<section class="notice notice-warn" role="status"><h2>Link not found</h2>'
            "<p>This link does not lead to a message. Check that it was copied completely."
            "</p></section>"
        )
        return _page("Link not found", inner)
    message = render(
        '<h1>Message from your AI agent</h1><p class="muted small">{channel} to '
        '<span class="mono">{to}</span></p><div class="quote">{text}</div>',
        channel=CHANNEL_NAMES.get(view.channel, view.channel),
        to=view.to,
        text=view.text,
    )
    if view.state == "answered":
        state = render(
            '<section class="notice notice-{tone}" role="status"><h2>{heading}</h2>'
            '<p>Your reply:</p><div class="quote">{reply}</div></section>',
            tone="warn" if notice else "ok",
            heading=notice or "Your reply was sent",
            reply=view.reply or "",
        )
    elif view.state == "expired":
        state = Html(
            '<section class="notice notice-warn" role="status"><h2>This link has expired</h2>'
            "<p>The agent no longer waits for a reply to this message.</p></section>"
        )
    else:
        left = (view.close_deadline or now) - now
        error_html = (
            render('<p class="error" id="reply-error">{e}</p>', e=error) if error else Html("")
        )
        state = render(
            '<form method="post" action="/r/{token}" class="stack">'
            '<p class="countdown" role="status">Replies accepted for {left}</p>'
            '<label class="label" for="reply-body">Your reply</label>'
            '<textarea id="reply-body" name="body" rows="4" required maxlength="{max}"'
            "{invalid}>{draft}</textarea>{error}"
            '<button type="submit" class="primary">Send reply</button></form>',
            token=view.token,
            left=format_duration(left),
            max=MAX_REPLY_LENGTH,
            invalid=Html(' aria-invalid="true" aria-describedby="reply-error"') if error else "",
            draft=draft,
            error=error_html,
        )
    return _page("Reply to your AI agent", render("{message}{state}", message=message, state=state))


def _page(title: str, inner: Html) -> Html:
    body = render(
        '<main class="sheet">{inner}</main>'
        '<footer class="foot">Sent by an AI agent through humanwire</footer>',
        inner=inner,
    )
    return document(title, body, body_class="form-page reply-page")


class ReplyPages:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def _view(self, token: str) -> ReplyLinkView | None:
        try:
            return await self.engine.links.get_reply_link(token)
        except NotFound:
            return None

    async def show(self, request: Request) -> Response:
        view = await self._view(request.path_params["token"])
        if view is None:
            return html_response(render_reply_page(None), 404)
        status = 410 if view.state == "expired" else 200
        return html_response(render_reply_page(view), status)

    async def reply(self, request: Request) -> Response:
        token = request.path_params["token"]
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type == "application/json":
            return await self._reply_json(token, await request.body())
        view = await self._view(token)
        if view is None:
            return html_response(render_reply_page(None), 404)
        try:
            posted = await read_urlencoded(request)
        except InvalidRequest as exc:
            return html_response(render_reply_page(view, error=exc.message), 400)
        body = posted.get("body", "")
        if view.state == "answered":
            page = render_reply_page(view, notice="This message was already answered")
            return html_response(page, 409)
        if view.state == "expired":
            return html_response(render_reply_page(view), 410)
        if not body.strip():
            return html_response(render_reply_page(view, error="Write a reply first."), 400)
        if len(body) > MAX_REPLY_LENGTH:
            page = render_reply_page(view, error="This reply is too long.", draft=body)
            return html_response(page, 400)
        try:
            await self.engine.links.reply_by_link(token, body)
        except ServiceError as exc:
            fresh = await self._view(token) or view
            page = render_reply_page(fresh, error=exc.message, draft=body)
            return html_response(page, exc.status)
        return RedirectResponse(f"/r/{token}", status_code=303, headers=dict(SECURITY_HEADERS))

    async def _reply_json(self, token: str, raw: bytes) -> Response:
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):  # deep nesting must be a 400, not a 500
            return json_error(400, "invalid_request", "the body is not valid JSON")
        if not isinstance(data, dict) or not isinstance(data.get("body"), str):
            return json_error(400, "invalid_request", "body must be a string", "body")
        if set(data) != {"body"}:
            extra = sorted(set(data) - {"body"})[0]
            return json_error(400, "invalid_request", f"unknown property {extra!r}", extra)
        if len(data["body"]) > MAX_REPLY_LENGTH:
            return json_error(400, "invalid_request", "the reply is too long", "body")
        try:
            await self.engine.links.reply_by_link(token, data["body"])
        except ServiceError as exc:
            return json_error(exc.status, exc.code, exc.message, exc.field)
        return JSONResponse({"status": "replied"})


def reply_routes(engine: Engine, config: ServiceConfig) -> list[BaseRoute]:
    pages = ReplyPages(engine)
    return [
        Route("/r/{token}", pages.show, methods=["GET"]),
        Route("/r/{token}", pages.reply, methods=["POST"]),
    ]
