"""Channel providers: the interface and the built-in sandbox provider."""

from .base import (
    AccountSenders,
    BotRegistry,
    CallSpec,
    NumberSource,
    Outbound,
    OwnBot,
    Provider,
    ProviderFailure,
    RecipientUnreachable,
    Sent,
    WhatsAppTemplate,
    Workspace,
    WorkspaceInstaller,
)
from .sandbox import SandboxProvider

__all__ = [
    "AccountSenders",
    "BotRegistry",
    "CallSpec",
    "NumberSource",
    "Outbound",
    "OwnBot",
    "Provider",
    "ProviderFailure",
    "RecipientUnreachable",
    "SandboxProvider",
    "Sent",
    "WhatsAppTemplate",
    "Workspace",
    "WorkspaceInstaller",
]
