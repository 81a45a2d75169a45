"""The console's routes: sign-in (``/console/signin``: the address; ``/console/code``:
the code), the queue (``/console``; its list alone, polled by ``console.js``:
``/console/queue``), one request (``/console/approvals/{id}``), a
decision (POST there) and signing out.

Every POST needs the CSRF token (403 without); the two sign-in posts are also limited per
client address (the account's request rate, counted under the address) besides the
limit per address the engine keeps. A request the signed-in person is not asked (another
account's, nobody's, or one they are no approver of) is a 404, on every route. Every
route is ``async``: the engine belongs to the event loop's thread."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from ..config import ServiceConfig
from ..engine import Engine
from ..engine.approval_access import QueuedApproval
from ..errors import InvalidRequest, NotFound, RateLimited
from ..forms.html import SECURITY_HEADERS
from ..forms.web import html_response, read_urlencoded
from .audit import audit_routes
from .auth import (
    CSRF_FIELD,
    Signed,
    clear_flash,
    clear_session,
    cookie_secure,
    csrf_of,
    csrf_ok,
    identify,
    new_csrf,
    read_flash,
    session_token,
    set_csrf,
    set_flash,
    set_session,
)
from .claims import claim_routes
from .delegations import delegation_routes
from .grants import grant_form, grant_routes
from .guards import Handler
from .pages import (
    render_approval_page,
    render_code_page,
    render_problem_page,
    render_queue_items,
    render_queue_page,
    render_signin_page,
)
from .queue_filters import QueueFilter, filter_form, filtered, parse_queue_filter

__all__ = ["ConsolePages", "console_routes"]

MAX_COMMENT = 2000
MAX_ADDRESS = 320
CSRF_LIFETIME = 3600
"""Seconds the sign-in page's CSRF cookie lasts before anyone is signed in."""
NOT_FOUND = "There is no approval request of yours here."


def _redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303, headers=dict(SECURITY_HEADERS))


def _problem(status: int, heading: str, text: str) -> Response:
    return html_response(render_problem_page(heading, text), status)


def _limited(exc: RateLimited) -> Response:
    problem = _problem(429, "Too many requests", exc.message)
    problem.headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after)))
    return problem


class ConsolePages:
    def __init__(self, engine: Engine, config: ServiceConfig) -> None:
        self.engine = engine
        self.config = config

    def _secure(self, request: Request) -> bool:
        return cookie_secure(request, self.config.public_url)

    # -- guards ------------------------------------------------------------------------
    def page(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """A GET page of a signed-in person; anyone else goes to the sign-in page."""

        async def endpoint(request: Request) -> Response:
            signed = await identify(request, self.engine)
            if signed is None:
                response = _redirect("/console/signin")
                if session_token(request):  # ended: the browser forgets it
                    clear_session(response, secure=self._secure(request))
                return response
            if signed.person.account.suspended:
                return _problem(403, "Account suspended", "This account is suspended.")
            return await handler(request, signed)

        return endpoint

    def fragment(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """A GET part of a page, fetched by its script (``console.js``): the same checks
        as ``page``, but a 401 for anyone not signed in (a script follows a redirect
        silently and would swap the sign-in page in)."""

        async def endpoint(request: Request) -> Response:
            signed = await identify(request, self.engine)
            if signed is None:
                response = _problem(401, "Signed out", "Sign in to the console again.")
                if session_token(request):
                    clear_session(response, secure=self._secure(request))
                return response
            if signed.person.account.suspended:
                return _problem(403, "Account suspended", "This account is suspended.")
            return await handler(request, signed)

        return endpoint

    def action(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """A POST of a signed-in person, with the CSRF token."""

        async def endpoint(request: Request) -> Response:
            signed = await identify(request, self.engine)
            if signed is None:
                return _problem(401, "Signed out", "Sign in to the console again.")
            try:
                posted = await read_urlencoded(request)
            except InvalidRequest as exc:
                return _problem(400, "Unreadable request", exc.message)
            if not csrf_ok(request, posted.get(CSRF_FIELD)):
                return _problem(403, "Expired page", "This page is out of date. Reload it.")
            if signed.person.account.suspended:
                return _problem(403, "Account suspended", "This account is suspended.")
            request.state.posted = posted
            return await handler(request, signed)

        return endpoint

    async def _sign_in_post(self, request: Request) -> dict[str, str] | Response:
        """The posted form of a sign-in step, or the refusal: unreadable, no CSRF
        token, or past the client address's rate."""
        try:
            posted = await read_urlencoded(request)
        except InvalidRequest as exc:
            return _problem(400, "Unreadable request", exc.message)
        if not csrf_ok(request, posted.get(CSRF_FIELD)):
            return _problem(403, "Expired page", "This page is out of date. Reload it.")
        client = request.client.host if request.client is not None else "unknown"
        retry_after = await self.engine.coordinator.rate_hit(f"console-sign-in:{client}")
        if retry_after is not None:
            return _limited(RateLimited("too many sign-in attempts", retry_after=retry_after))
        return posted

    # -- sign-in -----------------------------------------------------------------------
    async def signin_form(self, request: Request) -> Response:
        if await identify(request, self.engine) is not None:
            return _redirect("/console")
        csrf = csrf_of(request) or new_csrf()
        response = html_response(render_signin_page(csrf))
        set_csrf(response, csrf, secure=self._secure(request), max_age=CSRF_LIFETIME)
        return response

    async def signin(self, request: Request) -> Response:
        posted = await self._sign_in_post(request)
        if isinstance(posted, Response):
            return posted
        address = posted.get("address", "").strip()[:MAX_ADDRESS]
        if not address:
            return html_response(render_signin_page(csrf_of(request), "Give an address."), 400)
        try:
            await self.engine.console.send_code(address)
        except RateLimited as exc:
            return _limited(exc)
        return html_response(render_code_page(csrf_of(request), address))

    async def code(self, request: Request) -> Response:
        posted = await self._sign_in_post(request)
        if isinstance(posted, Response):
            return posted
        address = posted.get("address", "").strip()[:MAX_ADDRESS]
        opened = await self.engine.console.sign_in(address, posted.get("code", "")[:16])
        if opened is None:
            page = render_code_page(
                csrf_of(request),
                address,
                "That code is wrong, expired or used already. Ask for a new one if needed.",
            )
            return html_response(page, 400)
        _person, token = opened
        old = session_token(request)
        if old is not None:  # rotated: the session this browser had ends here
            await self.engine.console.sign_out(old)
        response = _redirect("/console")
        set_session(
            response,
            token,
            secure=self._secure(request),
            max_age=int(self.config.inbox_session_lifetime),
        )
        return response

    async def signout(self, request: Request, signed: Signed) -> Response:
        token = session_token(request)
        if token is not None:
            await self.engine.console.sign_out(token)
        response = _redirect("/console/signin")
        clear_session(response, secure=self._secure(request))
        return response

    # -- the queue ---------------------------------------------------------------------
    async def _queue_of(
        self, request: Request, signed: Signed
    ) -> tuple[QueueFilter, list[QueuedApproval]] | Response:
        """The filters the query asks for and the person's queue they keep, or the 400."""
        person = signed.person
        try:
            wanted = parse_queue_filter(request.query_params)
        except InvalidRequest as exc:
            return _problem(400, "Filter not understood", f"{exc.field}: {exc.message}")
        queue = await self.engine.approvals.person_queue(person.account, person.person_id)
        return wanted, filtered(queue, wanted)

    async def queue(self, request: Request, signed: Signed) -> Response:
        found = await self._queue_of(request, signed)
        if isinstance(found, Response):
            return found
        wanted, queue = found
        grants = await self.engine.approvals.live_grants(signed.person.account)
        query = request.url.query
        page = render_queue_page(
            queue,
            signed,
            read_flash(request),
            grants,
            filter_form(wanted),
            "the newest first" if wanted.sort == "newest" else "the nearest deadline first",
            "/console/queue" + (f"?{query}" if query else ""),
        )
        response = html_response(page)
        clear_flash(request, response)
        return response

    async def queue_fragment(self, request: Request, signed: Signed) -> Response:
        """The queue's list alone, with the page's filters: what ``console.js`` polls."""
        found = await self._queue_of(request, signed)
        if isinstance(found, Response):
            return found
        return html_response(render_queue_items(found[1], signed))

    async def approval(self, request: Request, signed: Signed) -> Response:
        person = signed.person
        interaction_id = request.path_params["interaction_id"]
        queue = await self.engine.approvals.person_queue(person.account, person.person_id)
        found = next((q for q in queue if q.approval.interaction_id == interaction_id), None)
        if found is None:
            return _problem(404, "Not found", NOT_FOUND)
        extra = grant_form(found, signed, self.config)
        return html_response(render_approval_page(found, signed, extra))

    async def decide(self, request: Request, signed: Signed) -> Response:
        posted: dict[str, str] = request.state.posted
        person = signed.person
        decision = posted.get("decision", "")
        comment = posted.get("comment", "").strip()[:MAX_COMMENT] or None
        try:
            result = await self.engine.approvals.decide_in_console(
                person.account,
                person.person_id,
                request.path_params["interaction_id"],
                decision,
                comment,
            )
        except NotFound:
            return _problem(404, "Not found", NOT_FOUND)
        except InvalidRequest:
            return _problem(400, "Choose Approve or Reject", "The decision was not understood.")
        text, ok = {
            "recorded": ("Approved." if decision == "approve" else "Rejected.", True),
            "already": ("You decided already: your first decision stands.", False),
            "closed": ("This request is no longer open.", False),
        }[result]
        response = _redirect("/console")
        set_flash(response, text, secure=self._secure(request), ok=ok)
        return response

    async def revoke_grant(self, request: Request, signed: Signed) -> Response:
        try:
            await self.engine.approvals.revoke_grant(
                signed.person.account, request.path_params["grant_id"], signed.person.person_id
            )
        except NotFound:
            return _problem(404, "Not found", NOT_FOUND)
        response = _redirect("/console")
        set_flash(response, "Revoked.", secure=self._secure(request), ok=True)
        return response


def console_routes(engine: Engine, config: ServiceConfig) -> list[BaseRoute]:
    pages = ConsolePages(engine, config)
    return [
        Route("/console", pages.page(pages.queue), methods=["GET"]),
        Route("/console/", pages.page(pages.queue), methods=["GET"]),
        Route("/console/queue", pages.fragment(pages.queue_fragment), methods=["GET"]),
        Route("/console/signin", pages.signin_form, methods=["GET"]),
        Route("/console/signin", pages.signin, methods=["POST"]),
        Route("/console/code", pages.code, methods=["POST"]),
        Route("/console/signout", pages.action(pages.signout), methods=["POST"]),
        Route(
            "/console/approvals/{interaction_id}",
            pages.page(pages.approval),
            methods=["GET"],
        ),
        Route(
            "/console/approvals/{interaction_id}",
            pages.action(pages.decide),
            methods=["POST"],
        ),
        Route(
            "/console/grants/{grant_id}/revoke",
            pages.action(pages.revoke_grant),
            methods=["POST"],
        ),
        *audit_routes(pages),
        *grant_routes(pages),
        *claim_routes(engine, config, pages.page, pages.action),
        *delegation_routes(engine, config, pages.page, pages.action),
    ]
