"""``humanwire slack workspaces | revoke TEAM``: the Slack workspaces accounts installed the
bot in, and forgetting one's token (also while a service runs)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from .databases import DB_HELP, db_of, is_database_url

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    slack = commands.add_parser("slack", help="accounts' own Slack workspaces")
    slack_commands = slack.add_subparsers(dest="slack_command", metavar="ACTION", required=True)
    listing = slack_commands.add_parser(
        "workspaces", help="list installed workspaces (never their tokens)"
    )
    revoke = slack_commands.add_parser("revoke", help="forget a workspace's bot token")
    revoke.add_argument("team", help="the workspace's team id (T…)")
    for sub in (listing, revoke):
        sub.add_argument("--db", default=None, help=DB_HELP)


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_slack(args))


async def _slack(args: argparse.Namespace) -> int:
    """Works on the store directly, like ``accounts create``; listing and revoking need
    no Slack credentials (tokens are only ever deleted here, never read)."""
    from humanwire.server.delivery.slack.installs import SlackInstalls
    from humanwire.server.store import open_store

    db_path = db_of(args)
    if not is_database_url(db_path) and not Path(db_path).exists():
        print(f"humanwire: no database at {db_path}", file=sys.stderr)
        return 2
    store = open_store(db_path)
    try:
        installs = SlackInstalls(store, None)
        if args.slack_command == "workspaces":
            for found in await installs.all():
                print(f"{found.team_id}\t{found.team_name}\taccount {found.account_id}")
            return 0
        if not await installs.revoke(args.team):
            print(f"humanwire: no installed workspace {args.team}", file=sys.stderr)
            return 1
        print(
            f"revoked: {args.team}'s bot token is forgotten (remove the app in the "
            "workspace's Slack settings to revoke it at Slack too)"
        )
        return 0
    finally:
        await store.close()
