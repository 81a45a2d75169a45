"""``humanwire serve``'s settings: a TOML file, the ``HUMANWIRE_*`` environment and flags.

One precedence rule: flags beat the environment, which beats the file, which beats the
defaults (PROVIDERS.md "Configuration")::

    settings = load_settings("humanwire.toml", os.environ, {"port": 8080})
    config = settings.to_service_config()

Every key of the file can come from the environment as ``HUMANWIRE_<SECTION>_<KEY>``
(top-level keys as ``HUMANWIRE_<KEY>``), except the tables inside a section
(``twilio.whatsapp_templates``), which only the file has. An empty variable counts as
unset. A relative ``db`` in the file is relative to the file's directory.

Nothing unknown or invalid is let through: an unknown key, a bad value or a
half-configured provider raises :class:`SettingsError`, naming the key and where its
value came from (the file, the variable, the flag), never the value of a secret.
"""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin
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
from pydantic_core import PydanticCustomError

from humanwire.types._base import check_e164

from .config import ServiceConfig, SlackConfig, TwilioConfig
from .store import is_database_url

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]

__all__ = [
    "DATABASE_URL_ENV",
    "ENV_PREFIX",
    "FLAG_KEYS",
    "Settings",
    "SettingsError",
    "SlackSettings",
    "TwilioSettings",
    "VoiceSettings",
    "WhatsAppTemplates",
    "env_var_names",
    "load_settings",
]

ENV_PREFIX = "HUMANWIRE_"
DATABASE_URL_ENV = "HUMANWIRE_DATABASE_URL"
"""Also read for ``db`` (a ``postgresql://`` URL), unless ``HUMANWIRE_DB`` is set."""
FLAG_KEYS = ("host", "port", "db", "public_url", "sandbox", "log_format", "log_level")
"""The keys ``humanwire serve`` has flags for (``--public-url`` for ``public_url``)."""


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

    return parse


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


Text = Annotated[str, AfterValidator(_token)]
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


class WhatsAppTemplates(_Strict):
    """Content template SIDs of the spec's shared-account WhatsApp templates."""

    notification: ContentSid | None = None
    request: ContentSid | None = None
    form: ContentSid | None = None


class TwilioSettings(_Strict):
    account_sid: AccountSid | None = None
    auth_token: Secret | None = None
    api_base: HttpURL = TwilioConfig.api_base
    sms_from: E164 | None = None
    whatsapp_from: Annotated[str, AfterValidator(_whatsapp_sender)] | None = None
    whatsapp_templates: WhatsAppTemplates = Field(default_factory=WhatsAppTemplates)
    numbers: Annotated[tuple[E164, ...], BeforeValidator(_comma_separated)] = ()
    buy_numbers: Switch = False

    @property
    def given(self) -> bool:
        """Any key of the section was given: then it has to be complete."""
        return bool(self.model_fields_set)


class SlackSettings(_Strict):
    bot_token: BotToken | None = None
    signing_secret: Secret | None = None
    api_base: HttpURL = SlackConfig.api_base
    client_id: ClientId | None = None
    client_secret: Secret | None = None

    @property
    def given(self) -> bool:
        return bool(self.model_fields_set)


class VoiceSettings(_Strict):
    model: Text | None = None
    """The voice agent's chat model as ``init_chat_model`` takes it (``openai:gpt-4o-mini``)."""


class Settings(_Strict):
    """The settings of ``humanwire serve``; build with :func:`load_settings`."""

    host: Text = "127.0.0.1"
    port: Port = 8765
    db: Annotated[str, AfterValidator(_text)] | None = None
    """SQLite file; None: ``~/.humanwire/humanwire.db`` (``HUMANWIRE_HOME``)."""
    public_url: HttpURL | None = None
    sandbox: OnOff = True
    replica_lease: Annotated[float, Field(gt=0, le=3600)] = 10.0
    """Replicas (PostgreSQL): seconds without a heartbeat before a replica counts as dead."""
    metrics_token: Secret | None = None
    """``GET /metrics`` from anywhere with ``Authorization: Bearer <it>``; unset: loopback only."""
    log_format: Annotated[str, AfterValidator(_one_of("text", "json"))] = "text"
    log_level: Annotated[str, AfterValidator(_one_of("debug", "info", "warning", "error"))] = "info"
    twilio: TwilioSettings = Field(default_factory=TwilioSettings)
    slack: SlackSettings = Field(default_factory=SlackSettings)
    voice: VoiceSettings = Field(default_factory=VoiceSettings)

    _sources: dict[str, str] = PrivateAttr(default_factory=dict)

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
        providers = [name for name in ("twilio", "slack") if getattr(self, name).given]
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
            twilio=self.twilio_config(),
            slack=self.slack_config(),
            voice_model=self.voice.model,
            replica_lease=self.replica_lease,
            metrics_token=(
                self.metrics_token.get_secret_value() if self.metrics_token is not None else None
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
        for key, inner in section.model_fields.items():
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
            close = difflib.get_close_matches(loc[-1], list(model.model_fields), n=1)
            if close:
                message += f" (did you mean {'.'.join([*loc[:-1], close[0]])}?)"
    elif kind == "value_error":
        message = str(error["ctx"]["error"])
    else:
        message = _MESSAGES.get(kind, str(error["msg"]))
    return f"{shown}: {message} ({source})" if source else f"{shown}: {message}"
