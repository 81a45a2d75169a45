"""``humanwire accounts create | list | suspend | reinstate | rotate-key | delete``: the
operator's side of accounts, on the store directly (also while services run on it)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from humanwire.server.engine import Engine
    from humanwire.server.engine.accounts import AccountInfo
from .databases import DB_HELP, db_of, is_database_url
from .key_files import forget_recorded_key, replace_recorded_key

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    accounts = commands.add_parser("accounts", help="manage accounts")
    account_commands = accounts.add_subparsers(
        dest="accounts_command", metavar="ACTION", required=True
    )
    create = account_commands.add_parser("create", help="create an account and print its API key")
    create.add_argument("--db", default=None, help=DB_HELP)
    create.add_argument("--name", default=None, help="a name for the account")
    _add_admin_parsers(account_commands)


def _add_admin_parsers(account_commands: Any) -> None:
    listing = account_commands.add_parser(
        "list", help="list the accounts and what they hold (never keys)"
    )
    listing.add_argument("--json", action="store_true", help="one JSON array")
    listing.add_argument("--db", default=None, help=DB_HELP)
    helps = {
        "suspend": "refuse every request of the account (403 account_suspended)",
        "reinstate": "lift a suspension (the spam guard's or an operator's)",
        "rotate-key": "give the account a new API key (printed once); the old one stops",
        "delete": "delete the account and all its data",
    }
    for action, text in helps.items():
        sub = account_commands.add_parser(action, help=text)
        sub.add_argument("account_id", metavar="ACCOUNT_ID", help="its id (accounts list)")
        sub.add_argument("--db", default=None, help=DB_HELP)
        if action == "delete":
            sub.add_argument("--yes", action="store_true", help="do not ask for confirmation")


def run(args: argparse.Namespace) -> int:
    # The store's methods are coroutines: run on a loop of this command's own.
    if args.accounts_command == "create":
        return asyncio.run(_accounts_create(args))
    return asyncio.run(_accounts_admin(args))


async def _accounts_create(args: argparse.Namespace) -> int:
    from humanwire.server.config import ServiceConfig
    from humanwire.server.engine import Engine

    db_path = db_of(args)
    if not is_database_url(db_path):
        Path(db_path).parent.mkdir(parents=True, exist_ok=True)
    # The store is opened directly (SQLite in WAL mode, or PostgreSQL), so this works
    # while a service runs on the same database.
    engine = Engine(ServiceConfig(db_path=db_path))
    try:
        _account, key = await engine.accounts.create(args.name)
    finally:
        with contextlib.suppress(Exception):
            await engine.close()
    print(key, flush=True)
    return 0


async def _accounts_admin(args: argparse.Namespace) -> int:
    """Works on the store directly, like ``accounts create``: what it changes holds from
    the next request of every service on the database (nothing about accounts is cached
    in a service)."""
    from humanwire.server.config import ServiceConfig
    from humanwire.server.engine import Engine
    from humanwire.server.errors import NotFound
    from humanwire.server.store import redact

    db_path = db_of(args)
    if not is_database_url(db_path) and not Path(db_path).exists():
        print(f"humanwire: no database at {db_path}", file=sys.stderr)
        return 1
    try:
        engine = Engine(ServiceConfig(db_path=db_path))
    except Exception as exc:  # unreachable server, missing extra: said plainly
        print(f"humanwire: cannot open {redact(db_path)}: {exc}", file=sys.stderr)
        return 1
    try:
        if args.accounts_command == "list":
            return await _accounts_list(engine, as_json=args.json)
        return await _account_action(engine, args, db_path)
    except NotFound:
        print(
            f"humanwire: no account {_printable(args.account_id)} on {redact(db_path)} "
            "(humanwire accounts list shows them)",
            file=sys.stderr,
        )
        return 1
    finally:
        with contextlib.suppress(Exception):
            await engine.close()


async def _account_action(engine: Engine, args: argparse.Namespace, db_path: str) -> int:
    account_id: str = args.account_id
    action: str = args.accounts_command
    if action == "suspend":
        changed = await engine.accounts.suspend(account_id)
        print(
            f"suspended: {account_id} (every request of it is refused 403 account_suspended)"
            if changed
            else f"{account_id} was suspended already"
        )
        return 0
    if action == "reinstate":
        changed = await engine.accounts.reinstate(account_id)
        print(f"reinstated: {account_id}" if changed else f"{account_id} was not suspended")
        return 0
    if action == "rotate-key":
        old_hash, key = await engine.accounts.rotate_key(account_id)
        print(key, flush=True)
        print(
            "humanwire: the new key works now and the old one is refused; it is shown "
            "only this once",
            file=sys.stderr,
        )
        for where in replace_recorded_key(db_path, old_hash, key):
            print(f"humanwire: {where} held the old key: it holds the new one", file=sys.stderr)
        return 0
    info = await engine.accounts.info(account_id)
    record = await engine.store.get_account(account_id)
    assert record is not None  # account_info found it
    key_hash = record.key_hash
    if not args.yes and not _confirm_delete(info):
        return 1
    deleted = await engine.accounts.delete(account_id)
    rows = sum(count for table, count in deleted.removed.items() if table != "accounts")
    print(f"deleted: {account_id} ({_printable(deleted.name)}) and {rows} rows of its data")
    if deleted.numbers:
        print(f"released numbers: {', '.join(deleted.numbers)}")
    if deleted.released:
        print(
            f"bought at Twilio for it: {', '.join(deleted.released)}: the service releases "
            "them at its next start (a stored job)"
        )
    for where in forget_recorded_key(db_path, key_hash):
        print(f"humanwire: {where} held its key: forgotten", file=sys.stderr)
    return 0


def _confirm_delete(info: AccountInfo) -> bool:
    usage = info.usage
    summary = (
        f"account {info.id} ({_printable(info.name)}): {usage.interactions} interactions, "
        f"{usage.numbers} numbers, {usage.webhooks} webhooks, {usage.channels} channel cards"
    )
    if not (sys.stdin is not None and sys.stdin.isatty()):
        print(
            f"humanwire: not deleting {summary} without confirmation: run it in a terminal, "
            "or pass --yes",
            file=sys.stderr,
        )
        return False
    print(f"Delete {summary}, and all its data? This cannot be undone.", file=sys.stderr)
    # The prompt goes to stderr, like the rest of the conversation: stdout is for results.
    print("Type the account id to confirm: ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline()
    if answer.strip() != info.id:
        print("humanwire: not deleted", file=sys.stderr)
        return False
    return True


def _printable(text: str) -> str:
    """An operator-given name as a terminal shows it safely (no control characters)."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)


async def _accounts_list(engine: Engine, *, as_json: bool) -> int:
    infos = await engine.accounts.list_all()
    if as_json:
        print(json.dumps([_account_json(info) for info in infos], indent=2, ensure_ascii=False))
        return 0
    header = ("ID", "NAME", "CREATED", "STATE", "INTERACTIONS", "OPEN", "NUMBERS", "WEBHOOKS")
    rows = [header]
    for info in infos:
        usage = info.usage
        rows.append(
            (
                info.id,
                _printable(info.name),
                _iso(info.created_at),
                "suspended" if info.suspended else "active",
                str(usage.interactions),
                str(usage.open_interactions),
                str(usage.numbers),
                str(usage.webhooks),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip())
    return 0


def _account_json(info: AccountInfo) -> dict[str, Any]:
    usage = info.usage
    last = usage.last_interaction_at
    return {
        "id": info.id,
        "name": info.name,
        "createdAt": _iso(info.created_at),
        "suspended": info.suspended,
        "interactions": usage.interactions,
        "openInteractions": usage.open_interactions,
        "numbers": usage.numbers,
        "webhooks": usage.webhooks,
        "channels": usage.channels,
        "lastInteractionAt": _iso(last) if last is not None else None,
    }


def _iso(unix: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(unix, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
