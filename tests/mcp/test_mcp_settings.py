"""``humanwire mcp``'s settings: flags over ``HUMANWIRE_*`` variables over defaults, and
errors that name what to fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from humanwire.cli import build_parser
from humanwire.cli.mcp import MCP_FLAGS
from humanwire.mcp import McpSettings, SettingsError
from humanwire.mcp.settings import DEFAULT_CLIENT_TIMEOUT, DEFAULT_WAIT_TIME


def flags(*argv: str) -> dict[str, object]:
    args = build_parser().parse_args(["mcp", *argv])
    return {name: getattr(args, name) for name in MCP_FLAGS}


def test_defaults() -> None:
    settings = McpSettings.from_env({}, **flags())
    assert settings.wait_time == DEFAULT_WAIT_TIME == 300
    assert settings.client_timeout == DEFAULT_CLIENT_TIMEOUT == 60
    assert settings.progress_interval == 10
    assert settings.sms_to is None and settings.expose_recipients is False
    assert settings.form is None and settings.channel_ids == ()
    assert settings.state_key is None  # a random key per server


def test_the_state_key_from_its_variable_never_shown() -> None:
    settings = McpSettings.from_env({"HUMANWIRE_MCP_STATE_KEY": "s" * 64}, **flags())
    assert settings.state_key == "s" * 64
    assert "s" * 64 not in repr(settings)


def test_flags_beat_variables() -> None:
    env = {
        "HUMANWIRE_SMS_TO": "+14155550123",
        "HUMANWIRE_SLACK_TO": "U0TEAM0001",
        "HUMANWIRE_MCP_CLIENT_TIMEOUT": "120",
        "HUMANWIRE_MCP_WAIT_TIME": "90",
        "HUMANWIRE_MCP_CHANNEL_IDS": "ch_a, ch_b",
        "HUMANWIRE_MCP_EXPOSE_RECIPIENTS": "1",
    }
    from_env = McpSettings.from_env(env, **flags())
    assert (from_env.sms_to, from_env.slack_to) == ("+14155550123", "U0TEAM0001")
    assert from_env.configured_recipient("whatsapp") == "+14155550123"  # falls back to sms
    assert (from_env.client_timeout, from_env.wait_time) == (120, 90)
    assert from_env.channel_ids == ("ch_a", "ch_b")
    assert from_env.expose_recipients is True
    given = McpSettings.from_env(
        env, **flags("--to", "+442079460123", "--client-timeout", "0", "--channel-id", "ch_c")
    )
    assert given.sms_to == "+442079460123"
    assert given.client_timeout is None  # 0: no known limit
    assert given.channel_ids == ("ch_c",)


def test_a_fixed_form_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "form.json"
    path.write_text(
        json.dumps({"title": "Refund", "fields": [{"id": "ok", "label": "OK", "type": "checkbox"}]})
    )
    settings = McpSettings.from_env({"HUMANWIRE_MCP_FORM": str(path)}, **flags())
    assert settings.form is not None
    assert settings.form.title == "Refund"
    assert [field.id for field in settings.form.fields] == ["ok"]


@pytest.mark.parametrize(
    ("env", "argv", "named"),
    [
        ({"HUMANWIRE_MCP_CLIENT_TIMEOUT": "soon"}, (), "HUMANWIRE_MCP_CLIENT_TIMEOUT"),
        ({}, ("--wait-time", "900"), "wait_time"),
        ({}, ("--wait-time", "0"), "wait_time"),
        ({}, ("--progress-interval", "0"), "progress_interval"),
        ({}, ("--follow-up-time", "0"), "follow_up_time"),
        ({"HUMANWIRE_MCP_FORM": "/nonexistent/form.json"}, (), "form file"),
        ({"HUMANWIRE_MCP_STATE_KEY": "short"}, (), "HUMANWIRE_MCP_STATE_KEY"),
    ],
)
def test_errors_name_the_setting(env: dict[str, str], argv: tuple[str, ...], named: str) -> None:
    with pytest.raises(SettingsError, match=named):
        McpSettings.from_env(env, **flags(*argv))


def test_the_telegram_recipient_from_its_flag_or_variable() -> None:
    from_env = McpSettings.from_env({"HUMANWIRE_TELEGRAM_TO": "123456789"}, **flags())
    assert from_env.configured_recipient("telegram") == "123456789"
    flagged = McpSettings.from_env(
        {"HUMANWIRE_TELEGRAM_TO": "123456789"}, **flags("--telegram-to", "-100200300")
    )
    assert flagged.telegram_to == "-100200300"


def test_the_teams_recipient_from_its_flag_or_variable() -> None:
    from_env = McpSettings.from_env({"HUMANWIRE_TEAMS_TO": "29:ada"}, **flags())
    assert from_env.configured_recipient("teams") == "29:ada"
    flagged = McpSettings.from_env(
        {"HUMANWIRE_TEAMS_TO": "29:ada"}, **flags("--teams-to", "29:bob")
    )
    assert flagged.teams_to == "29:bob"
    in_teams = McpSettings.from_env({"HUMANWIRE_MCP_FORM_CHANNEL": "teams"}, **flags())
    assert in_teams.form_channel == "teams"
    flagged_form = McpSettings.from_env({}, **flags("--form-channel", "teams"))
    assert flagged_form.form_channel == "teams"


def test_the_discord_recipient_from_its_flag_or_variable() -> None:
    from_env = McpSettings.from_env({"HUMANWIRE_DISCORD_TO": "80351110224678912"}, **flags())
    assert from_env.configured_recipient("discord") == "80351110224678912"
    flagged = McpSettings.from_env(
        {"HUMANWIRE_DISCORD_TO": "80351110224678912"},
        **flags("--discord-to", "175928847299117063"),
    )
    assert flagged.discord_to == "175928847299117063"
    in_discord = McpSettings.from_env({"HUMANWIRE_MCP_FORM_CHANNEL": "discord"}, **flags())
    assert in_discord.form_channel == "discord"
