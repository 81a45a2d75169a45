"""Parts of the service that live outside the server package, found by name.

The server imports no adapter (docs/explanation/architecture.md, "Package boundaries").
``/mcp`` is the MCP adapter's HTTP side (``humanwire.mcp.http``): the app loads it by the
name below when the ``mcp`` SDK it needs is installed, and mounts its route for the app's
lifespan. An extension is built with the service's config and engine, and offers its
route and its lifespan (``ServiceExtension``).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from .config import ServiceConfig
    from .engine import Engine

__all__ = ["EXTENSIONS", "Extension", "ServiceExtension", "load_extensions", "mcp_usable"]


class ServiceExtension(Protocol):
    """A mounted part: its route, and what runs for the app's lifespan."""

    route: BaseRoute

    def running(self) -> AbstractAsyncContextManager[None]: ...


@dataclass(frozen=True)
class Extension:
    factory: str
    """``module:callable`` taking ``(config, engine)``; imported only when ``usable()``."""
    usable: Callable[[], bool]


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


EXTENSIONS: dict[str, Extension] = {
    "mcp": Extension("humanwire.mcp.http:McpEndpoint", mcp_usable),
}


def load_extensions(config: ServiceConfig, engine: Engine) -> list[ServiceExtension]:
    """Every usable extension, built for this service."""
    built: list[ServiceExtension] = []
    for extension in EXTENSIONS.values():
        if not extension.usable():
            continue
        module, _, name = extension.factory.partition(":")
        factory = getattr(importlib.import_module(module), name)
        built.append(factory(config, engine))
    return built
