"""Every tunable of the service in one place, so tests can make windows and retries fast."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

# The sandbox's default human is the client's too (approval.default_recipient): defined
# with the wire types, re-exported here.
from humanwire.types.sandbox import DEFAULT_HUMAN_DISCORD as DEFAULT_HUMAN_DISCORD
from humanwire.types.sandbox import DEFAULT_HUMAN_EMAIL as DEFAULT_HUMAN_EMAIL
from humanwire.types.sandbox import DEFAULT_HUMAN_PHONE as DEFAULT_HUMAN_PHONE
from humanwire.types.sandbox import DEFAULT_HUMAN_SLACK as DEFAULT_HUMAN_SLACK
from humanwire.types.sandbox import DEFAULT_HUMAN_TEAMS as DEFAULT_HUMAN_TEAMS
from humanwire.types.sandbox import DEFAULT_HUMAN_TELEGRAM as DEFAULT_HUMAN_TELEGRAM

SHARED_SMS_NUMBER = "+12025550199"
"""The shared number texts come from when the account has no reserved number."""
SHARED_WHATSAPP_NUMBER = "+12025550198"
SHARED_SLACK_WORKSPACE = "T0SHARED01"
SHARED_EMAIL_ADDRESS = "agent@sandbox.humanwire.invalid"
"""The sender of email on the sandbox (no ``[email]``): nothing leaves the service."""


@dataclass(frozen=True)
class TwilioConfig:
    """Twilio credentials and senders (docs/providers.md "Configuration")."""

    account_sid: str
    auth_token: str = field(repr=False)
    api_base: str = "https://api.twilio.com"
    sms_from: str | None = None
    """The shared SMS number (E.164); calls go out from it too."""
    whatsapp_from: str | None = None
    """The shared WhatsApp sender (E.164, without ``whatsapp:``)."""
    whatsapp_templates: Mapping[str, str] = field(default_factory=dict)
    """``notification``, ``request``, ``form`` → Content template SID (``HX…``)."""
    numbers: tuple[str, ...] = ()
    """The pool of the operator's numbers that accounts may reserve."""
    buy_numbers: bool = False


@dataclass(frozen=True)
class TelnyxConfig:
    """Telnyx credentials and senders (docs/providers.md "Telnyx")."""

    api_key: str = field(repr=False)
    public_key: str
    """The account's Ed25519 webhook key (base64): every callback is verified with it."""
    api_base: str = "https://api.telnyx.com/v2"
    sms_from: str | None = None
    """The shared number texts and calls come from (E.164), when Telnyx carries them."""
    messaging_profile_id: str | None = None
    """The messaging profile numbers are attached to (inbound texts reach its webhook)."""
    connection_id: str | None = None
    """The TeXML application calls run on; without it calls never go through Telnyx."""
    account_sid: str | None = None
    """The TeXML REST API's account id (calls are placed and hung up under it)."""
    numbers: tuple[str, ...] = ()
    """The pool of the operator's Telnyx numbers that accounts may reserve."""
    buy_numbers: bool = False


TELEPHONY_PROVIDERS = ("twilio", "telnyx")


@dataclass(frozen=True)
class SlackConfig:
    bot_token: str = field(repr=False)
    signing_secret: str = field(repr=False)
    api_base: str = "https://slack.com/api"
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class TelegramConfig:
    """The shared bot (docs/going-live/telegram.md): its token from @BotFather and the
    secret Telegram echoes in ``X-Telegram-Bot-Api-Secret-Token`` on every update."""

    bot_token: str = field(repr=False)
    webhook_secret: str = field(repr=False)
    api_base: str = "https://api.telegram.org"
    """The Bot API's root (methods are ``{api_base}/bot{token}/{method}``)."""


@dataclass(frozen=True)
class DiscordConfig:
    """The Discord application (docs/going-live/discord.md): its bot's token, its id, and
    the public key that verifies the interactions Discord signs (Ed25519, hex)."""

    bot_token: str = field(repr=False)
    application_id: str
    public_key: str
    api_base: str = "https://discord.com/api/v10"
    """The REST API's root (discord.py's ``Route.BASE``: one per process)."""


@dataclass(frozen=True)
class MetaWhatsAppConfig:
    """WhatsApp through Meta's Cloud API (``[whatsapp] provider = "meta"``,
    docs/going-live/whatsapp-meta.md): the business phone number's id and its number, the
    access token sends go out with, the app secret webhooks are signed with
    (``X-Hub-Signature-256``), and the token of the subscription handshake."""

    phone_number_id: str
    sender: str
    """The business number (E.164): the shared WhatsApp sender replies reach."""
    access_token: str = field(repr=False)
    app_secret: str = field(repr=False)
    verify_token: str = field(repr=False)
    api_base: str = "https://graph.facebook.com"
    api_version: str = "v23.0"
    templates: Mapping[str, str] = field(default_factory=dict)
    """``notification``, ``request``, ``form`` → an approved template's name (one body
    variable, ``{{1}}``), sent outside the 24-hour window."""
    template_language: str = "en_US"


@dataclass(frozen=True)
class TeamsConfig:
    """The Microsoft Teams bot (docs/going-live/teams.md): its Microsoft App ID and its
    credential, a client secret or a certificate (the Azure Bot resource's app
    registration), and its tenant when single-tenant. The service asks Microsoft's token
    endpoint for the bot's tokens (client credentials: the secret, or a client assertion
    signed with the certificate's key) and checks every inbound activity's bearer JWT
    against the Bot Framework's key set."""

    app_id: str
    app_password: str | None = field(default=None, repr=False)
    """A client secret; None when the bot uses a certificate."""
    certificate: str | None = None
    """The certificate uploaded to the app registration (PEM text), in place of a secret."""
    private_key: str | None = field(default=None, repr=False)
    """The certificate's RSA private key (PEM text, unencrypted)."""
    tenant_id: str | None = None
    """A single-tenant bot's tenant: its tokens come from that tenant's endpoint, and
    activities from other tenants are refused. None: a multi-tenant bot."""
    token_url: str | None = None
    """The token endpoint; None: ``https://login.microsoftonline.com/<tenant or
    botframework.com>/oauth2/v2.0/token``."""
    jwks_url: str = "https://login.botframework.com/v1/.well-known/keys"
    """The Bot Framework's key set, which signs every activity's token."""

    @property
    def token_endpoint(self) -> str:
        tenant = self.tenant_id or "botframework.com"
        return self.token_url or f"https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token"


@dataclass(frozen=True)
class EmailConfig:
    """Email out through an SMTP relay and in through the service's own listener
    (docs/going-live/email.md)."""

    smtp_host: str
    from_addr: str
    """The sender: ``agent@example.com`` or ``Acme Agent <agent@example.com>``."""
    reply_domain: str
    """Replies go to ``reply+<token>@<reply_domain>``, whose MX points at the listener."""
    smtp_port: int = 587
    smtp_username: str | None = None
    smtp_password: str | None = field(default=None, repr=False)
    starttls: bool = True
    """Upgrade the relay connection with STARTTLS (port 587); off for a loopback relay."""
    use_tls: bool = False
    """Implicit TLS from the first byte (port 465)."""
    timeout: float = 30.0
    """Seconds the relay has for each step of one send."""
    inbound_host: str = "127.0.0.1"
    inbound_port: int = 2525
    max_message_bytes: int = 10 << 20
    """The largest message the listener takes (SIZE is announced; past it: 552)."""
    max_recipients: int = 20
    """Recipients one incoming message may name; past it: 452 at RCPT."""
    idle_timeout: float = 60.0
    """Seconds a connected sender may stay silent before the listener closes it."""
    session_timeout: float = 600.0
    """Seconds one connection may last in all (a sender trickling bytes is cut off)."""
    max_connections: int = 100
    """Connections the listener holds at once; past it a new one gets 421 and is closed."""
    inbound_tls_cert: str | None = None
    """PEM certificate chain the listener offers STARTTLS with (with ``inbound_tls_key``)."""
    require_dkim: bool = False
    """A reply answers only when a DKIM signature of it verifies for the asked address's
    domain (as an approver's reply must); else its ``From`` being the asked address does."""
    inbound_tls_key: str | None = None


AddressProvider = Literal["structural", "google", "smarty", "nominatim"]
OnUnavailable = Literal["accept", "refuse"]


@dataclass(frozen=True)
class AddressConfig:
    """How ``address`` form fields are checked (docs/guides/checking-addresses.md)."""

    provider: AddressProvider = "structural"
    api_key: str | None = field(default=None, repr=False)
    """Google: the Maps Platform API key."""
    auth_id: str | None = None
    """Smarty: the secret key's ID."""
    auth_token: str | None = field(default=None, repr=False)
    """Smarty: the secret key's token."""
    url: str | None = None
    """Nominatim: the self-hosted server (``…/api`` for Photon)."""
    api_base: str | None = None
    """Google or Smarty: another address than the provider's own (tests: the fake)."""
    region: str | None = None
    """ISO 3166-1 alpha-2 country assumed when an address names none."""
    timeout: float = 5.0
    """Seconds a provider has to answer one check; past it the address is unchecked."""
    on_unavailable: OnUnavailable = "refuse"
    """An address the provider could not check: accepted as typed, or refused."""
    cache_size: int = 1024
    """Checks remembered (an answer posted twice, re-checked by the engine: one call)."""
    cache_ttl: float = 600.0
    unchecked_ttl: float = 5.0
    """An unchecked answer is remembered this long only (one post: one timeout)."""


@dataclass
class ServiceConfig:
    db_path: str = ":memory:"
    """SQLite file, or ``:memory:`` for tests."""
    public_url: str = "http://127.0.0.1:8765"
    """Base address as seen by clients and browsers: form links are built from it."""
    local_mode: bool = True
    """Loopback webhook targets allowed (the default when serving on loopback)."""
    sandbox_enabled: bool = True
    sandbox_live_channels: bool = False
    """Whether the sandbox API and the inbox's human side may answer channels a real
    provider carries (anyone with an account's key then answers as its recipients there);
    off, such an answer is ``403 live_channel``."""

    webhook_timeout: float = 10.0
    webhook_retry_base: float = 1.0
    """First retry delay; doubles each try."""
    webhook_max_attempts: int = 8
    webhook_concurrency: int = 32
    """Deliveries in flight at once; the rest wait in the outbox."""

    rate_limit_requests: int = 600
    rate_limit_window: float = 60.0
    spam_recipients: int = 25
    """The same text to this many distinct recipients inside ``spam_window`` suspends."""
    spam_window: float = 600.0

    max_body_bytes: int = 1 << 20
    idempotency_ttl: float = 24 * 3600.0
    phone_call_limit: float = 300.0
    call_wait_limit: float = 3600.0
    """``POST /calls`` with ``waitForCallEnd``: the generous cap on holding for the end;
    past it the call is returned ``pending`` (it goes on; poll or await the webhook)."""
    max_status_wait: float = 60.0
    twilio: TwilioConfig | None = None
    telnyx: TelnyxConfig | None = None
    telephony_order: tuple[str, ...] = TELEPHONY_PROVIDERS
    """With both carriers configured: the first carries the shared sends (sms, calls);
    a number another one owns still goes out through its owner."""
    slack: SlackConfig | None = None
    telegram: TelegramConfig | None = None
    discord: DiscordConfig | None = None
    whatsapp_meta: MetaWhatsAppConfig | None = None
    """WhatsApp through Meta's Cloud API; set, it carries whatsapp in Twilio's place."""
    teams: TeamsConfig | None = None
    email: EmailConfig | None = None
    """Email: the relay out and the listener in; None keeps email off."""
    voice_model: str | None = None
    """The voice agent's chat model, as ``init_chat_model`` takes it."""
    voice_chat_model: Any = None
    """A chat model object; takes precedence over ``voice_model`` (tests, embedding)."""
    voice_mode: str = "gather"
    """``gather``: calls run turn by turn over markup; ``relay``: over ConversationRelay's
    WebSocket (Twilio's or Telnyx's), the model's words streamed
    (docs/guides/voice-modes.md)."""
    voice_relay_silence: float = 5.0
    """Relay mode: seconds without speech after the agent's turn that count as a silent
    answer (a ``<Gather>``'s timeout)."""
    voice_relay_setup_timeout: float = 10.0
    """Relay mode: seconds a carrier's socket has to send its ``setup`` before it is
    closed (the carrier then ends the call)."""
    unavailable_retry_after: float = 1.0
    """``Retry-After`` (seconds) of the 503 a stopping service answers held requests with,
    and of the 503 of a request the database could not store."""
    db_pool_size: int = 10
    """PostgreSQL: connections each service process keeps open to the database at most
    (opened as they are needed). A send makes six or seven round trips one after the
    other, each on a pooled connection: with the database 2.5 ms away, four connections
    held three replicas to 253 sends a second (66 % of their sends with it local), ten
    to 324 and sixteen to 334, where the database itself was nowhere near its limit.
    Each replica's pool counts against the server's ``max_connections``. Ignored on
    SQLite."""
    replica_lease: float = 10.0
    """Replicas on one PostgreSQL database: seconds without a heartbeat after which a
    replica counts as dead and the others take over its held sends, the steps of the
    schedule it claimed (windows due) and its webhook deliveries (it beats every third
    of it). Clocks must agree far better."""
    head_timeout: float = 10.0
    """Seconds a client has to send a request's head: from the connection's start, or on
    a kept-alive connection from the request's first byte. Past it the connection is
    closed (``humanwire.server.http.middleware``); the answer is never timed."""
    body_timeout: float = 60.0
    """Seconds a client has to send a request's body once its head is in."""
    max_connections_per_address: int = 256
    """Connections one client address (an IPv6 /64) may hold open; past it a new one is
    answered 429 and closed. The TCP peer: behind a proxy, the proxy. 0: no bound."""
    metrics_token: str | None = field(default=None, repr=False)
    """``GET /metrics`` needs ``Authorization: Bearer <metrics_token>`` when set (from
    anywhere); without it only loopback clients may scrape. Never an API key."""
    inbox_session_lifetime: float = 12 * 3600.0
    """An inbox login lasts this long at most, however active (then the login page)."""
    inbox_session_idle: float = 2 * 3600.0
    """An inbox login unused this long ends (an open inbox page keeps it in use)."""
    address: AddressConfig = field(default_factory=AddressConfig)
    """How ``address`` form fields are checked: offline, or by a provider."""
    address_validator: Any = None
    """An ``AddressValidator`` object; takes precedence over ``address`` (embedding)."""
    trusted_proxies: tuple[str, ...] = ("127.0.0.1", "::1")
    """Peers (addresses or networks) whose ``X-Forwarded-Proto`` / ``X-Forwarded-For``
    are believed (uvicorn's ``forwarded_allow_ips``); from anyone else they are ignored."""
    audit_signing_key: str | None = field(default=None, repr=False)
    """The Ed25519 key (base64 of its 32-byte seed) audit checkpoints are signed with;
    None: no checkpoints (``approvals.checkpoints``). Never stored in the database."""
    audit_checkpoint_every: float = 300.0
    approvals_grantable: tuple[str, ...] = ()
    """The action names a standing approval (``POST /approvals/grants``) may cover; none
    by default."""
    approvals_max_grant: float = 8 * 3600.0
    """Seconds from now a grant's ``expiresAt`` may be at most."""
    """Seconds between two checkpoints of the accounts' audit heads (only the heads that
    moved are signed)."""


CHANNELS = ("sms", "whatsapp", "slack", "call", "email")
"""The channels a real provider can carry; forms are always served by the service."""


def telephony_carriers(config: ServiceConfig) -> list[str]:
    """The configured telephony providers, in ``telephony_order`` (docs/providers.md
    "Two carriers"): the first carries the shared sends."""
    configured = {"twilio": config.twilio is not None, "telnyx": config.telnyx is not None}
    ordered = [name for name in config.telephony_order if configured.get(name)]
    return ordered + [
        name for name in TELEPHONY_PROVIDERS if configured[name] and name not in ordered
    ]


def call_carriers(config: ServiceConfig) -> list[str]:
    """The telephony providers that can place calls, in order: Twilio always, Telnyx
    with a TeXML application (``connection_id`` and ``account_sid``); none without a
    voice model."""
    if config.voice_chat_model is None and not config.voice_model:
        return []
    telnyx = config.telnyx
    able = {
        "twilio": config.twilio is not None,
        "telnyx": telnyx is not None and bool(telnyx.connection_id and telnyx.account_sid),
    }
    return [name for name in telephony_carriers(config) if able[name]]


def channel_routes(config: ServiceConfig) -> dict[str, str]:
    """Where each channel's shared sends go: ``"twilio"``, ``"telnyx"``, ``"slack"``,
    ``"email"`` or ``"sandbox"`` (docs/providers.md).

    sms goes through the first configured telephony provider of ``telephony_order``;
    whatsapp through Meta's Cloud API when ``whatsapp_meta`` is set, else through Twilio
    when it has a ``whatsapp_from``; calls through the first
    that can place them (a voice model, ``voice_chat_model`` or ``voice_model``, and for
    Telnyx a TeXML application); slack through Slack when Slack is configured; email
    through the SMTP relay when ``[email]`` is configured; the rest
    stays on the sandbox. A number another provider owns goes out through its owner.
    """
    twilio = config.twilio
    carriers = telephony_carriers(config)
    calls = call_carriers(config)
    return {
        "sms": carriers[0] if carriers else "sandbox",
        "whatsapp": (
            "meta"
            if config.whatsapp_meta is not None
            else "twilio"
            if twilio is not None and twilio.whatsapp_from
            else "sandbox"
        ),
        "slack": "slack" if config.slack is not None else "sandbox",
        "call": calls[0] if calls else "sandbox",
        "email": "email" if config.email is not None else "sandbox",
    }


def mask_sid(sid: str) -> str:
    """``AC12…``: enough to tell accounts apart in a log, nothing more."""
    return f"{sid[:4]}…" if len(sid) > 4 else "…"


def display_url(url: str) -> str:
    """A URL fit to print: any ``user:password@`` part dropped."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def _voice_name(config: ServiceConfig) -> str:
    if config.voice_chat_model is not None:
        # The class name only: a model object's repr may carry its API key.
        return type(config.voice_chat_model).__name__
    return config.voice_model or ""


def startup_lines(config: ServiceConfig) -> list[str]:
    """What ``humanwire serve`` says at start: which channel goes where, the sandbox,
    the public URL. Never a secret: tokens are not shown, account SIDs are masked."""
    routes = channel_routes(config)
    twilio, telnyx, slack = config.twilio, config.telnyx, config.slack
    has_voice = config.voice_chat_model is not None or bool(config.voice_model)
    calls = call_carriers(config)
    lines: list[str] = []

    def line(label: str, text: str) -> None:
        lines.append(f"{label:<9} {text}")

    def telnyx_details(channel: str) -> list[str]:
        assert telnyx is not None
        details = [f"from {telnyx.sms_from or 'no sender'}"]
        if channel == "sms" and telnyx.messaging_profile_id:
            details.append(f"messaging profile {mask_sid(telnyx.messaging_profile_id)}")
        if channel == "call":
            details.append(f"TeXML application {mask_sid(telnyx.connection_id or '')}")
            details.append(f"voice model {_voice_name(config)}")
        if telnyx.api_base != TelnyxConfig.api_base:
            details.append(f"api {display_url(telnyx.api_base)}")
        return details

    for channel in CHANNELS:
        route = routes[channel]
        if route == "twilio":
            assert twilio is not None
            sender = twilio.whatsapp_from if channel == "whatsapp" else twilio.sms_from
            details = [f"from {sender or 'no sender'}", f"account {mask_sid(twilio.account_sid)}"]
            if twilio.api_base != TwilioConfig.api_base:
                details.append(f"api {display_url(twilio.api_base)}")
            if channel == "whatsapp":
                templates = ", ".join(sorted(twilio.whatsapp_templates)) or "none"
                details.append(f"templates: {templates}")
            if channel == "call":
                details.append(f"voice model {_voice_name(config)}")
            line(channel, f"→ Twilio ({'; '.join(details)})")
        elif route == "telnyx":
            line(channel, f"→ Telnyx ({'; '.join(telnyx_details(channel))})")
        elif route == "meta":
            meta = config.whatsapp_meta
            assert meta is not None
            details = [f"from {meta.sender}", f"phone number id {mask_sid(meta.phone_number_id)}"]
            details.append(f"templates: {', '.join(sorted(meta.templates)) or 'none'}")
            if meta.api_base != MetaWhatsAppConfig.api_base:
                details.append(f"api {display_url(meta.api_base)}")
            line(channel, f"→ Meta Cloud API ({'; '.join(details)})")
        elif route == "slack":
            assert slack is not None
            details = ["the shared workspace's bot"]
            details.append("OAuth installs on" if slack.client_id else "no OAuth installs")
            if slack.api_base != SlackConfig.api_base:
                details.append(f"api {display_url(slack.api_base)}")
            line(channel, f"→ Slack ({'; '.join(details)})")
        elif route == "email":
            email = config.email
            assert email is not None
            relay = f"{email.smtp_host}:{email.smtp_port}"
            tls = "TLS" if email.use_tls else ("STARTTLS" if email.starttls else "no TLS")
            login = "login" if email.smtp_username else "no login"
            line(
                channel,
                f"→ SMTP relay {relay} ({tls}; {login}); from {email.from_addr}; replies to "
                f"reply+…@{email.reply_domain}, listener "
                f"{email.inbound_host}:{email.inbound_port}",
            )
        else:
            if channel == "call" and (twilio is not None or telnyx is not None) and not has_voice:
                reason = "no voice.model: calls stay on the sandbox"
            elif channel == "call" and telnyx is not None:
                reason = "no telnyx.connection_id and telnyx.account_sid (a TeXML application)"
            elif channel == "call" and has_voice:
                reason = "no twilio: voice.model unused, calls stay on the sandbox"
            elif channel == "whatsapp" and twilio is not None:
                reason = "no twilio.whatsapp_from"
            elif channel == "whatsapp" and telnyx is not None:
                reason = "no twilio (Telnyx carries no WhatsApp here)"
            elif channel == "slack":
                reason = "no slack"
            elif channel == "email":
                reason = "no email"
            else:
                reason = "no twilio"
            line(channel, f"→ sandbox ({reason})")
        # The second carrier still carries what goes out from its own numbers.
        carriers = telephony_carriers(config) if channel == "sms" else calls
        if channel in ("sms", "call"):
            for other in carriers[1:]:
                owner = "Twilio" if other == "twilio" else "Telnyx"
                shared = (twilio.sms_from if other == "twilio" and twilio else None) or (
                    telnyx.sms_from if other == "telnyx" and telnyx else None
                )
                line(channel, f"→ {owner} for its own numbers ({shared or 'no shared number'})")
    for name, provider in (("Twilio", twilio), ("Telnyx", telnyx)):
        if provider is not None:
            pool = f"pool of {len(provider.numbers)}" if provider.numbers else "no pool"
            line("numbers", f"{name} ({pool}; buying {'on' if provider.buy_numbers else 'off'})")
    address = config.address
    if config.address_validator is None and address.provider != "structural":
        where = {"google": "Google", "smarty": "Smarty", "nominatim": "Nominatim"}[address.provider]
        details = []
        base = address.url if address.provider == "nominatim" else address.api_base
        if base:
            details.append(f"at {display_url(base)}")
        details.append(f"timeout {address.timeout:g} s")
        details.append(
            "unchecked addresses accepted as typed"
            if address.on_unavailable == "accept"
            else "unchecked addresses refused"
        )
        line("address", f"→ {where} ({'; '.join(details)})")
    live = [channel for channel in CHANNELS if routes[channel] != "sandbox"]
    if config.sandbox_enabled and not live:
        line("sandbox", "on (the sandbox API and the inbox's human side)")
    elif config.sandbox_enabled and not config.sandbox_live_channels:
        line(
            "sandbox",
            f"on (the sandbox API and the inbox's human side), not for {', '.join(live)}: "
            "a real provider carries them",
        )
    elif config.sandbox_enabled:
        line("sandbox", "on (the sandbox API and the inbox's human side), live channels too")
        line(
            "warning",
            f"sandbox_live_channels is on: anyone with an account's key can answer "
            f"{', '.join(live)} as its recipients through the sandbox or the inbox "
            "(recorded via sandbox / inbox)",
        )
    else:
        line("sandbox", "off (no sandbox API, no human side in the inbox)")
    line("public url", display_url(config.public_url))
    return lines
