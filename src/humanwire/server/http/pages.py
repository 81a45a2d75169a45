"""The service's web pages: the form behind ``formUrl`` (``/f/{token}``), the approval
page of each approver (``/a/{token}``), the reply page
of cards with ``replyLink`` (``/r/{token}``), the web inbox (``/inbox``), the approvers'
console (``/console``) and the local
assets (``/static``). ``create_app`` mounts ``page_routes``.

Forms and reply pages need no key: their unguessable token is the credential. The inbox
is protected like the API (see ``inbox.auth``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from ..approvals.page import approval_page_routes
from ..config import ServiceConfig
from ..console.routes import console_routes
from ..engine import Engine, FormView
from ..errors import Conflict, Gone, InvalidRequest, NotFound, ServiceError
from ..forms.address import corrected_message_for_json
from ..forms.countries import countries_json
from ..forms.html import SECURITY_HEADERS, Html
from ..forms.render import (
    USE_SUGGESTION_SUFFIX,
    raw_from_post,
    render_already_submitted,
    render_expired,
    render_form_page,
    render_not_found,
    render_submitted,
)
from ..forms.validate import check_submission
from ..forms.web import html_response, json_error, read_urlencoded
from ..inbox.replies import reply_routes
from ..inbox.routes import inbox_routes

__all__ = ["STATIC_DIR", "FormPages", "page_routes"]

# server/static/, beside this package
STATIC_DIR = Path(__file__).parent.parent / "static"


def _is_json(request: Request) -> bool:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return content_type == "application/json" or content_type.endswith("+json")


def _json_values(body: bytes) -> dict[str, str]:
    """``{"values": {...}}``: strings as sent; a boolean (a checkbox) as
    ``"true"``/``"false"``; a number as written; ``null`` as unanswered."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # deep nesting must be a 400, not a 500
        raise InvalidRequest("the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise InvalidRequest("the body must be a JSON object with values")
    unknown = [k for k in data if k != "values"]
    if unknown:
        raise InvalidRequest(f"unknown property {unknown[0]!r}", field=unknown[0])
    values = data.get("values")
    if not isinstance(values, dict):
        raise InvalidRequest("values must be an object of field id to answer", field="values")
    out: dict[str, str] = {}
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, (int, float)):
            out[key] = json.dumps(value)
        elif isinstance(value, str):
            out[key] = value
        else:
            raise InvalidRequest(f"values.{key} must be a string", field=f"values.{key}")
    return out


def _with_accepted_suggestions(posted: Mapping[str, str]) -> dict[str, str]:
    """The post as the page shows it again: an accepted address suggestion in its
    field's box (the box is what the person sends next time)."""
    shown = {k: v for k, v in posted.items() if not k.endswith(USE_SUGGESTION_SUFFIX)}
    for name, value in posted.items():
        if name.endswith(USE_SUGGESTION_SUFFIX) and value:
            shown[name.removesuffix(USE_SUGGESTION_SUFFIX)] = value
    return shown


def _first_error(view: FormView, errors: Mapping[str, str]) -> tuple[str, str]:
    order = [f.id for f in view.form.fields]
    ranked = sorted(errors, key=lambda k: order.index(k) if k in order else len(order))
    return ranked[0], errors[ranked[0]]


class FormPages:
    """``/f/{token}``: GET renders the form in its state; POST takes a browser post or
    JSON ``{"values": {...}}`` (JSON answers JSON)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def _view(self, token: str) -> FormView | None:
        try:
            return await self.engine.links.get_form(token)
        except NotFound:
            return None

    async def show(self, request: Request) -> Response:
        view = await self._view(request.path_params["token"])
        if view is None:
            return html_response(render_not_found(), 404)
        if view.state == "submitted":
            # Set by the redirect after a post whose address could not be checked.
            unchecked = request.query_params.get("address") == "unchecked"
            return html_response(render_submitted(view, unchecked_address=unchecked))
        if view.state == "expired":
            return html_response(render_expired(view), 410)
        return html_response(await self._page(view))

    async def _page(
        self,
        view: FormView,
        *,
        posted: Mapping[str, str] | None = None,
        errors: Mapping[str, str] | None = None,
        suggestions: Mapping[str, str] | None = None,
    ) -> Html:
        return render_form_page(
            view,
            posted=posted,
            errors=errors,
            recipient=await self._recipient(view),
            suggestions=suggestions,
            addresses=self.engine.addresses,
        )

    async def _recipient(self, view: FormView) -> str | None:
        """The number the form went to: its country is the phone fields' default."""
        record = await self.engine.store.get_interaction(view.interaction_id)
        return record.to_addr if record is not None else None

    async def submit(self, request: Request) -> Response:
        token = request.path_params["token"]
        if _is_json(request):
            return await self._submit_json(token, await request.body())
        view = await self._view(token)
        if view is None:
            return html_response(render_not_found(), 404)
        if view.state == "submitted":
            return html_response(render_already_submitted(view), 409)
        if view.state == "expired":
            return html_response(render_expired(view), 410)
        try:
            posted = await read_urlencoded(request)
        except InvalidRequest as exc:
            return html_response(await self._page(view, errors={"": exc.message}), 400)
        raw = raw_from_post(view.form, posted)
        checked = await check_submission(view.form, raw, self.engine.addresses)
        if checked.errors:
            page = await self._page(
                view,
                posted=_with_accepted_suggestions(posted),
                errors=checked.errors,
                suggestions=checked.suggestions,
            )
            return html_response(page, 400)
        try:
            await self.engine.links.submit_form(token, raw)
        except Conflict:
            return html_response(render_already_submitted(view), 409)
        except Gone:
            return html_response(render_expired(view), 410)
        except InvalidRequest as exc:
            # The engine re-validates; a refusal here is shown like any other.
            errors = dict(getattr(exc, "errors", None) or {exc.field or "": exc.message})
            return html_response(await self._page(view, posted=posted, errors=errors), 400)
        # Post/redirect/get: reloading the confirmation never posts again.
        location = f"/f/{token}?address=unchecked" if checked.unchecked else f"/f/{token}"
        return RedirectResponse(location, status_code=303, headers=dict(SECURITY_HEADERS))

    async def _submit_json(self, token: str, body: bytes) -> Response:
        try:
            view = await self.engine.links.get_form(token)
            if view.state == "submitted":
                raise Conflict("this form was already submitted")
            if view.state == "expired":
                raise Gone("this form has expired")
            raw = _json_values(body)
            checked = await check_submission(view.form, raw, self.engine.addresses)
            if checked.errors:
                field, message = _first_error(view, checked.errors)
                if field in checked.suggestions:
                    # No page to show it on: the correction is in the message.
                    message = corrected_message_for_json(checked.suggestions[field])
                raise InvalidRequest(message, field=field)
            await self.engine.links.submit_form(token, raw)
        except ServiceError as exc:
            return json_error(exc.status, exc.code, exc.message, exc.field)
        return JSONResponse({"status": "submitted"})


async def _countries(request: Request) -> Response:
    return Response(
        countries_json(),
        media_type="application/json",
        headers={"Cache-Control": "public, max-age=86400", "X-Content-Type-Options": "nosniff"},
    )


def page_routes(engine: Engine, config: ServiceConfig) -> list[BaseRoute]:
    forms = FormPages(engine)
    return [
        Route("/f/{token}", forms.show, methods=["GET"]),
        Route("/f/{token}", forms.submit, methods=["POST"]),
        *approval_page_routes(engine),
        *reply_routes(engine, config),
        *inbox_routes(engine, config),
        *console_routes(engine, config),
        Route("/static/countries.json", _countries, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
    ]
