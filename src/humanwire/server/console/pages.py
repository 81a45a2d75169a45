"""The console's pages, rendered on the server (plain forms: they work without
JavaScript): sign-in (the address, then the code), the queue, one request, and the
problem page. Rendering only; ``routes`` gathers and acts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone

from ..engine.approval_access import QueuedApproval
from ..forms.html import Html, action_block, document, join, render
from ..store.records import ApproverRecord, GrantRecord
from .auth import CSRF_FIELD, Signed
from .claim_views import claim_block
from .queue_filters import metadata_links

__all__ = [
    "render_approval_page",
    "render_code_page",
    "render_problem_page",
    "render_queue_items",
    "render_queue_page",
    "render_shell",
    "render_signin_page",
]

_CHANNELS = {
    "sms": "SMS",
    "whatsapp": "WhatsApp",
    "slack": "Slack",
    "email": "Email",
    "call": "Call",
    "link": "Link",
    "telegram": "Telegram",
    "discord": "Discord",
    "teams": "Teams",
}


def _csrf(token: str) -> Html:
    return render(
        '<input type="hidden" name="{name}" value="{value}">', name=CSRF_FIELD, value=token
    )


def _flash(flash: tuple[str, bool] | None) -> Html:
    if flash is None:
        return Html("")
    return render(
        '<div class="flash{bad}" role="{role}" data-flash>{text}</div>',
        bad="" if flash[1] else " bad",
        role="status" if flash[1] else "alert",
        text=flash[0],
    )


def _time(value: float | None) -> Html:
    if value is None:
        return Html('<span class="muted">no deadline</span>')
    moment = datetime.fromtimestamp(value, timezone.utc)
    return render(
        '<time datetime="{iso}">{shown}</time>',
        iso=moment.isoformat().replace("+00:00", "Z"),
        shown=moment.strftime("%Y-%m-%d %H:%M UTC"),
    )


def _shell(
    title: str,
    content: Html,
    signed: Signed | None,
    flash: tuple[str, bool] | None,
    scripts: Sequence[str] = (),
) -> Html:
    who = (
        render(
            '<a class="small" href="/console/away">Out of office</a> '
            '<span class="small" data-person>{name}</span>'
            '<form method="post" action="/console/signout">{csrf}'
            '<button type="submit" class="small">Sign out</button></form>',
            name=signed.person.name,
            csrf=_csrf(signed.csrf),
        )
        if signed is not None
        else Html("")
    )
    body = render(
        '<header class="topbar"><a class="logo" href="/console">humanwire console</a>'
        '<span class="spacer"></span>{who}</header>'
        '<main class="wrap" id="main">{flash}{content}</main>',
        who=who,
        flash=_flash(flash),
        content=content,
    )
    return document(title, body, body_class="inbox-page console-page", scripts=scripts)


def render_shell(title: str, content: Html, signed: Signed) -> Html:
    """A page of a signed-in person: the console's top bar around ``content``."""
    return _shell(title, content, signed, None)


# -- sign-in -------------------------------------------------------------------------


def render_signin_page(csrf: str, error: str | None = None) -> Html:
    message = (
        render('<div class="flash bad" role="alert">{text}</div>', text=error) if error else ""
    )
    body = render(
        '<main class="login"><h1>humanwire console</h1>'
        '<p class="muted">The approval requests waiting for you, from every agent. '
        "Give the phone number or email address you were confirmed on: a one-time code "
        "goes to it.</p>{message}"
        '<form method="post" action="/console/signin" class="stack">{csrf}'
        '<label class="block" for="address">Phone number or email'
        '<input type="text" id="address" name="address" required autocomplete="username" '
        'spellcheck="false" maxlength="320"></label>'
        '<button type="submit" class="primary">Send me a code</button></form></main>',
        message=message,
        csrf=_csrf(csrf),
    )
    return document("Sign in: humanwire console", body, body_class="inbox-page console-page")


def render_code_page(csrf: str, address: str, error: str | None = None) -> Html:
    """The same page whether or not ``address`` is anyone's."""
    message = (
        render('<div class="flash bad" role="alert">{text}</div>', text=error) if error else ""
    )
    body = render(
        '<main class="login"><h1>Enter your code</h1>'
        '<p class="muted" role="status">If <strong>{address}</strong> is a confirmed address, '
        "a six-digit code was sent to it. It expires in 10 minutes.</p>{message}"
        '<form method="post" action="/console/code" class="stack">{csrf}'
        '<input type="hidden" name="address" value="{address}">'
        '<label class="block" for="code">Code'
        '<input type="text" id="code" name="code" required inputmode="numeric" '
        'autocomplete="one-time-code" pattern="[0-9 ]{{6,8}}" maxlength="8"></label>'
        '<button type="submit" class="primary">Sign in</button></form>'
        '<p class="small"><a href="/console/signin">Use another address</a></p></main>',
        address=address,
        message=message,
        csrf=_csrf(csrf),
    )
    return document(
        "Enter your code: humanwire console", body, body_class="inbox-page console-page"
    )


def render_problem_page(heading: str, text: str) -> Html:
    body = render(
        '<main class="login" role="alert"><h1>{heading}</h1><p>{text}</p>'
        '<p><a href="/console">Back to the console</a></p></main>',
        heading=heading,
        text=text,
    )
    return document(heading, body, body_class="inbox-page console-page")


# -- the queue ------------------------------------------------------------------------


def _action(item: QueuedApproval) -> Html:
    action = item.request.action
    if action is None:
        return Html("")
    return action_block(action.name, action.arguments)


def _label(row: ApproverRecord) -> str:
    return f"{row.to_addr} ({_CHANNELS.get(row.channel, row.channel)})"


def _tally(item: QueuedApproval) -> Html:
    decisions = item.approval.decisions
    approvals = sum(1 for d in decisions if d.decision == "approve")
    rejections = sum(1 for d in decisions if d.decision == "reject")
    asked = join(
        render("<li>{who}</li>", who=_label(r)) for r in item.approvers if r.asked_at is not None
    )
    return render(
        '<p class="small" data-tally>{approvals} of {quorum} approvals · {rejections} of '
        "{reject_quorum} rejections</p>"
        '<details class="small"><summary>Who is asked</summary><ul>{asked}</ul></details>',
        approvals=approvals,
        quorum=item.request.quorum,
        rejections=rejections,
        reject_quorum=item.request.reject_quorum or 1,
        asked=asked,
    )


def _escalation_to_come(item: QueuedApproval) -> Html:
    """The escalation tiers not reached yet: when each asks, and whom (its approvers not
    asked yet), from the request's ``escalation`` and its approvers' rows."""
    tiers = item.request.escalation or []
    waiting: dict[int, list[ApproverRecord]] = {}
    for row in item.approvers:
        if row.tier >= 1 and row.asked_at is None and row.tier <= len(tiers):
            waiting.setdefault(row.tier, []).append(row)
    if not waiting:
        return Html("")
    steps = join(
        render(
            '<li data-escalation-tier="{tier}">{when}: {who}</li>',
            tier=tier,
            when=_time(item.created_at + tiers[tier - 1].after),
            who=join((_label(r) for r in rows), ", "),
        )
        for tier, rows in sorted(waiting.items())
    )
    return render(
        '<div class="small" data-escalation><p class="small">Escalation to come '
        "(if still undecided):</p><ul>{steps}</ul></div>",
        steps=steps,
    )


def _decide(item: QueuedApproval, csrf: str) -> Html:
    iid = item.approval.interaction_id
    if item.decided:
        return Html('<p class="small" data-decided>You decided: waiting for the others.</p>')
    comment = (
        render(
            '<label class="block" for="comment-{iid}">Comment (optional)'
            '<input type="text" id="comment-{iid}" name="comment" maxlength="2000" '
            'autocomplete="off"></label>',
            iid=iid,
        )
        if item.request.allow_comment
        else Html("")
    )
    return render(
        '<form method="post" action="/console/approvals/{iid}" data-action="decide">{csrf}'
        "{comment}"
        '<button type="submit" name="decision" value="approve" class="small primary">'
        "Approve</button> "
        '<button type="submit" name="decision" value="reject" class="small danger">'
        "Reject</button></form>",
        iid=iid,
        csrf=_csrf(csrf),
        comment=comment,
    )


def _item(item: QueuedApproval, csrf: str, person_id: str) -> Html:
    request = item.request
    description = (
        render('<p class="small">{text}</p>', text=request.description)
        if request.description
        else Html("")
    )
    return render(
        '<li class="msg" data-approval="{iid}">'
        '<div class="msg-head"><strong><a href="/console/approvals/{iid}">{title}</a></strong>'
        ' <span class="small">Decide by {deadline}</span></div>'
        '<div class="msg-body">{description}{action}{metadata}</div>'
        "<div>{tally}{escalation}</div>{claim}"
        '<div class="msg-actions">{decide}</div></li>',
        iid=item.approval.interaction_id,
        title=request.title,
        deadline=_time(item.deadline),
        description=description,
        action=_action(item),
        metadata=metadata_links(item),
        tally=_tally(item),
        escalation=_escalation_to_come(item),
        claim=claim_block(item, csrf, person_id),
        decide=_decide(item, csrf),
    )


def _grant(grant: GrantRecord, csrf: str) -> Html:
    return render(
        '<li class="msg" data-grant="{gid}">'
        '<div class="msg-head"><strong>{name}</strong>'
        ' <span class="small">until {expires}, granted by {who}</span></div>'
        '<div class="msg-body"><pre class="small">{match}</pre></div>'
        '<div class="msg-actions"><form method="post" action="/console/grants/{gid}/revoke" '
        'data-action="revoke">{csrf}<button type="submit" class="small danger">Revoke</button>'
        "</form></div></li>",
        gid=grant.id,
        name=grant.action_name,
        expires=_time(grant.expires_at),
        who=grant.granted_by,
        match=json.dumps(grant.match, ensure_ascii=False, sort_keys=True),
        csrf=_csrf(csrf),
    )


def _grants(grants: Sequence[GrantRecord], csrf: str) -> Html:
    """The account's live standing approvals, each revocable."""
    if grants:
        items = render(
            '<ul class="thread" data-grants>{items}</ul>',
            items=join(_grant(g, csrf) for g in grants),
        )
    else:
        items = Html('<p class="muted" data-no-grants>No standing approval is live.</p>')
    return render(
        '<section class="panel"><h2>Standing approvals ({count})</h2>'
        '<p class="small muted">Requests they cover are approved at once.</p>{items}</section>',
        count=len(grants),
        items=items,
    )


def render_queue_items(queue: Sequence[QueuedApproval], signed: Signed) -> Html:
    """The queue's list alone, in the element ``console.js`` swaps: the page's part, and
    the whole answer of its fragment route (``/console/queue``)."""
    if queue:
        items = render(
            '<ul class="thread" data-queue>{items}</ul>',
            items=join(_item(q, signed.csrf, signed.person.person_id) for q in queue),
        )
    else:
        items = Html('<p class="muted" data-empty>Nothing waits for you.</p>')
    return render(
        '<div data-live-queue data-count="{count}">{items}</div>', count=len(queue), items=items
    )


def render_queue_page(
    queue: Sequence[QueuedApproval],
    signed: Signed,
    flash: tuple[str, bool] | None,
    grants: Sequence[GrantRecord] = (),
    filters: Html = Html(""),
    order: str = "the nearest deadline first",
    live_src: str = "/console/queue",
) -> Html:
    """The queue; ``filters``: the form above it (``queue_filters``), ``order``: how
    ``queue`` is sorted, as the page says it; ``live_src``: the fragment route with the
    same filters, which ``console.js`` polls to keep the list up to date."""
    content = render(
        '<section class="panel" data-live-src="{live_src}">'
        '<h1 data-queue-heading tabindex="-1">Waiting for you ({count})</h1>'
        '<p class="small muted">From every agent of the account <strong>{account}</strong>, '
        "{order}.</p>{filters}"
        '<p class="small"><a href="/console/audit" data-audit-link>Audit trail</a>: who '
        "asked, decided and revoked what, and the check of its hash chain.</p>"
        '<p class="small muted" role="status" data-live-announce></p>'
        "{items}</section>{grants}",
        live_src=live_src,
        count=len(queue),
        account=signed.person.account.name,
        order=order,
        filters=filters,
        items=render_queue_items(queue, signed),
        grants=_grants(grants, signed.csrf),
    )
    return _shell(
        "Your queue: humanwire console", content, signed, flash, scripts=["/static/console.js"]
    )


def render_approval_page(item: QueuedApproval, signed: Signed, extra: Html = Html("")) -> Html:
    """One request; ``extra``: what other parts of the console add under it (the form
    making a standing approval: ``grants``)."""
    content = render(
        '<section class="panel"><p class="small"><a href="/console">Back to the queue</a></p>'
        '<ul class="thread">{item}</ul></section>{extra}',
        item=_item(item, signed.csrf, signed.person.person_id),
        extra=extra,
    )
    return _shell(f"{item.request.title}: humanwire console", content, signed, None)
