"""``humanwire serve``'s settings: a TOML file, the ``HUMANWIRE_*`` environment and flags.

One precedence rule: flags beat the environment, which beats the file, which beats the
defaults (docs/providers.md "Configuration")::

    settings = load_settings("humanwire.toml", os.environ, {"port": 8080})
    config = settings.to_service_config()

Every key of the file can come from the environment as ``HUMANWIRE_<SECTION>_<KEY>``
(top-level keys as ``HUMANWIRE_<KEY>``), except the tables inside a section
(``twilio.whatsapp_templates``), which only the file has. An empty variable counts as
unset. A relative ``db`` in the file is relative to the file's directory.

Sections: the service's tunables (``[limits]``, ``[spam]``, ``[webhooks]``, ``[calls]``,
``[inbox]``, ``[http]``, ``[audit]``, mapped onto :class:`ServiceConfig` by
:data:`SERVICE_CONFIG_FIELDS`) and the providers (``[twilio]``, ``[slack]``, ``[voice]``).
:func:`effective_configuration` is what ``humanwire serve --print-config`` shows;
:func:`config_reference` the table of
docs/operating/configuration.md.

Nothing unknown or invalid is let through: an unknown key, a bad value or a
half-configured provider raises :class:`SettingsError`, naming the key and where its
value came from (the file, the variable, the flag), never the value of a secret.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from humanwire.types.rules import check_e164

from .config import (
    TELEPHONY_PROVIDERS,
    AddressConfig,
    EmailConfig,
    ServiceConfig,
    SlackConfig,
    TelnyxConfig,
    TwilioConfig,
)
from .store import is_database_url

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]

__all__ = [
    "DATABASE_URL_ENV",
    "ENV_PREFIX",
    "FLAG_KEYS",
    "SERVICE_CONFIG_FIELDS",
    "AddressSettings",
    "AuditSettings",
    "CallsSettings",
    "EmailSettings",
    "HttpSettings",
    "InboxSettings",
    "LimitsSettings",
    "Settings",
    "SettingsError",
    "SlackSettings",
    "SpamSettings",
    "TelephonySettings",
    "TelnyxSettings",
    "TwilioSettings",
    "VoiceSettings",
    "WebhooksSettings",
    "WhatsAppTemplates",
    "config_reference",
    "effective_configuration",
    "env_var_names",
    "format_configuration",
    "load_settings",
    "write_reference",
]

ENV_PREFIX = "HUMANWIRE_"
DATABASE_URL_ENV = "HUMANWIRE_DATABASE_URL"
"""Also read for ``db`` (a ``postgresql://`` URL), unless ``HUMANWIRE_DB`` is set."""
FLAG_KEYS = ("host", "port", "db", "public_url", "sandbox", "log_format", "log_level")
"""The keys ``humanwire serve`` has flags for (``--public-url`` for ``public_url``)."""
SERVICE_CONFIG_FIELDS = {
    "replica_lease": "replica_lease",
    "db_pool_size": "db_pool_size",
    "unavailable_retry_after": "unavailable_retry_after",
    "limits.rate_limit_requests": "rate_limit_requests",
    "limits.rate_limit_window": "rate_limit_window",
    "limits.max_body_bytes": "max_body_bytes",
    "limits.max_status_wait": "max_status_wait",
    "limits.idempotency_ttl": "idempotency_ttl",
    "spam.recipients": "spam_recipients",
    "spam.window": "spam_window",
    "webhooks.timeout": "webhook_timeout",
    "webhooks.retry_base": "webhook_retry_base",
    "webhooks.max_attempts": "webhook_max_attempts",
    "webhooks.concurrency": "webhook_concurrency",
    "calls.phone_call_limit": "phone_call_limit",
    "calls.call_wait_limit": "call_wait_limit",
    "inbox.session_lifetime": "inbox_session_lifetime",
    "inbox.session_idle": "inbox_session_idle",
    "http.head_timeout": "head_timeout",
    "http.body_timeout": "body_timeout",
    "http.max_connections_per_address": "max_connections_per_address",
    "audit.checkpoint_every": "audit_checkpoint_every",
}
"""Dotted key → the :class:`ServiceConfig` field it sets, as it is (a new tunable is a
field in the model and a line here)."""


class SettingsError(ValueError):
    """The settings cannot start a service; ``problems`` has one sentence per problem,
    each naming the key and, when it was given, where it came from."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


# -- value checks (messages never repeat the value: it may be a secret) ----------------------
def _text(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("must not be empty")
    return value


def _token(value: str) -> str:
    value = _text(value)
    if any(char.isspace() for char in value):
        raise ValueError("must not contain spaces")
    return value


def _secret(value: SecretStr) -> SecretStr:
    return SecretStr(_token(value.get_secret_value()))


def _matching(pattern: str, expected: str) -> Callable[[str], str]:
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        value = value.strip()
        if not compiled.fullmatch(value):
            raise ValueError(f"must be {expected}")
        return value

    return check


def _http_url(value: str) -> str:
    value = value.strip()
    expected = "an http(s) URL such as https://humanwire.example.com"
    try:
        parts = urlsplit(value)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        raise ValueError(f"must be {expected}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ValueError(f"must be {expected}")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry a user name or password")
    if parts.query or parts.fragment:
        raise ValueError("must not have a query or fragment")
    return value.rstrip("/")


def _e164(value: str) -> str:
    value = value.strip()
    try:
        return check_e164(value)
    except (PydanticCustomError, ValueError):
        raise ValueError("must be a phone number in E.164 form, such as +14155550100") from None


def _whatsapp_sender(value: str) -> str:
    value = value.strip()
    if value.startswith("whatsapp:"):
        value = value[len("whatsapp:") :]
    return _e164(value)


_TRUE = frozenset({"true", "on", "yes", "1"})
_FALSE = frozenset({"false", "off", "no", "0"})


def _switch(expected: str) -> Callable[[Any], Any]:
    def parse(value: Any) -> Any:
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            word = value.strip().lower()
            if word in _TRUE:
                return True
            if word in _FALSE:
                return False
        raise ValueError(f"must be {expected}")

    setattr(parse, "words", expected.split(" or "))  # noqa: B010 - for the reference
    return parse


def _ed25519_key(value: str) -> str:
    import base64
    import binascii

    value = value.strip()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 32:
        raise ValueError("must be the account's Ed25519 public key, base64 (32 bytes)")
    return value


def _signing_key(value: SecretStr) -> SecretStr:
    from .approvals.checkpoints import parse_key

    parse_key(value.get_secret_value())  # its message never repeats the value
    return SecretStr(value.get_secret_value().strip())


def _carriers(value: Any) -> Any:
    value = _comma_separated(value)
    if not isinstance(value, (list, tuple)):
        return value
    names = [str(name).strip().lower() for name in value]
    unknown = [name for name in names if name not in TELEPHONY_PROVIDERS]
    if unknown or len(set(names)) != len(names) or not names:
        raise ValueError(
            f"must list {' and '.join(TELEPHONY_PROVIDERS)}, each once, the first carrying "
            "the shared sends"
        )
    return tuple(names)


def _one_of(*choices: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        value = value.strip().lower()
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return value

    return check


def _bot_token(value: SecretStr) -> SecretStr:
    if not value.get_secret_value().startswith("xoxb-"):
        raise ValueError("must be a Slack bot token (xoxb-…)")
    return value


def _port(value: Any) -> Any:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
        raise ValueError("must be a port number from 0 to 65535")
    return value


def _comma_separated(value: Any) -> Any:
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


def _proxy(value: str) -> str:
    """An address or a network (``10.0.0.0/8``; host bits set are dropped), as uvicorn's
    ``forwarded_allow_ips`` takes it: uvicorn itself would take a typo for a name that
    never matches."""
    value = value.strip()
    try:
        if "/" in value:
            return str(ipaddress.ip_network(value, strict=False))
        return str(ipaddress.ip_address(value))
    except ValueError:
        expected = "an IP address or network, such as 127.0.0.1 or 10.0.0.0/8"
        raise ValueError(f"must be {expected}") from None


def _number(value: float) -> str:
    """``1000000``, ``2.5``: as an operator writes it (never ``1e+06``)."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


class _Number:
    """A whole number or a number of seconds within bounds, from TOML or from the text of
    a variable; ``kind`` says which (the reference table shows it). The message says the
    bounds, never the value."""

    def __init__(self, *, whole: bool, low: float, high: float) -> None:
        self.whole, self.low, self.high = whole, low, high
        lo, hi = _number(low), _number(high)
        if whole:
            self.kind = f"whole number, {lo} to {hi}"
        elif low == 0:
            self.kind = f"seconds, over 0 up to {hi}"
        else:
            self.kind = f"seconds, {lo} to {hi}"

    def _expected(self) -> str:
        lo, hi = _number(self.low), _number(self.high)
        if self.whole:
            return f"must be a whole number from {lo} to {hi}"
        if self.low == 0:
            return f"must be a number of seconds over 0 and at most {hi}"
        return f"must be a number of seconds from {lo} to {hi}"

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            try:
                value = int(text) if self.whole else float(text)
            except ValueError:
                raise ValueError(self._expected()) from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(self._expected())
        if self.whole and not isinstance(value, int):
            raise ValueError(self._expected())
        # Zero seconds is never a sensible window or timeout; NaN fails every comparison.
        if self.whole or self.low:
            in_range = self.low <= value <= self.high
        else:
            in_range = 0 < value <= self.high
        if not in_range:
            raise ValueError(self._expected())
        return value if self.whole else float(value)


def _count(low: int, high: int) -> BeforeValidator:
    """``Annotated[int, _count(1, 100)]``: a whole number from 1 to 100."""
    return BeforeValidator(_Number(whole=True, low=low, high=high))


def _seconds(high: float, low: float = 0) -> BeforeValidator:
    """``Annotated[float, _seconds(60)]``: seconds over 0 (or from ``low``) up to ``high``."""
    return BeforeValidator(_Number(whole=False, low=low, high=high))


def _sender(value: str) -> str:
    from .delivery.email.compose import parse_sender

    parse_sender(value.strip())
    return value.strip()


def _domain(value: str) -> str:
    value = value.strip().lower().rstrip(".")
    label = r"(?!-)[a-z0-9-]{1,63}(?<!-)"
    if not re.fullmatch(rf"{label}(\.{label})+", value):
        raise ValueError("must be a domain name, such as replies.example.com")
    return value


Text = Annotated[str, AfterValidator(_token)]
Proxy = Annotated[str, AfterValidator(_proxy)]
HttpURL = Annotated[str, AfterValidator(_http_url)]
E164 = Annotated[str, AfterValidator(_e164)]
Secret = Annotated[SecretStr, AfterValidator(_secret)]
Switch = Annotated[bool, BeforeValidator(_switch("true or false"))]
OnOff = Annotated[bool, BeforeValidator(_switch("on or off"))]
Port = Annotated[int, BeforeValidator(_port)]
AccountSid = Annotated[
    str, AfterValidator(_matching(r"AC[0-9a-fA-F]{32}", "AC followed by 32 hex digits"))
]
ContentSid = Annotated[
    str,
    AfterValidator(
        _matching(r"HX[0-9a-fA-F]{32}", "a Content template SID: HX followed by 32 hex digits")
    ),
]
BotToken = Annotated[SecretStr, AfterValidator(_secret), AfterValidator(_bot_token)]
ClientId = Annotated[
    str, AfterValidator(_matching(r"\d+\.\d+", "a Slack client ID such as 1234567890.123456"))
]


# -- the model of the file ----------------------------------------------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)


def _about(text: str) -> Any:
    """The field's meaning: shown in the configuration reference (docs/operating)."""
    return Field(description=text)


class WhatsAppTemplates(_Strict):
    """Content template SIDs of the spec's shared-account WhatsApp templates."""

    notification: Annotated[
        ContentSid | None,
        _about(
            "Content template SID (`HX…`) of the shared-account WhatsApp notification template."
        ),
    ] = None
    request: Annotated[
        ContentSid | None,
        _about("Content template SID of the shared-account WhatsApp request (question) template."),
    ] = None
    form: Annotated[
        ContentSid | None,
        _about("Content template SID of the shared-account WhatsApp form-link template."),
    ] = None


class TwilioSettings(_Strict):
    account_sid: Annotated[
        AccountSid | None,
        _about(
            "Twilio account SID (`AC…`); with `auth_token`, turns Twilio on for sms (and whatsapp,"
            " calls)."
        ),
    ] = None
    auth_token: Annotated[
        Secret | None,
        _about(
            "Twilio auth token: REST credentials, and the key `X-Twilio-Signature` is checked with."
        ),
    ] = None
    api_base: Annotated[HttpURL, _about("Twilio's REST address; tests point it at the fake.")] = (
        TwilioConfig.api_base
    )
    sms_from: Annotated[
        E164 | None,
        _about("The shared number texts and calls come from (E.164); required with Twilio."),
    ] = None
    whatsapp_from: Annotated[
        Annotated[str, AfterValidator(_whatsapp_sender)] | None,
        _about(
            "The shared WhatsApp sender (E.164, `whatsapp:` optional); without it WhatsApp stays "
            "on the sandbox."
        ),
    ] = None
    whatsapp_templates: Annotated[
        WhatsAppTemplates,
        _about("Content template SIDs of the shared-account WhatsApp templates (file only)."),
    ] = Field(default_factory=WhatsAppTemplates)
    numbers: Annotated[
        tuple[E164, ...],
        BeforeValidator(_comma_separated),
        _about(
            "The pool of the operator's numbers accounts may reserve (a list, or comma-separated "
            "in the variable)."
        ),
    ] = ()
    buy_numbers: Annotated[
        Switch,
        _about("Lets an account's reserve buy a number when the pool has none (it costs money)."),
    ] = False

    @property
    def given(self) -> bool:
        """Any key of the section was given: then it has to be complete."""
        return bool(self.model_fields_set)


class TelnyxSettings(_Strict):
    api_key: Annotated[
        Secret | None,
        _about(
            "Telnyx API key (`KEY…`); with `public_key`, turns Telnyx on for sms (and calls, "
            "with a TeXML application)."
        ),
    ] = None
    public_key: Annotated[
        Annotated[str, AfterValidator(_ed25519_key)] | None,
        _about(
            "The account's Ed25519 public key (base64, Mission Control, Keys & "
            "Credentials): every Telnyx webhook is verified with it."
        ),
    ] = None
    api_base: Annotated[
        HttpURL, _about("Telnyx's REST address (with `/v2`); tests point it at the fake.")
    ] = TelnyxConfig.api_base
    sms_from: Annotated[
        E164 | None,
        _about("The shared Telnyx number texts and calls come from (E.164); required with Telnyx."),
    ] = None
    messaging_profile_id: Annotated[
        Text | None,
        _about(
            "The messaging profile the numbers belong to; its inbound webhook is "
            "`<public_url>/providers/telnyx/messages`."
        ),
    ] = None
    connection_id: Annotated[
        Text | None,
        _about(
            "The TeXML application calls run on (its voice URL `<public_url>/providers/telnyx/"
            "voice`); with `account_sid` and a voice model, calls can go through Telnyx."
        ),
    ] = None
    account_sid: Annotated[
        Text | None,
        _about("The account id of Telnyx's TeXML REST API (`/texml/Accounts/<it>/Calls`)."),
    ] = None
    numbers: Annotated[
        tuple[E164, ...],
        BeforeValidator(_comma_separated),
        _about(
            "The pool of the operator's Telnyx numbers accounts may reserve (a list, or "
            "comma-separated in the variable)."
        ),
    ] = ()
    buy_numbers: Annotated[
        Switch,
        _about(
            "Lets an account's reserve buy a Telnyx number when no pool has one (it costs money)."
        ),
    ] = False

    @property
    def given(self) -> bool:
        return bool(self.model_fields_set)


class TelephonySettings(_Strict):
    order: Annotated[
        tuple[str, ...],
        BeforeValidator(_carriers),
        _about(
            "With Twilio and Telnyx both configured: which carries the shared sends first (a "
            "`from` or reserved number goes out through the provider that owns it)."
        ),
    ] = TELEPHONY_PROVIDERS


class SlackSettings(_Strict):
    bot_token: Annotated[
        BotToken | None,
        _about(
            "The shared workspace's bot token (`xoxb-…`); with `signing_secret`, turns Slack on."
        ),
    ] = None
    signing_secret: Annotated[
        Secret | None,
        _about("The Slack app's signing secret: every event and interaction is verified with it."),
    ] = None
    api_base: Annotated[HttpURL, _about("Slack's Web API address; tests point it at the fake.")] = (
        SlackConfig.api_base
    )
    client_id: Annotated[
        ClientId | None,
        _about(
            "The Slack app's client ID: with `client_secret`, accounts can install the bot in "
            "their own workspace (OAuth v2)."
        ),
    ] = None
    client_secret: Annotated[
        Secret | None, _about("The Slack app's client secret (OAuth v2 installs).")
    ] = None

    @property
    def given(self) -> bool:
        return bool(self.model_fields_set)


def _expand(path: str | None) -> str | None:
    return str(Path(path).expanduser()) if path else None


class EmailSettings(_Strict):
    """Email out through an SMTP relay, replies in through the service's listener
    (docs/going-live/email.md)."""

    smtp_host: Annotated[
        Text | None,
        _about(
            "The SMTP relay mail goes out through (your provider's, e.g. `smtp.sendgrid.net`); "
            "with `from` and `reply_domain`, turns email on."
        ),
    ] = None
    smtp_port: Annotated[
        Port, _about("The relay's port: 587 (STARTTLS), 465 (TLS from the start) or 25.")
    ] = EmailConfig.smtp_port
    smtp_username: Annotated[Text | None, _about("The relay's login name, if it asks for one.")] = (
        None
    )
    smtp_password: Annotated[Secret | None, _about("The relay's password or API key.")] = None
    starttls: Annotated[
        Switch,
        _about(
            "Upgrade the relay connection with STARTTLS (port 587); port 465 always uses TLS; "
            "`false` only for a relay on loopback."
        ),
    ] = EmailConfig.starttls
    from_: Annotated[
        Annotated[str, AfterValidator(_sender)] | None,
        Field(alias="from"),
        _about(
            "The sender, with the name mail clients show: `Acme Agent <agent@acme.example>` "
            "(its domain needs SPF and DKIM at the relay)."
        ),
    ] = None
    reply_domain: Annotated[
        Annotated[str, AfterValidator(_domain)] | None,
        _about(
            "Replies go to `reply+<token>@<reply_domain>`; its MX record points at this "
            "service's listener (`inbound_host`, `inbound_port`)."
        ),
    ] = None
    inbound_host: Annotated[
        Text, _about("Address the SMTP listener for replies binds (`0.0.0.0`: every interface).")
    ] = EmailConfig.inbound_host
    inbound_port: Annotated[
        Port,
        _about("Port of the SMTP listener (25 to take mail from the internet; `0`: any free)."),
    ] = EmailConfig.inbound_port
    inbound_tls_cert: Annotated[
        Annotated[str, AfterValidator(_text)] | None,
        _about(
            "PEM certificate chain (a file) the listener offers STARTTLS with, for the name "
            "the MX record points at; with `inbound_tls_key`. Without it replies arrive "
            "unencrypted."
        ),
    ] = None
    inbound_tls_key: Annotated[
        Annotated[str, AfterValidator(_text)] | None,
        _about("The certificate's private key (a PEM file)."),
    ] = None
    timeout: Annotated[
        float, _seconds(300), _about("Seconds the relay has for each step of one send.")
    ] = EmailConfig.timeout
    max_message_bytes: Annotated[
        int,
        _count(10_000, 100 << 20),
        _about("Largest reply the listener takes, attachments included; past it: 552."),
    ] = EmailConfig.max_message_bytes
    require_dkim: Annotated[
        Switch,
        _about(
            "A reply answers only when its DKIM signature verifies for the asked address's "
            "domain (as approvals by reply demand); else coming `From` that address suffices."
        ),
    ] = EmailConfig.require_dkim

    @property
    def given(self) -> bool:
        return bool(self.model_fields_set)

    def config(self) -> EmailConfig | None:
        if self.smtp_host is None or self.from_ is None or self.reply_domain is None:
            return None
        port_465 = self.smtp_port == 465
        return EmailConfig(
            smtp_host=self.smtp_host,
            from_addr=self.from_,
            reply_domain=self.reply_domain,
            smtp_port=self.smtp_port,
            smtp_username=self.smtp_username,
            smtp_password=self.smtp_password.get_secret_value() if self.smtp_password else None,
            starttls=self.starttls and not port_465,
            use_tls=port_465,
            timeout=self.timeout,
            inbound_host=self.inbound_host,
            inbound_port=self.inbound_port,
            max_message_bytes=self.max_message_bytes,
            require_dkim=self.require_dkim,
            inbound_tls_cert=_expand(self.inbound_tls_cert),
            inbound_tls_key=_expand(self.inbound_tls_key),
        )

    def problems(self) -> list[str]:
        if not self.given:
            return []
        needs = {"smtp_host": self.smtp_host, "from": self.from_, "reply_domain": self.reply_domain}
        missing = [key for key, value in needs.items() if value is None]
        problems: list[str] = []
        if missing:
            problems.append(
                f"email is half-configured: missing {_keys('email', missing)}: set "
                + " and ".join(_how("email", key) for key in missing)
            )
        if (self.smtp_username is None) != (self.smtp_password is None):
            problems.append(
                "email.smtp_username and email.smtp_password go together (the relay's login)"
            )
        tls = {"inbound_tls_cert": self.inbound_tls_cert, "inbound_tls_key": self.inbound_tls_key}
        if (tls["inbound_tls_cert"] is None) != (tls["inbound_tls_key"] is None):
            problems.append(
                "email.inbound_tls_cert and email.inbound_tls_key go together (the listener's "
                "certificate and its key)"
            )
        for key, value in tls.items():
            if value is not None and not Path(_expand(value) or "").is_file():
                problems.append(f"email.{key}: no such file")
        return problems


class VoiceSettings(_Strict):
    model: Annotated[
        Text | None,
        _about(
            "Chat model of the voice agent and of call summaries, as `init_chat_model` takes it "
            "(`openai:gpt-4o-mini`); without it calls stay on the sandbox."
        ),
    ] = None
    mode: Annotated[
        Literal["gather", "relay"],
        _about(
            "How calls talk, on Twilio and Telnyx alike: `gather` turn by turn (`<Gather>` "
            "speech, the whole answer per turn), `relay` over ConversationRelay's WebSocket "
            "(`<public_url>/providers/twilio/relay` or `/providers/telnyx/relay`, `wss://` "
            "behind HTTPS): the model's words spoken as they come, the person may interrupt "
            "(docs/guides/voice-modes.md)."
        ),
    ] = "gather"


class LimitsSettings(_Strict):
    """Per-account request limits and request sizes."""

    rate_limit_requests: Annotated[
        int,
        _count(1, 1_000_000),
        _about(
            "Requests an account may make per `rate_limit_window`; past it: 429 `rate_limited` "
            "with `Retry-After`."
        ),
    ] = ServiceConfig.rate_limit_requests
    rate_limit_window: Annotated[
        float, _seconds(86_400), _about("The window the rate limit counts requests in.")
    ] = ServiceConfig.rate_limit_window
    max_body_bytes: Annotated[
        int,
        _count(1024, 1 << 30),
        _about("Largest request body in bytes; past it: 413 `payload_too_large`."),
    ] = ServiceConfig.max_body_bytes
    max_status_wait: Annotated[
        float,
        _seconds(3600),
        _about(
            "Longest `?wait=` a status or events long-poll may hold (a larger `wait` is a 400)."
        ),
    ] = ServiceConfig.max_status_wait
    idempotency_ttl: Annotated[
        float,
        _seconds(30 * 86_400, low=60),
        _about(
            "How long an `Idempotency-Key` is remembered: a retry within it replays the first "
            "answer."
        ),
    ] = ServiceConfig.idempotency_ttl


class SpamSettings(_Strict):
    """The spam guard: the same text to many recipients suspends the account."""

    recipients: Annotated[
        int,
        _count(2, 1_000_000),
        _about(
            "The same text sent to this many distinct recipients within `window` suspends the "
            "account (403 `account_suspended`)."
        ),
    ] = ServiceConfig.spam_recipients
    window: Annotated[
        float, _seconds(30 * 86_400), _about("The window the spam guard counts recipients in.")
    ] = ServiceConfig.spam_window


class WebhooksSettings(_Strict):
    """Delivery of webhook events to the accounts' endpoints."""

    timeout: Annotated[
        float, _seconds(300), _about("Seconds a webhook endpoint has to answer one delivery.")
    ] = ServiceConfig.webhook_timeout
    retry_base: Annotated[
        float,
        _seconds(3600),
        _about("Delay before the first retry of a failed delivery; it doubles with each try."),
    ] = ServiceConfig.webhook_retry_base
    max_attempts: Annotated[
        int, _count(1, 100), _about("Tries of one delivery before it is given up.")
    ] = ServiceConfig.webhook_max_attempts
    concurrency: Annotated[
        int, _count(1, 10_000), _about("Deliveries in flight at once; the rest wait in the outbox.")
    ] = ServiceConfig.webhook_concurrency


class CallsSettings(_Strict):
    """How long call requests are held."""

    phone_call_limit: Annotated[
        float,
        _seconds(3600),
        _about(
            "How long `POST /phone/call` holds before answering 504 `timeout` (the spec's 5 "
            "minutes)."
        ),
    ] = ServiceConfig.phone_call_limit
    call_wait_limit: Annotated[
        float,
        _seconds(86_400),
        _about(
            "How long `POST /calls` with `waitForCallEnd` holds before returning the call "
            "`pending`."
        ),
    ] = ServiceConfig.call_wait_limit


class InboxSettings(_Strict):
    """How long a login to the inbox lasts."""

    session_lifetime: Annotated[
        float,
        _seconds(30 * 86_400, low=60),
        _about(
            "An inbox login ends this long after it was made, however active (then the login "
            "page asks for the API key again)."
        ),
    ] = ServiceConfig.inbox_session_lifetime
    session_idle: Annotated[
        float,
        _seconds(30 * 86_400, low=60),
        _about(
            "An inbox login unused this long ends (an open inbox page keeps it in use); "
            "logging out or rotating the key ends it at once."
        ),
    ] = ServiceConfig.inbox_session_idle


class HttpSettings(_Strict):
    """The service's connections: how long a request may take to arrive, how many
    connections one client address may hold (``humanwire.server.connections``)."""

    head_timeout: Annotated[
        float,
        _seconds(3600),
        _about(
            "Seconds a client has to send a request's head (from the connection's start; on a "
            "kept-alive connection, from the request's first byte); past it the connection is "
            "closed. Never limits the answer: held requests and event streams go on."
        ),
    ] = ServiceConfig.head_timeout
    body_timeout: Annotated[
        float,
        _seconds(3600),
        _about(
            "Seconds a client has to send a request's body once its head is in; past it the "
            "connection is closed."
        ),
    ] = ServiceConfig.body_timeout
    max_connections_per_address: Annotated[
        int,
        _count(0, 1_000_000),
        _about(
            "Connections one client address (an IPv6 /64) may hold open; past it a new one is "
            "answered 429 `rate_limited` and closed. Counted by the TCP peer; a peer in "
            "`trusted_proxies` is not bounded (a proxy bounds its own clients). `0`: no bound."
        ),
    ] = ServiceConfig.max_connections_per_address


class AuditSettings(_Strict):
    """Signed checkpoints of the accounts' audit logs (docs/operating/security.md, "The
    audit log")."""

    signing_key: Annotated[
        Annotated[SecretStr, AfterValidator(_signing_key)] | None,
        _about(
            "The Ed25519 key audit checkpoints are signed with: base64 of its 32-byte seed "
            "(`humanwire audit keygen` makes one). Keep it out of the database's reach (the "
            "environment, a secret store); unset: no checkpoints. Needs `humanwire[audit]`."
        ),
    ] = None
    checkpoint_every: Annotated[
        float,
        _seconds(86_400, low=1),
        _about(
            "Seconds between two checkpoints: each account's head is signed, stored and "
            "published as an `audit.checkpoint` event when it moved since the last one."
        ),
    ] = ServiceConfig.audit_checkpoint_every

    def problems(self) -> list[str]:
        from .approvals.checkpoints import key_problem

        problem = key_problem() if self.signing_key is not None else None
        return [] if problem is None else [f"audit.signing_key: {problem}"]


class AddressSettings(_Strict):
    """How ``address`` form fields are checked (docs/guides/checking-addresses.md)."""

    provider: Annotated[
        Annotated[str, AfterValidator(_one_of("structural", "google", "smarty", "nominatim"))],
        _about(
            "Who checks `address` form fields: `structural` (the shape, offline), `google` "
            "(Address Validation API), `smarty` (US Street and International) or `nominatim` "
            "(your own Nominatim or Photon at `url`)."
        ),
    ] = AddressConfig.provider
    api_key: Annotated[
        Secret | None, _about("Google: the Maps Platform API key (Address Validation API on).")
    ] = None
    auth_id: Annotated[Text | None, _about("Smarty: the secret key's Auth ID.")] = None
    auth_token: Annotated[Secret | None, _about("Smarty: the secret key's Auth Token.")] = None
    url: Annotated[
        HttpURL | None,
        _about(
            "Nominatim: your own server (`https://nominatim.example.com`), or Photon's `…/api`; "
            "never the public Nominatim (its usage policy forbids this use)."
        ),
    ] = None
    api_base: Annotated[
        HttpURL | None,
        _about("Google or Smarty: another address than the provider's own; tests use a fake."),
    ] = None
    region: Annotated[
        Annotated[str, AfterValidator(_matching(r"[A-Za-z]{2}", "a two-letter country code"))]
        | None,
        _about(
            "The country (ISO 3166-1 alpha-2, e.g. `US`) assumed for an address that names "
            "none; Smarty uses its US API for the US and unnamed countries."
        ),
    ] = None
    timeout: Annotated[
        float,
        _seconds(60),
        _about(
            "Seconds the provider has to answer one check; past it the address is unchecked "
            "(see `on_unavailable`)."
        ),
    ] = AddressConfig.timeout
    on_unavailable: Annotated[
        Annotated[str, AfterValidator(_one_of("accept", "refuse"))],
        _about(
            "An address the provider could not check (slow, down, over quota): `refuse` asks "
            "the person to send again later, `accept` takes it as typed; the person is told "
            "either way and keeps what they typed."
        ),
    ] = AddressConfig.on_unavailable

    @property
    def given(self) -> bool:
        return bool(self.model_fields_set)

    def config(self) -> AddressConfig:
        provider: Any = self.provider
        on_unavailable: Any = self.on_unavailable
        return AddressConfig(
            provider=provider,
            api_key=self.api_key.get_secret_value() if self.api_key else None,
            auth_id=self.auth_id,
            auth_token=self.auth_token.get_secret_value() if self.auth_token else None,
            url=self.url,
            api_base=self.api_base,
            region=self.region.upper() if self.region else None,
            timeout=self.timeout,
            on_unavailable=on_unavailable,
        )

    def problems(self) -> list[str]:
        needs = {
            "google": ("api_key",),
            "smarty": ("auth_id", "auth_token"),
            "nominatim": ("url",),
        }.get(self.provider, ())
        missing = [key for key in needs if getattr(self, key) is None]
        problems: list[str] = []
        if missing:
            problems.append(
                f"address.provider {self.provider} needs {_keys('address', missing)}: set "
                + " and ".join(_how("address", key) for key in missing)
            )
        host = urlsplit(self.url).hostname if self.url else None
        if self.provider == "nominatim" and host == "nominatim.openstreetmap.org":
            problems.append(
                "address.url: the public Nominatim's usage policy forbids checking a "
                "service's form answers with it; run your own Nominatim or Photon"
            )
        return problems


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
            from .embedded import embedded_home

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
        problems += self.address.problems()
        problems += self.email.problems()
        problems += self.audit.problems()
        providers = [name for name in ("twilio", "telnyx", "slack") if getattr(self, name).given]
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
        from .runner import is_loopback

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
            email=self.email.config(),
            voice_model=self.voice.model,
            voice_mode=self.voice.mode,
            address=self.address.config(),
            **{field: self.value(key) for key, field in SERVICE_CONFIG_FIELDS.items()},
            metrics_token=(
                self.metrics_token.get_secret_value() if self.metrics_token is not None else None
            ),
            trusted_proxies=self.trusted_proxies,
            audit_signing_key=(
                self.audit.signing_key.get_secret_value()
                if self.audit.signing_key is not None
                else None
            ),
        )
        if self.public_url is not None:
            config.public_url = self.public_url
        return replace(config, **overrides) if overrides else config


# -- keys, variables, sources ------------------------------------------------------------
def _section_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) is not None:
        for arg in get_args(annotation):
            found = _section_model(arg)
            if found is not None:
                return found
    return None


def _model_at(path: Iterable[str]) -> type[BaseModel] | None:
    model: type[BaseModel] | None = Settings
    for name in path:
        field = model.model_fields.get(name) if model is not None else None
        model = _section_model(field.annotation) if field is not None else None
    return model


def _attribute(model: type[BaseModel], key: str) -> str:
    """The attribute of a key (``from`` → ``from_``: keys that are Python keywords have
    an alias)."""
    for name, field in model.model_fields.items():
        if (field.alias or name) == key:
            return name
    return key


def env_var_names() -> dict[str, str]:
    """Dotted key → its environment variable, walked from the model: top-level keys as
    ``HUMANWIRE_<KEY>``, section keys as ``HUMANWIRE_<SECTION>_<KEY>``; tables inside a
    section (``twilio.whatsapp_templates``) have none."""
    names: dict[str, str] = {}
    for name, field in Settings.model_fields.items():
        section = _section_model(field.annotation)
        if section is None:
            names[name] = f"{ENV_PREFIX}{name.upper()}"
            continue
        for attribute, inner in section.model_fields.items():
            key = inner.alias or attribute
            if _section_model(inner.annotation) is None:
                names[f"{name}.{key}"] = f"{ENV_PREFIX}{name.upper()}_{key.upper()}"
    return names


def _keys(section: str, keys: Iterable[str]) -> str:
    return " and ".join(f"{section}.{key}" for key in keys)


def _how(section: str | None, key: str) -> str:
    dotted = f"{section}.{key}" if section else key
    where = f"[{section}] {key}" if section else key
    return f"in the file ({where}) or as {env_var_names()[dotted]}"


def _leaves(table: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            yield from _leaves(value, f"{dotted}.")
        elif not isinstance(value, Mapping):
            yield dotted, value


def _put(tree: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    node = tree
    for name in parents:
        child = node.get(name)
        if not isinstance(child, dict):
            child = node[name] = {}
        node = child
    node[last] = value


def _read_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            data: dict[str, Any] = tomllib.load(handle)
            return data
    except FileNotFoundError:
        raise SettingsError([f"config file {path}: not found"]) from None
    except OSError as exc:
        raise SettingsError([f"config file {path}: cannot be read ({exc.strerror})"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError([f"config file {path}: invalid TOML: {exc}"]) from None


def load_settings(
    config_path: str | Path | None,
    env: Mapping[str, str],
    flags: Mapping[str, Any],
) -> Settings:
    """The settings from the TOML file at ``config_path`` (None: no file), the
    environment ``env`` and ``flags`` (keys of :data:`FLAG_KEYS`; None means not given),
    flags first, then the environment, then the file, then the defaults.

    Raises :class:`SettingsError` on an unreadable file, an unknown key, a bad value or
    a half-configured provider."""
    values: dict[str, tuple[Any, str]] = {}
    if config_path is not None:
        path = Path(config_path).expanduser()
        for key, value in _leaves(_read_file(path)):
            if (
                key == "db"
                and isinstance(value, str)
                and value.strip() not in ("", ":memory:")
                and not is_database_url(value.strip())
            ):
                db = Path(value.strip()).expanduser()
                value = str(db if db.is_absolute() else path.parent / db)
            values[key] = (value, f"in {path}")
    for key, name in env_var_names().items():
        raw = env.get(name)
        if raw is not None and raw.strip():
            values[key] = (raw, f"from environment variable {name}")
    url = env.get(DATABASE_URL_ENV)
    if url is not None and url.strip() and env_var_names()["db"] not in env:
        # The usual name for a database URL; HUMANWIRE_DB wins when both are set.
        values["db"] = (url, f"from environment variable {DATABASE_URL_ENV}")
    for key, value in flags.items():
        if key not in FLAG_KEYS:
            raise SettingsError([f"{key}: there is no flag for it"])
        if value is not None:
            values[key] = (value, f"from flag --{key.replace('_', '-')}")

    tree: dict[str, Any] = {}
    for key, (value, _source) in values.items():
        _put(tree, key, value)
    sources = {key: source for key, (_value, source) in values.items()}
    try:
        settings = Settings.model_validate(tree)
    except ValidationError as exc:
        raise SettingsError(_explain(error, sources) for error in exc.errors()) from None
    settings._sources.update(sources)
    settings.check()
    return settings


_MESSAGES = {
    "model_type": "must be a table",
    "dict_type": "must be a table",
    "string_type": "must be a string",
    "tuple_type": "must be a list of phone numbers (or one comma-separated string)",
}


def _explain(error: Any, sources: Mapping[str, str]) -> str:
    loc = [str(part) for part in error["loc"] if isinstance(part, str)]
    key = ".".join(loc)
    shown = key + "".join(f"[{part}]" for part in error["loc"] if isinstance(part, int))
    prefixes = [".".join(loc[:n]) for n in range(len(loc), 0, -1)]
    # The key itself or the section it is in; for a whole table, a key inside it.
    source = next((sources[prefix] for prefix in prefixes if prefix in sources), None)
    if source is None:
        source = next((where for k, where in sources.items() if k.startswith(f"{key}.")), None)
    kind = error["type"]
    if kind == "extra_forbidden":
        message = "unknown key"
        model = _model_at(loc[:-1])
        if model is not None:
            keys = [field.alias or name for name, field in model.model_fields.items()]
            close = difflib.get_close_matches(loc[-1], keys, n=1)
            if close:
                message += f" (did you mean {'.'.join([*loc[:-1], close[0]])}?)"
    elif kind == "value_error":
        message = str(error["ctx"]["error"])
    elif kind == "tuple_type" and key == "trusted_proxies":
        message = "must be a list of IP addresses or networks (or one comma-separated string)"
    else:
        message = _MESSAGES.get(kind, str(error["msg"]))
    return f"{shown}: {message} ({source})" if source else f"{shown}: {message}"


# -- the reference and the effective configuration ----------------------------------------
def _metadata(annotation: Any) -> Iterable[Any]:
    """Every ``Annotated`` metadata item inside ``annotation`` (through unions)."""
    args = get_args(annotation)
    if get_origin(annotation) is Annotated:
        yield from args[1:]
        args = args[:1]
    for arg in args:
        yield from _metadata(arg)


def _types(annotation: Any) -> set[Any]:
    args = get_args(annotation)
    if get_origin(annotation) is Annotated:
        args = args[:1]
    if not args:
        return {annotation}
    found: set[Any] = {get_origin(annotation)}
    for arg in args:
        found |= _types(arg)
    return found


def _kind(field: FieldInfo) -> str:
    """What a key takes, in words: bounds of numbers, the form of special strings."""
    types = _types(field.annotation)
    if tuple in types:
        if any(getattr(item, "func", None) is _proxy for item in _metadata(field.annotation)):
            return "list of IP addresses or networks"
        return "list of E.164 numbers"
    for item in [*field.metadata, *_metadata(field.annotation)]:
        func = getattr(item, "func", None)
        words = getattr(func, "words", None)
        if words:
            return "/".join(words)
        if isinstance(func, _Number):
            return func.kind
        if func is _port:
            return "port, 0 to 65535"
        if func in (_e164, _whatsapp_sender):
            return "E.164 number"
        if func is _http_url:
            return "http(s) URL"
    if SecretStr in types:
        return "secret"
    return "text"


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, tuple):
        return ", ".join(value)
    return str(value)


def _walk(
    model: type[BaseModel], prefix: str = ""
) -> Iterable[tuple[str, FieldInfo, type[BaseModel] | None]]:
    """``(dotted key, field, section model or None)`` of every key, depth first, in the
    order of the model: top-level keys, then each section's."""
    fields = list(model.model_fields.items())
    leaves = [(name, field) for name, field in fields if _section_model(field.annotation) is None]
    tables = [(name, field) for name, field in fields if _section_model(field.annotation)]
    for name, field in leaves:
        yield f"{prefix}{field.alias or name}", field, None
    for name, field in tables:
        section = _section_model(field.annotation)
        yield f"{prefix}{name}", field, section
        assert section is not None
        yield from _walk(section, f"{prefix}{name}.")


REFERENCE_START = (
    "<!-- configuration reference: generated by python -m humanwire.server.settings -->"
)
REFERENCE_END = "<!-- end of the configuration reference -->"


def config_reference() -> str:
    """The configuration reference (Markdown, between its marker comments), walked from
    the model: every key, its environment variable, what it takes and its default, and
    its description. ``python -m humanwire.server.settings --write
    docs/operating/configuration.md`` puts it in that page; a test keeps the two equal."""
    variables = env_var_names()
    lines = [
        REFERENCE_START,
        "",
        "| key | environment | takes (default) | meaning |",
        "|---|---|---|---|",
    ]
    for key, field, section in _walk(Settings):
        if section is not None:
            continue
        variable = f"`{variables[key]}`" if key in variables else "— (file only)"
        if key == "db":
            variable += ", `HUMANWIRE_DATABASE_URL`"
        default = field.get_default(call_default_factory=True)
        if key == "db":
            shown = "`~/.humanwire/humanwire.db`"
        elif default in (None, ()):
            shown = "none"
        elif isinstance(default, bool) and _kind(field) == "on/off":
            shown = "`on`" if default else "`off`"
        else:
            shown = f"`{_literal(default)}`"
        about = (field.description or "").replace("|", "\\|")
        lines.append(f"| `{key}` | {variable} | {_kind(field)} ({shown}) | {about} |")
    lines += ["", REFERENCE_END]
    return "\n".join(lines)


def write_reference(path: str | Path) -> bool:
    """Replaces the reference block in the file at ``path``; True if it changed."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    start, end = text.index(REFERENCE_START), text.index(REFERENCE_END) + len(REFERENCE_END)
    updated = text[:start] + config_reference() + text[end:]
    if updated != text:
        path.write_text(updated, encoding="utf-8")
    return updated != text


_MASK = "********"


def _shown_source(source: str) -> str:
    if source.startswith("in "):
        return f"file {source[3:]}"
    if source.startswith("from environment variable "):
        return f"env {source[len('from environment variable ') :]}"
    return source.removeprefix("from ")


def effective_configuration(settings: Settings) -> list[tuple[str, str, str]]:
    """``(key, value, source)`` of every key, as the service will use it: secrets masked,
    a database URL's password replaced, account SIDs shortened; ``source`` is
    ``default``, ``file PATH``, ``env HUMANWIRE_…`` or ``flag --…``."""
    from .config import mask_sid
    from .store import redact

    rows: list[tuple[str, str, str]] = []
    for key, field, section in _walk(Settings):
        if section is not None:
            continue
        value = settings.value(key)
        if isinstance(value, bool) and _kind(field) == "on/off":
            shown = "on" if value else "off"
        elif key == "db":
            shown = redact(settings.db_path)
        elif value is None:
            shown = "(not set)"
        elif isinstance(value, SecretStr):
            shown = _MASK
        elif key in ("twilio.account_sid", "telnyx.account_sid", "telnyx.connection_id"):
            shown = mask_sid(value)
        else:
            shown = _literal(value)
        source = settings.source(key)
        if source == "default" and key.count(".") == 2:
            # A table inside a section (whatsapp_templates): its own source, else the
            # section's (the file), else the default.
            source = settings.source(key.rsplit(".", 1)[0])
        rows.append((key, shown, _shown_source(source)))
    return rows


def format_configuration(rows: Iterable[tuple[str, str, str]]) -> str:
    """Aligned columns ``key  value  source``, one key a line, under a header line."""
    rows = list(rows)
    key_width = max(len(key) for key, _value, _source in rows)
    value_width = min(max(len(value) for _key, value, _source in rows), 48)
    lines = [
        "# humanwire serve: effective configuration (flags > HUMANWIRE_* > file > defaults)",
        f"{'key':<{key_width}}  {'value':<{value_width}}  source",
    ]
    for key, value, source in rows:
        lines.append(f"{key:<{key_width}}  {value:<{value_width}}  {source}".rstrip())
    return "\n".join(lines)


def _main(argv: list[str]) -> int:
    if argv == ["--reference"]:
        print(config_reference())
        return 0
    if len(argv) == 2 and argv[0] == "--write":
        changed = write_reference(argv[1])
        print(f"{argv[1]}: {'updated' if changed else 'up to date'}")
        return 0
    print(
        "usage: python -m humanwire.server.settings --reference"
        " | --write docs/operating/configuration.md"
    )
    return 2


if __name__ == "__main__":  # pragma: no cover - the reference's test runs the functions
    sys.exit(_main(sys.argv[1:]))
