"""What a module of console pages is given: its handlers' shape and the guards that put a
signed-in person in front of them (``ConsolePages`` in ``routes.py`` is the one built)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from starlette.requests import Request
from starlette.responses import Response

from .auth import Signed

if TYPE_CHECKING:
    from ..config import ServiceConfig
    from ..engine import Engine

__all__ = ["Endpoint", "Guard", "Guards", "Handler"]

Handler = Callable[[Request, Signed], Awaitable[Response]]
"""A page or action of a signed-in person."""
Endpoint = Callable[[Request], Awaitable[Response]]
Guard = Callable[[Handler], Endpoint]


class Guards(Protocol):
    engine: Engine
    config: ServiceConfig

    def page(self, handler: Handler) -> Endpoint:
        """A GET page: anyone not signed in goes to the sign-in page."""
        ...

    def action(self, handler: Handler) -> Endpoint:
        """A POST, with the CSRF token checked."""
        ...
