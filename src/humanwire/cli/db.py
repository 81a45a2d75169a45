"""``humanwire db migrate``: the database's schema brought up to date (``serve`` does it too)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from .databases import DB_HELP, db_of, is_database_url

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    db = commands.add_parser("db", help="the service's database")
    db_commands = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    migrate = db_commands.add_parser(
        "migrate", help="bring the database's schema up to date (serve does it too)"
    )
    migrate.add_argument("--db", default=None, help=DB_HELP)


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_migrate(args))


async def _migrate(args: argparse.Namespace) -> int:
    """Opens the database, which brings its schema up to date, and says where it is."""
    from humanwire.server.store import open_store, redact, schema_version

    db_path = db_of(args)
    if not is_database_url(db_path):
        Path(db_path).parent.mkdir(parents=True, exist_ok=True)
    try:
        store = open_store(db_path)
    except Exception as exc:  # unreachable server, missing extra: said plainly
        print(f"humanwire: cannot open {redact(db_path)}: {exc}", file=sys.stderr)
        return 1
    try:
        print(f"{redact(db_path)}: schema version {await schema_version(store)}", flush=True)
    finally:
        await store.close()
    return 0
