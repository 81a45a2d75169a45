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
    (the same rule the start-up lines print). With two telephony carriers, sms and calls
    go through a ``TelephonyRouter`` (the shared sends through the first in
    ``[telephony] order``, a number through its owner) and the numbers come from both."""
    from ..config import call_carriers, channel_routes, telephony_carriers

    routes = channel_routes(config)
    callers = call_carriers(config)
    attached: list[AttachedProvider] = []
    carriers: dict[str, Any] = {}
    agent = voice_agent(config) if callers else None
    for name in telephony_carriers(config):
        if name == "twilio":
            from .twilio import TwilioProvider

            assert config.twilio is not None
            carriers[name] = TwilioProvider(
                config.twilio,
                engine,
                public_url=config.public_url,
                agent=agent if name in callers else None,
                voice_mode=config.voice_mode,
                relay_silence=config.voice_relay_silence,
                relay_setup_timeout=config.voice_relay_setup_timeout,
            )
        else:
            from .telnyx import TelnyxProvider

            assert config.telnyx is not None
            carriers[name] = TelnyxProvider(
                config.telnyx,
                engine,
                public_url=config.public_url,
                agent=agent if name in callers else None,
                voice_mode=config.voice_mode,
                relay_silence=config.voice_relay_silence,
                relay_setup_timeout=config.voice_relay_setup_timeout,
            )
        attached.append(carriers[name])
    if carriers:
        ordered = list(carriers.values())
        if len(ordered) == 1:
            [carrier] = ordered
            engine.use_provider(carrier, [c for c in ("sms", "call") if routes[c] == carrier.name])
            engine.use_numbers(carrier.numbers)
        else:
            from .telephony import CarrierNumbers, TelephonyRouter

            engine.use_provider(TelephonyRouter(ordered, engine.store), ["sms"])
            if callers:
                calling = [carriers[name] for name in callers]
                engine.use_provider(TelephonyRouter(calling, engine.store), ["call"])
            engine.use_numbers(CarrierNumbers(ordered))
        if routes["whatsapp"] == "twilio":
            engine.use_provider(carriers["twilio"], ["whatsapp"])
    if config.slack is not None and routes["slack"] == "slack":
        from .slack import SlackProvider

        slack = SlackProvider(config.slack, engine, public_url=config.public_url)
        engine.use_provider(slack, ["slack"])
        attached.append(slack)
    if config.email is not None and routes["email"] == "email":
        from .email.provider import EmailProvider

        email = EmailProvider(config.email, engine, public_url=config.public_url)
        engine.use_provider(email, ["email"])
        attached.append(email)
    return attached
