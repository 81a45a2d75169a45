"""The real providers the configuration asks for, attached to the engine.

A channel goes through a real provider when that provider is configured (sms, whatsapp
and calls: Twilio; slack: Slack), else through the sandbox (PROVIDERS.md). Each provider's
package is imported only when it is configured, so the sandbox path stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from starlette.routing import BaseRoute

if TYPE_CHECKING:
    from ..config import ServiceConfig
    from ..engine import Engine
    from ..voice import VoiceAgent

__all__ = ["AttachedProvider", "real_providers", "voice_agent"]


class AttachedProvider(Protocol):
    def routes(self) -> list[BaseRoute]: ...
    async def start(self) -> None: ...
    async def aclose(self) -> None: ...


def voice_agent(config: ServiceConfig) -> VoiceAgent | None:
    """The voice agent of real calls: on ``voice_chat_model`` (an object) or the model
    ``voice_model`` names (``init_chat_model``); None without either."""
    model: Any = getattr(config, "voice_chat_model", None)
    spec = getattr(config, "voice_model", None)
    if model is None and spec:
        from ..voice import load_chat_model

        model = load_chat_model(spec)
    if model is None:
        return None
    from ..voice import VoiceAgent

    return VoiceAgent(model)


def real_providers(config: ServiceConfig, engine: Engine) -> list[AttachedProvider]:
    attached: list[AttachedProvider] = []
    twilio = getattr(config, "twilio", None)
    if twilio is not None:
        from .twilio import TwilioProvider

        provider = TwilioProvider(
            twilio, engine, public_url=config.public_url, agent=voice_agent(config)
        )
        engine.use_provider(provider, provider.channels)
        engine.use_numbers(provider.numbers)
        attached.append(provider)
    return attached
