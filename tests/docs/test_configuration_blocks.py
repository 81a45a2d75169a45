"""The configurations the pages show load as the service's settings (``load_settings``,
what ``humanwire serve --config`` reads): every key known, every value valid. The Slack
and Twilio pages' are checked further in tests/server."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from docs_support import block
from humanwire.server.config import ServiceConfig, channel_routes
from humanwire.server.runtime.settings import load_settings

TELNYX = block("going-live/telnyx.md", None, "toml")


def _loaded(tmp_path: Path, text: str) -> ServiceConfig:
    path = tmp_path / "humanwire.toml"
    path.write_text(text, encoding="utf-8")
    return load_settings(path, {}, {}).to_service_config()


def test_the_email_page_routes_email_to_smtp(tmp_path: Path) -> None:
    config = _loaded(tmp_path, block("going-live/email.md", None, "toml"))
    assert channel_routes(config)["email"] != "sandbox"


def test_the_telnyx_page_routes_texts_and_calls_to_telnyx(tmp_path: Path) -> None:
    # Its one placeholder the service checks the shape of: the account's public key.
    key = base64.b64encode(bytes(32)).decode()
    config = _loaded(tmp_path, TELNYX.replace('"base64 of 32 bytes"', repr(key)))
    routes = channel_routes(config)
    assert routes["sms"] == routes["call"] == "telnyx"


@pytest.mark.parametrize(
    "text",
    [
        block("going-live/telnyx.md", "Both carriers", "toml"),
        block("guides/checking-addresses.md", "Configuration", "toml"),
        block("guides/voice-modes.md", None, "toml"),
        block("operating/security.md", "Trusted proxies and the inbox session", "toml"),
    ],
    ids=["both-carriers", "checking-addresses", "voice-modes", "security"],
)
def test_the_pages_configuration_loads(tmp_path: Path, text: str) -> None:
    assert isinstance(_loaded(tmp_path, text), ServiceConfig)


def test_the_discord_page_configures_the_application(tmp_path: Path) -> None:
    config = _loaded(tmp_path, block("going-live/discord.md", None, "toml"))
    assert config.discord is not None and len(config.discord.public_key) == 64


def test_the_teams_page_configures_a_single_tenant_bot(tmp_path: Path) -> None:
    config = _loaded(tmp_path, block("going-live/teams.md", None, "toml"))
    assert config.teams is not None and config.teams.tenant_id is not None
    assert config.teams.token_endpoint.endswith(f"/{config.teams.tenant_id}/oauth2/v2.0/token")


def test_the_telegram_page_routes_telegram_to_the_bot(tmp_path: Path) -> None:
    config = _loaded(tmp_path, block("going-live/telegram.md", None, "toml"))
    assert config.telegram is not None and config.telegram.webhook_secret


def test_the_whatsapp_meta_page_routes_whatsapp_to_meta(tmp_path: Path) -> None:
    config = _loaded(tmp_path, block("going-live/whatsapp-meta.md", None, "toml"))
    assert channel_routes(config)["whatsapp"] == "meta"
    assert config.whatsapp_meta is not None
    assert set(config.whatsapp_meta.templates) == {"notification", "request", "form"}


def test_the_teams_page_configures_a_certificate_in_place_of_the_secret(tmp_path: Path) -> None:
    pytest.importorskip("jwt")
    from humanwire.testing.teams import make_certificate

    certificate, key = make_certificate()
    (tmp_path / "bot.crt").write_text(certificate)
    (tmp_path / "bot.key").write_text(key)
    text = block("going-live/teams.md", "The app registration", "toml")
    text = text.replace("/etc/humanwire/teams-bot", str(tmp_path / "bot"))
    # The section's [teams] beside the opening's public_url.
    text = 'public_url = "https://hw.example.com"\n' + text
    config = _loaded(tmp_path, text)
    assert config.teams is not None and config.teams.app_password is None
    assert (config.teams.certificate, config.teams.private_key) == (certificate, key)
