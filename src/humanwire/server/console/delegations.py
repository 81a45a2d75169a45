"""The console's out-of-office page (``engine.approvals.delegations``):

* ``GET /console/away``: the person's delegations that hold or are to come (and those
  to them), and the form for a new one;
* ``POST /console/away``: a delegation to ``delegate`` from ``from`` (empty: now) until
  ``until`` (``YYYY-MM-DDTHH:MM``, UTC, as a ``datetime-local`` input sends it);
* ``POST /console/away/{delegationId}/end``: ended at once.

Behind the console's guards; a refusal is the console's problem page naming the field."""

from __future__ import annotations

import time
from datetime import datetime, timezone

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from ..config import ServiceConfig
from ..engine import Engine
from ..errors import InvalidRequest, ServiceError
from ..forms.html import SECURITY_HEADERS, Html, join, render
from ..forms.web import html_response
from ..store.records import DelegationRecord, PeopleQuery
from .auth import CSRF_FIELD, Signed, clear_flash, cookie_secure, read_flash, set_flash
from .guards import Guard
from .pages import render_problem_page, render_shell

__all__ = ["delegation_routes", "parse_moment"]

PEOPLE_LIMIT = 200


def parse_moment(text: str, field: str) -> float:
    """A ``datetime-local`` value (minutes, or seconds), read as UTC; 400 naming
    ``field`` for anything else."""
    for shape in ("%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"):
        try:
            moment = datetime.strptime(text.strip()[:19], shape)
        except ValueError:
            continue
        return moment.replace(tzinfo=timezone.utc).timestamp()
    raise InvalidRequest("give a date and time as YYYY-MM-DDTHH:MM (UTC)", field=field)


def _day(value: float) -> Html:
    moment = datetime.fromtimestamp(value, timezone.utc)
    return render(
        '<time datetime="{iso}">{shown}</time>',
        iso=moment.isoformat().replace("+00:00", "Z"),
        shown=moment.strftime("%Y-%m-%d %H:%M UTC"),
    )


def _row(d: DelegationRecord, names: dict[str, str], me: str, csrf: str) -> Html:
    if d.person_id == me:
        what = render(
            "Your requests go to <strong>{name}</strong>",
            name=names.get(d.delegate_id, d.delegate_id),
        )
        end = render(
            '<form method="post" action="/console/away/{did}/end" data-action="end">'
            '<input type="hidden" name="{field}" value="{csrf}">'
            '<button type="submit" class="small danger">End now</button></form>',
            did=d.id,
            field=CSRF_FIELD,
            csrf=csrf,
        )
    else:
        what = render(
            "<strong>{name}</strong>'s requests come to you",
            name=names.get(d.person_id, d.person_id),
        )
        end = Html("")
    return render(
        '<li class="msg" data-delegation="{did}"><div class="msg-head">{what}</div>'
        '<div class="small">from {start} until {until}</div>'
        '<div class="msg-actions">{end}</div></li>',
        did=d.id,
        what=what,
        start=_day(d.starts_at),
        until=_day(d.ends_at),
        end=end,
    )


class DelegationPages:
    def __init__(self, engine: Engine, config: ServiceConfig) -> None:
        self.engine = engine
        self.config = config

    async def page(self, request: Request, signed: Signed) -> Response:
        person = signed.person
        found = await self.engine.approvals.delegations.of(person.account, person.person_id)
        people = await self.engine.store.list_people(
            PeopleQuery(person.account.id, limit=PEOPLE_LIMIT)
        )
        names = {p.id: p.name for p in people}
        listed = (
            render(
                '<ul class="thread" data-delegations>{items}</ul>',
                items=join(_row(d, names, person.person_id, signed.csrf) for d in found),
            )
            if found
            else Html('<p class="muted" data-no-delegations>No delegation holds.</p>')
        )
        options = join(
            render('<option value="{pid}">{name}</option>', pid=p.id, name=p.name)
            for p in people
            if p.id != person.person_id
        )
        flash = read_flash(request)
        shown = (
            render('<div class="flash" role="status" data-flash>{text}</div>', text=flash[0])
            if flash is not None
            else Html("")
        )
        content = render(
            '<section class="panel"><p class="small"><a href="/console">Back to the queue</a></p>'
            "<h1>Out of office</h1>{flash}"
            '<p class="small muted">While you are away, the requests that ask you ask the '
            "person you choose in your place; they decide as themselves, for you. Times are "
            "UTC.</p>{listed}"
            '<form method="post" action="/console/away" class="stack" data-action="delegate">'
            '<input type="hidden" name="{field}" value="{csrf}">'
            '<label class="block" for="delegate">Send my requests to'
            '<select id="delegate" name="delegate" required>{options}</select></label>'
            '<label class="block" for="from">From (empty: now)'
            '<input type="datetime-local" id="from" name="from"></label>'
            '<label class="block" for="until">Until'
            '<input type="datetime-local" id="until" name="until" required></label>'
            '<button type="submit" class="primary">Delegate</button></form></section>',
            flash=shown,
            listed=listed,
            field=CSRF_FIELD,
            csrf=signed.csrf,
            options=options,
        )
        response = html_response(render_shell("Out of office: humanwire console", content, signed))
        clear_flash(request, response)
        return response

    def _done(self, request: Request, text: str) -> Response:
        response = RedirectResponse(
            "/console/away", status_code=303, headers=dict(SECURITY_HEADERS)
        )
        set_flash(response, text, secure=cookie_secure(request, self.config.public_url))
        return response

    async def create(self, request: Request, signed: Signed) -> Response:
        posted: dict[str, str] = request.state.posted
        person = signed.person
        try:
            delegate = posted.get("delegate", "").strip()[:64]
            if not delegate:
                raise InvalidRequest("choose whom your requests go to", field="delegate")
            start = posted.get("from", "").strip()
            starts_at = parse_moment(start, "from") if start else time.time()
            ends_at = parse_moment(posted.get("until", ""), "until")
            await self.engine.approvals.delegations.create(
                person.account, person.person_id, delegate, starts_at, ends_at
            )
        except ServiceError as exc:
            text = f"{exc.field}: {exc.message}" if exc.field else exc.message
            return html_response(render_problem_page("Not done", text), exc.status)
        return self._done(request, "Delegated.")

    async def end(self, request: Request, signed: Signed) -> Response:
        person = signed.person
        try:
            await self.engine.approvals.delegations.end(
                person.account, person.person_id, request.path_params["delegation_id"]
            )
        except ServiceError as exc:
            return html_response(render_problem_page("Not found", exc.message), exc.status)
        return self._done(request, "Ended.")


def delegation_routes(
    engine: Engine, config: ServiceConfig, page: Guard, action: Guard
) -> list[BaseRoute]:
    """The routes, behind the console's ``page`` (GET) and ``action`` (POST) guards."""
    pages = DelegationPages(engine, config)
    return [
        Route("/console/away", page(pages.page), methods=["GET"]),
        Route("/console/away", action(pages.create), methods=["POST"]),
        Route("/console/away/{delegation_id}/end", action(pages.end), methods=["POST"]),
    ]
