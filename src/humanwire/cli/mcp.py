"""``humanwire mcp``: the tools over stdio for MCP clients (``humanwire[mcp]``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["MCP_FLAGS", "add_parser", "run"]


MCP_FLAGS = (
    "to",
    "whatsapp_to",
    "slack_to",
    "email_to",
    "telegram_to",
    "teams_to",
    "discord_to",
    "person",
    "fallback_after",
    "expose_recipients",
    "wait_time",
    "follow_up_time",
    "client_timeout",
    "progress_interval",
    "channel_ids",
    "form",
    "gate",
    "form_channel",
    "no_wait_for_call_end",
)


def add_parser(commands: Any) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="serve the tools over stdio to an MCP client (needs humanwire[mcp])",
        description=(
            "Serve the humanwire tools over stdio to an MCP client (Claude Desktop, Cursor, "
            "IDE agents). The service: HUMANWIRE_BASE_URL and HUMANWIRE_API_KEY, else the "
            "embedded one. Flags beat HUMANWIRE_* variables."
        ),
    )
    mcp.add_argument("--to", default=None, help="phone number for sms and calls (HUMANWIRE_SMS_TO)")
    mcp.add_argument("--whatsapp-to", default=None, help="(HUMANWIRE_WHATSAPP_TO; default --to)")
    mcp.add_argument(
        "--slack-to", default=None, help="slack member or channel (HUMANWIRE_SLACK_TO)"
    )
    mcp.add_argument("--email-to", default=None, help="email address (HUMANWIRE_EMAIL_TO)")
    mcp.add_argument("--telegram-to", default=None, help="telegram chat id (HUMANWIRE_TELEGRAM_TO)")
    mcp.add_argument("--teams-to", default=None, help="teams user id, 29:… (HUMANWIRE_TEAMS_TO)")
    mcp.add_argument(
        "--discord-to", default=None, help="discord user or channel id (HUMANWIRE_DISCORD_TO)"
    )
    mcp.add_argument(
        "--person",
        default=None,
        help="a person of the people directory, per_…, asked wherever they are (HUMANWIRE_PERSON)",
    )
    mcp.add_argument(
        "--fallback-after",
        type=float,
        default=None,
        help="seconds before the person is asked on their next address "
        "(HUMANWIRE_MCP_FALLBACK_AFTER)",
    )
    mcp.add_argument(
        "--expose-recipients",
        action="store_true",
        default=None,
        help="let the model name the recipient (HUMANWIRE_MCP_EXPOSE_RECIPIENTS=1)",
    )
    mcp.add_argument(
        "--wait-time",
        type=float,
        default=None,
        help="seconds the service listens for an answer (HUMANWIRE_MCP_WAIT_TIME; 300)",
    )
    mcp.add_argument(
        "--follow-up-time",
        type=float,
        default=None,
        help="seconds it listens after that (HUMANWIRE_MCP_FOLLOW_UP_TIME)",
    )
    mcp.add_argument(
        "--client-timeout",
        type=float,
        default=None,
        help="the client's request limit in seconds (HUMANWIRE_MCP_CLIENT_TIMEOUT; "
        "default 60; 0: none)",
    )
    mcp.add_argument(
        "--progress-interval",
        type=float,
        default=None,
        help="seconds between progress notifications (HUMANWIRE_MCP_PROGRESS_INTERVAL; 10)",
    )
    mcp.add_argument(
        "--channel-id",
        dest="channel_ids",
        action="append",
        default=None,
        help="a channel card to offer as ask_human_<id>, repeatable (HUMANWIRE_MCP_CHANNEL_IDS)",
    )
    mcp.add_argument(
        "--form",
        default=None,
        metavar="FILE.json",
        help="a fixed form: title and fields (HUMANWIRE_MCP_FORM)",
    )
    mcp.add_argument(
        "--form-channel",
        choices=("sms", "whatsapp", "slack", "email", "telegram", "teams", "discord"),
        default=None,
        help="the form's channel (HUMANWIRE_MCP_FORM_CHANNEL; sms)",
    )
    mcp.add_argument(
        "--gate",
        action="append",
        default=None,
        metavar="MODULE:FUNCTION",
        help="a function of your own offered as a tool that runs only once people approve "
        "the call (repeatable; HUMANWIRE_MCP_GATE, comma-separated)",
    )
    mcp.add_argument(
        "--no-wait-for-call-end",
        action="store_true",
        default=False,
        help="call_human returns at once with the interaction id",
    )


def run(args: argparse.Namespace) -> int:
    try:
        from humanwire.mcp.stdio import run_stdio
    except ImportError as exc:
        print(f"humanwire: {exc}", file=sys.stderr)
        return 1
    return run_stdio({name: getattr(args, name) for name in MCP_FLAGS})
