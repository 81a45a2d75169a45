"""The Slack page: the shared workspace and the account's own installed ones."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from ..config import (
    SHARED_SLACK_WORKSPACE,
)
from ..forms.html import Html, join, render
from .auth import Viewer

# A card's reply link inside a delivered text (``{base_url}/r/<token>``).
from .views import _csrf, _shell

__all__ = ["SlackWorkspaces", "render_slack_page"]

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
