"""The real providers the configuration asks for, attached to the engine.

A channel goes through a real provider when that provider is configured, else through
the sandbox: ``config.channel_routes`` is the rule. Each provider's package is imported
only when it is configured, so the sandbox path stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from starlette.routing import BaseRoute

if TYPE_CHECKING:
    from ..config import ServiceConfig
    from ..engine import Engine
    from ..voice import VoiceAgent
    from .base import Credentials

__all__ = ["AttachedProvider", "real_providers", "voice_agent"]


class AttachedProvider(Protocol):
    name: str
    credentials: Credentials
    """Set by ``start()``; ``/readyz`` reports it."""

    def routes(self) -> list[BaseRoute]: ...
    async def start(self) -> None: ...
    async def aclose(self) -> None: ...


def voice_agent(config: ServiceConfig) -> VoiceAgent | None:
    """The voice agent of real calls: on ``voice_chat_model`` (an object) or the model
    ``voice_model`` names (``init_chat_model``); None without either."""
    model: Any = config.voice_chat_model
    if model is None and config.voice_model:
        from ..voice import load_chat_model

        model = load_chat_model(config.voice_model)
    if model is None:
        return None
    from ..voice import VoiceAgent

    return VoiceAgent(model)


def real_providers(config: ServiceConfig, engine: Engine) -> list[AttachedProvider]:
    """Attaches each configured provider to the channels ``channel_routes`` gives it
    (the same rule the start-up lines print)."""
    from ..config import channel_routes

    routes = channel_routes(config)
    attached: list[AttachedProvider] = []
    if config.twilio is not None:
        from .twilio import TwilioProvider

        channels = [channel for channel, route in routes.items() if route == "twilio"]
        agent = voice_agent(config) if "call" in channels else None
        provider = TwilioProvider(config.twilio, engine, public_url=config.public_url, agent=agent)
        engine.use_provider(provider, channels)
        engine.use_numbers(provider.numbers)
        attached.append(provider)
    if config.slack is not None and routes["slack"] == "slack":
        from .slack import SlackProvider

        slack = SlackProvider(config.slack, engine, public_url=config.public_url)
        engine.use_provider(slack, ["slack"])
        attached.append(slack)
    return attached
