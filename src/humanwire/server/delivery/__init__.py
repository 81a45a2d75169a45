"""Channel providers: the interface and the built-in sandbox provider."""

from .base import Outbound, Provider
from .sandbox import SandboxProvider

__all__ = ["Outbound", "Provider", "SandboxProvider"]
