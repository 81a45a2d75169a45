"""``humanwire audit export``, ``verify`` and ``keygen``: the accounts' audit logs read from
the store directly (a service may run on the database meanwhile; a copy of the database
works as well), so an operator can hand over a log and check that nobody appended, edited,
re-hashed, reordered or removed an entry of it: against its head, and with the public key
against the service's signed checkpoints, stored and kept outside
(``humanwire.server.approvals.audit``, ``.checkpoints``)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from humanwire.server.approvals.checkpoints import Checkpoint
    from humanwire.server.store import Store

from .databases import DB_HELP, db_of

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    audit = commands.add_parser("audit", help="the accounts' audit logs of approvals")
    actions = audit.add_subparsers(dest="audit_command", metavar="ACTION", required=True)
    export = actions.add_parser(
        "export", help="print an account's audit log (JSON lines, or one JSON array)"
    )
    export.add_argument("--db", default=None, help=DB_HELP)
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
        help="check the hash chains against their heads and signed checkpoints: name the "
        "first entry appended, edited, re-hashed, reordered or removed (exit 1)",
    )
    verify.add_argument("--db", default=None, help=DB_HELP)
    verify.add_argument(
        "--account", default=None, metavar="ACCOUNT_ID", help="one account (default: every one)"
    )
    verify.add_argument(
        "--head",
        default=None,
        metavar="SEQUENCE:HASH",
        help="a head noted down earlier: the log must still have that entry (shows entries "
        "removed from the end even when the store's own head was rewound too); with --account",
    )
    verify.add_argument(
        "--public-key",
        action="append",
        default=[],
        metavar="KEY",
        help="the public key of the service's [audit] signing_key (base64; again for a key "
        "used before): checks every checkpoint's signature and that the log still has each "
        "checkpointed entry",
    )
    verify.add_argument(
        "--checkpoints",
        default=None,
        metavar="FILE",
        help="checkpoints kept outside the database (JSON lines: audit.checkpoint events, or "
        "their payloads), checked beside the stored ones; with --public-key",
    )
    actions.add_parser(
        "keygen",
        help="make an Ed25519 key pair for the checkpoints: [audit] signing_key and the "
        "public key for verify --public-key",
    )


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args, db_of(args) if "db" in args else ""))


async def _run(args: argparse.Namespace, db_path: str) -> int:
    from humanwire.server.store import is_database_url, open_store, redact

    if args.audit_command == "keygen":
        return _keygen(sys.stdout)
    verifying = _Verifying.of(args) if args.audit_command == "verify" else _Verifying()
    if isinstance(verifying, str):
        print(f"humanwire: {verifying}", file=sys.stderr)
        return 2
    if not is_database_url(db_path) and not Path(db_path).exists():
        print(f"humanwire: no database at {db_path}", file=sys.stderr)
        return 1
    try:
        store = open_store(db_path)
    except Exception as exc:  # unreachable server, missing extra: said plainly
        print(f"humanwire: cannot open {redact(db_path)}: {exc}", file=sys.stderr)
        return 1
    try:
        if args.audit_command == "export":
            return await _export(store, args.account, args.format, args.after, sys.stdout)
        return await _verify(store, args.account, verifying, sys.stdout)
    finally:
        await store.close()


def _keygen(out: TextIO) -> int:
    from humanwire.server.approvals.checkpoints import generate_key_pair, key_problem

    problem = key_problem()
    if problem is not None:
        print(f"humanwire: {problem}", file=sys.stderr)
        return 1
    signing_key, public_key = generate_key_pair()
    out.write(f'signing_key = "{signing_key}"\npublic_key = "{public_key}"\n')
    print(
        "humanwire: signing_key goes in [audit] (or HUMANWIRE_AUDIT_SIGNING_KEY), out of the "
        "database's reach; public_key is for humanwire audit verify --public-key",
        file=sys.stderr,
    )
    return 0


@dataclass(frozen=True)
class _Verifying:
    """What ``verify`` checks the logs against besides their chains and heads."""

    head: tuple[int, str] | None = None
    public_keys: tuple[str, ...] = ()
    kept: tuple[Checkpoint, ...] = ()
    """Checkpoints from ``--checkpoints``."""

    @classmethod
    def of(cls, args: argparse.Namespace) -> _Verifying | str:
        """The options checked (a problem with them: its sentence)."""
        from humanwire.server.approvals.checkpoints import key_problem, parse_key

        head = None
        if args.head is not None:
            head = _parse_head(args.head)
            if head is None or args.account is None:
                return "--head takes SEQUENCE:sha256:HEX and needs --account"
        for key in args.public_key:
            try:
                parse_key(key)
            except ValueError as exc:
                return f"--public-key {exc}"
        if args.public_key and (problem := key_problem()) is not None:
            return problem
        if args.checkpoints is not None and not args.public_key:
            return "--checkpoints needs --public-key (the key that signed them)"
        kept: tuple[Checkpoint, ...] = ()
        if args.checkpoints is not None:
            found = _read_checkpoints(Path(args.checkpoints))
            if isinstance(found, str):
                return found
            kept = found
        return cls(head, tuple(args.public_key), kept)


def _read_checkpoints(path: Path) -> tuple[Checkpoint, ...] | str:
    from humanwire.server.approvals.checkpoints import Checkpoint

    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeError) as exc:
        return f"--checkpoints {path}: {exc}"
    found: list[Checkpoint] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            found.append(Checkpoint.from_wire(data))
        except ValueError as exc:  # JSONDecodeError is one
            return f"--checkpoints {path}, line {number}: {exc}"
    return tuple(found)


def _parse_head(text: str) -> tuple[int, str] | None:
    sequence, _, digest = text.partition(":")
    if not sequence.isdigit() or not digest.startswith("sha256:"):
        return None
    return int(sequence), digest


async def _export(store: Store, account: str | None, form: str, after: int, out: TextIO) -> int:
    from humanwire.server.approvals.audit import read_log

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
        async for entry in read_log(store, account, after):
            out.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
        return 0
    entries = [entry async for entry in read_log(store, account, after)]
    out.write(json.dumps(entries, ensure_ascii=False, indent=2) + "\n")
    return 0


async def _verify(store: Store, account: str | None, verifying: _Verifying, out: TextIO) -> int:
    from humanwire.server.approvals.audit_check import check_log

    heads = await store.audit_heads()
    accounts = [account] if account is not None else await store.audit_accounts()
    if account is None:  # a log the database lost whole still shows against its copies
        accounts = sorted({*accounts, *(c.account_id for c in verifying.kept)})
    broken = 0
    for account_id in accounts:
        checked = await check_log(
            store,
            account_id,
            heads.get(account_id),
            noted_head=verifying.head,
            public_keys=verifying.public_keys,
            kept=verifying.kept,
        )
        if checked.unreadable is not None:
            print(f"{account_id}: the log cannot be read ({checked.unreadable}): edited?", file=out)
            broken += 1
            continue
        if checked.intact:
            print(
                f"{account_id}: {checked.entries} entries, chain intact{checked.signed}", file=out
            )
            continue
        broken += 1
        first, *later = checked.breaks
        print(f"{account_id}: entry {first.sequence}: {first.problem}", file=out)
        for other in later:
            print(f"{account_id}:   then entry {other.sequence}: {other.problem}", file=out)
    if not accounts:
        print("no audit log on this database", file=out)
    return 1 if broken else 0
