"""The Slack page (docs/going-live/slack.md) is a working configuration: its TOML routes
slack to Slack, its app manifest asks for exactly the bot's scopes and points at the
service's routes; and the offline examples of docs/guides/provider-fakes.md run against
the contract fakes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docs_support import block
from humanwire.server.config import channel_routes
from humanwire.server.runtime.settings import load_settings

SLACK = "going-live/slack.md"


def test_the_toml_passes_validation_and_routes_slack_to_slack(tmp_path: Path) -> None:
    path = tmp_path / "humanwire.toml"
    path.write_text(block(SLACK, None, "toml"), encoding="utf-8")
    config = load_settings(path, {}, {}).to_service_config()
    assert channel_routes(config)["slack"] == "slack"
    assert config.slack is not None and config.slack.client_id and config.slack.client_secret


def test_the_manifest_matches_the_service() -> None:
    from humanwire.server.delivery.slack import BOT_SCOPES, ROUTE_PREFIX

    manifest = json.loads(block(SLACK, "The Slack app", "json"))
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


@pytest.mark.parametrize(
    "code",
    [
        block("guides/provider-fakes.md", "Slack", "python"),
        block("guides/provider-fakes.md", "Twilio", "python"),
    ],
    ids=["slack", "twilio"],
)
def test_the_offline_example_runs(capsys: pytest.CaptureFixture[str], code: str) -> None:
    exec(compile(code, "docs-provider-fake-example", "exec"), {})
    assert capsys.readouterr().out.strip() == "ended yes"
