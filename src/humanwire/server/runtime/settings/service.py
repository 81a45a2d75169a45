"""The root of the settings: the top-level keys, every section, the checks across them,
and :meth:`Settings.to_service_config`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    PrivateAttr,
)

from ...config import (
    ServiceConfig,
    SlackConfig,
    TelnyxConfig,
    TwilioConfig,
)
from ...store import is_database_url
from .addresses import AddressSettings
from .approvals import ApprovalsSettings
from .audit import AuditSettings
from .checks import (
    HttpURL,
    OnOff,
    Port,
    Proxy,
    Secret,
    SettingsError,
    Text,
    _about,
    _comma_separated,
    _count,
    _one_of,
    _seconds,
    _Strict,
    _text,
)
from .discord import DiscordSettings
from .email import EmailSettings
from .keys import _attribute, _how, _keys
from .providers import (
    SlackSettings,
    TelephonySettings,
    TelnyxSettings,
    TwilioSettings,
    VoiceSettings,
)
from .teams import TeamsSettings
from .telegram import TelegramSettings
from .tunables import (
    SERVICE_CONFIG_FIELDS,
    CallsSettings,
    HttpSettings,
    InboxSettings,
    LimitsSettings,
    SpamSettings,
    WebhooksSettings,
)
from .whatsapp import WhatsAppSettings

__all__ = ["Settings"]


class Settings(_Strict):
    """The settings of ``humanwire serve``; build with :func:`load_settings`."""

    host: Annotated[
        Text,
        _about(
            "Address to listen on; `0.0.0.0` for every interface (webhook targets on private "
            "addresses are then refused)."
        ),
    ] = "127.0.0.1"
    port: Annotated[Port, _about("Port to listen on (`0`: any free port).")] = 8765
    db: Annotated[
        Annotated[str, AfterValidator(_text)] | None,
        _about(
            "SQLite file (a relative path in the file: relative to the file) or a "
            "`postgresql://` URL (its password is never printed); the default is under "
            "`HUMANWIRE_HOME`."
        ),
    ] = None
    public_url: Annotated[
        HttpURL | None,
        _about(
            "The address clients, browsers and providers reach the service at: form links and "
            "webhook URLs are built from it; required with any real provider."
        ),
    ] = None
    trusted_proxies: Annotated[
        tuple[Proxy, ...],
        BeforeValidator(_comma_separated),
        _about(
            "The reverse proxies (addresses or networks) whose `X-Forwarded-Proto` and "
            "`X-Forwarded-For` are believed; from any other peer they are ignored (a list, or "
            "comma-separated in the variable)."
        ),
    ] = ServiceConfig.trusted_proxies
    sandbox: Annotated[
        OnOff, _about("The sandbox API and the inbox's human side; `off` in production.")
    ] = True
    sandbox_live_channels: Annotated[
        OnOff,
        _about(
            "Whether the sandbox and the inbox's human side may also answer the channels a "
            "real provider carries (anyone with an account's key then answers as its "
            "recipients; recorded `via: sandbox` / `inbox`, and `humanwire serve` warns); "
            "off, such an answer is 403 `live_channel`."
        ),
    ] = ServiceConfig.sandbox_live_channels
    db_pool_size: Annotated[
        int,
        _count(1, 1000),
        _about(
            "PostgreSQL: connections each service process keeps to the database at most "
            "(each replica's count against the server's `max_connections`); raise it when "
            "the database is far. Ignored on SQLite."
        ),
    ] = ServiceConfig.db_pool_size
    replica_lease: Annotated[
        float,
        _seconds(3600),
        _about(
            "Replicas on one PostgreSQL database: seconds without a heartbeat before a replica "
            "counts as dead and the others take over its work."
        ),
    ] = ServiceConfig.replica_lease
    unavailable_retry_after: Annotated[
        float,
        _seconds(3600),
        _about(
            "`Retry-After` of the 503 a stopping service answers held requests with, and "
            "of the 503 of a request the database could not store (its disk full)."
        ),
    ] = ServiceConfig.unavailable_retry_after
    metrics_token: Annotated[
        Secret | None,
        _about(
            "`GET /metrics` from anywhere with `Authorization: Bearer <it>` (then required from "
            "loopback too); unset: loopback clients only."
        ),
    ] = None
    log_format: Annotated[
        Annotated[str, AfterValidator(_one_of("text", "json"))],
        _about("`humanwire serve`'s log lines on stderr: `text`, or `json` (one object a line)."),
    ] = "text"
    log_level: Annotated[
        Annotated[str, AfterValidator(_one_of("debug", "info", "warning", "error"))],
        _about("humanwire's log level: `debug`, `info`, `warning` or `error`."),
    ] = "info"
    limits: Annotated[LimitsSettings, _about("Request limits.")] = Field(
        default_factory=LimitsSettings
    )
    spam: Annotated[SpamSettings, _about("The spam guard.")] = Field(default_factory=SpamSettings)
    webhooks: Annotated[WebhooksSettings, _about("Webhook delivery.")] = Field(
        default_factory=WebhooksSettings
    )
    calls: Annotated[CallsSettings, _about("Call holds.")] = Field(default_factory=CallsSettings)
    inbox: Annotated[InboxSettings, _about("The inbox's logins.")] = Field(
        default_factory=InboxSettings
    )
    http: Annotated[HttpSettings, _about("Connections.")] = Field(default_factory=HttpSettings)
    approvals: Annotated[ApprovalsSettings, _about("Standing approvals.")] = Field(
        default_factory=ApprovalsSettings
    )
    audit: Annotated[AuditSettings, _about("The audit log's signed checkpoints.")] = Field(
        default_factory=AuditSettings
    )
    twilio: Annotated[TwilioSettings, _about("Twilio: sms, whatsapp, calls.")] = Field(
        default_factory=TwilioSettings
    )
    telnyx: Annotated[TelnyxSettings, _about("Telnyx: sms, calls.")] = Field(
        default_factory=TelnyxSettings
    )
    telephony: Annotated[TelephonySettings, _about("Twilio and Telnyx together.")] = Field(
        default_factory=TelephonySettings
    )
    slack: Annotated[SlackSettings, _about("Slack.")] = Field(default_factory=SlackSettings)
    telegram: Annotated[TelegramSettings, _about("Telegram.")] = Field(
        default_factory=TelegramSettings
    )
    discord: Annotated[DiscordSettings, _about("Discord.")] = Field(default_factory=DiscordSettings)
    whatsapp: Annotated[
        WhatsAppSettings, _about("Which provider carries whatsapp; Meta's Cloud API.")
    ] = Field(default_factory=WhatsAppSettings)
    teams: Annotated[TeamsSettings, _about("Microsoft Teams.")] = Field(
        default_factory=TeamsSettings
    )
    email: Annotated[EmailSettings, _about("Email.")] = Field(default_factory=EmailSettings)
    voice: Annotated[VoiceSettings, _about("The voice agent.")] = Field(
        default_factory=VoiceSettings
    )
    address: Annotated[AddressSettings, _about("Checking `address` form fields.")] = Field(
        default_factory=AddressSettings
    )

    _sources: dict[str, str] = PrivateAttr(default_factory=dict)

    def value(self, key: str) -> Any:
        """The value of a dotted key (``limits.rate_limit_requests``)."""
        node: Any = self
        for name in key.split("."):
            node = getattr(node, _attribute(type(node), name))
        return node

    def source(self, key: str) -> str:
        """Where ``key`` (dotted, e.g. ``twilio.sms_from``) came from: ``in <file>``,
        ``from environment variable HUMANWIRE_…``, ``from flag --…`` or ``default``."""
        return self._sources.get(key, "default")

    @property
    def db_path(self) -> str:
        """The database path the service opens: ``db`` with ``~`` expanded, or the
        default under the humanwire home."""
        if self.db is None:
            from ..embedded import embedded_home

            return str(embedded_home() / "humanwire.db")
        if self.db == ":memory:" or is_database_url(self.db):
            return self.db
        return str(Path(self.db).expanduser())

    def problems(self) -> list[str]:
        """What keeps these settings from starting a service (half-configured
        providers); empty when they can."""
        problems: list[str] = []
        twilio, slack = self.twilio, self.slack
        if twilio.given:
            missing = [key for key in ("account_sid", "auth_token") if getattr(twilio, key) is None]
            if missing:
                problems.append(
                    f"twilio is half-configured: missing {_keys('twilio', missing)} "
                    f"(twilio was given {_keys('twilio', sorted(twilio.model_fields_set))})"
                )
            if twilio.sms_from is None:
                problems.append(
                    "twilio needs twilio.sms_from (the shared number texts and calls come "
                    f"from): set it {_how('twilio', 'sms_from')}"
                )
        telnyx = self.telnyx
        if telnyx.given:
            missing = [key for key in ("api_key", "public_key") if getattr(telnyx, key) is None]
            if missing:
                problems.append(
                    f"telnyx is half-configured: missing {_keys('telnyx', missing)} "
                    f"(telnyx was given {_keys('telnyx', sorted(telnyx.model_fields_set))})"
                )
            if telnyx.sms_from is None:
                problems.append(
                    "telnyx needs telnyx.sms_from (the shared number texts and calls come "
                    f"from): set it {_how('telnyx', 'sms_from')}"
                )
            if (telnyx.connection_id is None) != (telnyx.account_sid is None):
                problems.append(
                    "telnyx calls are half-configured: telnyx.connection_id and "
                    "telnyx.account_sid go together (the TeXML application and its account)"
                )
        if slack.given:
            missing = [
                key for key in ("bot_token", "signing_secret") if getattr(slack, key) is None
            ]
            if missing:
                problems.append(
                    f"slack is half-configured: missing {_keys('slack', missing)} "
                    f"(slack was given {_keys('slack', sorted(slack.model_fields_set))})"
                )
            oauth = ("client_id", "client_secret")
            oauth_missing = [key for key in oauth if getattr(slack, key) is None]
            if len(oauth_missing) == 1:
                problems.append(
                    f"slack OAuth is half-configured: missing {_keys('slack', oauth_missing)} "
                    "(client_id and client_secret go together)"
                )
        problems += self.telegram.problems()
        problems += self.discord.problems()
        problems += self.whatsapp.problems()
        problems += self.teams.problems()
        problems += self.address.problems()
        problems += self.email.problems()
        problems += self.audit.problems()
        providers = [
            name
            for name in ("twilio", "telnyx", "slack", "telegram", "discord", "whatsapp", "teams")
            if getattr(self, name).given
        ]
        if providers and self.public_url is None:
            problems.append(
                f"{' and '.join(providers)} {'need' if len(providers) > 1 else 'needs'} "
                "public_url (the address the provider "
                "calls back; webhook URLs are built from it and signed exactly): set it "
                f"{_how(None, 'public_url')} or with --public-url"
            )
        return problems

    def check(self) -> None:
        """Raises :class:`SettingsError` listing :meth:`problems`, if any."""
        problems = self.problems()
        if problems:
            raise SettingsError(problems)

    def twilio_config(self) -> TwilioConfig | None:
        twilio = self.twilio
        if twilio.account_sid is None or twilio.auth_token is None:
            return None
        templates = {
            name: sid for name, sid in twilio.whatsapp_templates.model_dump().items() if sid
        }
        return TwilioConfig(
            account_sid=twilio.account_sid,
            auth_token=twilio.auth_token.get_secret_value(),
            api_base=twilio.api_base,
            sms_from=twilio.sms_from,
            whatsapp_from=twilio.whatsapp_from,
            whatsapp_templates=templates,
            numbers=twilio.numbers,
            buy_numbers=twilio.buy_numbers,
        )

    def telnyx_config(self) -> TelnyxConfig | None:
        telnyx = self.telnyx
        if telnyx.api_key is None or telnyx.public_key is None:
            return None
        return TelnyxConfig(
            api_key=telnyx.api_key.get_secret_value(),
            public_key=telnyx.public_key,
            api_base=telnyx.api_base,
            sms_from=telnyx.sms_from,
            messaging_profile_id=telnyx.messaging_profile_id,
            connection_id=telnyx.connection_id,
            account_sid=telnyx.account_sid,
            numbers=telnyx.numbers,
            buy_numbers=telnyx.buy_numbers,
        )

    def slack_config(self) -> SlackConfig | None:
        slack = self.slack
        if slack.bot_token is None or slack.signing_secret is None:
            return None
        return SlackConfig(
            bot_token=slack.bot_token.get_secret_value(),
            signing_secret=slack.signing_secret.get_secret_value(),
            api_base=slack.api_base,
            client_id=slack.client_id,
            client_secret=(slack.client_secret.get_secret_value() if slack.client_secret else None),
        )

    def to_service_config(self, **overrides: Any) -> ServiceConfig:
        """The :class:`ServiceConfig` of these settings (after :meth:`check`); local mode
        (loopback webhook targets allowed) only when serving on loopback. ``overrides``
        replace fields afterwards (``voice_chat_model=``, fast windows in tests)."""
        from ...net import is_loopback

        self.check()
        config = ServiceConfig(
            db_path=self.db_path,
            local_mode=is_loopback(self.host),
            sandbox_enabled=self.sandbox,
            sandbox_live_channels=self.sandbox_live_channels,
            twilio=self.twilio_config(),
            telnyx=self.telnyx_config(),
            telephony_order=self.telephony.order,
            slack=self.slack_config(),
            telegram=self.telegram.config(),
            discord=self.discord.config(),
            whatsapp_meta=self.whatsapp.config(),
            teams=self.teams.config(),
            email=self.email.config(),
            voice_model=self.voice.model,
            voice_mode=self.voice.mode,
            address=self.address.config(),
            **{field: self.value(key) for key, field in SERVICE_CONFIG_FIELDS.items()},
            metrics_token=(
                self.metrics_token.get_secret_value() if self.metrics_token is not None else None
            ),
            trusted_proxies=self.trusted_proxies,
            approvals_grantable=self.approvals.grantable,
            approvals_max_grant=self.approvals.max_grant,
            audit_signing_key=(
                self.audit.signing_key.get_secret_value()
                if self.audit.signing_key is not None
                else None
            ),
        )
        if self.public_url is not None:
            config.public_url = self.public_url
        return replace(config, **overrides) if overrides else config
