"""What the service does before it answers anything: startup steps.

A step runs on the serving loop once the engine has started and before the first
connection is answered (``ServiceRunner(before_serving=...)``). Connections made meanwhile
wait in the listener's queue, so whatever a step creates exists by the time ``/healthz``
or ``/readyz`` first answers: a script that waits for readiness and then calls is never
refused a key the service was started with.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ..errors import Conflict

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["StartupAccount", "StartupStep"]

StartupStep = Callable[["Engine"], Awaitable[None]]
"""Awaited with the started engine before the service answers; raising fails the start."""


class StartupAccount:
    """The account ``api_key`` opens (``humanwire serve --api-key``, a key file's, the
    embedded service's recorded one), created with ``name`` when the database has none
    for it; with no key, a new account and its new key. A startup step: the key works
    before the service answers anything. ``key`` is the key once the step ran."""

    def __init__(self, name: str, api_key: str | None = None) -> None:
        self.name = name
        self._key = api_key
        self._done = False

    @property
    def key(self) -> str:
        if not self._done or self._key is None:
            raise RuntimeError("the startup account is made when the service starts")
        return self._key

    async def __call__(self, engine: Engine) -> None:
        key = self._key
        if key is None or await engine.accounts.authenticate(key) is None:
            try:
                _account, key = await engine.accounts.create(self.name, key)
            except Conflict:
                # Replicas starting together on one database with the same key race to
                # create it: the losers use the winner's.
                if key is None or await engine.accounts.authenticate(key) is None:
                    raise
        self._key, self._done = key, True
