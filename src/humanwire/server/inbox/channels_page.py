"""The channel cards page: the account's cards, and the form that creates one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from humanwire.types import (
    ChannelCard,
    format_seconds,
)

from ..config import (
    DEFAULT_HUMAN_PHONE,
)
from ..forms.html import Html, attrs, join, render
from .auth import Viewer

# A card's reply link inside a delivered text (``{base_url}/r/<token>``).
from .views import CHANNEL_LABELS, _chip, _csrf, _shell

__all__ = ["render_channels_page"]

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
