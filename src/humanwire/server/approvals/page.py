"""The approval page (``/a/{token}``): each approver's own link. It shows the request,
the action readably, the tally so far, and two buttons (approve / reject) with a comment
box; a plain form post, so it works without JavaScript. The unguessable token is the
credential (no key), as for forms."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from ..errors import InvalidRequest, NotFound
from ..forms.html import Html, document, join, render, value_rows
from ..forms.web import html_response, read_urlencoded

if TYPE_CHECKING:
    from ..engine import Engine
    from ..engine.approval_access import ApprovalPage

__all__ = ["approval_page_routes"]

_FOOTER = Html('<footer class="foot">Sent by an AI agent through humanwire</footer>')
_MAX_COMMENT = 2000
_RESULT = {
    "recorded": ("Thank you, your decision was recorded", "ok"),
    "already": ("You decided already", "warn"),
    "closed": ("This request is no longer open", "warn"),
}


def _notice(heading: str, text: str, tone: str) -> Html:
    body = render(
        '<main class="sheet"><section class="notice notice-{tone}" role="status">'
        '<span class="notice-icon" aria-hidden="true"></span>'
        "<h2>{heading}</h2><p>{text}</p></section></main>{footer}",
        tone=tone,
        heading=heading,
        text=text,
        footer=_FOOTER,
    )
    return document(heading, body, body_class="form-page")


def _action(page: ApprovalPage) -> Html:
    action = page.request.action
    if action is None:
        return Html("")
    rows = value_rows(action.arguments)
    return render(
        '<section class="action"><h2>Action: <code>{name}</code></h2>'
        "<table>{rows}</table></section>",
        name=action.name,
        rows=rows,
    )


def _tally(page: ApprovalPage) -> Html:
    approval = page.approval
    items = join(
        render(
            "<li>{who}: {decision}{comment}</li>",
            who=d.approver.to,
            decision="approved" if d.decision == "approve" else "rejected",
            comment=f" ({d.comment})" if d.comment else "",
        )
        for d in approval.decisions
    )
    return render(
        '<section class="tally"><p>{response}</p><ul>{items}</ul></section>',
        response=approval.response or "",
        items=items,
    )


def render_approval_page(page: ApprovalPage) -> Html:
    request = page.request
    description = (
        render('<p class="description">{text}</p>', text=request.description)
        if request.description
        else Html("")
    )
    if page.open:
        comment = (
            Html(
                '<div class="field"><label for="comment">Comment (optional)</label>'
                '<textarea id="comment" name="comment" rows="3" maxlength="2000"></textarea></div>'
            )
            if request.allow_comment
            else Html("")
        )
        decide = render(
            '<form method="post" action="/a/{token}" accept-charset="utf-8">{comment}'
            '<button type="submit" name="decision" value="approve" class="primary">'
            "Approve</button> "
            '<button type="submit" name="decision" value="reject" class="danger">Reject</button>'
            "</form>",
            token=page.approver.token,
            comment=comment,
        )
    else:
        decide = Html('<p class="legend">No decision is taken here any more.</p>')
    body = render(
        '<main class="sheet approval"><header><h1>{title}</h1>{description}</header>'
        "<p>Asked of you as {who}.</p>{action}{tally}{decide}</main>{footer}",
        title=request.title,
        description=description,
        who=page.approver.to_addr,
        action=_action(page),
        tally=_tally(page),
        decide=decide,
        footer=_FOOTER,
    )
    return document(request.title, body, body_class="form-page")


def _recorded(page: ApprovalPage) -> str:
    """What a used email link shows: this approver's decision, and where the request is."""
    mine = next(
        (d for d in page.approval.decisions if d.approver.to == page.approver.to_addr), None
    )
    said = ""
    if mine is not None:
        said = "You " + ("approved" if mine.decision == "approve" else "rejected") + " it. "
    return said + (page.approval.response or "")


def render_link_confirmation(page: ApprovalPage, decision: str, signature: str) -> Html:
    """An email link's page: one button confirms its decision (a link scanner fetching
    the link decides nothing: only the post does)."""
    request = page.request
    comment = (
        Html(
            '<div class="field"><label for="comment">Comment (optional)</label>'
            '<textarea id="comment" name="comment" rows="3" maxlength="2000"></textarea></div>'
        )
        if request.allow_comment
        else Html("")
    )
    verb = "Approve" if decision == "approve" else "Reject"
    body = render(
        '<main class="sheet approval"><header><h1>{title}</h1></header>'
        "<p>Asked of you as {who}.</p>{action}{tally}"
        '<form method="post" action="/a/{token}/{decision}" accept-charset="utf-8">'
        '<input type="hidden" name="signature" value="{signature}">{comment}'
        '<button type="submit" class="{tone}">Confirm: {verb}</button></form>'
        '<p class="legend"><a href="/a/{token}">See the request</a></p></main>{footer}',
        title=request.title,
        who=page.approver.to_addr,
        action=_action(page),
        tally=_tally(page),
        token=page.approver.token,
        decision=decision,
        signature=signature,
        comment=comment,
        tone="primary" if decision == "approve" else "danger",
        verb=verb,
        footer=_FOOTER,
    )
    return document(request.title, body, body_class="form-page")


def approval_page_routes(engine: Engine) -> list[BaseRoute]:
    async def show(request: Request) -> Response:
        token = request.path_params["token"]
        try:
            page = await engine.approvals.approval_page(token)
        except NotFound:
            return html_response(
                _notice(
                    "Approval not found",
                    "This link does not lead to an approval request. "
                    "Check that it was copied completely.",
                    "warn",
                ),
                404,
            )
        if request.query_params.get("done") in _RESULT:
            heading, tone = _RESULT[request.query_params["done"]]
            return html_response(_notice(heading, page.approval.response or "", tone))
        return html_response(render_approval_page(page))

    async def decide(request: Request) -> Response:
        token = request.path_params["token"]
        try:
            posted = await read_urlencoded(request)
        except InvalidRequest as exc:
            return html_response(_notice("That did not work", exc.message, "warn"), 400)
        decision = posted.get("decision")
        if decision not in ("approve", "reject"):
            return html_response(
                _notice("That did not work", "Choose Approve or Reject.", "warn"), 400
            )
        comment = (posted.get("comment") or "").strip()[:_MAX_COMMENT] or None
        try:
            result = await engine.approvals.decide_on_page(token, decision, comment)
        except NotFound:
            return html_response(
                _notice("Approval not found", "No approval at this link.", "warn"), 404
            )
        # Post / redirect / get: a reload does not post again.
        return RedirectResponse(f"/a/{token}?done={result}", status_code=303)

    def _not_found() -> Response:
        return html_response(
            _notice(
                "Approval not found",
                "This link does not lead to an approval request. "
                "Check that it was copied completely.",
                "warn",
            ),
            404,
        )

    async def show_link(request: Request) -> Response:
        token, decision = request.path_params["token"], request.path_params["decision"]
        signature = request.query_params.get("signature", "")
        try:
            page = await engine.approvals.email_link(token, decision, signature)
        except NotFound:
            return _not_found()
        if not page.open:
            # Used already (or the request closed): the decision recorded, no second.
            heading, tone = _RESULT["already" if page.approval.status == "pending" else "closed"]
            return html_response(_notice(heading, _recorded(page), tone))
        return html_response(render_link_confirmation(page, decision, signature))

    async def decide_by_link(request: Request) -> Response:
        token, decision = request.path_params["token"], request.path_params["decision"]
        try:
            posted = await read_urlencoded(request)
        except InvalidRequest as exc:
            return html_response(_notice("That did not work", exc.message, "warn"), 400)
        comment = (posted.get("comment") or "").strip()[:_MAX_COMMENT] or None
        try:
            result = await engine.approvals.decide_by_email_link(
                token, decision, posted.get("signature") or "", comment
            )
        except NotFound:
            return _not_found()
        return RedirectResponse(f"/a/{token}?done={result}", status_code=303)

    return [
        Route("/a/{token}/{decision}", show_link, methods=["GET"]),
        Route("/a/{token}/{decision}", decide_by_link, methods=["POST"]),
        Route("/a/{token}", show, methods=["GET"]),
        Route("/a/{token}", decide, methods=["POST"]),
    ]
