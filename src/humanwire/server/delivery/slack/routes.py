"""The routes Slack (and an installing admin's browser) reach.

``/events`` and ``/interactions`` carry no bearer key: each request is verified with
``slack_sdk``'s ``SignatureVerifier`` (``X-Slack-Signature`` over the raw body, 5-minute
tolerance) through ``signed_route``: what cannot be verified is 403, a verified body of
the wrong shape 400 (``shapes``), and either changes nothing; a request whose timestamp
and body were already taken (a replay inside the five minutes, at any query) is 403
(``ReplayGuard``). Both answer at once
(Slack wants an answer within 3 seconds): an event is recorded by its ``event_id`` (a
retry of one seen before is acknowledged and dropped), then worked on in the background;
a click decides the form before answering (so a double click decides once) and tells
Slack in the background.

``/install`` starts an account's OAuth v2 install (a ``state`` made by the inbox's "Add
to Slack", or the account's bearer key); ``/oauth`` is Slack's redirect back, which
exchanges the code (``oauth.v2.access``) and keeps the workspace's bot token for the
account.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from ...forms.html import document, render
from ...forms.web import html_response
from ..provider_routes import ProviderRoute, ReplayGuard, Unverified, signed_route
from .installs import InstallRefused
from .provider import BOT_SCOPES, ROUTE_PREFIX
from .shapes import event_envelope, interaction_payload
from .web import SlackError

if TYPE_CHECKING:
    from .provider import SlackProvider

__all__ = ["SlackSignature", "authorize_url", "slack_routes"]

logger = logging.getLogger("humanwire.slack")

DEFAULT_AUTHORIZE = "https://slack.com/oauth/v2/authorize"
TOLERANCE = 300.0
"""Slack's requests are refused more than five minutes from their timestamp (replays)."""

REPLAY_SCOPE = "slack-seen"

_TIMESTAMP = re.compile(r"[0-9]{1,15}")
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")


class SlackSignature:
    """Slack's request signing: ``X-Slack-Signature`` (``v0=`` and the hex HMAC-SHA256,
    with the signing secret, of ``v0:{timestamp}:{body}``) and
    ``X-Slack-Request-Timestamp`` (unix seconds)."""

    header = "X-Slack-Signature"

    def __init__(self, signing_secret: str) -> None:
        from slack_sdk.signature import SignatureVerifier

        self._verifier = SignatureVerifier(signing_secret)

    def verify(self, request: Request, body: bytes) -> None:
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
        signature = request.headers.get(self.header, "")
        # What Slack never sends is refused before slack_sdk sees it, which raises on
        # it: int() of "abc" or of 5,000 digits, compare_digest() of non-ASCII text, a
        # body that is not UTF-8.
        if not _TIMESTAMP.fullmatch(timestamp):
            raise Unverified("missing or invalid X-Slack-Request-Timestamp")
        if abs(time.time() - int(timestamp)) > TOLERANCE:
            raise Unverified("X-Slack-Request-Timestamp is more than 5 minutes off")
        if not _SIGNATURE.fullmatch(signature):
            raise Unverified(f"missing or invalid {self.header}")
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            raise Unverified("the body is not UTF-8 (Slack signs UTF-8 text)") from None
        if not self._verifier.is_valid(body=body, timestamp=timestamp, signature=signature):
            raise Unverified(f"missing or invalid {self.header}")

    @staticmethod
    def covered(request: Request, body: bytes) -> bytes:
        """What the signature covers: ``v0:{timestamp}:{body}`` (not the URL)."""
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
        return b"v0:" + timestamp.encode("ascii") + b":" + body


def authorize_url(api_base: str) -> str:
    """Slack's consent page beside its Web API (``…/api`` → ``…/oauth/v2/authorize``),
    so a test's fake Slack serves both."""
    base = api_base.rstrip("/")
    if base == "https://slack.com/api":
        return DEFAULT_AUTHORIZE
    return base.removesuffix("/api") + "/oauth/v2/authorize"


def _page(status: int, heading: str, text: str) -> Response:
    body = render(
        '<main class="login"><h1>{heading}</h1><p>{text}</p>'
        '<p><a href="/inbox/slack">Back to the inbox</a></p></main>',
        heading=heading,
        text=text,
    )
    return html_response(document(heading, body, body_class="inbox-page"), status)


def slack_routes(provider: SlackProvider) -> list[ProviderRoute]:
    from slack_sdk.oauth import AuthorizeUrlGenerator

    verifier = SlackSignature(provider.config.signing_secret)
    inbound = provider.inbound
    replays = ReplayGuard(
        inbound.state, scope=REPLAY_SCOPE, tolerance=TOLERANCE, covered=verifier.covered
    )
    redirect_uri = provider.url("oauth")

    async def events(request: Request, envelope: dict[str, Any]) -> Response:
        if envelope["type"] == "url_verification":
            return JSONResponse({"challenge": envelope["challenge"]})
        if envelope["type"] != "event_callback":
            return Response(status_code=200)
        if not await provider.first_delivery(envelope.get("event_id") or ""):
            return Response(status_code=200)  # a retry of an event already taken

        async def work() -> None:
            outcome = await provider.on_event(envelope)
            logger.debug("Slack event %s: %s", envelope.get("event_id"), outcome)

        provider.spawn(work())
        return Response(status_code=200)

    async def interactions(request: Request, payload: dict[str, Any]) -> Response:
        if payload["type"] != "block_actions":
            return Response(status_code=200)
        outcome = await provider.on_click(payload)
        logger.debug("Slack click: %s", outcome)
        return Response(status_code=200)

    async def install(request: Request) -> Response:
        if not provider.oauth_enabled:
            return _page(
                404,
                "Slack installs are off",
                "This service has no slack.client_id / slack.client_secret: only the shared "
                "workspace's bot posts.",
            )
        state = request.query_params.get("state", "")
        if state:
            if await provider.installs.state_account(state, consume=False) is None:
                return _page(400, "Install link expired", "Start again from the inbox.")
        else:
            from ...inbox.auth import key_from_bearer

            key = key_from_bearer(request)
            account_id = await inbound.account_of_key(key) if key else None
            if account_id is None:
                return _page(
                    401,
                    "Log in first",
                    "Open the inbox's Slack page and choose “Add to Slack” (or send the "
                    "account's API key as a bearer header).",
                )
            state = await provider.installs.new_state(account_id)
        generator = AuthorizeUrlGenerator(
            client_id=provider.config.client_id or "",
            redirect_uri=redirect_uri,
            scopes=list(BOT_SCOPES),
            authorization_url=authorize_url(provider.config.api_base),
        )
        return RedirectResponse(generator.generate(state=state), status_code=302)

    async def oauth(request: Request) -> Response:
        if not provider.oauth_enabled:
            return _page(404, "Slack installs are off", "This service has no Slack OAuth.")
        params = request.query_params
        account_id = await provider.installs.state_account(params.get("state", ""), consume=True)
        if account_id is None:
            return _page(
                400, "Install link expired", "This install was not started here, or too long ago."
            )
        if params.get("error"):
            return _page(400, "Slack install cancelled", f"Slack said: {params.get('error')}.")
        code = params.get("code", "")
        if not code:
            return _page(400, "No code from Slack", "Start the install again from the inbox.")
        try:
            answer = await provider.web.call(
                "oauth_v2_access",
                None,
                client_id=provider.config.client_id,
                client_secret=provider.config.client_secret,
                code=code,
                redirect_uri=redirect_uri,
            )
        except SlackError as exc:
            logger.warning("Slack oauth.v2.access failed: %s", exc.error)
            return _page(502, "Slack refused the install", f"Slack said: {exc.error}.")
        team = answer.get("team") or {}
        token = str(answer.get("access_token") or "")
        if not token or not team.get("id"):
            return _page(502, "Slack refused the install", "Slack sent no bot token.")
        try:
            found = await provider.installs.save(
                account_id=account_id,
                team_id=str(team["id"]),
                team_name=str(team.get("name") or team["id"]),
                token=token,
                bot_user_id=str(answer.get("bot_user_id") or ""),
                shared_team=provider.shared_team,
            )
        except InstallRefused as exc:
            return _page(409, "Not installed", str(exc))
        body = render(
            '<main class="login"><h1>Installed in {name}</h1>'
            '<p>Send from this workspace with <span class="mono">from</span> = '
            '<span class="mono">{team}</span>.</p>'
            '<p><a href="/inbox/slack">Back to the inbox</a></p></main>',
            name=found.team_name,
            team=found.team_id,
        )
        return html_response(document("Installed in Slack", body, body_class="inbox-page"))

    def signed(
        name: str,
        handler: Callable[[Request, dict[str, Any]], Awaitable[Response]],
        parse: Callable[[bytes], dict[str, Any]],
    ) -> ProviderRoute:
        return signed_route(
            f"{ROUTE_PREFIX}/{name}",
            handler,
            provider="slack",
            verifier=verifier,
            parse=lambda request, body: parse(body),
            replays=replays,
        )

    def page(name: str, endpoint: Callable[[Request], Awaitable[Response]]) -> ProviderRoute:
        return ProviderRoute(f"{ROUTE_PREFIX}/{name}", endpoint, provider="slack", methods=["GET"])

    return [
        signed("events", events, event_envelope),
        signed("interactions", interactions, interaction_payload),
        page("install", install),
        page("oauth", oauth),
    ]
