"""How the client finds the embedded service: a starter, declared as an entry point.

The client imports nothing of the server (docs/explanation/architecture.md, "Package
boundaries"). When neither ``base_url`` nor ``HUMANWIRE_BASE_URL`` is given it calls the
starter registered here. By default that is the entry point ``default`` of the group
``humanwire.embedded`` (``pyproject.toml``: ``humanwire.server.runtime.embedded:
ensure_embedded_service``), loaded the first time it is needed (so ``import humanwire``
never loads the server); ``register_embedded_service`` puts another in its place: an
application's own service, or a test's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = [
    "ENTRY_POINT_GROUP",
    "ENTRY_POINT_NAME",
    "EmbeddedEndpoint",
    "default_entry_point",
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

ENTRY_POINT_GROUP = "humanwire.embedded"
ENTRY_POINT_NAME = "default"
"""The entry point of the starter used when none is registered (``pyproject.toml``)."""

_lock = threading.Lock()
_starter: Starter | None = None
_default: EntryPoint | None = None


def register_embedded_service(starter: Starter | None) -> None:
    """Makes ``starter`` the one clients call for the embedded service (``None``: back to
    the declared default). It must be thread-safe and return the same service each time."""
    global _starter
    with _lock:
        _starter = starter


def embedded_service() -> EmbeddedEndpoint:
    """The embedded service's address and key, from the registered starter."""
    with _lock:
        starter = _starter
    if starter is None:
        starter = default_entry_point().load()
    return starter()


def default_entry_point() -> EntryPoint:
    """The declared default starter (found once: reading the installed distributions'
    entry points costs milliseconds)."""
    global _default
    if _default is None:
        from importlib.metadata import entry_points

        found = entry_points(group=ENTRY_POINT_GROUP, name=ENTRY_POINT_NAME)
        if not found:
            raise RuntimeError(
                f"no {ENTRY_POINT_GROUP} entry point {ENTRY_POINT_NAME!r}: humanwire's "
                "metadata is missing or older than its code; reinstall it "
                "(pip install humanwire, or pip install -e . in a checkout)"
            )
        _default = next(iter(found))
    return _default
