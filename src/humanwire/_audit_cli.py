"""``humanwire audit export`` and ``humanwire audit verify``: the accounts' audit logs read
from the store directly (a service may run on the database meanwhile; a copy of the
database works as well), so an operator can hand over a log and check that nobody edited
or removed an entry of it (``humanwire.server.approvals.audit``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from humanwire.server.store import Store

__all__ = ["add_audit_parser", "run_audit"]

_PAGE = 500


def add_audit_parser(commands: Any, db_help: str) -> None:
    audit = commands.add_parser("audit", help="the accounts' audit logs of approvals")
    actions = audit.add_subparsers(dest="audit_command", metavar="ACTION", required=True)
    export = actions.add_parser(
        "export", help="print an account's audit log (JSON lines, or one JSON array)"
    )
    export.add_argument("--db", default=None, help=db_help)
    export.add_argument(
        "--account",
        default=None,
        metavar="ACCOUNT_ID",
        help="whose log (needed when several accounts have one; accounts list shows them)",
    )
    export.add_argument("--format", choices=("jsonl", "json"), default="jsonl")
    export.add_argument(
        "--after",
        type=int,
        default=0,
        metavar="SEQUENCE",
        help="only the entries after this sequence number",
    )
    verify = actions.add_parser(
        "verify",
        help="check the hash chains: name the first edited or removed entry (exit 1)",
    )
    verify.add_argument("--db", default=None, help=db_help)
    verify.add_argument(
        "--account", default=None, metavar="ACCOUNT_ID", help="one account (default: every one)"
    )
    verify.add_argument(
        "--head",
        default=None,
        metavar="SEQUENCE:HASH",
        help="the head noted down earlier (shows entries removed from the end even when "
        "the store's own head was rewritten too); with --account",
    )


async def run_audit(args: argparse.Namespace, db_path: str) -> int:
    from humanwire.server.store import is_database_url, open_store, redact

    if not is_database_url(db_path) and not Path(db_path).exists():
        print(f"humanwire: no database at {db_path}", file=sys.stderr)
        return 1
    head = None
    if args.audit_command == "verify" and args.head is not None:
        head = _parse_head(args.head)
        if head is None or args.account is None:
            print(
                "humanwire: --head takes SEQUENCE:sha256:HEX and needs --account",
                file=sys.stderr,
            )
            return 2
    try:
        store = open_store(db_path)
    except Exception as exc:  # unreachable server, missing extra: said plainly
        print(f"humanwire: cannot open {redact(db_path)}: {exc}", file=sys.stderr)
        return 1
    try:
        if args.audit_command == "export":
            return await _export(store, args.account, args.format, args.after, sys.stdout)
        return await _verify(store, args.account, head, sys.stdout)
    finally:
        await store.close()


def _parse_head(text: str) -> tuple[int, str] | None:
    sequence, _, digest = text.partition(":")
    if not sequence.isdigit() or not digest.startswith("sha256:"):
        return None
    return int(sequence), digest


async def _entries(store: Store, account_id: str, after: int) -> AsyncIterator[dict[str, Any]]:
    while True:
        page = await store.audit_after(account_id, after, _PAGE)
        for record in page:
            yield record.wire()
        if len(page) < _PAGE:
            return
        after = page[-1].sequence


async def _export(store: Store, account: str | None, form: str, after: int, out: TextIO) -> int:
    heads = await store.audit_heads()
    if account is None:
        if len(heads) > 1:
            print(
                "humanwire: several accounts have an audit log; name one with --account: "
                + ", ".join(sorted(heads)),
                file=sys.stderr,
            )
            return 2
        if not heads:
            print("[]" if form == "json" else "", end="\n" if form == "json" else "", file=out)
            return 0
        account = next(iter(heads))
    if form == "jsonl":
        async for entry in _entries(store, account, after):
            out.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
        return 0
    entries = [entry async for entry in _entries(store, account, after)]
    out.write(json.dumps(entries, ensure_ascii=False, indent=2) + "\n")
    return 0


async def _verify(
    store: Store, account: str | None, head: tuple[int, str] | None, out: TextIO
) -> int:
    from humanwire.server.approvals.audit import verify

    heads = await store.audit_heads()
    accounts = [account] if account is not None else sorted(heads)
    broken = 0
    for account_id in accounts:
        try:
            entries = [entry async for entry in _entries(store, account_id, 0)]
        except Exception as exc:  # an entry edited into something no longer JSON
            print(f"{account_id}: the log cannot be read ({exc}): edited?", file=out)
            broken += 1
            continue
        breaks = verify(entries, head=head or heads.get(account_id))
        if not breaks:
            print(f"{account_id}: {len(entries)} entries, chain intact", file=out)
            continue
        broken += 1
        first = breaks[0]
        print(f"{account_id}: entry {first.sequence}: {first.problem}", file=out)
        for later in breaks[1:]:
            print(f"{account_id}:   then entry {later.sequence}: {later.problem}", file=out)
    if not accounts:
        print("no audit log on this database", file=out)
    return 1 if broken else 0
