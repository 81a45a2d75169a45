"""Making a standing approval from the console: on a request's page (``/console/approvals/
{id}``), "approve ``<action>`` like this for <duration>", the arguments the person ticks
matched exactly (their values taken from the request itself, never from the post), posted
to ``/console/approvals/{id}/grant`` with the page's CSRF token.

The grant is made by the same code as ``POST /approvals/grants``
(``engine.approvals.create_grant``): the account's ``[approvals] grantable`` and
``max_grant`` hold, and it is audited as ``approval.grant_created`` (``via: console``,
the person its actor). The person grants as themselves (``grantedBy``). A request the
person is not asked (or no request) is a 404, as on every console route; a refusal is a
400 page naming the form's field (``action``, ``duration``, ``arguments``)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from humanwire.types.errors import detail_from_validation_error
from humanwire.types.grants import MAX_GRANT_VALUE_CHARS, GrantCreateRequest

from ..config import ServiceConfig
from ..engine.approval_access import QueuedApproval
from ..errors import InvalidRequest, NotFound
from ..forms.html import SECURITY_HEADERS, Html, join, render
from ..forms.web import html_response
from .auth import CSRF_FIELD, Signed, cookie_secure, set_flash
from .guards import Guards
from .pages import render_problem_page

__all__ = ["DURATIONS", "grant_form", "grant_routes"]

DURATIONS = (
    (15 * 60, "15 minutes"),
    (30 * 60, "30 minutes"),
    (3600, "1 hour"),
    (2 * 3600, "2 hours"),
    (4 * 3600, "4 hours"),
    (8 * 3600, "8 hours"),
    (24 * 3600, "24 hours"),
)
"""The durations the form offers (those up to the service's ``max_grant``)."""
MAX_DURATION_DIGITS = 9
NOT_FOUND = "There is no approval request of yours here."
_FIELDS = {"actionName": "action", "expiresAt": "duration", "grantedBy": "person"}
"""The API's fields as the form names them (``match…``: ``arguments``)."""


def _arguments(item: QueuedApproval) -> list[tuple[str, Any]]:
    """The action's arguments a grant can match exactly: scalars of a bounded size."""
    action = item.request.action
    if action is None:
        return []
    found = []
    for name, value in action.model_dump()["arguments"].items():
        if isinstance(value, (dict, list)):
            continue
        if len(json.dumps(value, ensure_ascii=False)) > MAX_GRANT_VALUE_CHARS:
            continue
        found.append((name, value))
    return found


def _durations(config: ServiceConfig) -> list[tuple[int, str]]:
    offered = [(s, label) for s, label in DURATIONS if s <= config.approvals_max_grant]
    if not offered:
        seconds = int(config.approvals_max_grant)
        offered = [(seconds, f"{seconds // 60} minutes" if seconds >= 60 else f"{seconds} s")]
    return offered


def grant_form(item: QueuedApproval, signed: Signed, config: ServiceConfig) -> Html:
    """The form under a request's page, when its action may be granted at all."""
    action = item.request.action
    if action is None:
        return Html("")
    if action.name not in config.approvals_grantable:
        return render(
            '<section class="panel" data-no-grant><h2>Standing approval</h2>'
            '<p class="small muted"><code>{name}</code> may not be approved ahead: the '
            "service's <code>[approvals] grantable</code> does not name it.</p></section>",
            name=action.name,
        )
    iid = item.approval.interaction_id
    arguments = _arguments(item)
    boxes = join(
        render(
            '<label class="block"><input type="checkbox" name="arg-{i}" value="1" checked> '
            "where <code>{name}</code> = <code>{value}</code></label>",
            i=index,
            name=name,
            value=json.dumps(value, ensure_ascii=False),
        )
        for index, (name, value) in enumerate(arguments)
    )
    options = join(
        render('<option value="{seconds}">{label}</option>', seconds=seconds, label=label)
        for seconds, label in _durations(config)
    )
    return render(
        '<section class="panel" data-grant-form><h2>Standing approval</h2>'
        '<p class="small muted">Approve every new request like this one at once, as you, '
        "until it expires or is revoked.</p>"
        '<form method="post" action="/console/approvals/{iid}/grant" class="stack" '
        'data-action="grant"><input type="hidden" name="{csrf_name}" value="{csrf}">'
        "<fieldset><legend>Approve <code>{name}</code></legend>{boxes}</fieldset>"
        '<label class="block" for="duration-{iid}">for'
        '<select id="duration-{iid}" name="duration">{options}</select></label>'
        '<button type="submit" class="small primary">Approve like this</button>'
        "</form></section>",
        iid=iid,
        csrf_name=CSRF_FIELD,
        csrf=signed.csrf,
        name=action.name,
        boxes=boxes or Html('<p class="small muted">It has no argument a grant can match.</p>'),
        options=options,
    )


def _refused(field: str, text: str) -> Response:
    page = render_problem_page("Not granted", f"{field}: {text}")
    return html_response(page, 400)


def _duration(posted: Mapping[str, str]) -> int:
    raw = posted.get("duration", "").strip()
    if not raw.isascii() or not raw.isdigit() or len(raw) > MAX_DURATION_DIGITS:
        raise InvalidRequest("choose how long the standing approval lasts", field="duration")
    seconds = int(raw)
    if seconds <= 0:
        raise InvalidRequest("choose how long the standing approval lasts", field="duration")
    return seconds


def grant_routes(pages: Guards) -> list[BaseRoute]:
    engine = pages.engine

    async def create(request: Request, signed: Signed) -> Response:
        posted: dict[str, str] = request.state.posted
        person = signed.person
        interaction_id = request.path_params["interaction_id"]
        queue = await engine.approvals.person_queue(person.account, person.person_id)
        found = next((q for q in queue if q.approval.interaction_id == interaction_id), None)
        if found is None or found.request.action is None:
            return html_response(render_problem_page("Not found", NOT_FOUND), 404)
        try:
            seconds = _duration(posted)
        except InvalidRequest as exc:
            return _refused("duration", exc.message)
        arguments = _arguments(found)
        match = {name: value for i, (name, value) in enumerate(arguments) if posted.get(f"arg-{i}")}
        if not match:
            return _refused("arguments", "tick at least one argument the grant matches")
        expires = datetime.fromtimestamp(time.time() + seconds, timezone.utc)
        try:
            body = GrantCreateRequest.model_validate(
                {
                    "actionName": found.request.action.name,
                    "match": match,
                    "expiresAt": expires.isoformat(),
                    "grantedBy": person.person_id,
                }
            )
            await engine.approvals.create_grant(person.account, body, person.person_id)
        except ValidationError as exc:
            detail = detail_from_validation_error(exc)
            field = detail.field or ""
            return _refused(_FIELDS.get(field, "arguments"), detail.message)
        except InvalidRequest as exc:
            return _refused(_FIELDS.get(exc.field or "", "arguments"), exc.message)
        except NotFound:
            return html_response(render_problem_page("Not found", NOT_FOUND), 404)
        response = RedirectResponse("/console", status_code=303, headers=dict(SECURITY_HEADERS))
        set_flash(
            response,
            f"Standing approval made: {found.request.action.name}, until "
            f"{expires.strftime('%Y-%m-%d %H:%M UTC')}.",
            secure=cookie_secure(request, pages.config.public_url),
            ok=True,
        )
        return response

    return [
        Route(
            "/console/approvals/{interaction_id}/grant",
            pages.action(create),
            methods=["POST"],
        )
    ]
