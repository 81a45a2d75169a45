"""How the client finds the embedded service: a starter, registered by name.

The client imports nothing of the server (docs/explanation/architecture.md, "Package
boundaries"). When neither ``base_url`` nor ``HUMANWIRE_BASE_URL`` is given it calls the
starter registered here. By default that is ``ensure_embedded_service`` of
``humanwire.server.embedded``, loaded by its name the first time it is needed (so
``import humanwire`` never loads the server); ``register_embedded_service`` puts another in
its place: an application's own service, or a test's.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Protocol

__all__ = [
    "DEFAULT_STARTER",
    "EmbeddedEndpoint",
    "embedded_service",
    "register_embedded_service",
]


class EmbeddedEndpoint(Protocol):
    """Where the embedded service answers, and the key of its account."""

    @property
    def base_url(self) -> str: ...

    @property
    def api_key(self) -> str: ...


Starter = Callable[[], EmbeddedEndpoint]

DEFAULT_STARTER = "humanwire.server.embedded:ensure_embedded_service"
"""``module:function`` of the starter used when none is registered."""

_lock = threading.Lock()
_starter: Starter | None = None


def register_embedded_service(starter: Starter | None) -> None:
    """Makes ``starter`` the one clients call for the embedded service (``None``: back to
    ``DEFAULT_STARTER``). It must be thread-safe and return the same service each time."""
    global _starter
    with _lock:
        _starter = starter


def embedded_service() -> EmbeddedEndpoint:
    """The embedded service's address and key, from the registered starter."""
    with _lock:
        starter = _starter
    if starter is None:
        module, _, name = DEFAULT_STARTER.partition(":")
        starter = getattr(importlib.import_module(module), name)
    return starter()
