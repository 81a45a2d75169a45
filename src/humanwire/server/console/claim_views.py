"""What a queued request shows of its claim and how it is handed on: "Ana is on it since
14:02 UTC" to the others asked, "You are on it" with Release to the claimer, "I'm on it"
while nobody is, and the link to hand it to someone else (``claims``: the routes)."""

from __future__ import annotations

from datetime import datetime, timezone

from ..engine.approval_access import QueuedApproval
from ..forms.html import Html, render
from .auth import CSRF_FIELD

__all__ = ["claim_block", "since"]


def since(value: float) -> Html:
    """A claim's time: the hour and minute (UTC) of today's work, the day in its title."""
    moment = datetime.fromtimestamp(value, timezone.utc)
    return render(
        '<time datetime="{iso}" title="{day}">{shown}</time>',
        iso=moment.isoformat().replace("+00:00", "Z"),
        day=moment.strftime("%Y-%m-%d"),
        shown=moment.strftime("%H:%M UTC"),
    )


def _post(iid: str, what: str, label: str, csrf: str) -> Html:
    return render(
        '<form method="post" action="/console/approvals/{iid}/{what}" data-action="{what}">'
        '<input type="hidden" name="{field}" value="{csrf}">'
        '<button type="submit" class="small">{label}</button></form>',
        iid=iid,
        what=what,
        field=CSRF_FIELD,
        csrf=csrf,
        label=label,
    )


def claim_block(item: QueuedApproval, csrf: str, person_id: str) -> Html:
    """The claim line of one queued request, as ``person_id`` sees it."""
    iid = item.approval.interaction_id
    claim = item.claim
    if claim is None:
        status = Html("")
        button = Html("") if item.decided else _post(iid, "claim", "I'm on it", csrf)
    elif claim.person_id == person_id:
        status = render(
            '<p class="small" data-claim="mine">You are on it since {at}.</p>',
            at=since(claim.claimed_at),
        )
        button = _post(iid, "release", "Release", csrf)
    else:
        status = render(
            '<p class="small" data-claim="other"><strong>{name}</strong> is on it since {at}.</p>',
            name=claim.name,
            at=since(claim.claimed_at),
        )
        button = Html("")
    hand = (
        Html("")
        if item.decided
        else render(
            '<a class="small" href="/console/approvals/{iid}/reassign">Hand to someone else</a>',
            iid=iid,
        )
    )
    if item.on_behalf_of is not None:
        status = render(
            '<p class="small" data-on-behalf>Asked of you for <strong>{name}</strong> '
            "(away).</p>{status}",
            name=item.on_behalf_of,
            status=status,
        )
    return render(
        '<div class="msg-claim" data-claims>{status}<div class="msg-actions">{button}{hand}'
        "</div></div>",
        status=status,
        button=button,
        hand=hand,
    )
