"""The inbox page: what the account's agents sent, as each recipient sees it, with the
human's side of every interaction (reply, open a form, answer a call), the windows and
statuses, webhook deliveries and reserved numbers."""

from __future__ import annotations

from datetime import datetime

from humanwire.types import (
    InteractionStatus,
    SandboxDelivery,
)

from ..config import (
    DEFAULT_HUMAN_DISCORD,
    DEFAULT_HUMAN_EMAIL,
    DEFAULT_HUMAN_PHONE,
    DEFAULT_HUMAN_SLACK,
    DEFAULT_HUMAN_TEAMS,
    DEFAULT_HUMAN_TELEGRAM,
    SHARED_SLACK_WORKSPACE,
)
from ..delivery.chat import CHAT_CHANNELS
from ..forms.html import Html, attrs, join, render
from .approvals import render_approvals_panel
from .auth import Viewer

# A card's reply link inside a delivered text (``{base_url}/r/<token>``).
from .views import _REPLY_LINK, CHANNEL_LABELS, InboxData, Windows, _chip, _csrf, _shell, _time

__all__ = ["render_inbox_page"]

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
    # A slack reply goes in the message's thread, an email reply answers that email, a
    # chat app's is a reply to that message (Telegram's swipe-reply).
    thread = delivery.channel in ("slack", "email", *CHAT_CHANNELS)
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
        for v in ("sms", "whatsapp", "slack", "email", *CHAT_CHANNELS)
        if v not in data.live
    )
    text_form = (
        render(
            '<form method="post" action="/inbox/text" class="stack" data-action="text">{csrf}'
            '<div class="row"><div class="block"><label for="text-channel">Channel</label>'
            '<select id="text-channel" name="channel" data-human-phone="{human}" '
            'data-human-slack="{slack}" data-human-email="{email}" '
            'data-human-telegram="{telegram}" data-human-teams="{teams}" '
            'data-human-discord="{discord}">{options}</select></div>'
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
            telegram=DEFAULT_HUMAN_TELEGRAM,
            teams=DEFAULT_HUMAN_TEAMS,
            discord=DEFAULT_HUMAN_DISCORD,
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
        '<span class="mono">{workspace}</span>; email <span class="mono">{email}</span>; '
        'telegram chat <span class="mono">{telegram}</span>; teams user '
        '<span class="mono">{teams}</span>; discord user <span class="mono">{discord}</span>).'
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
        telegram=DEFAULT_HUMAN_TELEGRAM,
        teams=DEFAULT_HUMAN_TEAMS,
        discord=DEFAULT_HUMAN_DISCORD,
        act=_act_panel(data, viewer) if data.sandbox else Html(""),
        unsolicited=_unsolicited(data),
        interactions=_interactions_table(data),
        webhooks=_webhook_table(data),
    )
    return _shell("humanwire inbox", "inbox", viewer, content, flash=flash, live=True)
