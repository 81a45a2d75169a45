"""The console's audit page, rendered (``audit`` gathers): the filter form, the chain's
check, the entries with their hash links, the downloads and the next page."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, get_args
from urllib.parse import urlencode

from humanwire.types.approvals import AuditEntryType
from humanwire.types.grants import GRANT_ID

from ..approvals.audit_check import LogCheck
from ..forms.html import Html, document, join, render
from .auth import CSRF_FIELD, Signed

__all__ = ["EVENTS", "render_audit_page"]

_LABELS = {
    "approval.requested": "Requested",
    "approval.asked": "Asked",
    "approval.reminded": "Reminded",
    "approval.escalated": "Escalated",
    "approval.decision": "Decision",
    "approval.decision_refused": "Decision refused",
    "approval.decided": "Decided",
    "approval.timed_out": "Timed out",
    "approval.consumed": "Consumed",
    "approval.grant_created": "Standing approval granted",
    "approval.grant_revoked": "Standing approval revoked",
    "message.fallback": "Moved to the next address",
}
EVENTS = {
    kind: _LABELS.get(kind, kind.partition(".")[2].replace("_", " ").capitalize())
    for kind in get_args(AuditEntryType)
}
"""The events the page filters by (every one the log writes), and how it names them."""

FIELDS = (
    ("approval", "Approval (interaction id)", "text", 80),
    ("person", "Person (id or address)", "text", 320),
    ("action", "Action name", "text", 200),
)


def _short(value: str) -> str:
    digest = value.removeprefix("sha256:")
    return f"{digest[:10]}…" if len(digest) > 10 else digest


def _hash(label: str, value: str, attr: str) -> Html:
    return render(
        '<dt>{label}</dt><dd><code title="{full}" {attr}="{full}">{short}</code></dd>',
        label=label,
        full=value,
        attr=Html(attr),
        short=_short(value),
    )


def _actor(actor: Mapping[str, Any] | None, names: Mapping[str, str]) -> Html:
    if not actor:
        return Html('<span class="muted">the account (its API key) or the service</span>')
    parts: list[Html] = []
    person = actor.get("person")
    if isinstance(person, str):
        name = names.get(person)
        parts.append(
            render("{name} ({id})", name=name, id=person) if name else render("{id}", id=person)
        )
    if actor.get("to"):
        parts.append(render("{to} ({channel})", to=str(actor["to"]), channel=actor.get("channel")))
    return join(parts, Html(" · "))


def _via(entry: Mapping[str, Any]) -> str:
    data = entry.get("data") or {}
    actor = entry.get("actor") or {}
    return str(data.get("via") or actor.get("channel") or "—")


def _entry(entry: Mapping[str, Any], names: Mapping[str, str]) -> Html:
    kind = str(entry.get("type", ""))
    iid = str(entry.get("interactionId", ""))
    at = str(entry.get("at", ""))
    data = entry.get("data") or {}
    return render(
        '<li class="msg" data-entry="{sequence}">'
        '<div class="msg-head"><strong>#{sequence} {label}</strong> '
        '<time class="small" datetime="{at}">{shown}</time></div>'
        '<dl class="small audit-fields">'
        "<dt>Event</dt><dd><code>{kind}</code></dd>"
        '<dt>{of}</dt><dd><a href="/console/audit?{link}">{iid}</a></dd>'
        "<dt>Actor</dt><dd>{actor}</dd>"
        "<dt>Via</dt><dd>{via}</dd>"
        "{hash}{prev}</dl>"
        '<details class="small"><summary>Hash link and data of #{sequence}</summary>'
        "<p>hash <code data-full-hash>{full_hash}</code></p>"
        "<p>prev <code data-full-prev>{full_prev}</code></p>"
        "<pre>{data}</pre></details></li>",
        sequence=entry.get("sequence"),
        label=EVENTS.get(kind, kind),
        at=at,
        shown=at.replace("T", " ").replace("Z", " UTC"),
        kind=kind,
        of="Standing approval" if GRANT_ID.fullmatch(iid) else "Approval",
        link=urlencode({"approval": iid}),
        iid=iid,
        actor=_actor(entry.get("actor"), names),
        via=_via(entry),
        hash=_hash("Hash", str(entry.get("hash", "")), "data-hash"),
        prev=_hash("Previous", str(entry.get("prev", "")), "data-prev"),
        full_hash=str(entry.get("hash", "")),
        full_prev=str(entry.get("prev", "")),
        data=json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True),
    )


def _chain(check: LogCheck) -> Html:
    if check.unreadable is not None:
        return render(
            '<div class="flash bad" role="alert" data-chain="broken">The account\'s audit log '
            "cannot be read ({why}): edited?</div>",
            why=check.unreadable,
        )
    if check.intact and check.entries == 0:
        return Html(
            '<div class="flash" role="status" data-chain="empty">'
            "The account's audit log has no entries yet.</div>"
        )
    if check.intact:
        return render(
            '<div class="flash" role="status" data-chain="verified">Chain verified through '
            "entry {last}{signed} (the account's whole log, as <code>humanwire audit "
            "verify</code> checks it).</div>",
            last=check.last,
            signed=check.signed,
        )
    first, *later = check.breaks
    more = join(
        render("<li>entry {sequence}: {problem}</li>", sequence=b.sequence, problem=b.problem)
        for b in later
    )
    return render(
        '<div class="flash bad" role="alert" data-chain="broken">'
        "<strong>The chain breaks at entry {sequence}</strong>: {problem}"
        "{more}</div>",
        sequence=first.sequence,
        problem=first.problem,
        more=render("<ul>{items}</ul>", items=more) if later else Html(""),
    )


def _form(values: Mapping[str, str]) -> Html:
    inputs = join(
        render(
            '<label class="block" for="f-{name}">{label}'
            '<input type="{kind}" id="f-{name}" name="{name}" value="{value}" '
            'maxlength="{size}" autocomplete="off" spellcheck="false"></label>',
            name=name,
            label=label,
            kind=kind,
            value=values.get(name, ""),
            size=size,
        )
        for name, label, kind, size in FIELDS
    )
    chosen = values.get("event", "")
    options = join(
        render(
            '<option value="{value}"{selected}>{label}</option>',
            value=value,
            selected=Html(" selected") if value == chosen else Html(""),
            label=label,
        )
        for value, label in [("", "Any event"), *EVENTS.items()]
    )
    times = join(
        render(
            '<label class="block" for="f-{name}">{label}'
            '<input type="datetime-local" id="f-{name}" name="{name}" value="{value}" '
            'step="1"></label>',
            name=name,
            label=label,
            value=values.get(name, ""),
        )
        for name, label in (("after", "After (UTC)"), ("before", "Before (UTC)"))
    )
    return render(
        '<form method="get" action="/console/audit" class="audit-filter" role="search" '
        'aria-label="Filter the audit trail">{inputs}'
        '<label class="block" for="f-event">Event<select id="f-event" name="event">{options}'
        "</select></label>{times}"
        '<div class="audit-filter-actions"><button type="submit" class="primary">Filter</button> '
        '<a href="/console/audit">Clear the filters</a></div></form>',
        inputs=inputs,
        options=options,
        times=times,
    )


def _query(values: Mapping[str, str], **more: str) -> str:
    kept = {name: value for name, value in values.items() if value and name != "older"}
    return urlencode({**kept, **more})


def render_audit_page(
    signed: Signed,
    values: Mapping[str, str],
    check: LogCheck | None,
    entries: Sequence[Mapping[str, Any]] = (),
    older: int | None = None,
    names: Mapping[str, str] | None = None,
    error: str | None = None,
) -> Html:
    """The page: with ``error`` (a filter refused), the form and the error alone."""
    alert = (
        render('<div class="flash bad" role="alert" data-error>{text}</div>', text=error)
        if error is not None
        else Html("")
    )
    if error is not None:
        listing = Html("")
    elif entries:
        listing = render(
            '<ol class="thread" data-audit reversed>{items}</ol>',
            items=join(_entry(e, names or {}) for e in entries),
        )
    else:
        listing = Html('<p class="muted" data-no-entries>No entry matches.</p>')
    downloads = (
        Html("")
        if error is not None
        else render(
            '<p class="small" data-downloads>Download these entries: '
            '<a href="/console/audit/export.jsonl?{q}" download data-export="jsonl">JSON Lines</a>'
            ' · <a href="/console/audit/export.csv?{q}" download data-export="csv">CSV</a></p>',
            q=_query(values),
        )
    )
    more = (
        render(
            '<nav aria-label="Pages"><a href="/console/audit?{q}" rel="next" data-older>'
            "Older entries</a></nav>",
            q=_query(values, older=str(older)),
        )
        if older is not None and error is None
        else Html("")
    )
    content = render(
        '<section class="panel"><p class="small"><a href="/console">Back to the queue</a></p>'
        "<h1>Audit trail</h1>"
        '<p class="small muted">What the log of <strong>{account}</strong> holds of the '
        "approval requests you were asked and the standing approvals you granted or "
        "revoked, newest first. Each entry carries the hash of the one before it.</p>"
        "{chain}{alert}{form}{downloads}{listing}{more}</section>",
        account=signed.person.account.name,
        chain=_chain(check) if check is not None else Html(""),
        alert=alert,
        form=_form(values),
        downloads=downloads,
        listing=listing,
        more=more,
    )
    return _shell(content, signed)


def _shell(content: Html, signed: Signed) -> Html:
    body = render(
        '<header class="topbar"><a class="logo" href="/console">humanwire console</a>'
        '<span class="spacer"></span><span class="small" data-person>{name}</span>'
        '<form method="post" action="/console/signout">'
        '<input type="hidden" name="{field}" value="{csrf}">'
        '<button type="submit" class="small">Sign out</button></form></header>'
        '<main class="wrap" id="main">{content}</main>',
        name=signed.person.name,
        field=CSRF_FIELD,
        csrf=signed.csrf,
        content=content,
    )
    return document("Audit trail: humanwire console", body, body_class="inbox-page console-page")
