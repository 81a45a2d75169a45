"""The inbox pages' shared parts: what a page shows (the records the routes gather), the shell
every page is drawn in, and the login and problem pages. Rendering only: the routes in
``routes.py`` gather the data and run the actions; the pages are ``inbox_page``,
``channels_page`` and ``slack_page``."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone

from humanwire.types import (
    InteractionStatus,
    ReservedNumber,
    SandboxDelivery,
)

from ..delivery.chat import CHAT_CHANNELS
from ..engine.approval_access import InboxApproval
from ..forms.html import Html, attrs, document, join, render
from .auth import CSRF_FIELD, Viewer

# A card's reply link inside a delivered text (``{base_url}/r/<token>``).

__all__ = [
    "CHANNEL_LABELS",
    "Conversation",
    "InboundMessage",
    "InboxData",
    "Windows",
    "conversations_of",
    "render_login_page",
    "render_problem_page",
    "render_suspended_page",
]

_REPLY_LINK = re.compile(r"https?://[^\s/]+/r/[A-Za-z0-9_-]{20,}")

CHANNEL_LABELS = {
    "sms": "SMS",
    "whatsapp": "WhatsApp",
    "slack": "Slack",
    "email": "Email",
    "call": "Call",
    **{channel.name: channel.title for channel in CHAT_CHANNELS.values()},
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
    (``Sandbox.answers``): no forms for them."""
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


def conversations_of(deliveries: Iterable[SandboxDelivery]) -> list[Conversation]:
    counts: dict[tuple[str, str], int] = {}
    for d in deliveries:
        counts[(d.channel, d.to)] = counts.get((d.channel, d.to), 0) + 1
    return [Conversation(c, r, n) for (c, r), n in counts.items()]
