"""The ``humanwire`` command: one module per command group, each with its ``add_parser``
(the group's sub-command and flags) and its ``run`` (the command, its exit status).

``humanwire serve``            runs the service in the foreground and prints its base URL,
                               an API key and the inbox address (settings: flags, then
                               ``HUMANWIRE_*`` variables, then ``--config FILE``);
``humanwire accounts create``  creates another account on a database and prints its key
                               (also while a service runs on that database);
``humanwire accounts list | suspend | reinstate | rotate-key | delete``  the operator's
                               side of accounts (also while services run on the database);
``humanwire slack workspaces`` lists the Slack workspaces accounts installed the bot in;
``humanwire slack revoke TEAM``  forgets a workspace's bot token (also while a service runs);
``humanwire db migrate``       brings a database's schema up to date;
``humanwire audit export | verify | keygen``  an account's audit log of approvals, the check
                               of its hash chain and signed checkpoints (also on a copy of
                               the database), and a key pair to sign them with;
``humanwire demo [--auto]``    an agent pipeline reaching a human through the embedded service;
``humanwire mcp``              the tools over stdio for MCP clients (``humanwire[mcp]``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, Protocol

from . import accounts, audit, db, demo, mcp, serve, slack
from .serve import DEFAULT_PORT, serve_config, serve_settings

__all__ = [
    "COMMAND_GROUPS",
    "DEFAULT_PORT",
    "CommandGroup",
    "build_parser",
    "main",
    "serve_config",
    "serve_settings",
]


class CommandGroup(Protocol):
    """A module of this package: one sub-command of ``humanwire`` and its actions."""

    def add_parser(self, commands: Any) -> None: ...
    def run(self, args: argparse.Namespace) -> int: ...


COMMAND_GROUPS: dict[str, CommandGroup] = {
    "serve": serve,
    "accounts": accounts,
    "slack": slack,
    "db": db,
    "audit": audit,
    "demo": demo,
    "mcp": mcp,
}
"""Every command group by its sub-command, in the order ``--help`` lists them: a new
group is a module with ``add_parser`` and ``run``, named here."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="humanwire",
        description="Let AI agents reach humans over SMS, WhatsApp, Slack, forms and calls.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for group in COMMAND_GROUPS.values():
        group.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return COMMAND_GROUPS[args.command].run(args)
