from discord_support import discord_live, fake_discord
from meta_support import fake_meta, meta_live
from slack_support import fake_slack, slack_live
from teams_support import fake_teams, teams_live
from telegram_support import fake_telegram, telegram_live
from telnyx_support import fake_telnyx, telnyx_live
from twilio_support import fake_twilio, live

__all__ = [
    "discord_live",
    "fake_discord",
    "fake_meta",
    "fake_slack",
    "fake_teams",
    "fake_telegram",
    "fake_telnyx",
    "fake_twilio",
    "live",
    "meta_live",
    "slack_live",
    "teams_live",
    "telegram_live",
    "telnyx_live",
]
