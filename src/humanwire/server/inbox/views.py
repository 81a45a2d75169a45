"""The inbox pages: what the account's agents sent, as each recipient sees it, with the
human's side of every interaction (reply, open a form, answer a call), the windows and
statuses, webhook deliveries, reserved numbers and channel cards. Rendering only: the
routes in ``routes.py`` gather the data and run the actions."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from humanwire.types import (
    ChannelCard,
    InteractionStatus,
    ReservedNumber,
    SandboxDelivery,
    format_seconds,
)

from ..config import (
    DEFAULT_HUMAN_EMAIL,
    DEFAULT_HUMAN_PHONE,
    DEFAULT_HUMAN_SLACK,
    SHARED_SLACK_WORKSPACE,
)
from ..engine.approval_access import InboxApproval
from ..forms.html import Html, attrs, document, join, render
from .approvals import render_approvals_panel
from .auth import CSRF_FIELD, Viewer

__all__ = [
    "Conversation",
    "InboundMessage",
    "InboxData",
    "SlackWorkspaces",
    "Windows",
    "render_channels_page",
    "render_inbox_page",
    "render_login_page",
    "render_problem_page",
    "render_slack_page",
]

# A card's reply link inside a delivered text (``{base_url}/r/<token>``).
_REPLY_LINK = re.compile(r"https?://[^\s/]+/r/[A-Za-z0-9_-]{20,}")

CHANNEL_LABELS = {
    "sms": "SMS",
    "whatsapp": "WhatsApp",
    "slack": "Slack",
    "email": "Email",
    "call": "Call",
}


@dataclass(frozen=True)
class Windows:
    """When an interaction's ``waitTime`` and follow-up windows close (unix time)."""

    wait_deadline: float | None
    follow_up_deadline: float | None


@dataclass(frozen=True)
class InboundMessage:
    """A text the human (or anyone) sent to the account: a reply or unsolicited."""

    id: str
    channel: str
    from_: str
    to: str
    body: str
    interaction_id: str | None
    created_at: float


@dataclass(frozen=True)
class Conversation:
    channel: str
    recipient: str
    count: int


@dataclass
class InboxData:
    deliveries: list[SandboxDelivery]
    interactions: dict[str, InteractionStatus]
    windows: dict[str, Windows]
    inbound: list[InboundMessage]
    webhook_log: list[Mapping[str, object]]
    numbers: list[ReservedNumber]
    conversations: list[Conversation]
    channel: str | None = None
    recipient: str | None = None
    sandbox: bool = True
    """Playing the human (reply, answer calls, write first) is allowed."""
    live: frozenset[str] = frozenset()
    """Channels a real provider carries, where the inbox may not play the human
    (``Engine.sandbox_answers``): no forms for them."""
    approvals: list[InboxApproval] = field(default_factory=list)
    now: float = field(default_factory=time.time)


# -- shared pieces ------------------------------------------------------------------


def _csrf(viewer: Viewer | None) -> Html:
    if viewer is None or viewer.by_bearer:
        return Html("")
    return render(
        '<input type="hidden" name="{name}" value="{value}">', name=CSRF_FIELD, value=viewer.csrf
    )


def _time(value: datetime | float | None) -> Html:
    if value is None:
        return Html("")
    moment = (
        datetime.fromtimestamp(value, timezone.utc) if isinstance(value, (int, float)) else value
    )
    moment = moment.astimezone(timezone.utc)
    return render(
        '<time datetime="{iso}">{shown}</time>',
        iso=moment.isoformat().replace("+00:00", "Z"),
        shown=moment.strftime("%Y-%m-%d %H:%M:%S UTC"),
    )


def _chip(text: str, tone: str | None = None) -> Html:
    return render('<span class="chip {tone}">{text}</span>', tone=tone or text, text=text)


def _shell(
    title: str,
    current: str,
    viewer: Viewer | None,
    content: Html,
    *,
    flash: tuple[str, bool] | None = None,
    live: bool = False,
) -> Html:
    nav = join(
        render(
            '<a href="{href}"{current}>{label}</a>',
            href=href,
            current=attrs({"aria-current": "page" if key == current else None}),
            label=label,
        )
        for key, href, label in (
            ("inbox", "/inbox", "Inbox"),
            ("channels", "/inbox/channels", "Channel cards"),
            ("slack", "/inbox/slack", "Slack"),
        )
    )
    logout = (
        render(
            '<form method="post" action="/inbox/logout">{csrf}'
            '<button type="submit" class="small">Log out</button></form>',
            csrf=_csrf(viewer),
        )
        if viewer is not None and not viewer.by_bearer
        else Html("")
    )
    account = (
        render('<span class="small">{name}</span>', name=viewer.account.name)
        if viewer
        else Html("")
    )
    status = (
        Html('<span class="live off" data-live-status role="status">connecting…</span>')
        if live
        else Html("")
    )
    flash_html = (
        render(
            '<div class="flash{bad}" role="{role}" data-flash>{text}</div>',
            bad="" if flash[1] else " bad",
            role="status" if flash[1] else "alert",
            text=flash[0],
        )
        if flash
        else Html("")
    )
    body = render(
        '<header class="topbar"><a class="logo" href="/inbox">humanwire inbox</a>'
        '<nav aria-label="Inbox sections">{nav}</nav><span class="spacer"></span>'
        "{status}{account}{logout}</header>"
        '<main class="wrap" id="main">{flash}{content}</main>',
        nav=nav,
        status=status,
        account=account,
        logout=logout,
        flash=flash_html,
        content=content,
    )
    scripts = ["/static/inbox.js"] if live else []
    return document(title, body, body_class="inbox-page", scripts=scripts)


# -- login --------------------------------------------------------------------------


def render_login_page(error: str | None = None, next_path: str = "/inbox") -> Html:
    message = (
        render('<div class="flash bad" role="alert">{text}</div>', text=error) if error else ""
    )
    body = render(
        '<main class="login"><h1>humanwire inbox</h1>'
        '<p class="muted">Play the human side of your agents. Paste the account\'s API key '
        "(the embedded service prints it when it starts).</p>{message}"
        '<form method="post" action="/inbox/login" class="stack">'
        '<input type="hidden" name="next" value="{next}">'
        '<label class="block" for="api-key">API key'
        '<input type="password" id="api-key" name="key" required autocomplete="current-password"'
        ' spellcheck="false"></label>'
        '<button type="submit" class="primary">Open the inbox</button></form></main>',
        message=message,
        next=next_path,
    )
    return document("Log in: humanwire inbox", body, body_class="inbox-page")


def render_problem_page(heading: str, text: str) -> Html:
    body = render(
        '<main class="login" role="alert"><h1>{heading}</h1><p>{text}</p>'
        '<p><a href="/inbox">Back to the inbox</a></p></main>',
        heading=heading,
        text=text,
    )
    return document(heading, body, body_class="inbox-page")


def render_suspended_page(viewer: Viewer) -> Html:
    """What a suspended account's inbox shows instead of its pages: the state, what it
    means, and who can lift it."""
    content = render(
        '<section class="flash bad" role="alert" data-suspended>'
        "<h1>Account suspended</h1>"
        "<p>The account <strong>{name}</strong> (<code>{id}</code>) is suspended. Every "
        "request with its API key is refused with <code>403 account_suspended</code>: "
        "nothing is sent, and its inbox is closed.</p>"
        "<p>Accounts sending bulk or promotional texts are suspended automatically, and "
        "the operator of this service may suspend one. The operator can reinstate it: "
        "<code>humanwire accounts reinstate {id}</code>.</p></section>",
        name=viewer.account.name,
        id=viewer.account.id,
    )
    return _shell("Account suspended: humanwire inbox", "", viewer, content)


# -- the inbox -----------------------------------------------------------------------


def _window_text(windows: Windows | None, status: InteractionStatus | None, now: float) -> Html:
    if windows is None:
        return Html("")
    listening = status is None or status.status == "pending"
    parts: list[Html] = []
    follow_up = windows.follow_up_deadline
    if follow_up == windows.wait_deadline:
        follow_up = None  # no followUpTime: listening ends with the wait
    for name, deadline in (("wait", windows.wait_deadline), ("follow-up", follow_up)):
        if deadline is None:
            continue
        # An ended interaction listens no more, whatever its windows said.
        state = "was until" if not listening else "open until" if deadline > now else "closed at"
        parts.append(render("{name} {state} {at}", name=name, state=state, at=_time(deadline)))
    if not parts:
        return Html("")
    return render('<span class="windows">{text}</span>', text=join(parts, " · "))


def _status_chip(status: InteractionStatus | None) -> Html:
    if status is None:
        return Html("")
    chip = _chip(status.status)
    if status.result is not None:
        chip = render("{chip} {answered}", chip=chip, answered=_chip("answered", "ok"))
    return chip


def _reply_form(delivery: SandboxDelivery, viewer: Viewer) -> Html:
    # A slack reply goes in the message's thread, an email reply answers that email.
    thread = delivery.channel in ("slack", "email")
    email = delivery.channel == "email"
    return render(
        '<form method="post" action="/inbox/reply" data-action="reply">{csrf}'
        '<input type="hidden" name="channel" value="{channel}">'
        '<input type="hidden" name="from" value="{human}">'
        '<input type="hidden" name="to" value="{agent}">'
        "{thread}"
        '<label class="sr-only" for="reply-{id}">Reply as {human}</label>'
        '<input type="text" id="reply-{id}" name="body" required autocomplete="off" '
        'placeholder="{placeholder}">'
        '<button type="submit" class="small">{button}</button></form>',
        csrf=_csrf(viewer),
        channel=delivery.channel,
        human=delivery.to,
        agent=delivery.from_ or "",
        thread=render(
            '<input type="hidden" name="interactionId" value="{id}">', id=delivery.interaction_id
        )
        if thread and delivery.interaction_id
        else Html(""),
        id=delivery.id,
        placeholder=(
            f"Reply to this email as {delivery.to}…"
            if email
            else "Reply in thread…"
            if thread
            else f"Reply as {delivery.to}…"
        ),
        button="Reply by email" if email else "Reply in thread" if thread else "Reply",
    )


def _call_forms(delivery: SandboxDelivery, viewer: Viewer) -> Html:
    target = f"/inbox/calls/{delivery.interaction_id}"
    return render(
        '<form method="post" action="{target}" data-action="answer-call">{csrf}'
        '<input type="hidden" name="outcome" value="completed">'
        '<label class="sr-only" for="summary-{id}">Call summary</label>'
        '<input type="text" id="summary-{id}" name="summary" required '
        'placeholder="What the callee said…">'
        '<button type="submit" class="small">Answer &amp; end call</button></form>'
        '<form method="post" action="{target}" data-action="no-answer">{csrf}'
        '<input type="hidden" name="outcome" value="no_answer">'
        '<button type="submit" class="small">No answer</button></form>'
        '<form method="post" action="{target}" data-action="transfer">{csrf}'
        '<input type="hidden" name="outcome" value="transferred">'
        '<input type="hidden" name="summary" value="The callee asked for a human.">'
        '<button type="submit" class="small">Transfer</button></form>',
        target=target,
        csrf=_csrf(viewer),
        id=delivery.id,
    )


def _delivery(delivery: SandboxDelivery, data: InboxData, viewer: Viewer) -> Html:
    status = data.interactions.get(delivery.interaction_id or "")
    windows = data.windows.get(delivery.interaction_id or "")
    open_ = status is not None and status.status == "pending"
    if (not data.sandbox or delivery.channel in data.live) and delivery.kind != "form":
        actions = Html("")
    elif delivery.kind == "form" and delivery.form_url:
        actions = render(
            '<a class="button small primary-link" href="{url}" target="_blank" '
            'rel="noopener noreferrer" data-action="open-form">Open the form</a>',
            url=delivery.form_url,
        )
    elif delivery.kind == "call":
        actions = (
            _call_forms(delivery, viewer)
            if open_ and delivery.interaction_id
            else Html('<span class="muted small">Call ended.</span>')
        )
    else:
        actions = _reply_form(delivery, viewer)
        link = _REPLY_LINK.search(delivery.text)
        if link is not None:
            actions = render(
                '{form}<a class="button small" href="{url}" target="_blank" '
                'rel="noopener noreferrer" data-action="open-reply-link">Open the reply page</a>',
                form=actions,
                url=link.group(0),
            )
    replies = [
        m for m in data.inbound if m.interaction_id and m.interaction_id == delivery.interaction_id
    ]
    replies_html = join(
        render(
            '<p class="msg-reply"><span class="who">{who} replied {at}</span>{body}</p>',
            who=m.from_,
            at=_time(m.created_at),
            body=m.body,
        )
        for m in replies
    )
    kind = delivery.kind if delivery.kind != "message" else "text"
    return render(
        '<li class="msg" data-key="d-{id}" data-delivery="{id}" data-interaction="{iid}" '
        'data-channel="{channel}" data-kind="{kind_raw}">'
        '<div class="msg-head">{channel_chip} <strong>{kind}</strong> '
        '<span>to <span class="mono">{to}</span></span>{from_}'
        ' <span data-live-part="status">{status}</span> {at}</div>'
        '<div class="msg-body">{text}</div>'
        '{replies}<div class="small muted windows-line" data-live-part="windows">{windows}</div>'
        '<div class="msg-actions" data-live-part="actions">{actions}</div></li>',
        id=delivery.id,
        iid=delivery.interaction_id or "",
        channel=delivery.channel,
        kind_raw=delivery.kind,
        channel_chip=_chip(
            CHANNEL_LABELS.get(delivery.channel, delivery.channel), delivery.channel
        ),
        kind=kind,
        to=delivery.to,
        from_=render(' <span>from <span class="mono">{f}</span></span>', f=delivery.from_)
        if delivery.from_
        else Html(""),
        status=_status_chip(status),
        at=_time(delivery.created_at),
        text=delivery.text,
        windows=_window_text(windows, status, data.now),
        replies=render('<div class="replies">{r}</div>', r=replies_html) if replies else "",
        actions=actions,
    )


def _filters(data: InboxData) -> Html:
    def link(label: str, channel: str | None, recipient: str | None, count: int | None) -> Html:
        query = []
        if channel:
            query.append(f"channel={channel}")
        if recipient:
            query.append(f"to={recipient.replace('+', '%2B')}")
        href = "/inbox" + ("?" + "&".join(query) if query else "")
        current = channel == data.channel and recipient == data.recipient
        return render(
            '<a class="button" href="{href}"{current}>{label}{count}</a>',
            href=href,
            current=attrs({"aria-current": "true" if current else None}),
            label=label,
            count=f" ({count})" if count is not None else "",
        )

    links = [link("Everything", None, None, None)]
    links += [
        link(
            f"{CHANNEL_LABELS.get(c.channel, c.channel)} · {c.recipient}",
            c.channel,
            c.recipient,
            c.count,
        )
        for c in data.conversations
    ]
    return render(
        '<nav class="filters" aria-label="Recipients and channels">{links}</nav>',
        links=join(links),
    )


def _unsolicited(data: InboxData) -> Html:
    loose = [m for m in data.inbound if not m.interaction_id][:20]
    if not loose:
        return Html('<p class="muted small">Nothing yet.</p>')
    return render(
        '<ul class="thread" data-live="inbound">{items}</ul>',
        items=join(
            render(
                '<li class="msg" data-key="i-{id}"><div class="msg-head">{chip} '
                'from <span class="mono">{from_}</span> to <span class="mono">{to}</span> {at}'
                '</div><div class="msg-body">{body}</div></li>',
                id=m.id,
                chip=_chip(CHANNEL_LABELS.get(m.channel, m.channel), m.channel),
                from_=m.from_,
                to=m.to,
                at=_time(m.created_at),
                body=m.body,
            )
            for m in loose
        ),
    )


def _numbers_panel(data: InboxData) -> Html:
    if data.numbers:
        listed = join(
            render(
                '<li><span class="mono">{n}</span> <span class="muted small">reserved '
                "{at}</span></li>",
                n=n.phone_number,
                at=_time(n.created_at),
            )
            for n in data.numbers
        )
        return render("<ul data-reserved-numbers>{listed}</ul>", listed=listed)
    return Html(
        '<p class="muted small" data-reserved-numbers>No reserved number: texts come from the '
        'shared number. Reserve one with <span class="mono">POST /numbers/reserve</span>.</p>'
    )


def _act_panel(data: InboxData, viewer: Viewer) -> Html:
    reserved = data.numbers[0].phone_number if data.numbers else ""
    if "call" in data.live:
        call_form = Html('<p class="muted small">Calls go through a real provider here.</p>')
    elif reserved:
        call_form = render(
            '<form method="post" action="/inbox/inbound-call" class="stack" '
            'data-action="inbound-call">{csrf}'
            '<input type="hidden" name="to" value="{to}">'
            '<label class="block" for="call-from">From<input type="text" id="call-from" '
            'name="from" value="{human}" required></label>'
            '<label class="block" for="call-summary">What the caller says'
            '<input type="text" id="call-summary" name="summary" required '
            'placeholder="Hi, it is Sam, please call me back"></label>'
            '<button type="submit" class="small">Call {to}</button></form>',
            csrf=_csrf(viewer),
            to=reserved,
            human=DEFAULT_HUMAN_PHONE,
        )
    else:
        call_form = Html('<p class="muted small">Reserve a number to receive inbound calls.</p>')
    channel_options = join(
        render('<option value="{v}">{label}</option>', v=v, label=CHANNEL_LABELS[v])
        for v in ("sms", "whatsapp", "slack", "email")
        if v not in data.live
    )
    text_form = (
        render(
            '<form method="post" action="/inbox/text" class="stack" data-action="text">{csrf}'
            '<div class="row"><div class="block"><label for="text-channel">Channel</label>'
            '<select id="text-channel" name="channel" data-human-phone="{human}" '
            'data-human-slack="{slack}" data-human-email="{email}">{options}</select></div>'
            '<label class="block" for="text-from">From<input type="text" id="text-from" '
            'name="from" value="{human}" required></label></div>'
            '<label class="block" for="text-to">To (a number or workspace of the account; '
            'empty: the reserved or shared one)<input type="text" id="text-to" name="to" '
            'value="{to}"></label>'
            '<label class="block" for="text-body">Message<input type="text" id="text-body" '
            'name="body" required></label>'
            '<button type="submit" class="small">Send text</button></form>',
            csrf=_csrf(viewer),
            options=channel_options,
            human=DEFAULT_HUMAN_PHONE,
            slack=DEFAULT_HUMAN_SLACK,
            email=DEFAULT_HUMAN_EMAIL,
            to=reserved,
        )
        if channel_options
        else Html('<p class="muted small">Every channel goes through a real provider here.</p>')
    )
    return render(
        '<section class="panel" data-live-panel="act"><h2>Write to the agent</h2>{text_form}'
        "<h3>Call the reserved number</h3>{call_form}</section>",
        text_form=text_form,
        call_form=call_form,
    )


def _interactions_table(data: InboxData) -> Html:
    if not data.interactions:
        return Html('<p class="muted small">No interactions yet.</p>')
    rows = join(
        render(
            '<tr data-key="x-{id}">'
            '<td data-label="Interaction"><span class="mono">{short}</span></td>'
            '<td data-label="Kind">{kind}</td><td data-label="Status">{status}</td>'
            '<td data-label="Created">{created}</td><td data-label="Windows">{windows}</td>'
            "</tr>",
            id=s.interaction_id,
            short=s.interaction_id[:8],
            kind=f"{s.kind} · {CHANNEL_LABELS.get(s.channel, s.channel)}",
            status=_status_chip(s),
            created=_time(s.created_at),
            windows=_window_text(data.windows.get(s.interaction_id), s, data.now),
        )
        for s in sorted(data.interactions.values(), key=lambda s: s.created_at, reverse=True)[:50]
    )
    return render(
        '<div class="table-scroll"><table class="stacked"><thead><tr><th>Interaction</th>'
        "<th>Kind</th><th>Status</th><th>Created</th><th>Windows</th></tr></thead>"
        '<tbody data-live="interactions">{rows}</tbody></table></div>',
        rows=rows,
    )


def _log_time(value: object) -> Html:
    """A log timestamp (ISO 8601 text or unix seconds) as a ``<time>``."""
    if isinstance(value, (int, float, datetime)):
        return _time(value)
    if isinstance(value, str) and value:
        try:
            return _time(datetime.fromisoformat(value.replace("Z", "+00:00")))
        except ValueError:
            return render("{v}", v=value)
    return Html("")


def _webhook_table(data: InboxData) -> Html:
    if not data.webhook_log:
        return Html(
            '<p class="muted small">No webhook deliveries. Late replies, form submissions '
            "and inbound texts go to webhooks registered with "
            '<span class="mono">POST /webhooks</span>.</p>'
        )
    rows = []
    for entry in data.webhook_log[:50]:
        status = str(entry.get("status") or "")
        rows.append(
            render(
                '<tr data-key="w-{id}"><td data-label="Event">{event}</td>'
                '<td data-label="Webhook"><span class="mono">{url}</span></td>'
                '<td data-label="Status">{status}</td><td data-label="Tries">{attempts}</td>'
                '<td data-label="HTTP">{code}</td><td data-label="Last error">{error}</td>'
                '<td data-label="Created">{created}</td><td data-label="Next try">{next}</td>'
                "</tr>",
                id=str(entry.get("id") or ""),
                event=str(entry.get("eventType") or ""),
                url=str(entry.get("url") or "(deleted webhook)"),
                status=_chip(status, status) if status else "",
                attempts=str(entry.get("attempts") or 0),
                code=str(entry.get("lastStatusCode") or ""),
                error=str(entry.get("lastError") or ""),
                created=_log_time(entry.get("createdAt")),
                next=_log_time(entry.get("nextAttemptAt")),
            )
        )
    return render(
        '<div class="table-scroll"><table class="stacked"><thead><tr><th>Event</th>'
        "<th>Webhook</th><th>Status</th><th>Tries</th><th>HTTP</th><th>Last error</th>"
        "<th>Created</th>"
        '<th>Next try</th></tr></thead><tbody data-live="webhooks">{rows}</tbody></table>'
        "</div>",
        rows=join(rows),
    )


def render_inbox_page(
    data: InboxData, viewer: Viewer, flash: tuple[str, bool] | None = None
) -> Html:
    if data.deliveries:
        feed = render(
            '<ul class="thread" data-live="feed">{items}</ul>',
            items=join(_delivery(d, data, viewer) for d in data.deliveries),
        )
    else:
        feed = Html(
            '<ul class="thread" data-live="feed"></ul><p class="muted" data-empty>Nothing has '
            "been sent yet. Messages, forms and calls your agents send appear here as "
            "their recipient sees them.</p>"
        )
    content = render(
        '<div class="grid"><div>'
        '<section class="panel" data-live-panel="filters"><h2>What your agents sent</h2>'
        "{filters}</section>{approvals}"
        '<div data-live-panel="feed">{feed}</div></div><aside>'
        '<section class="panel" data-live-panel="numbers"><h2>Reserved number</h2>{numbers}'
        '<p class="small muted">The inbox\'s human: <span class="mono">{phone}</span> '
        '(slack <span class="mono">{slack}</span>, shared workspace '
        '<span class="mono">{workspace}</span>; email <span class="mono">{email}</span>).'
        "</p></section>"
        "{act}"
        '<section class="panel" data-live-panel="inbound"><h2>Texts to the agent</h2>'
        "{unsolicited}</section>"
        "</aside></div>"
        '<section class="panel" data-live-panel="interactions"><h2>Interactions</h2>'
        "{interactions}</section>"
        '<section class="panel" data-live-panel="webhooks"><h2>Webhook deliveries</h2>'
        "{webhooks}</section>",
        filters=_filters(data),
        approvals=render_approvals_panel(
            data.approvals, _csrf(viewer), sandbox=data.sandbox, live=data.live
        ),
        feed=feed,
        numbers=_numbers_panel(data),
        phone=DEFAULT_HUMAN_PHONE,
        slack=DEFAULT_HUMAN_SLACK,
        workspace=SHARED_SLACK_WORKSPACE,
        email=DEFAULT_HUMAN_EMAIL,
        act=_act_panel(data, viewer) if data.sandbox else Html(""),
        unsolicited=_unsolicited(data),
        interactions=_interactions_table(data),
        webhooks=_webhook_table(data),
    )
    return _shell("humanwire inbox", "inbox", viewer, content, flash=flash, live=True)


# -- channel cards ---------------------------------------------------------------------


def _card_row(card: ChannelCard, viewer: Viewer) -> Html:
    def seconds(value: float | None) -> str:
        return "" if value is None else f"{format_seconds(value)} s"

    return render(
        '<tr data-key="c-{id}"><td class="mono">{id}</td><td>{type}</td>'
        '<td class="mono">{to}</td><td>{wait}</td><td>{follow}</td>'
        '<td class="small">{message}</td><td class="small">{response}</td>'
        '<td class="small">{no_response}</td><td>{reply}</td>'
        '<td><form method="post" action="/inbox/channels/{id}/delete">{csrf}'
        '<button type="submit" class="small danger" aria-label="Delete card {id}">Delete'
        "</button></form></td></tr>",
        id=card.id,
        type=_chip(CHANNEL_LABELS.get(card.type, card.type), card.type),
        to=card.to,
        wait=seconds(card.wait_time),
        follow=seconds(card.follow_up_time),
        message=card.message_template or "{{message}}",
        response=card.response_template,
        no_response=card.no_response_template,
        reply="yes" if card.reply_link else "no",
        csrf=_csrf(viewer),
    )


def render_channels_page(
    cards: Sequence[ChannelCard],
    viewer: Viewer,
    *,
    flash: tuple[str, bool] | None = None,
    posted: Mapping[str, str] | None = None,
    error: str | None = None,
) -> Html:
    posted = posted or {}
    if cards:
        table = render(
            '<div class="table-scroll"><table><thead><tr><th>Channel id</th><th>Type</th>'
            "<th>To</th><th>Wait</th><th>Follow-up</th><th>Message template</th>"
            "<th>Response template</th><th>No-response template</th><th>Reply link</th>"
            '<th></th></tr></thead><tbody data-live="channels">{rows}</tbody></table></div>',
            rows=join(_card_row(c, viewer) for c in cards),
        )
    else:
        table = Html('<p class="muted">No channel cards yet.</p>')
    type_options = join(
        render(
            '<option value="{v}"{sel}>{label}</option>',
            v=v,
            sel=attrs({"selected": posted.get("type") == v}),
            label=CHANNEL_LABELS[v],
        )
        for v in ("sms", "whatsapp", "slack", "email", "call")
    )
    error_html = render('<div class="flash bad" role="alert">{e}</div>', e=error) if error else ""

    def text_input(name: str, label: str, placeholder: str = "", kind: str = "text") -> Html:
        return render(
            '<label class="block" for="card-{name}">{label}<input type="{kind}" '
            'id="card-{name}" name="{name}" value="{value}" placeholder="{ph}"></label>',
            name=name,
            label=label,
            kind=kind,
            value=posted.get(name, ""),
            ph=placeholder,
        )

    create = render(
        '<section class="panel"><h2>Create a channel card</h2>{error}'
        '<form method="post" action="/inbox/channels" class="stack" data-action="create-card">'
        '{csrf}<div class="row"><div class="block"><label for="card-type">Type</label>'
        '<select id="card-type" name="type">{types}</select></div>{to}</div>'
        '<div class="row">{wait}{follow}</div>{message}{response}{no_response}'
        '<label class="inline-check"><input type="checkbox" name="replyLink" value="true"'
        "{reply}> Reply link (the recipient may answer on a web page)</label>"
        '<button type="submit" class="small">Create card</button></form></section>',
        error=error_html,
        csrf=_csrf(viewer),
        types=type_options,
        to=text_input("to", "Recipient (number, slack id or email address)", DEFAULT_HUMAN_PHONE),
        wait=text_input("waitTime", "Wait time (s)", "60"),
        follow=text_input("followUpTime", "Follow-up time (s)", "600"),
        message=text_input(
            "messageTemplate", "Outgoing message template", "From the agent: {{message}}"
        ),
        response=text_input("responseTemplate", "Response template", "Human response: {{message}}"),
        no_response=text_input(
            "noResponseTemplate",
            "No-response template",
            "Human did not respond. Continue where you left off.",
        ),
        reply=attrs({"checked": posted.get("replyLink") == "true"}),
    )
    content = render(
        '<section class="panel"><h2>Channel cards</h2><p class="small muted">Send through a '
        'card with <span class="mono">POST /messages/&lt;channel id&gt;</span>.</p>{table}'
        "</section>{create}",
        table=table,
        create=create,
    )
    return _shell("Channel cards: humanwire inbox", "channels", viewer, content, flash=flash)


def conversations_of(deliveries: Iterable[SandboxDelivery]) -> list[Conversation]:
    counts: dict[tuple[str, str], int] = {}
    for d in deliveries:
        counts[(d.channel, d.to)] = counts.get((d.channel, d.to), 0) + 1
    return [Conversation(c, r, n) for (c, r), n in counts.items()]


# -- Slack workspaces --------------------------------------------------------------------


@dataclass(frozen=True)
class SlackWorkspaces:
    """What the Slack page shows: None when Slack goes to the sandbox."""

    shared_team: str
    oauth_enabled: bool
    installed: Sequence[tuple[str, str, float]]
    """(team id, team name, installed at) of the account's own workspaces."""


def render_slack_page(
    slack: SlackWorkspaces | None, viewer: Viewer, *, flash: tuple[str, bool] | None = None
) -> Html:
    if slack is None:
        content = render(
            '<section class="panel"><h2>Slack</h2><p>Slack messages go to the sandbox: '
            "they appear in this inbox (the shared workspace is "
            '<span class="mono">{shared}</span>). Configure <span class="mono">slack.*</span> '
            "to post in a real workspace (the docs: “Going live with Slack”).</p></section>",
            shared=SHARED_SLACK_WORKSPACE,
        )
        return _shell("Slack: humanwire inbox", "slack", viewer, content, flash=flash)
    rows = join(
        render(
            '<tr><td class="mono">{team}</td><td>{name}</td><td>{when}</td>'
            '<td><form method="post" action="/inbox/slack/disconnect">{csrf}'
            '<input type="hidden" name="team" value="{team}">'
            '<button type="submit" class="small danger" aria-label="Disconnect {name}">'
            "Disconnect</button></form></td></tr>",
            team=team,
            name=name,
            when=datetime.fromtimestamp(at, timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            csrf=_csrf(viewer),
        )
        for team, name, at in slack.installed
    )
    table = (
        render(
            '<div class="table-scroll"><table><thead><tr><th>Team id (from)</th>'
            "<th>Workspace</th><th>Installed</th><th></th></tr></thead>"
            "<tbody>{rows}</tbody></table></div>",
            rows=rows,
        )
        if slack.installed
        else Html('<p class="muted">No workspace of your own yet.</p>')
    )
    install = (
        # A link, not a form: the page's CSP (form-action 'self') would stop a form's
        # redirect to Slack's consent page. The GET only starts an install (its state).
        Html('<p><a class="button primary" href="/inbox/slack/install">Add to Slack</a></p>')
        if slack.oauth_enabled
        else Html(
            '<p class="small muted">Installing into your own workspace needs '
            '<span class="mono">slack.client_id</span> and '
            '<span class="mono">slack.client_secret</span> on this service.</p>'
        )
    )
    content = render(
        '<section class="panel"><h2>Slack</h2><p>Messages go out from the shared '
        'workspace <span class="mono">{shared}</span> unless you send with '
        '<span class="mono">from</span> = one of your own workspaces below.</p></section>'
        '<section class="panel"><h2>Your workspaces</h2>{table}{install}</section>',
        shared=slack.shared_team or "(not reached yet)",
        table=table,
        install=install,
    )
    return _shell("Slack: humanwire inbox", "slack", viewer, content, flash=flash)
