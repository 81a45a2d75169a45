"""Parts of the service that live outside the server package, declared as entry points.

The server imports no adapter (docs/explanation/architecture.md, "Package boundaries").
An extension is an entry point of the group ``humanwire.extensions`` (``pyproject.toml``):
a callable built with the service's config and engine, offering its route and its
lifespan (``ServiceExtension``). ``/mcp`` is the MCP adapter's HTTP side (``mcp``:
``humanwire.mcp.http:McpEndpoint``), loaded only when the ``mcp`` SDK it needs is
installed (``REQUIREMENTS``), and mounted for the app's lifespan.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from ..config import ServiceConfig
    from ..engine import Engine

__all__ = [
    "ENTRY_POINT_GROUP",
    "REQUIREMENTS",
    "ServiceExtension",
    "extension_entry_points",
    "load_extensions",
    "mcp_usable",
]

ENTRY_POINT_GROUP = "humanwire.extensions"


class ServiceExtension(Protocol):
    """A mounted part: its route, and what runs for the app's lifespan."""

    route: BaseRoute

    def running(self) -> AbstractAsyncContextManager[None]: ...


MCP_MINIMUM = (2, 3)
"""The MCP SDK release ``humanwire.mcp`` is written for (the ``mcp`` extra's floor)."""


def mcp_usable() -> bool:
    """Whether an ``mcp`` that ``humanwire.mcp`` can use is installed, without importing
    it. An older one (CrewAI pins ``mcp<2``) leaves ``/mcp`` off instead of stopping the
    service from starting."""
    if importlib.util.find_spec("mcp") is None:
        return False
    try:
        version = importlib.metadata.version("mcp")
    except importlib.metadata.PackageNotFoundError:
        return False
    found = re.match(r"(\d+)\.(\d+)", version)
    return found is not None and (int(found[1]), int(found[2])) >= MCP_MINIMUM


REQUIREMENTS: dict[str, Callable[[], bool]] = {
    "mcp": mcp_usable,
}
"""What an extension needs installed, checked before it is imported; one not named here
is always loaded."""


def extension_entry_points() -> list[importlib.metadata.EntryPoint]:
    """The declared extensions, by name."""
    found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    return sorted(found, key=lambda point: point.name)


def load_extensions(config: ServiceConfig, engine: Engine) -> list[ServiceExtension]:
    """Every usable extension, built for this service."""
    built: list[ServiceExtension] = []
    for point in extension_entry_points():
        usable = REQUIREMENTS.get(point.name)
        if usable is not None and not usable():
            continue
        built.append(point.load()(config, engine))
    return built
