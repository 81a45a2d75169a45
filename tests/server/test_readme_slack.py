"""The README's "Going live with Slack" is a working configuration: its TOML routes slack
to Slack, its app manifest asks for exactly the bot's scopes and points at the service's
routes, and its offline example runs against the contract fake."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from humanwire.server.config import channel_routes
from humanwire.server.settings import load_settings

README = Path(__file__).resolve().parents[2] / "README.md"


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("## Going live with Slack", 1)[1].split("\n## ", 1)[0]


def _block(language: str) -> str:
    found = re.search(rf"```{language}\n(.*?)```", _section(), re.S)
    assert found is not None, language
    return found.group(1)


def test_the_toml_passes_validation_and_routes_slack_to_slack(tmp_path: Path) -> None:
    path = tmp_path / "humanwire.toml"
    path.write_text(_block("toml"), encoding="utf-8")
    config = load_settings(path, {}, {}).to_service_config()
    assert channel_routes(config)["slack"] == "slack"
    assert config.slack is not None and config.slack.client_id and config.slack.client_secret


def test_the_manifest_matches_the_service() -> None:
    from humanwire.server.delivery.slack import BOT_SCOPES, ROUTE_PREFIX

    manifest = json.loads(_block("json"))
    assert manifest["oauth_config"]["scopes"]["bot"] == list(BOT_SCOPES)
    base = "https://hw.example.com" + ROUTE_PREFIX
    assert manifest["oauth_config"]["redirect_urls"] == [f"{base}/oauth"]
    settings = manifest["settings"]
    assert settings["event_subscriptions"]["request_url"] == f"{base}/events"
    assert settings["interactivity"]["request_url"] == f"{base}/interactions"
    events = set(settings["event_subscriptions"]["bot_events"])
    assert {"message.im", "message.channels", "app_uninstalled", "tokens_revoked"} <= events
    # The service keeps tokens as issued: no refresh tokens to rotate.
    assert settings["token_rotation_enabled"] is False


def test_the_offline_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(_block("python"), "README-slack-example", "exec"), {})
    assert capsys.readouterr().out.strip() == "ended yes"
