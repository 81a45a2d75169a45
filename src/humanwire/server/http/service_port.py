"""``ServiceProviderPort``: the providers' inbound port as the app builds it: the
engine's (``engine.provider_port.EngineProviderPort``) with the people directory's
start-link binding (``InboundPort.bind_chat``) beside it.

Kept here, outside the engine's modules, while those are being merged; it belongs in
``EngineProviderPort`` once they are (one method, no other change)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engine.provider_port import EngineProviderPort

if TYPE_CHECKING:
    from ..delivery.port import ChatBinding
    from ..engine import Engine

__all__ = ["ServiceProviderPort"]


class ServiceProviderPort(EngineProviderPort):
    """``InboundPort`` over ``engine`` (``EngineProviderPort``, and ``bind_chat``)."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self._people = engine.people

    async def bind_chat(self, channel: str, token: str, chat: str) -> ChatBinding:
        return await self._people.bind_chat(channel, token, chat)
