"""Channel providers: the interface and the built-in sandbox provider."""

from .base import (
    CallSpec,
    NumberSource,
    Outbound,
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
    "CallSpec",
    "NumberSource",
    "Outbound",
    "Provider",
    "ProviderFailure",
    "RecipientUnreachable",
    "SandboxProvider",
    "Sent",
    "WhatsAppTemplate",
    "Workspace",
    "WorkspaceInstaller",
]
