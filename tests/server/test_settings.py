"""``humanwire serve``'s settings: file < environment < flags, validation naming the key
and its source, half-configured providers refused, secrets never shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from humanwire.server.config import (
    EmailConfig,
    ServiceConfig,
    SlackConfig,
    TwilioConfig,
    channel_routes,
    startup_lines,
)
from humanwire.server.runtime.settings import (
    Settings,
    SettingsError,
    effective_configuration,
    env_var_names,
    load_settings,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "docs" / "humanwire.example.toml"

SID = "AC0123456789abcdef0123456789abcdef"
TOKEN = "tok-5ecret-d0-not-print"
BOT_TOKEN = "xoxb-111-222-5ecretbot"
SIGNING = "signing-5ecret-value"
CLIENT_SECRET = "client-5ecret-value"
TEMPLATE = "HX0123456789abcdef0123456789abcdef"
TWILIO = f"""
public_url = "https://hw.example.com"
[twilio]
account_sid = "{SID}"
auth_token = "{TOKEN}"
sms_from = "+14155550100"
"""


def write(tmp_path: Path, text: str, name: str = "humanwire.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def problems(
    tmp_path: Path,
    text: str | None = None,
    env: dict[str, str] | None = None,
    flags: dict[str, Any] | None = None,
) -> list[str]:
    path = write(tmp_path, text) if text is not None else None
    with pytest.raises(SettingsError) as info:
        load_settings(path, env or {}, flags or {})
    assert str(info.value) == "; ".join(info.value.problems)
    return info.value.problems


# -- precedence ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("key", "file_value", "env_value", "flag_value", "expected"),
    [
        ("host", '"10.0.0.1"', "10.0.0.2", "10.0.0.3", ("10.0.0.1", "10.0.0.2", "10.0.0.3")),
        ("port", "9001", "9002", 9003, (9001, 9002, 9003)),
        (
            "public_url",
            '"https://file.example.com/"',
            "https://env.example.com",
            "https://flag.example.com",
            ("https://file.example.com", "https://env.example.com", "https://flag.example.com"),
        ),
        ("sandbox", "false", "on", "off", (False, True, False)),
        ("db", '"/data/file.db"', "/data/env.db", "/data/flag.db", None),
    ],
)
def test_flags_beat_environment_beats_file(
    tmp_path: Path, key: str, file_value: str, env_value: str, flag_value: Any, expected: Any
) -> None:
    path = write(tmp_path, f"{key} = {file_value}\n")
    variable = env_var_names()[key]
    from_file = load_settings(path, {}, {})
    from_env = load_settings(path, {variable: env_value}, {})
    from_flag = load_settings(path, {variable: env_value}, {key: flag_value})
    values = tuple(getattr(s, key) for s in (from_file, from_env, from_flag))
    if expected is None:  # paths: as given
        expected = ("/data/file.db", "/data/env.db", "/data/flag.db")
    assert values == expected
    assert from_file.source(key) == f"in {path}"
    assert from_env.source(key) == f"from environment variable {variable}"
    assert from_flag.source(key) == f"from flag --{key.replace('_', '-')}"


def test_a_flag_left_none_does_not_hide_the_environment(tmp_path: Path) -> None:
    path = write(tmp_path, "port = 9001\nhost = '10.0.0.1'\n")
    settings = load_settings(path, {"HUMANWIRE_PORT": "9002"}, {"port": None, "host": None})
    assert (settings.host, settings.port) == ("10.0.0.1", 9002)


def test_section_keys_from_environment_beat_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, TWILIO + 'whatsapp_from = "+14155550101"\n')
    settings = load_settings(
        path,
        {
            "HUMANWIRE_TWILIO_SMS_FROM": "+14155550109",
            "HUMANWIRE_TWILIO_NUMBERS": "+14155550102, +14155550103,",
            "HUMANWIRE_TWILIO_BUY_NUMBERS": "TRUE",
        },
        {},
    )
    twilio = settings.to_service_config().twilio
    assert twilio is not None
    assert twilio.sms_from == "+14155550109"  # environment
    assert twilio.whatsapp_from == "+14155550101"  # file
    assert twilio.numbers == ("+14155550102", "+14155550103")
    assert twilio.buy_numbers is True
    assert twilio.auth_token == TOKEN
    assert settings.source("twilio.numbers") == "from environment variable HUMANWIRE_TWILIO_NUMBERS"


def test_a_whole_provider_from_the_environment_alone(tmp_path: Path) -> None:
    env = {
        "HUMANWIRE_PUBLIC_URL": "https://hw.example.com",
        "HUMANWIRE_SLACK_BOT_TOKEN": BOT_TOKEN,
        "HUMANWIRE_SLACK_SIGNING_SECRET": SIGNING,
        "HUMANWIRE_VOICE_MODEL": "openai:gpt-4o-mini",
    }
    config = load_settings(None, env, {}).to_service_config()
    assert config.slack == SlackConfig(bot_token=BOT_TOKEN, signing_secret=SIGNING)
    assert config.voice_model == "openai:gpt-4o-mini"
    assert config.public_url == "https://hw.example.com"


def test_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUMANWIRE_HOME", str(tmp_path / "home"))
    settings = load_settings(None, {}, {})
    assert (settings.host, settings.port, settings.sandbox) == ("127.0.0.1", 8765, True)
    config = settings.to_service_config()
    assert config.db_path == str(tmp_path / "home" / "humanwire.db")
    assert config.local_mode is True and config.sandbox_enabled is True
    assert (config.twilio, config.slack, config.voice_model) == (None, None, None)
    assert channel_routes(config) == {
        "sms": "sandbox",
        "whatsapp": "sandbox",
        "slack": "sandbox",
        "call": "sandbox",
        "email": "sandbox",
    }


def test_empty_variables_count_as_unset(tmp_path: Path) -> None:
    path = write(tmp_path, "port = 9001\n")
    assert load_settings(path, {"HUMANWIRE_PORT": "  "}, {}).port == 9001


def test_sandbox_live_channels_from_the_file_and_the_environment(tmp_path: Path) -> None:
    assert load_settings(None, {}, {}).to_service_config().sandbox_live_channels is False
    path = write(tmp_path, 'sandbox_live_channels = "on"\n')
    assert load_settings(path, {}, {}).to_service_config().sandbox_live_channels is True
    env = {"HUMANWIRE_SANDBOX_LIVE_CHANNELS": "off"}
    assert load_settings(path, env, {}).to_service_config().sandbox_live_channels is False


def test_environment_names_are_the_documented_ones() -> None:
    # docs/providers.md "Configuration"; whatsapp_templates has no environment form.
    assert env_var_names() == {
        "host": "HUMANWIRE_HOST",
        "port": "HUMANWIRE_PORT",
        "db": "HUMANWIRE_DB",
        "public_url": "HUMANWIRE_PUBLIC_URL",
        "trusted_proxies": "HUMANWIRE_TRUSTED_PROXIES",
        "sandbox": "HUMANWIRE_SANDBOX",
        "sandbox_live_channels": "HUMANWIRE_SANDBOX_LIVE_CHANNELS",
        "db_pool_size": "HUMANWIRE_DB_POOL_SIZE",
        "replica_lease": "HUMANWIRE_REPLICA_LEASE",
        "unavailable_retry_after": "HUMANWIRE_UNAVAILABLE_RETRY_AFTER",
        "limits.rate_limit_requests": "HUMANWIRE_LIMITS_RATE_LIMIT_REQUESTS",
        "limits.rate_limit_window": "HUMANWIRE_LIMITS_RATE_LIMIT_WINDOW",
        "limits.max_body_bytes": "HUMANWIRE_LIMITS_MAX_BODY_BYTES",
        "limits.max_status_wait": "HUMANWIRE_LIMITS_MAX_STATUS_WAIT",
        "limits.idempotency_ttl": "HUMANWIRE_LIMITS_IDEMPOTENCY_TTL",
        "spam.recipients": "HUMANWIRE_SPAM_RECIPIENTS",
        "spam.window": "HUMANWIRE_SPAM_WINDOW",
        "webhooks.timeout": "HUMANWIRE_WEBHOOKS_TIMEOUT",
        "webhooks.retry_base": "HUMANWIRE_WEBHOOKS_RETRY_BASE",
        "webhooks.max_attempts": "HUMANWIRE_WEBHOOKS_MAX_ATTEMPTS",
        "webhooks.concurrency": "HUMANWIRE_WEBHOOKS_CONCURRENCY",
        "calls.phone_call_limit": "HUMANWIRE_CALLS_PHONE_CALL_LIMIT",
        "calls.call_wait_limit": "HUMANWIRE_CALLS_CALL_WAIT_LIMIT",
        "inbox.session_lifetime": "HUMANWIRE_INBOX_SESSION_LIFETIME",
        "inbox.session_idle": "HUMANWIRE_INBOX_SESSION_IDLE",
        "http.head_timeout": "HUMANWIRE_HTTP_HEAD_TIMEOUT",
        "http.body_timeout": "HUMANWIRE_HTTP_BODY_TIMEOUT",
        "http.max_connections_per_address": "HUMANWIRE_HTTP_MAX_CONNECTIONS_PER_ADDRESS",
        "metrics_token": "HUMANWIRE_METRICS_TOKEN",
        "log_format": "HUMANWIRE_LOG_FORMAT",
        "log_level": "HUMANWIRE_LOG_LEVEL",
        "twilio.account_sid": "HUMANWIRE_TWILIO_ACCOUNT_SID",
        "twilio.auth_token": "HUMANWIRE_TWILIO_AUTH_TOKEN",
        "twilio.api_base": "HUMANWIRE_TWILIO_API_BASE",
        "twilio.sms_from": "HUMANWIRE_TWILIO_SMS_FROM",
        "twilio.whatsapp_from": "HUMANWIRE_TWILIO_WHATSAPP_FROM",
        "twilio.numbers": "HUMANWIRE_TWILIO_NUMBERS",
        "twilio.buy_numbers": "HUMANWIRE_TWILIO_BUY_NUMBERS",
        "telnyx.api_key": "HUMANWIRE_TELNYX_API_KEY",
        "telnyx.public_key": "HUMANWIRE_TELNYX_PUBLIC_KEY",
        "telnyx.api_base": "HUMANWIRE_TELNYX_API_BASE",
        "telnyx.sms_from": "HUMANWIRE_TELNYX_SMS_FROM",
        "telnyx.messaging_profile_id": "HUMANWIRE_TELNYX_MESSAGING_PROFILE_ID",
        "telnyx.connection_id": "HUMANWIRE_TELNYX_CONNECTION_ID",
        "telnyx.account_sid": "HUMANWIRE_TELNYX_ACCOUNT_SID",
        "telnyx.numbers": "HUMANWIRE_TELNYX_NUMBERS",
        "telnyx.buy_numbers": "HUMANWIRE_TELNYX_BUY_NUMBERS",
        "telephony.order": "HUMANWIRE_TELEPHONY_ORDER",
        "slack.bot_token": "HUMANWIRE_SLACK_BOT_TOKEN",
        "slack.signing_secret": "HUMANWIRE_SLACK_SIGNING_SECRET",
        "slack.api_base": "HUMANWIRE_SLACK_API_BASE",
        "slack.client_id": "HUMANWIRE_SLACK_CLIENT_ID",
        "slack.client_secret": "HUMANWIRE_SLACK_CLIENT_SECRET",
        "telegram.bot_token": "HUMANWIRE_TELEGRAM_BOT_TOKEN",
        "telegram.webhook_secret": "HUMANWIRE_TELEGRAM_WEBHOOK_SECRET",
        "telegram.api_base": "HUMANWIRE_TELEGRAM_API_BASE",
        "discord.bot_token": "HUMANWIRE_DISCORD_BOT_TOKEN",
        "discord.application_id": "HUMANWIRE_DISCORD_APPLICATION_ID",
        "discord.public_key": "HUMANWIRE_DISCORD_PUBLIC_KEY",
        "discord.api_base": "HUMANWIRE_DISCORD_API_BASE",
        "whatsapp.provider": "HUMANWIRE_WHATSAPP_PROVIDER",
        "whatsapp.phone_number_id": "HUMANWIRE_WHATSAPP_PHONE_NUMBER_ID",
        "whatsapp.sender": "HUMANWIRE_WHATSAPP_SENDER",
        "whatsapp.access_token": "HUMANWIRE_WHATSAPP_ACCESS_TOKEN",
        "whatsapp.app_secret": "HUMANWIRE_WHATSAPP_APP_SECRET",
        "whatsapp.verify_token": "HUMANWIRE_WHATSAPP_VERIFY_TOKEN",
        "whatsapp.api_base": "HUMANWIRE_WHATSAPP_API_BASE",
        "whatsapp.api_version": "HUMANWIRE_WHATSAPP_API_VERSION",
        "whatsapp.template_language": "HUMANWIRE_WHATSAPP_TEMPLATE_LANGUAGE",
        "teams.app_id": "HUMANWIRE_TEAMS_APP_ID",
        "teams.app_password": "HUMANWIRE_TEAMS_APP_PASSWORD",
        "teams.certificate": "HUMANWIRE_TEAMS_CERTIFICATE",
        "teams.private_key": "HUMANWIRE_TEAMS_PRIVATE_KEY",
        "teams.tenant_id": "HUMANWIRE_TEAMS_TENANT_ID",
        "teams.token_url": "HUMANWIRE_TEAMS_TOKEN_URL",
        "teams.jwks_url": "HUMANWIRE_TEAMS_JWKS_URL",
        "email.smtp_host": "HUMANWIRE_EMAIL_SMTP_HOST",
        "email.smtp_port": "HUMANWIRE_EMAIL_SMTP_PORT",
        "email.smtp_username": "HUMANWIRE_EMAIL_SMTP_USERNAME",
        "email.smtp_password": "HUMANWIRE_EMAIL_SMTP_PASSWORD",
        "email.starttls": "HUMANWIRE_EMAIL_STARTTLS",
        "email.from": "HUMANWIRE_EMAIL_FROM",
        "email.reply_domain": "HUMANWIRE_EMAIL_REPLY_DOMAIN",
        "email.inbound_host": "HUMANWIRE_EMAIL_INBOUND_HOST",
        "email.inbound_port": "HUMANWIRE_EMAIL_INBOUND_PORT",
        "email.inbound_tls_cert": "HUMANWIRE_EMAIL_INBOUND_TLS_CERT",
        "email.inbound_tls_key": "HUMANWIRE_EMAIL_INBOUND_TLS_KEY",
        "email.timeout": "HUMANWIRE_EMAIL_TIMEOUT",
        "email.max_message_bytes": "HUMANWIRE_EMAIL_MAX_MESSAGE_BYTES",
        "email.require_dkim": "HUMANWIRE_EMAIL_REQUIRE_DKIM",
        "voice.model": "HUMANWIRE_VOICE_MODEL",
        "voice.mode": "HUMANWIRE_VOICE_MODE",
        "address.provider": "HUMANWIRE_ADDRESS_PROVIDER",
        "address.api_key": "HUMANWIRE_ADDRESS_API_KEY",
        "address.auth_id": "HUMANWIRE_ADDRESS_AUTH_ID",
        "address.auth_token": "HUMANWIRE_ADDRESS_AUTH_TOKEN",
        "address.url": "HUMANWIRE_ADDRESS_URL",
        "address.api_base": "HUMANWIRE_ADDRESS_API_BASE",
        "address.region": "HUMANWIRE_ADDRESS_REGION",
        "address.timeout": "HUMANWIRE_ADDRESS_TIMEOUT",
        "address.on_unavailable": "HUMANWIRE_ADDRESS_ON_UNAVAILABLE",
        "audit.signing_key": "HUMANWIRE_AUDIT_SIGNING_KEY",
        "audit.checkpoint_every": "HUMANWIRE_AUDIT_CHECKPOINT_EVERY",
        "approvals.grantable": "HUMANWIRE_APPROVALS_GRANTABLE",
        "approvals.max_grant": "HUMANWIRE_APPROVALS_MAX_GRANT",
    }


def test_other_humanwire_variables_are_not_settings(tmp_path: Path) -> None:
    # The client's variables share the prefix; serve ignores them.
    env = {"HUMANWIRE_API_KEY": "hw_x", "HUMANWIRE_SLACK_TO": "U0HUMAN0001", "HUMANWIRE_X": "1"}
    assert load_settings(None, env, {}).slack.given is False


# -- values ----------------------------------------------------------------------------
def test_switches_take_on_off_and_true_false(tmp_path: Path) -> None:
    for raw, expected in [("on", True), ("OFF", False), ("true", True), ("false", False)]:
        assert load_settings(None, {"HUMANWIRE_SANDBOX": raw}, {}).sandbox is expected
    assert load_settings(write(tmp_path, "sandbox = false\n"), {}, {}).sandbox is False
    text = TWILIO + "buy_numbers = true\n"
    assert load_settings(write(tmp_path, text), {}, {}).twilio.buy_numbers is True
    text = TWILIO + 'buy_numbers = "false"\n'
    assert load_settings(write(tmp_path, text), {}, {}).twilio.buy_numbers is False


def test_whatsapp_sender_may_carry_the_prefix(tmp_path: Path) -> None:
    text = TWILIO + 'whatsapp_from = "whatsapp:+14155550101"\n'
    config = load_settings(write(tmp_path, text), {}, {}).to_service_config()
    assert config.twilio is not None and config.twilio.whatsapp_from == "+14155550101"


def test_a_relative_db_in_the_file_is_next_to_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, 'db = "data/hw.db"\n')
    assert load_settings(path, {}, {}).db_path == str(tmp_path / "data" / "hw.db")
    assert load_settings(path, {"HUMANWIRE_DB": ":memory:"}, {}).db_path == ":memory:"


@pytest.mark.parametrize(
    ("text", "env", "flags", "expected"),
    [
        ("port = 70000\n", {}, {}, "port: must be a port number from 0 to 65535 (in {path})"),
        ("port = true\n", {}, {}, "port: must be a port number from 0 to 65535 (in {path})"),
        (
            "",
            {"HUMANWIRE_PORT": "eighty"},
            {},
            "port: must be a port number from 0 to 65535"
            " (from environment variable HUMANWIRE_PORT)",
        ),
        (
            "",
            {},
            {"public_url": "ftp://hw.example.com"},
            "public_url: must be an http(s) URL such as https://humanwire.example.com"
            " (from flag --public-url)",
        ),
        (
            'public_url = "https://hw.example.com/?x=1"\n',
            {},
            {},
            "public_url: must not have a query or fragment (in {path})",
        ),
        (
            "",
            {"HUMANWIRE_SANDBOX": "maybe"},
            {},
            "sandbox: must be on or off (from environment variable HUMANWIRE_SANDBOX)",
        ),
        (
            TWILIO.replace(SID, "AC123"),
            {},
            {},
            "twilio.account_sid: must be AC followed by 32 hex digits (in {path})",
        ),
        (
            TWILIO,
            {"HUMANWIRE_TWILIO_SMS_FROM": "4155550100"},
            {},
            "twilio.sms_from: must be a phone number in E.164 form, such as +14155550100"
            " (from environment variable HUMANWIRE_TWILIO_SMS_FROM)",
        ),
        (
            TWILIO,
            {"HUMANWIRE_TWILIO_NUMBERS": "+14155550102,+1999"},
            {},
            "twilio.numbers[1]: must be a phone number in E.164 form, such as +14155550100"
            " (from environment variable HUMANWIRE_TWILIO_NUMBERS)",
        ),
        (
            TWILIO + 'api_base = "localhost:9"\n',
            {},
            {},
            "twilio.api_base: must be an http(s) URL such as https://humanwire.example.com"
            " (in {path})",
        ),
        (
            TWILIO + 'buy_numbers = "sometimes"\n',
            {},
            {},
            "twilio.buy_numbers: must be true or false (in {path})",
        ),
        (
            TWILIO + '[twilio.whatsapp_templates]\nform = "HX12"\n',
            {},
            {},
            "twilio.whatsapp_templates.form: must be a Content template SID:"
            " HX followed by 32 hex digits (in {path})",
        ),
        (
            'twilio = "yes"\n',
            {},
            {},
            "twilio: must be a table (in {path})",
        ),
        (
            'public_url = "https://hw.example.com"\n[slack]\nbot_token = "xoxp-user"\n'
            'signing_secret = "s"\n',
            {},
            {},
            "slack.bot_token: must be a Slack bot token (xoxb-…) (in {path})",
        ),
        (
            "",
            {"HUMANWIRE_SLACK_CLIENT_ID": "my-app"},
            {},
            "slack.client_id: must be a Slack client ID such as 1234567890.123456"
            " (from environment variable HUMANWIRE_SLACK_CLIENT_ID)",
        ),
        ('[voice]\nmodel = ""\n', {}, {}, "voice.model: must not be empty (in {path})"),
    ],
)
def test_a_bad_value_names_the_key_and_its_source(
    tmp_path: Path, text: str, env: dict[str, str], flags: dict[str, Any], expected: str
) -> None:
    path = tmp_path / "humanwire.toml"
    assert problems(tmp_path, text, env, flags) == [expected.format(path=path)]


def test_every_bad_value_is_reported_at_once(tmp_path: Path) -> None:
    found = problems(tmp_path, "port = -1\nsandbox = 'maybe'\n", flags={"host": " "})
    assert [problem.split(":")[0] for problem in found] == ["host", "port", "sandbox"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            TWILIO.replace("account_sid", "acount_sid"),
            "twilio.acount_sid: unknown key (did you mean twilio.account_sid?) (in {path})",
        ),
        ("prot = 8080\n", "prot: unknown key (did you mean port?) (in {path})"),
        (
            "[twillio]\nsms_from = '+14155550100'\n",
            "twillio: unknown key (did you mean twilio?) (in {path})",
        ),
        (
            TWILIO + "[twilio.whatsapp_templates]\nreminder = 'HX1'\n",
            "twilio.whatsapp_templates.reminder: unknown key (in {path})",
        ),
    ],
)
def test_an_unknown_key_stops_start_up_naming_it(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "humanwire.toml"
    assert problems(tmp_path, text) == [expected.format(path=path)]


def test_an_unreadable_or_invalid_file(tmp_path: Path) -> None:
    missing = tmp_path / "absent.toml"
    assert load_settings(None, {}, {}).port == 8765  # no file: the defaults
    with pytest.raises(SettingsError, match=r"absent\.toml: not found"):
        load_settings(missing, {}, {})
    with pytest.raises(SettingsError, match=r"invalid TOML: .*line 1"):
        load_settings(write(tmp_path, "port = = 1\n"), {}, {})


def test_only_the_serve_flags(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"twilio\.auth_token: there is no flag for it"):
        load_settings(None, {}, {"twilio.auth_token": TOKEN})


# -- half-configured providers ---------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        (
            TWILIO.replace(f'account_sid = "{SID}"', ""),
            {},
            "twilio is half-configured: missing twilio.account_sid",
        ),
        (
            TWILIO.replace(f'auth_token = "{TOKEN}"', ""),
            {},
            "twilio is half-configured: missing twilio.auth_token",
        ),
        (
            "",
            {
                "HUMANWIRE_PUBLIC_URL": "https://hw.example.com",
                "HUMANWIRE_TWILIO_SMS_FROM": "+14155550100",
            },
            "twilio is half-configured: missing twilio.account_sid and twilio.auth_token"
            " (twilio was given twilio.sms_from)",
        ),
        (
            TWILIO.replace('sms_from = "+14155550100"', ""),
            {},
            "twilio needs twilio.sms_from (the shared number texts and calls come from):"
            " set it in the file ([twilio] sms_from) or as HUMANWIRE_TWILIO_SMS_FROM",
        ),
        (
            TWILIO.replace('public_url = "https://hw.example.com"', ""),
            {},
            "twilio needs public_url",
        ),
        (
            f'[slack]\nbot_token = "{BOT_TOKEN}"\n',
            {"HUMANWIRE_PUBLIC_URL": "https://hw.example.com"},
            "slack is half-configured: missing slack.signing_secret",
        ),
        (
            f'[slack]\nsigning_secret = "{SIGNING}"\n',
            {"HUMANWIRE_PUBLIC_URL": "https://hw.example.com"},
            "slack is half-configured: missing slack.bot_token",
        ),
        (
            f'public_url = "https://hw.example.com"\n[slack]\nbot_token = "{BOT_TOKEN}"\n'
            f'signing_secret = "{SIGNING}"\nclient_id = "1234.5678"\n',
            {},
            "slack OAuth is half-configured: missing slack.client_secret",
        ),
        (
            f'public_url = "https://hw.example.com"\n[slack]\nbot_token = "{BOT_TOKEN}"\n'
            f'signing_secret = "{SIGNING}"\n',
            {"HUMANWIRE_SLACK_CLIENT_SECRET": CLIENT_SECRET},
            "slack OAuth is half-configured: missing slack.client_id",
        ),
        (
            f'[slack]\nbot_token = "{BOT_TOKEN}"\nsigning_secret = "{SIGNING}"\n',
            {},
            "slack needs public_url",
        ),
    ],
)
def test_a_half_configured_provider_refuses_to_start(
    tmp_path: Path, text: str, env: dict[str, str], expected: str
) -> None:
    found = problems(tmp_path, text, env)
    assert len(found) == 1, found
    assert found[0].startswith(expected), found
    for secret in (TOKEN, BOT_TOKEN, SIGNING, CLIENT_SECRET):
        assert secret not in found[0]


def test_an_empty_section_is_not_half_configured(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, "[twilio]\n[slack]\n[voice]\n"), {}, {})
    config = settings.to_service_config()
    assert (config.twilio, config.slack) == (None, None)


def test_voice_model_without_twilio_starts_and_says_calls_stay_on_the_sandbox(
    tmp_path: Path,
) -> None:
    config = load_settings(
        write(tmp_path, '[voice]\nmodel = "openai:gpt-4o-mini"\n'), {}, {}
    ).to_service_config()
    assert config.voice_model == "openai:gpt-4o-mini"
    assert channel_routes(config)["call"] == "sandbox"
    [call] = [line for line in startup_lines(config) if line.startswith("call")]
    assert call == "call      → sandbox (no twilio: voice.model unused, calls stay on the sandbox)"


def test_to_service_config_refuses_half_configured_settings_built_directly() -> None:
    settings = Settings.model_validate({"twilio": {"account_sid": SID}})
    with pytest.raises(SettingsError, match=r"missing twilio\.auth_token"):
        settings.to_service_config()


# -- secrets ---------------------------------------------------------------------------
def test_secrets_are_never_in_errors_or_reprs(tmp_path: Path) -> None:
    bad = f"""
public_url = "https://hw.example.com"
[twilio]
account_sid = "{SID}"
auth_token = "two words {TOKEN}"
sms_from = "+14155550100"
auth_tokn = "{TOKEN}"
[slack]
bot_token = "not-a-bot-{BOT_TOKEN}"
signing_secret = "{SIGNING}"
"""
    found = problems(tmp_path, bad)
    assert len(found) == 3, found
    for text in found:
        assert "5ecret" not in text

    settings = load_settings(
        write(
            tmp_path,
            TWILIO + "[slack]\n" + f'bot_token = "{BOT_TOKEN}"\n'
            f'signing_secret = "{SIGNING}"\nclient_id = "1.2"\nclient_secret = "{CLIENT_SECRET}"\n',
        ),
        {},
        {},
    )
    config = settings.to_service_config()
    for shown in (
        repr(settings),
        str(settings),
        repr(config),
        repr(config.twilio),
        repr(config.slack),
    ):
        assert "5ecret" not in shown and TOKEN not in shown
    # ... while the service gets them.
    assert config.twilio is not None and config.twilio.auth_token == TOKEN
    assert config.slack is not None and config.slack.client_secret == CLIENT_SECRET


# -- routes and start-up lines -----------------------------------------------------------
def twilio_config(**changes: Any) -> TwilioConfig:
    values: dict[str, Any] = {"account_sid": SID, "auth_token": TOKEN, "sms_from": "+14155550100"}
    values.update(changes)
    return TwilioConfig(**values)


def test_channel_routes() -> None:
    assert channel_routes(ServiceConfig(twilio=twilio_config())) == {
        "sms": "twilio",
        "whatsapp": "sandbox",
        "slack": "sandbox",
        "call": "sandbox",
        "email": "sandbox",
    }
    config = ServiceConfig(
        twilio=twilio_config(whatsapp_from="+14155550101"),
        slack=SlackConfig(bot_token=BOT_TOKEN, signing_secret=SIGNING),
        voice_model="openai:gpt-4o-mini",
    )
    assert set(channel_routes(config).items()) == {
        ("sms", "twilio"),
        ("whatsapp", "twilio"),
        ("slack", "slack"),
        ("call", "twilio"),
        ("email", "sandbox"),
    }
    # A chat model object is a voice model too; neither without Twilio routes calls.
    with_object = ServiceConfig(twilio=twilio_config(), voice_chat_model=object())
    assert channel_routes(with_object)["call"] == "twilio"
    assert channel_routes(ServiceConfig(voice_chat_model=object()))["call"] == "sandbox"


def test_startup_lines_say_where_each_channel_goes_without_secrets() -> None:
    config = ServiceConfig(
        twilio=twilio_config(
            api_base="http://user:pw-5ecret@127.0.0.1:9", whatsapp_templates={"form": TEMPLATE}
        ),
        public_url="https://hw.example.com",
        sandbox_enabled=False,
    )
    lines = startup_lines(config)
    assert lines == [
        "sms       → Twilio (from +14155550100; account AC01…; api http://127.0.0.1:9)",
        "whatsapp  → sandbox (no twilio.whatsapp_from)",
        "slack     → sandbox (no slack)",
        "call      → sandbox (no voice.model: calls stay on the sandbox)",
        "email     → sandbox (no email)",
        "numbers   Twilio (no pool; buying off)",
        "sandbox   off (no sandbox API, no human side in the inbox)",
        "public url https://hw.example.com",
    ]
    text = "\n".join(lines)
    assert SID not in text and TOKEN not in text and "5ecret" not in text


def test_startup_lines_with_every_provider() -> None:
    class ChatModelWithKey:
        def __repr__(self) -> str:
            return "ChatModelWithKey(api_key='sk-5ecret')"

    config = ServiceConfig(
        twilio=twilio_config(whatsapp_from="+14155550101", numbers=("+14155550102",)),
        slack=SlackConfig(
            bot_token=BOT_TOKEN, signing_secret=SIGNING, client_id="1.2", client_secret="c"
        ),
        voice_chat_model=ChatModelWithKey(),
        email=EmailConfig(
            smtp_host="smtp.acme.example",
            smtp_username="apikey",
            smtp_password="pw-5ecret",
            from_addr="Acme Agent <agent@acme.example>",
            reply_domain="replies.acme.example",
        ),
    )
    lines = startup_lines(config)
    assert lines[:6] == [
        "sms       → Twilio (from +14155550100; account AC01…)",
        "whatsapp  → Twilio (from +14155550101; account AC01…; templates: none)",
        "slack     → Slack (the shared workspace's bot; OAuth installs on)",
        "call      → Twilio (from +14155550100; account AC01…; voice model ChatModelWithKey)",
        "email     → SMTP relay smtp.acme.example:587 (STARTTLS; login); from Acme Agent "
        "<agent@acme.example>; replies to reply+…@replies.acme.example, listener "
        "127.0.0.1:2525",
        "numbers   Twilio (pool of 1; buying off)",
    ]
    # Every channel is live: the sandbox answers on none of them.
    assert lines[6] == (
        "sandbox   on (the sandbox API and the inbox's human side), not for sms, whatsapp, "
        "slack, call, email: a real provider carries them"
    )
    assert "5ecret" not in "\n".join(lines)


def test_to_service_config_overrides(tmp_path: Path) -> None:
    model = object()
    config = load_settings(write(tmp_path, TWILIO), {}, {}).to_service_config(
        voice_chat_model=model, webhook_max_attempts=2
    )
    assert config.voice_chat_model is model and config.webhook_max_attempts == 2
    assert channel_routes(config)["call"] == "twilio"


# -- the example in docs ---------------------------------------------------------------
def test_the_example_file_parses_and_passes_validation() -> None:
    settings = load_settings(EXAMPLE, {}, {})
    config = settings.to_service_config()
    assert channel_routes(config) == {
        "sms": "twilio",
        "whatsapp": "twilio",
        "slack": "slack",
        "call": "twilio",
        "email": "sandbox",
    }
    assert config.twilio is not None
    assert set(config.twilio.whatsapp_templates) == {"notification", "request", "form"}
    assert config.twilio.numbers and config.twilio.buy_numbers is False
    assert config.slack is not None and config.slack.client_id
    assert config.voice_model and config.sandbox_enabled is False
    assert config.public_url == settings.public_url
    assert config.db_path == str(EXAMPLE.parent / "humanwire.db")
    # Every key of the model appears in the example (commented out or not).
    example = EXAMPLE.read_text(encoding="utf-8")
    for key in env_var_names():
        assert f"{key.rsplit('.', 1)[-1]} =" in example, key


# -- the service's tunables ------------------------------------------------------------------
TUNABLES: dict[str, tuple[str, Any]] = {
    # key: (a valid value as the file writes it, the value the service then uses)
    "db_pool_size": ("24", 24),
    "replica_lease": ("4.5", 4.5),
    "unavailable_retry_after": ("3", 3.0),
    "limits.rate_limit_requests": ("7", 7),
    "limits.rate_limit_window": ("30", 30.0),
    "limits.max_body_bytes": ("65536", 65536),
    "limits.max_status_wait": ("120", 120.0),
    "limits.idempotency_ttl": ("3600", 3600.0),
    "spam.recipients": ("5", 5),
    "spam.window": ("120.5", 120.5),
    "webhooks.timeout": ("2.5", 2.5),
    "webhooks.retry_base": ("0.25", 0.25),
    "webhooks.max_attempts": ("3", 3),
    "webhooks.concurrency": ("4", 4),
    "calls.phone_call_limit": ("90", 90.0),
    "calls.call_wait_limit": ("600", 600.0),
    "inbox.session_lifetime": ("3600", 3600.0),
    "inbox.session_idle": ("900.5", 900.5),
    "http.head_timeout": ("2.5", 2.5),
    "http.body_timeout": ("30", 30.0),
    "http.max_connections_per_address": ("100", 100),
    "audit.checkpoint_every": ("60", 60.0),
}


def _toml(key: str, value: str) -> str:
    section, _, name = key.rpartition(".")
    return f"[{section}]\n{name} = {value}\n" if section else f"{name} = {value}\n"


def test_every_tunable_is_a_setting() -> None:
    from dataclasses import fields

    from humanwire.server.runtime.settings import SERVICE_CONFIG_FIELDS

    assert set(TUNABLES) == set(SERVICE_CONFIG_FIELDS)
    # Every ServiceConfig field an operator tunes is reachable from the settings; the
    # rest are built from other keys (db_path, local_mode, providers) or are for tests.
    derived = {"db_path", "public_url", "local_mode", "sandbox_enabled", "twilio", "slack"}
    derived |= {"sandbox_live_channels"}  # beside `sandbox`: test_sandbox_live_channels_*
    derived |= {"telnyx", "telephony_order"}  # [telnyx], [telephony] order
    derived |= {"voice_model", "voice_chat_model", "metrics_token"}  # a secret: unwrapped
    derived |= {"trusted_proxies"}  # a list: test_trusted_proxies_*
    derived |= {"address", "address_validator"}  # [address]: test_address_settings_*
    derived |= {"voice_mode", "voice_relay_silence", "voice_relay_setup_timeout"}  # tests
    derived |= {"email"}  # [email]: test_email_settings_*
    derived |= {"telegram"}  # [telegram]: test_telegram_settings_*
    derived |= {"discord"}  # [discord]: tests/providers/test_discord.py
    derived |= {"whatsapp_meta"}  # [whatsapp]: test_whatsapp_meta_settings_*
    derived |= {"teams"}  # [teams]: tests/providers/test_teams.py
    derived |= {"audit_signing_key"}  # a secret: test_audit_signing_key_*
    derived |= {"approvals_grantable", "approvals_max_grant"}  # test_approvals_settings_*
    service_fields = {field.name for field in fields(ServiceConfig)}
    assert service_fields - derived == set(SERVICE_CONFIG_FIELDS.values())


@pytest.mark.parametrize("key", sorted(TUNABLES))
def test_each_tunable_from_the_file_and_the_environment(tmp_path: Path, key: str) -> None:
    from humanwire.server.runtime.settings import SERVICE_CONFIG_FIELDS

    raw, expected = TUNABLES[key]
    field = SERVICE_CONFIG_FIELDS[key]
    default = getattr(ServiceConfig(), field)
    assert default != expected  # the test could fail: the value differs from the default
    path = write(tmp_path, _toml(key, raw))
    from_file = load_settings(path, {}, {})
    assert getattr(from_file.to_service_config(), field) == expected
    assert from_file.source(key) == f"in {path}"
    variable = env_var_names()[key]
    assert variable == "HUMANWIRE_" + key.upper().replace(".", "_")
    env_raw = str(expected * 2) if not isinstance(expected, float) else f"{expected * 2:g}"
    from_env = load_settings(path, {variable: env_raw}, {})  # the environment beats the file
    assert getattr(from_env.to_service_config(), field) == expected * 2
    assert from_env.source(key) == f"from environment variable {variable}"
    untouched = load_settings(None, {}, {})
    assert getattr(untouched.to_service_config(), field) == default
    assert untouched.source(key) == "default"


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        (
            "[limits]\nrate_limit_requests = 2.5\n",
            {},
            "limits.rate_limit_requests: must be a whole number from 1 to 1000000 (in {path})",
        ),
        (
            "[limits]\nrate_limit_requests = true\n",
            {},
            "limits.rate_limit_requests: must be a whole number from 1 to 1000000 (in {path})",
        ),
        (
            "",
            {"HUMANWIRE_LIMITS_RATE_LIMIT_REQUESTS": "0"},
            "limits.rate_limit_requests: must be a whole number from 1 to 1000000"
            " (from environment variable HUMANWIRE_LIMITS_RATE_LIMIT_REQUESTS)",
        ),
        (
            "",
            {"HUMANWIRE_WEBHOOKS_MAX_ATTEMPTS": "many"},
            "webhooks.max_attempts: must be a whole number from 1 to 100"
            " (from environment variable HUMANWIRE_WEBHOOKS_MAX_ATTEMPTS)",
        ),
        (
            "[webhooks]\ntimeout = 0\n",
            {},
            "webhooks.timeout: must be a number of seconds over 0 and at most 300 (in {path})",
        ),
        (
            "[webhooks]\ntimeout = -1\n",
            {},
            "webhooks.timeout: must be a number of seconds over 0 and at most 300 (in {path})",
        ),
        (
            "",
            {"HUMANWIRE_SPAM_WINDOW": "nan"},
            "spam.window: must be a number of seconds over 0 and at most 2592000"
            " (from environment variable HUMANWIRE_SPAM_WINDOW)",
        ),
        (
            "[spam]\nwindow = inf\n",
            {},
            "spam.window: must be a number of seconds over 0 and at most 2592000 (in {path})",
        ),
        (
            '[calls]\nphone_call_limit = "5m"\n',
            {},
            "calls.phone_call_limit: must be a number of seconds over 0 and at most 3600"
            " (in {path})",
        ),
        (
            "[limits]\nmax_body_bytes = 100\n",
            {},
            "limits.max_body_bytes: must be a whole number from 1024 to 1073741824 (in {path})",
        ),
        (
            "[spam]\nrecipients = 1\n",
            {},
            "spam.recipients: must be a whole number from 2 to 1000000 (in {path})",
        ),
        (
            "",
            {"HUMANWIRE_LIMITS_IDEMPOTENCY_TTL": "10"},
            "limits.idempotency_ttl: must be a number of seconds from 60 to 2592000"
            " (from environment variable HUMANWIRE_LIMITS_IDEMPOTENCY_TTL)",
        ),
        (
            "[http]\nhead_timeout = 0\n",
            {},
            "http.head_timeout: must be a number of seconds over 0 and at most 3600 (in {path})",
        ),
        (
            "",
            {"HUMANWIRE_HTTP_MAX_CONNECTIONS_PER_ADDRESS": "-1"},
            "http.max_connections_per_address: must be a whole number from 0 to 1000000"
            " (from environment variable HUMANWIRE_HTTP_MAX_CONNECTIONS_PER_ADDRESS)",
        ),
        (
            "limits = 5\n",
            {},
            "limits: must be a table (in {path})",
        ),
    ],
)
def test_a_bad_tunable_names_the_key_and_its_source(
    tmp_path: Path, text: str, env: dict[str, str], expected: str
) -> None:
    path = tmp_path / "humanwire.toml"
    assert problems(tmp_path, text, env) == [expected.format(path=path)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[webhooks]\nmax_attempt = 3\n",
            "webhooks.max_attempt: unknown key (did you mean webhooks.max_attempts?) (in {path})",
        ),
        (
            "[limit]\nrate_limit_requests = 3\n",
            "limit: unknown key (did you mean limits?) (in {path})",
        ),
        ("[spam]\nthreshold = 3\n", "spam.threshold: unknown key (in {path})"),
    ],
)
def test_an_unknown_tunable_key_stops_start_up(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "humanwire.toml"
    assert problems(tmp_path, text) == [expected.format(path=path)]


def test_the_flags_still_beat_everything_for_their_keys(tmp_path: Path) -> None:
    path = write(tmp_path, "port = 9001\n[webhooks]\nmax_attempts = 2\n")
    env = {"HUMANWIRE_PORT": "9002", "HUMANWIRE_WEBHOOKS_MAX_ATTEMPTS": "4"}
    settings = load_settings(path, env, {"port": 9003})
    assert (settings.port, settings.webhooks.max_attempts) == (9003, 4)
    assert settings.source("port") == "from flag --port"


# -- the proxies trusted for forwarded headers ----------------------------------------------------
def test_trusted_proxies_default_to_this_machine(tmp_path: Path) -> None:
    from humanwire.server.runtime.settings import effective_configuration

    settings = load_settings(None, {}, {})
    assert settings.to_service_config().trusted_proxies == ("127.0.0.1", "::1")

    rows = {key: (value, source) for key, value, source in effective_configuration(settings)}
    assert rows["trusted_proxies"] == ("127.0.0.1, ::1", "default")


def test_trusted_proxies_from_the_file_and_the_environment(tmp_path: Path) -> None:
    from humanwire.server.runtime.settings import effective_configuration

    # Networks are written canonically (host bits dropped): uvicorn would take
    # 10.1.2.3/8 for a name that never matches.
    path = write(tmp_path, 'trusted_proxies = ["10.1.2.3/8", "192.168.0.7", "fd00::1"]\n')
    from_file = load_settings(path, {}, {})
    assert from_file.to_service_config().trusted_proxies == ("10.0.0.0/8", "192.168.0.7", "fd00::1")
    env = {"HUMANWIRE_TRUSTED_PROXIES": " 172.16.0.0/12 , 127.0.0.1 "}
    from_env = load_settings(path, env, {})
    assert from_env.to_service_config().trusted_proxies == ("172.16.0.0/12", "127.0.0.1")
    rows = {key: (value, source) for key, value, source in effective_configuration(from_env)}
    assert rows["trusted_proxies"] == (
        "172.16.0.0/12, 127.0.0.1",
        "env HUMANWIRE_TRUSTED_PROXIES",
    )
    nobody = load_settings(write(tmp_path, "trusted_proxies = []\n"), {}, {})
    assert nobody.to_service_config().trusted_proxies == ()


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        (
            'trusted_proxies = ["proxy.internal"]\n',
            {},
            "trusted_proxies[0]: must be an IP address or network, such as 127.0.0.1 or "
            "10.0.0.0/8 (in {path})",
        ),
        (
            "",
            {"HUMANWIRE_TRUSTED_PROXIES": "10.0.0.1,*"},
            "trusted_proxies[1]: must be an IP address or network, such as 127.0.0.1 or "
            "10.0.0.0/8 (from environment variable HUMANWIRE_TRUSTED_PROXIES)",
        ),
        (
            "trusted_proxies = 5\n",
            {},
            "trusted_proxies: must be a list of IP addresses or networks (or one "
            "comma-separated string) (in {path})",
        ),
    ],
)
def test_a_bad_trusted_proxy_names_the_key_and_its_source(
    tmp_path: Path, text: str, env: dict[str, str], expected: str
) -> None:
    path = tmp_path / "humanwire.toml"
    assert problems(tmp_path, text, env) == [expected.format(path=path)]


# -- the effective configuration ---------------------------------------------------------------
def test_the_effective_configuration_masks_every_secret(tmp_path: Path) -> None:
    from humanwire.server.runtime.settings import effective_configuration, format_configuration

    path = write(
        tmp_path,
        TWILIO
        + f'[slack]\nbot_token = "{BOT_TOKEN}"\nsigning_secret = "{SIGNING}"\n'
        + f'client_id = "1234.5678"\nclient_secret = "{CLIENT_SECRET}"\n',
    )
    env = {"HUMANWIRE_DATABASE_URL": "postgresql://hw:db-5ecret-pw@db.internal:5432/hw"}
    settings = load_settings(path, env, {"port": 9000})

    rows = {key: (value, source) for key, value, source in effective_configuration(settings)}
    assert set(rows) == {key for key in env_var_names() if key != "twilio.whatsapp_templates"} | {
        f"{table}.{name}"
        for table in ("twilio.whatsapp_templates", "whatsapp.templates")
        for name in ("notification", "request", "form")
    }
    assert rows["port"] == ("9000", "flag --port")
    assert rows["db"] == (
        "postgresql://hw:***@db.internal:5432/hw",
        "env HUMANWIRE_DATABASE_URL",
    )
    assert rows["twilio.auth_token"] == ("********", f"file {path}")
    assert rows["twilio.account_sid"][0] == "AC01…"
    assert rows["slack.client_secret"][0] == "********"
    assert rows["limits.rate_limit_requests"] == ("600", "default")
    assert rows["sandbox"] == ("on", "default")
    assert rows["twilio.whatsapp_from"] == ("(not set)", "default")
    text = format_configuration(effective_configuration(settings))
    for secret in (TOKEN, BOT_TOKEN, SIGNING, CLIENT_SECRET, "db-5ecret-pw", SID):
        assert secret not in text


# -- [approvals]: standing approvals ---------------------------------------------------------
def test_approvals_settings_from_the_file_and_the_environment(tmp_path: Path) -> None:
    path = write(tmp_path, '[approvals]\ngrantable = ["deploy", "wire"]\nmax_grant = "2h"\n')
    config = load_settings(path, {}, {}).to_service_config()
    assert config.approvals_grantable == ("deploy", "wire")
    assert config.approvals_max_grant == 7200.0
    env = {"HUMANWIRE_APPROVALS_GRANTABLE": "a, b", "HUMANWIRE_APPROVALS_MAX_GRANT": "90m"}
    config = load_settings(path, env, {}).to_service_config()
    assert (config.approvals_grantable, config.approvals_max_grant) == (("a", "b"), 5400.0)
    default = load_settings(None, {}, {}).to_service_config()
    assert (default.approvals_grantable, default.approvals_max_grant) == ((), 8 * 3600.0)
    for bad in ('"8x"', "0", '"31d"'):
        with pytest.raises(SettingsError, match=r"approvals\.max_grant"):
            load_settings(write(tmp_path, f"[approvals]\nmax_grant = {bad}\n"), {}, {})


# -- the reference in docs/operating/configuration.md -------------------------------------------
def test_the_documented_reference_is_the_generated_one() -> None:
    from humanwire.server.runtime.settings import REFERENCE_END, REFERENCE_START, config_reference

    readme = (REPO / "docs" / "operating" / "configuration.md").read_text(encoding="utf-8")
    start, end = readme.index(REFERENCE_START), readme.index(REFERENCE_END)
    in_readme = readme[start : end + len(REFERENCE_END)]
    assert in_readme == config_reference(), (
        "the configuration reference is stale: "
        "python -m humanwire.server.runtime.settings --write docs/operating/configuration.md"
    )
    # Every key with its variable, and a meaning for every key.
    for key, variable in env_var_names().items():
        assert f"| `{key}` | `{variable}`" in in_readme, key
    assert "|  |" not in in_readme


def test_the_reference_writer_replaces_only_its_block(tmp_path: Path) -> None:
    from humanwire.server.runtime.settings import (
        REFERENCE_END,
        REFERENCE_START,
        config_reference,
        write_reference,
    )

    path = write(
        tmp_path, f"# Title\n\n{REFERENCE_START}\nold\n{REFERENCE_END}\n\nAfter.\n", "R.md"
    )
    assert write_reference(path) is True
    assert path.read_text() == f"# Title\n\n{config_reference()}\n\nAfter.\n"
    assert write_reference(path) is False


# -- Telnyx and the carrier order ---------------------------------------------------------
TELNYX_KEY = "KEY0123456789ABCDEF0123456789ABCDEF"
TELNYX_PUBLIC = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="


def test_telnyx_from_the_file_and_the_environment(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'public_url = "https://hw.example.com"\n'
        f'[telnyx]\npublic_key = "{TELNYX_PUBLIC}"\nsms_from = "+13125550100"\n'
        'connection_id = "1293384261075731499"\naccount_sid = "acct-1"\n'
        '[telephony]\norder = ["telnyx", "twilio"]\n',
    )
    settings = load_settings(
        path,
        {"HUMANWIRE_TELNYX_API_KEY": TELNYX_KEY, "HUMANWIRE_TELNYX_NUMBERS": "+13125550101"},
        {},
    )
    config = settings.to_service_config(voice_model="openai:gpt-4o-mini")
    assert config.telnyx is not None and config.telnyx.api_key == TELNYX_KEY
    assert config.telnyx.numbers == ("+13125550101",)
    assert config.telephony_order == ("telnyx", "twilio")
    assert channel_routes(config) == {
        "sms": "telnyx",
        "whatsapp": "sandbox",
        "slack": "sandbox",
        "call": "telnyx",
        "email": "sandbox",
    }
    from humanwire.server.runtime.settings import effective_configuration, format_configuration

    rows = {key: (value, source) for key, value, source in effective_configuration(settings)}
    assert rows["telnyx.api_key"][0] == "********"
    text = format_configuration(effective_configuration(settings))
    assert TELNYX_KEY not in text and "acct-1" not in text


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (f'[telnyx]\napi_key = "{TELNYX_KEY}"\nsms_from = "+13125550100"\n', "telnyx.public_key"),
        (f'[telnyx]\napi_key = "{TELNYX_KEY}"\npublic_key = "{TELNYX_PUBLIC}"\n', "sms_from"),
        (
            f'[telnyx]\napi_key = "{TELNYX_KEY}"\npublic_key = "{TELNYX_PUBLIC}"\n'
            'sms_from = "+13125550100"\nconnection_id = "1"\n',
            "account_sid go together",
        ),
        ('[telnyx]\npublic_key = "bm90IGEga2V5"\n', "Ed25519 public key"),
        ('[telephony]\norder = ["twilio", "vonage"]\n', "telephony.order"),
        ('[telephony]\norder = ["twilio", "twilio"]\n', "each once"),
    ],
)
def test_a_half_or_wrongly_configured_telnyx_is_refused(
    tmp_path: Path, toml: str, expected: str
) -> None:
    path = write(tmp_path, 'public_url = "https://hw.example.com"\n' + toml)
    with pytest.raises(SettingsError) as refused:
        load_settings(path, {}, {}).check()
    assert expected in str(refused.value)
    assert TELNYX_KEY not in str(refused.value)


def test_telnyx_without_a_teXML_application_keeps_calls_elsewhere() -> None:
    from humanwire.server.config import TelnyxConfig

    telnyx = TelnyxConfig(api_key=TELNYX_KEY, public_key=TELNYX_PUBLIC, sms_from="+13125550100")
    config = ServiceConfig(telnyx=telnyx, voice_model="openai:gpt-4o-mini")
    assert channel_routes(config)["sms"] == "telnyx"
    assert channel_routes(config)["call"] == "sandbox"
    [call] = [line for line in startup_lines(config) if line.startswith("call")]
    assert "telnyx.connection_id" in call


def test_voice_mode_from_the_file_and_the_environment(tmp_path: Path) -> None:
    assert Settings().to_service_config().voice_mode == "gather"
    path = write(tmp_path, '[voice]\nmode = "relay"\n')
    assert load_settings(path, {}, {}).to_service_config().voice_mode == "relay"
    from_env = load_settings(None, {"HUMANWIRE_VOICE_MODE": "relay"}, {})
    assert from_env.to_service_config().voice_mode == "relay"
    [problem] = problems(tmp_path, '[voice]\nmode = "stream"\n')
    assert problem.startswith("voice.mode")


# -- [email] ---------------------------------------------------------------------------------
EMAIL = """[email]
smtp_host = "smtp.example.net"
smtp_username = "apikey"
from = "Acme Agent <agent@acme.example>"
reply_domain = "Replies.Acme.Example."
inbound_port = 0
"""


def test_email_settings_make_the_email_config_and_say_where_email_goes(tmp_path: Path) -> None:
    env = {"HUMANWIRE_EMAIL_SMTP_PASSWORD": "s3cret-key"}
    settings = load_settings(write(tmp_path, EMAIL), env, {})
    config = settings.to_service_config()
    assert config.email is not None
    assert config.email.from_addr == "Acme Agent <agent@acme.example>"
    assert config.email.reply_domain == "replies.acme.example"
    assert (config.email.smtp_port, config.email.starttls) == (587, True)
    assert config.email.smtp_password == "s3cret-key"
    assert settings.source("email.from").startswith("in ")
    rows = {key: value for key, value, _source in effective_configuration(settings)}
    assert rows["email.from"] == "Acme Agent <agent@acme.example>"
    assert rows["email.smtp_password"] == "********"
    lines = startup_lines(config)
    (email,) = [line for line in lines if line.startswith("email")]
    assert "smtp.example.net:587 (STARTTLS; login)" in email
    assert "reply+…@replies.acme.example" in email and "s3cret" not in "\n".join(lines)
    tls = load_settings(write(tmp_path, EMAIL + "smtp_port = 465\n"), env, {})
    assert tls.to_service_config().email.use_tls  # type: ignore[union-attr]
    assert load_settings(None, {}, {}).to_service_config().email is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('[email]\nsmtp_host = "smtp.example.net"\n', "email is half-configured: missing"),
        (EMAIL, "email.smtp_username and email.smtp_password go together"),
        (EMAIL.replace("Acme Agent <agent@acme.example>", "not an address"), "email.from:"),
        (EMAIL.replace('"Replies.Acme.Example."', '"no_domain"'), "email.reply_domain:"),
        (EMAIL + 'form = "x"\n', "email.form: unknown key (did you mean email.from?)"),
        (EMAIL + 'inbound_tls_cert = "/nonexistent/mx.pem"\n', "go together"),
        (
            EMAIL
            + 'inbound_tls_cert = "/nonexistent/mx.pem"\ninbound_tls_key = "/nonexistent/k"\n',
            "email.inbound_tls_cert: no such file",
        ),
    ],
)
def test_email_settings_refuse_what_cannot_send(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(SettingsError) as refused:
        load_settings(write(tmp_path, text), {}, {})
    assert problem in str(refused.value)


# -- [audit] ---------------------------------------------------------------------------------
def test_audit_signing_key_from_the_environment_never_shown(tmp_path: Path) -> None:
    from humanwire.server.approvals.checkpoints import generate_key_pair
    from humanwire.server.runtime.settings import effective_configuration, format_configuration

    signing_key, _ = generate_key_pair()
    path = write(tmp_path, "[audit]\ncheckpoint_every = 60\n")
    settings = load_settings(path, {"HUMANWIRE_AUDIT_SIGNING_KEY": signing_key}, {})
    config = settings.to_service_config()
    assert (config.audit_signing_key, config.audit_checkpoint_every) == (signing_key, 60.0)
    assert load_settings(None, {}, {}).to_service_config().audit_signing_key is None
    text = format_configuration(effective_configuration(settings))
    assert signing_key not in text and signing_key not in repr(config)


@pytest.mark.parametrize("value", ["bm90IGEga2V5", "not base64 at all", "A" * 60])
def test_audit_signing_key_that_is_no_key_is_refused_without_repeating_it(
    tmp_path: Path, value: str
) -> None:
    with pytest.raises(SettingsError) as refused:
        load_settings(None, {"HUMANWIRE_AUDIT_SIGNING_KEY": value}, {})
    message = str(refused.value)
    assert "audit.signing_key: must be an Ed25519 key" in message
    assert "HUMANWIRE_AUDIT_SIGNING_KEY" in message and value not in message


def test_audit_signing_key_without_cryptography_stops_the_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    from humanwire.server.approvals.checkpoints import generate_key_pair

    signing_key, _ = generate_key_pair()
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == "cryptography" else real(name, *args),
    )
    with pytest.raises(SettingsError) as refused:
        load_settings(None, {"HUMANWIRE_AUDIT_SIGNING_KEY": signing_key}, {})
    assert str(refused.value) == (
        "audit.signing_key: signing audit checkpoints needs the cryptography package: "
        'pip install "humanwire[audit]"'
    )


def test_whatsapp_meta_settings_need_every_meta_key_and_turn_meta_on(tmp_path: Path) -> None:
    meta = (
        'public_url = "https://hw.example.com"\n[whatsapp]\nprovider = "meta"\n'
        'phone_number_id = "106540352242922"\nsender = "+14155550142"\n'
    )
    assert problems(tmp_path, meta, {}) == [
        "whatsapp on Meta is half-configured: missing whatsapp.access_token, "
        "whatsapp.app_secret, whatsapp.verify_token"
    ]
    env = {
        "HUMANWIRE_WHATSAPP_ACCESS_TOKEN": "EAAG-x",
        "HUMANWIRE_WHATSAPP_APP_SECRET": "s",
        "HUMANWIRE_WHATSAPP_VERIFY_TOKEN": "v",
    }
    config = load_settings(write(tmp_path, meta), env, {}).to_service_config()
    assert config.whatsapp_meta is not None and config.whatsapp_meta.access_token == "EAAG-x"
    assert channel_routes(config)["whatsapp"] == "meta"
    # A Meta key without provider = "meta" is a mistake, named.
    stray = '[whatsapp]\nphone_number_id = "106540352242922"\n'
    assert problems(tmp_path, stray, {}) == [
        'whatsapp.phone_number_id is Meta\'s: set whatsapp.provider = "meta" to use it'
    ]
