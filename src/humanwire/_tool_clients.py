"""The async clients of the agent framework adapters' tools and hosts, one per event loop
(framework-neutral: every adapter's tools hold one, through ``humanwire._tool_kinds``)."""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from ._client import AsyncHumanWire, HumanWire
    from .approval import Approver

__all__ = ["ToolClients"]


def _is_async_client(client: object) -> bool:
    from ._client import AsyncHumanWire

    return isinstance(client, AsyncHumanWire)


class ToolClients:
    """The clients of a tool: the async client given, else one made for each event loop
    from the sync client given (same service and account), else from the environment.

    Per event loop because an async HTTP client belongs to the loop it was first used on,
    and a framework's sync entry point may run each call on a loop of its own.
    """

    def __init__(
        self,
        client: HumanWire | AsyncHumanWire | None = None,
        async_client: AsyncHumanWire | None = None,
    ) -> None:
        if client is not None and _is_async_client(client):
            async_client = async_client or cast("AsyncHumanWire", client)
            client = None
        self.client: HumanWire | None = cast("HumanWire | None", client)
        self.async_client: AsyncHumanWire | None = async_client
        self._made: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncHumanWire] = (
            weakref.WeakKeyDictionary()
        )

    @classmethod
    def of(cls, approver: Approver) -> ToolClients:
        """The clients an approver was given (``Approver`` keeps one per kind), per loop."""
        return cls(getattr(approver, "_client", None), getattr(approver, "_async_client", None))

    @property
    def configured(self) -> HumanWire | AsyncHumanWire | None:
        """Whichever client was given, to ask it about its service before any request."""
        return self.client or self.async_client

    async def get(self) -> AsyncHumanWire:
        if self.async_client is not None:
            return self.async_client
        loop = asyncio.get_running_loop()
        made = self._made.get(loop)
        if made is None:
            if self.client is not None:
                made = self.client.to_async()
            else:
                from ._client import AsyncHumanWire

                # Building it may start the embedded service: off the event loop.
                made = await asyncio.to_thread(AsyncHumanWire)
            made = self._made.setdefault(loop, made)
        return made
