"""Slack: the shared workspace's bot, accounts' own workspaces (OAuth v2), thread replies
and approval buttons. Needs ``humanwire[slack]``."""

from .installs import Installation, InstallRefused, SlackInstalls
from .provider import BOT_SCOPES, ROUTE_PREFIX, SlackProvider, message_ref

__all__ = [
    "BOT_SCOPES",
    "ROUTE_PREFIX",
    "InstallRefused",
    "Installation",
    "SlackInstalls",
    "SlackProvider",
    "message_ref",
]
