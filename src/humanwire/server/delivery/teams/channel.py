"""The teams channel's registration (``delivery.channels.ChatChannel``): light, so
listing it loads neither httpx's client nor PyJWT."""

from __future__ import annotations

from typing import Any

from humanwire.types import TeamsFormRequest, TeamsMessageRequest

from ..channels import ChatChannel

__all__ = ["SANDBOX_BOT", "TEAMS"]

SANDBOX_BOT = "28:00000000-0000-4000-8000-000000000001"
"""The sandbox's fictional bot (``28:<app id>``, as Teams names a bot)."""


def _configured(config: Any) -> bool:
    return getattr(config, "teams", None) is not None


def _describe(config: Any) -> str:
    teams = config.teams
    details = [
        f"app {teams.app_id}",
        f"tenant {teams.tenant_id}" if teams.tenant_id else "multi-tenant",
        "messages /providers/teams/messages",
    ]
    if teams.token_url is not None:
        details.append(f"tokens {teams.token_url}")
    return "; ".join(details)


TEAMS = ChatChannel(
    name="teams",
    title="Microsoft Teams",
    message_request=TeamsMessageRequest,
    operation_id="sendTeams",
    form_request=TeamsFormRequest,
    form_operation_id="sendTeamsForm",
    summary="Message a human over Microsoft Teams",
    description=(
        "Sends a message from the operator's bot in the person's personal chat with it "
        "(the app installed for them: a bot cannot write first); the next message they "
        "write there is the answer."
    ),
    sandbox_sender=SANDBOX_BOT,
    configured=_configured,
    describe=_describe,
    button_via="teams_button",
)
"""The teams channel: a Microsoft Teams bot on the Bot Framework Connector (httpx; the
``teams`` extra for PyJWT), answered through the service's own messaging endpoint."""
