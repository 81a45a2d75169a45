"""The real providers the configuration asks for, and the channels each takes over.

A channel goes through a real provider when that provider is configured, else through
the sandbox: ``config.channel_routes`` is the rule. Each provider's package is imported
only when it is configured, so the sandbox path stays light. The providers are built
with the inbound port (``delivery.port``), never the engine; what they carry is handed
back as a ``ProviderWiring``, which the app registers with the engine
(``Engine.use_providers``).

A provider that brings one channel of its own (Slack, email, Telegram, Discord; Meta's
WhatsApp, a second provider of whatsapp) is a builder in ``CHANNEL_PROVIDERS``: it
declares the channels it carries (``channels``) and the provider routes it brings
(``routes()``), and nothing of the engine changes for it here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from starlette.routing import BaseRoute

from .base import Provider
from .discord.channel import DISCORD
from .teams.channel import TEAMS
from .telegram.channel import TELEGRAM

if TYPE_CHECKING:
    from ..config import ServiceConfig
    from ..voice import VoiceAgent
    from .base import Credentials, NumberSource
    from .port import InboundPort

__all__ = [
    "CHANNEL_PROVIDERS",
    "AttachedProvider",
    "ChannelProvider",
    "ProviderWiring",
    "real_providers",
    "voice_agent",
]


class AttachedProvider(Protocol):
    """A real provider the app starts, stops, mounts the routes of and reports on."""

    name: str
    credentials: Credentials
    """Set by ``start()``; ``/readyz`` reports it."""

    def routes(self) -> list[BaseRoute]: ...
    async def start(self) -> None: ...
    async def aclose(self) -> None: ...


class ChannelProvider(AttachedProvider, Provider, Protocol):
    """A provider bringing channels of its own: it says which."""

    @property
    def channels(self) -> Sequence[str]: ...


ChannelProviderBuilder = Callable[["ServiceConfig", "InboundPort"], "ChannelProvider | None"]
"""Builds a provider when the configuration routes its channel to it (None otherwise)."""


@dataclass
class ProviderWiring:
    """What ``real_providers`` built: the providers to start, stop, mount and report
    (``attached``), which provider carries each channel (``channels``; the others stay
    on the sandbox) and where reserved numbers come from (``numbers``; None: the
    sandbox's pool). The app registers it with the engine (a
    ``port.ProviderRegistration``)."""

    attached: list[AttachedProvider] = field(default_factory=list)
    channels: dict[str, Provider] = field(default_factory=dict)
    numbers: NumberSource | None = None


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


def _slack(config: ServiceConfig, port: InboundPort) -> ChannelProvider | None:
    from ..config import channel_routes

    if config.slack is None or channel_routes(config)["slack"] != "slack":
        return None
    from .slack import SlackProvider

    return SlackProvider(config.slack, port, public_url=config.public_url)


def _email(config: ServiceConfig, port: InboundPort) -> ChannelProvider | None:
    from ..config import channel_routes

    if config.email is None or channel_routes(config)["email"] != "email":
        return None
    from .email.provider import EmailProvider

    return EmailProvider(config.email, port, public_url=config.public_url)


def _telegram(config: ServiceConfig, port: InboundPort) -> ChannelProvider | None:
    if not TELEGRAM.configured(config):
        return None
    from .telegram.provider import TelegramProvider

    assert config.telegram is not None
    return TelegramProvider(config.telegram, port, public_url=config.public_url)


def _discord(config: ServiceConfig, port: InboundPort) -> ChannelProvider | None:
    if not DISCORD.configured(config):
        return None
    from .discord.provider import DiscordProvider

    assert config.discord is not None
    return DiscordProvider(config.discord, port, public_url=config.public_url)


def _whatsapp_meta(config: ServiceConfig, port: InboundPort) -> ChannelProvider | None:
    from ..config import channel_routes

    if config.whatsapp_meta is None or channel_routes(config)["whatsapp"] != "meta":
        return None
    from .meta import MetaWhatsAppProvider

    return MetaWhatsAppProvider(config.whatsapp_meta, port, public_url=config.public_url)


def _teams(config: ServiceConfig, port: InboundPort) -> ChannelProvider | None:
    if not TEAMS.configured(config):
        return None
    from .teams.provider import TeamsProvider

    assert config.teams is not None
    return TeamsProvider(config.teams, port, public_url=config.public_url)


CHANNEL_PROVIDERS: tuple[ChannelProviderBuilder, ...] = (
    _slack,
    _email,
    _telegram,
    _discord,
    _whatsapp_meta,
    _teams,
)
"""The providers that bring a channel of their own, in start-up order (a chat channel's
registration, ``delivery/chat.py``, says when the configuration has it)."""


def real_providers(config: ServiceConfig, port: InboundPort) -> ProviderWiring:
    """Builds each configured provider on ``port`` and gives it the channels
    ``channel_routes`` gives it (the same rule the start-up lines print). With two
    telephony carriers, sms and calls go through a ``TelephonyRouter`` (the shared sends
    through the first in ``[telephony] order``, a number through its owner) and the
    numbers come from both."""
    from ..config import call_carriers, channel_routes, telephony_carriers

    routes = channel_routes(config)
    callers = call_carriers(config)
    wiring = ProviderWiring()
    carriers: dict[str, Any] = {}
    agent = voice_agent(config) if callers else None
    for name in telephony_carriers(config):
        if name == "twilio":
            from .twilio import TwilioProvider

            assert config.twilio is not None
            carriers[name] = TwilioProvider(
                config.twilio,
                port,
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
                port,
                public_url=config.public_url,
                agent=agent if name in callers else None,
                voice_mode=config.voice_mode,
                relay_silence=config.voice_relay_silence,
                relay_setup_timeout=config.voice_relay_setup_timeout,
            )
        wiring.attached.append(carriers[name])
    if carriers:
        ordered = list(carriers.values())
        if len(ordered) == 1:
            [carrier] = ordered
            for channel in ("sms", "call"):
                if routes[channel] == carrier.name:
                    wiring.channels[channel] = carrier
            wiring.numbers = carrier.numbers
        else:
            from .telephony import CarrierNumbers, TelephonyRouter

            wiring.channels["sms"] = TelephonyRouter(ordered, port.number_seller)
            if callers:
                calling = [carriers[name] for name in callers]
                wiring.channels["call"] = TelephonyRouter(calling, port.number_seller)
            wiring.numbers = CarrierNumbers(ordered)
        if routes["whatsapp"] == "twilio":
            wiring.channels["whatsapp"] = carriers["twilio"]
    for build in CHANNEL_PROVIDERS:
        provider = build(config, port)
        if provider is not None:
            wiring.channels.update(dict.fromkeys(provider.channels, provider))
            wiring.attached.append(provider)
    return wiring
