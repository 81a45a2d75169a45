"""The console's claim and reassign routes (``engine.approvals.claims``):

* ``POST /console/approvals/{id}/claim``: "I'm on it";
* ``POST /console/approvals/{id}/release``: the claim given up;
* ``GET /console/approvals/{id}/reassign``: whom the request may be handed to (the
  account's people not asked it already);
* ``POST /console/approvals/{id}/reassign``: handed to ``person``.

Behind the console's guards (``ConsolePages.page`` and ``.action``: signed in, the CSRF
token on every POST). A request the person is not asked is a 404, as on every console
route; a refusal is the console's problem page with the service's status (400 or 404
naming the field, 409 for a settled request or a claim held by someone else)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from ..config import ServiceConfig
from ..engine import Engine
from ..errors import InvalidRequest, NotFound, ServiceError
from ..forms.html import SECURITY_HEADERS, Html, join, render
from ..forms.web import html_response
from .auth import CSRF_FIELD, Signed, cookie_secure, set_flash
from .guards import Guard
from .pages import render_problem_page, render_shell

__all__ = ["claim_routes"]

NOT_FOUND = "There is no approval request of yours here."
MAX_PERSON_ID = 64


def _refused(exc: ServiceError) -> Response:
    if isinstance(exc, NotFound) and exc.field in (None, "interactionId"):
        return html_response(render_problem_page("Not found", NOT_FOUND), 404)
    text = f"{exc.field}: {exc.message}" if exc.field else exc.message
    return html_response(render_problem_page("Not done", text), exc.status)


def _render_reassign(iid: str, title: str, people: list[tuple[str, str]], signed: Signed) -> Html:
    if people:
        options = join(
            render('<option value="{pid}">{name}</option>', pid=pid, name=name)
            for pid, name in people
        )
        form = render(
            '<form method="post" action="/console/approvals/{iid}/reassign" class="stack" '
            'data-action="reassign"><input type="hidden" name="{field}" value="{csrf}">'
            '<label class="block" for="person">Hand to'
            '<select id="person" name="person" required>{options}</select></label>'
            '<button type="submit" class="primary">Hand it over</button></form>',
            iid=iid,
            field=CSRF_FIELD,
            csrf=signed.csrf,
            options=options,
        )
    else:
        form = Html(
            '<p class="muted" data-nobody>Nobody else of the directory can be asked it.</p>'
        )
    content = render(
        '<section class="panel"><p class="small"><a href="/console">Back to the queue</a></p>'
        "<h1>Hand “{title}” to someone else</h1>"
        '<p class="small muted">They are asked in your place, on their own address, and '
        "decide as themselves; you are no longer asked.</p>{form}</section>",
        title=title,
        form=form,
    )
    return render_shell(f"Hand on {title}: humanwire console", content, signed)


class ClaimPages:
    def __init__(self, engine: Engine, config: ServiceConfig) -> None:
        self.engine = engine
        self.config = config

    def _done(self, request: Request, text: str) -> Response:
        response = RedirectResponse("/console", status_code=303, headers=dict(SECURITY_HEADERS))
        set_flash(response, text, secure=cookie_secure(request, self.config.public_url))
        return response

    async def claim(self, request: Request, signed: Signed) -> Response:
        person = signed.person
        try:
            await self.engine.approvals.claims.claim(
                person.account, person.person_id, request.path_params["interaction_id"]
            )
        except ServiceError as exc:
            return _refused(exc)
        return self._done(request, "You are on it: the others are no longer reminded.")

    async def release(self, request: Request, signed: Signed) -> Response:
        person = signed.person
        try:
            await self.engine.approvals.claims.release(
                person.account, person.person_id, request.path_params["interaction_id"]
            )
        except ServiceError as exc:
            return _refused(exc)
        return self._done(request, "Released.")

    async def reassign_form(self, request: Request, signed: Signed) -> Response:
        person = signed.person
        iid = request.path_params["interaction_id"]
        claims = self.engine.approvals.claims
        try:
            people = await claims.candidates(person.account, person.person_id, iid)
        except ServiceError as exc:
            return _refused(exc)
        record = await self.engine.store.get_interaction(iid)  # the person's: checked above
        title = str((record.request if record is not None else {}).get("title", ""))
        found = [(p.id, p.name) for p in people]
        return html_response(_render_reassign(iid, title, found, signed))

    async def reassign(self, request: Request, signed: Signed) -> Response:
        posted: dict[str, str] = request.state.posted
        person = signed.person
        to_person = posted.get("person", "").strip()[:MAX_PERSON_ID]
        if not to_person:
            return _refused(InvalidRequest("choose whom to hand it to", field="person"))
        try:
            target = await self.engine.approvals.claims.reassign(
                person.account,
                person.person_id,
                request.path_params["interaction_id"],
                to_person,
            )
        except ServiceError as exc:
            return _refused(exc)
        return self._done(request, f"Handed to {target.name}: they are asked now.")


def claim_routes(
    engine: Engine, config: ServiceConfig, page: Guard, action: Guard
) -> list[BaseRoute]:
    """The routes, behind the console's ``page`` (GET) and ``action`` (POST) guards."""
    pages = ClaimPages(engine, config)
    base = "/console/approvals/{interaction_id}"
    return [
        Route(f"{base}/claim", action(pages.claim), methods=["POST"]),
        Route(f"{base}/release", action(pages.release), methods=["POST"]),
        Route(f"{base}/reassign", page(pages.reassign_form), methods=["GET"]),
        Route(f"{base}/reassign", action(pages.reassign), methods=["POST"]),
    ]
