"""The ``humanwire`` command.

``humanwire serve``            runs the service in the foreground and prints its base URL,
                               an API key and the inbox address (settings: flags, then
                               ``HUMANWIRE_*`` variables, then ``--config FILE``);
``humanwire accounts create``  creates another account on a database and prints its key
                               (also while a service runs on that database);
``humanwire accounts list | suspend | reinstate | rotate-key | delete``  the operator's
                               side of accounts (also while services run on the database);
``humanwire slack workspaces`` lists the Slack workspaces accounts installed the bot in;
``humanwire slack revoke TEAM``  forgets a workspace's bot token (also while a service runs);
``humanwire audit export | verify | keygen``  an account's audit log of approvals, the check
                               of its hash chain and signed checkpoints (also on a copy of
                               the database), and a key pair to sign them with;
``humanwire demo [--auto]``    an agent pipeline reaching a human through the embedded service;
``humanwire mcp``              the tools over stdio for MCP clients (``humanwire[mcp]``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import importlib
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from humanwire.server.config import ServiceConfig
    from humanwire.server.engine import Engine
    from humanwire.server.engine.accounts import AccountInfo
    from humanwire.server.runner import ServiceRunner
    from humanwire.server.settings import Settings

__all__ = ["build_parser", "main", "serve_config", "serve_settings"]

DEFAULT_PORT = 8765


def _default_db() -> str:
    from humanwire.server.embedded import embedded_home

    return str(embedded_home() / "humanwire.db")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="humanwire",
        description="Let AI agents reach humans over SMS, WhatsApp, Slack, forms and calls.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    serve = commands.add_parser(
        "serve",
        help="run the service in the foreground",
        description=(
            "Run the service. Settings come from flags, then HUMANWIRE_* environment "
            "variables, then the --config file, then the defaults."
        ),
    )
    # Every default is None: a flag given beats the environment, which beats the file.
    serve.add_argument("--config", default=None, metavar="PATH", help="TOML settings file")
    serve.add_argument(
        "--host", default=None, help="address to bind (HUMANWIRE_HOST; default 127.0.0.1)"
    )
    serve.add_argument(
        "--port", type=int, default=None, help=f"port (HUMANWIRE_PORT; default {DEFAULT_PORT})"
    )
    serve.add_argument(
        "--db",
        default=None,
        help="SQLite file or postgresql:// URL (HUMANWIRE_DB or HUMANWIRE_DATABASE_URL; "
        "default ~/.humanwire/humanwire.db)",
    )
    serve.add_argument("--api-key", default=None, help="API key to use (created if missing)")
    serve.add_argument(
        "--public-url",
        default=None,
        help="address clients, browsers and providers reach the service at (HUMANWIRE_PUBLIC_URL)",
    )
    serve.add_argument(
        "--sandbox",
        choices=("on", "off"),
        default=None,
        help="the sandbox API and the inbox's human side (HUMANWIRE_SANDBOX; default on)",
    )
    serve.add_argument(
        "--log-format",
        choices=("text", "json"),
        default=None,
        help="log lines on stderr: text, or one JSON object a line (HUMANWIRE_LOG_FORMAT; "
        "default text)",
    )
    serve.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default=None,
        help="humanwire's log level (HUMANWIRE_LOG_LEVEL; default info)",
    )

    serve.add_argument(
        "--print-config",
        action="store_true",
        help="print the effective configuration (each key, its value and where it came "
        "from; secrets masked) and exit without starting",
    )

    accounts = commands.add_parser("accounts", help="manage accounts")
    account_commands = accounts.add_subparsers(
        dest="accounts_command", metavar="ACTION", required=True
    )
    create = account_commands.add_parser("create", help="create an account and print its API key")
    create.add_argument("--db", default=None, help=DB_HELP)
    create.add_argument("--name", default=None, help="a name for the account")
    _add_account_admin_parsers(account_commands)

    slack = commands.add_parser("slack", help="accounts' own Slack workspaces")
    slack_commands = slack.add_subparsers(dest="slack_command", metavar="ACTION", required=True)
    listing = slack_commands.add_parser(
        "workspaces", help="list installed workspaces (never their tokens)"
    )
    revoke = slack_commands.add_parser("revoke", help="forget a workspace's bot token")
    revoke.add_argument("team", help="the workspace's team id (T…)")
    for sub in (listing, revoke):
        sub.add_argument("--db", default=None, help=DB_HELP)

    db = commands.add_parser("db", help="the service's database")
    db_commands = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    migrate = db_commands.add_parser(
        "migrate", help="bring the database's schema up to date (serve does it too)"
    )
    migrate.add_argument("--db", default=None, help=DB_HELP)

    from humanwire._audit_cli import add_audit_parser

    add_audit_parser(commands, DB_HELP)

    demo = commands.add_parser("demo", help="run the demo: an agent reaching a human")
    demo.add_argument("--auto", action="store_true", help="play the human automatically")
    demo.add_argument(
        "--stay-online",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how long the inbox stays online after the pipeline ends (not with --auto)",
    )
    _add_mcp_parser(commands)
    return parser


def _add_account_admin_parsers(account_commands: Any) -> None:
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


def _add_mcp_parser(commands: Any) -> None:
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
        choices=("sms", "whatsapp", "slack"),
        default=None,
        help="the form's channel (HUMANWIRE_MCP_FORM_CHANNEL; sms)",
    )
    mcp.add_argument(
        "--no-wait-for-call-end",
        action="store_true",
        default=False,
        help="call_human returns at once with the interaction id",
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    # The commands that work on the store directly run its (async) methods on a loop of
    # their own.
    if args.command == "accounts":
        if args.accounts_command == "create":
            return asyncio.run(_accounts_create(args))
        return asyncio.run(_accounts_admin(args))
    if args.command == "slack":
        return asyncio.run(_slack(args))
    if args.command == "db":
        return asyncio.run(_db_migrate(args))
    if args.command == "audit":
        from humanwire._audit_cli import run_audit

        return asyncio.run(run_audit(args, _db_of(args) if "db" in args else ""))
    if args.command == "mcp":
        return _mcp(args)
    return _demo(auto=args.auto, stay_online=args.stay_online)


# -- mcp ----------------------------------------------------------------------------------
_MCP_FLAGS = (
    "to",
    "whatsapp_to",
    "slack_to",
    "email_to",
    "expose_recipients",
    "wait_time",
    "follow_up_time",
    "client_timeout",
    "progress_interval",
    "channel_ids",
    "form",
    "form_channel",
    "no_wait_for_call_end",
)


def _mcp(args: argparse.Namespace) -> int:
    try:
        from humanwire.mcp.stdio import run_stdio
    except ImportError as exc:
        print(f"humanwire: {exc}", file=sys.stderr)
        return 1
    return run_stdio({name: getattr(args, name) for name in _MCP_FLAGS})


# -- serve ------------------------------------------------------------------------------
DB_HELP = (
    "SQLite file or postgresql:// URL (HUMANWIRE_DB or HUMANWIRE_DATABASE_URL; "
    "default ~/.humanwire/humanwire.db)"
)


def is_database_url(db: str) -> bool:
    from humanwire.server.store import is_database_url as is_url

    return is_url(db)


def _db_of(args: argparse.Namespace) -> str:
    """``--db``, else ``HUMANWIRE_DB`` / ``HUMANWIRE_DATABASE_URL``, else the default
    file; a path with ``~`` expanded, a URL as given."""
    db = args.db or os.environ.get("HUMANWIRE_DB") or os.environ.get("HUMANWIRE_DATABASE_URL")
    db = db or str(_default_db())
    return db if is_database_url(db) else str(Path(db).expanduser())


async def _db_migrate(args: argparse.Namespace) -> int:
    """Opens the database, which brings its schema up to date, and says where it is."""
    from humanwire.server.store import open_store, redact, schema_version

    db_path = _db_of(args)
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


def _key_file(db_path: str) -> Path | None:
    """Where ``serve`` keeps the key it created for a database (only a hash is in it)."""
    if is_database_url(db_path):
        # One key file per database URL, beside the embedded service's files (the URL
        # itself may hold a password: only its hash names the file).
        from humanwire.server.embedded import embedded_home

        digest = hashlib.sha256(db_path.encode()).hexdigest()[:16]
        return embedded_home() / f"db-{digest}.key"
    if db_path == ":memory:":
        return None
    return Path(db_path).with_suffix(".key")


def _read_key(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        key = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return key or None


def _write_key(path: Path | None, key: str) -> None:
    if path is None:
        return
    # A database URL's key file is under ~/.humanwire, which a fresh machine lacks.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(key + "\n")


def _serve_flags(args: argparse.Namespace) -> dict[str, Any]:
    from humanwire.server.settings import FLAG_KEYS

    return {key: getattr(args, key, None) for key in FLAG_KEYS}


def serve_settings(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> Settings:
    """The settings of ``humanwire serve``: flags, then ``env`` (default ``os.environ``),
    then the ``--config`` file, then the defaults. Raises ``SettingsError``."""
    from humanwire.server.settings import load_settings

    return load_settings(
        getattr(args, "config", None),
        os.environ if env is None else env,
        _serve_flags(args),
    )


def serve_config(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> ServiceConfig:
    """The service configuration of ``humanwire serve``: local mode (loopback webhook
    targets allowed) only when serving on loopback. Raises ``SettingsError``."""
    return serve_settings(args, env).to_service_config()


def _serve(args: argparse.Namespace) -> int:
    from humanwire.server.settings import SettingsError

    try:
        settings = serve_settings(args)
        config = settings.to_service_config()
    except SettingsError as exc:
        for problem in exc.problems:
            print(f"humanwire: {problem}", file=sys.stderr)
        return 2
    if args.print_config:
        _print_config(settings, args.api_key)
        return 0
    from humanwire.server.telemetry import configure_logging

    # Only the command configures logging; the library and the embedded service never do.
    handler = configure_logging(settings.log_format, settings.log_level)
    try:
        with _stop_on_signals() as stop:
            return _serve_until(settings, config, args.api_key, stop, own_process=True)
    finally:
        logging.getLogger().removeHandler(handler)


def _print_config(settings: Settings, api_key: str | None) -> None:
    """The effective configuration, nothing opened or created (docs/operating/configuration.md)."""
    from humanwire.server.settings import effective_configuration, format_configuration

    rows = effective_configuration(settings)
    if api_key:
        rows.append(("api_key", "********", "flag --api-key"))
    else:
        rows.append(("api_key", "(not set: the key file's, or a new account's)", "default"))
    print(format_configuration(rows), flush=True)


def _serve_until(
    settings: Settings,
    config: ServiceConfig,
    api_key: str | None,
    stop: threading.Event,
    *,
    own_process: bool = False,
) -> int:
    from humanwire.server.config import startup_lines
    from humanwire.server.embedded import embedded_home
    from humanwire.server.runner import ServiceRunner
    from humanwire.server.startup import StartupAccount

    host, port, public_url = settings.host, settings.port, settings.public_url
    db_path, local = config.db_path, config.local_mode
    if db_path != ":memory:" and not is_database_url(db_path):
        Path(db_path).parent.mkdir(parents=True, exist_ok=True)
    key_file = _key_file(db_path)
    # Made before the service answers: a script that waits for /healthz and then calls
    # with this key is never refused.
    account = StartupAccount("default", api_key or _read_key(key_file))
    runner = ServiceRunner(config, host, port, public_url=public_url, before_serving=[account])
    try:
        runner.start()
    except OSError as exc:
        print(f"humanwire: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        return 1
    except RuntimeError as exc:
        print(f"humanwire: {exc}", file=sys.stderr)
        return 1

    try:
        key = account.key
        if not api_key:
            _write_key(key_file, key)
        if (
            local
            and not public_url
            and not is_database_url(db_path)
            and Path(db_path).parent == embedded_home()
        ):
            # Lets clients without a base URL (embedded mode) find and share this service.
            _record_for_embedded(runner.base_url, key)

        base_url = runner.base_url
        if settings.log_format == "json":
            # stderr is a log stream then: one JSON line, and the key stays on stdout. It
            # is written before the lines below, which tell a caller it may send: its
            # first request's lines come after it.
            from humanwire.server.telemetry import log_event

            log_event(
                logging.getLogger("humanwire.serve"),
                "service.started",
                base_url=base_url,
                local_mode=local,
                routes=[" ".join(line.split()) for line in startup_lines(runner.config)],
            )
        print(f"Base URL: {base_url}", flush=True)
        print(f"API key:  {key}", flush=True)
        print(f"Inbox:    {base_url}/inbox", flush=True)
        if settings.log_format != "json":
            print(
                f"humanwire: serving (local mode {'on' if local else 'off'}); Ctrl+C to stop.\n"
                f"  export HUMANWIRE_BASE_URL={base_url} HUMANWIRE_API_KEY={key}",
                file=sys.stderr,
                flush=True,
            )
            for line in startup_lines(runner.config):
                print(f"  {line}", file=sys.stderr, flush=True)
        if own_process:
            from humanwire.server.runner import tune_gc_for_service

            tune_gc_for_service()  # this process is the service's alone
        _wait_for_stop(runner, stop, quiet=settings.log_format == "json")
    finally:
        runner.stop()
    return 0


def _record_for_embedded(base_url: str, key: str) -> None:
    from humanwire.server.embedded import record_embedded_service

    with contextlib.suppress(OSError):
        record_embedded_service(base_url, key)


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[threading.Event]:
    """SIGINT (Ctrl+C) and SIGTERM set the event instead of raising, wherever they land,
    so the service always stops gracefully and the command exits 0."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _wait_for_stop(runner: ServiceRunner, stop: threading.Event, *, quiet: bool = False) -> None:
    # Polled, never stop.wait(): a signal handler runs on this thread, and its stop.set()
    # deadlocks on the event's lock when the signal lands inside stop.wait().
    while runner.running and not stop.is_set():
        time.sleep(0.1)
    if quiet:
        from humanwire.server.telemetry import log_event

        log_event(logging.getLogger("humanwire.serve"), "service.stopping")
    else:
        print("humanwire: stopping", file=sys.stderr, flush=True)


# -- accounts create ------------------------------------------------------------------------
async def _accounts_create(args: argparse.Namespace) -> int:
    from humanwire.server.config import ServiceConfig
    from humanwire.server.engine import Engine

    db_path = _db_of(args)
    if not is_database_url(db_path):
        Path(db_path).parent.mkdir(parents=True, exist_ok=True)
    # The store is opened directly (SQLite in WAL mode, or PostgreSQL), so this works
    # while a service runs on the same database.
    engine = Engine(ServiceConfig(db_path=db_path))
    try:
        _account, key = await engine.create_account(args.name)
    finally:
        with contextlib.suppress(Exception):
            await engine.close()
    print(key, flush=True)
    return 0


# -- accounts list | suspend | reinstate | rotate-key | delete --------------------------------
async def _accounts_admin(args: argparse.Namespace) -> int:
    """Works on the store directly, like ``accounts create``: what it changes holds from
    the next request of every service on the database (nothing about accounts is cached
    in a service)."""
    from humanwire.server.config import ServiceConfig
    from humanwire.server.engine import Engine
    from humanwire.server.errors import NotFound
    from humanwire.server.store import redact

    db_path = _db_of(args)
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
        changed = await engine.suspend_account(account_id)
        print(
            f"suspended: {account_id} (every request of it is refused 403 account_suspended)"
            if changed
            else f"{account_id} was suspended already"
        )
        return 0
    if action == "reinstate":
        changed = await engine.reinstate_account(account_id)
        print(f"reinstated: {account_id}" if changed else f"{account_id} was not suspended")
        return 0
    if action == "rotate-key":
        old_hash, key = await engine.rotate_key(account_id)
        print(key, flush=True)
        print(
            "humanwire: the new key works now and the old one is refused; it is shown "
            "only this once",
            file=sys.stderr,
        )
        for where in _replace_recorded_key(db_path, old_hash, key):
            print(f"humanwire: {where} held the old key: it holds the new one", file=sys.stderr)
        return 0
    info = await engine.account_info(account_id)
    record = await engine.store.get_account(account_id)
    assert record is not None  # account_info found it
    key_hash = record.key_hash
    if not args.yes and not _confirm_delete(info):
        return 1
    deleted = await engine.delete_account(account_id)
    rows = sum(count for table, count in deleted.removed.items() if table != "accounts")
    print(f"deleted: {account_id} ({_printable(deleted.name)}) and {rows} rows of its data")
    if deleted.numbers:
        print(f"released numbers: {', '.join(deleted.numbers)}")
    if deleted.released:
        print(
            f"bought at Twilio for it: {', '.join(deleted.released)}: the service releases "
            "them at its next start (a stored job)"
        )
    for where in _forget_recorded_key(db_path, key_hash):
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


def _recorded_key_files(db_path: str) -> tuple[Path | None, Path | None]:
    """Where keys of ``db_path`` may be recorded: ``serve``'s key file, and the embedded
    mode's ``embedded.json`` when the database is the one it uses."""
    from humanwire.server.embedded import embedded_home

    embedded = None
    if not is_database_url(db_path) and Path(db_path).resolve().parent == embedded_home().resolve():
        embedded = embedded_home() / "embedded.json"
    return _key_file(db_path), embedded


def _key_matches(key: object, key_hash: str) -> bool:
    return isinstance(key, str) and hashlib.sha256(key.encode()).hexdigest() == key_hash


def _replace_recorded_key(db_path: str, old_hash: str, key: str) -> list[Path]:
    """A recorded copy of the rotated key is replaced by the new one: ``serve`` would
    otherwise create a new account at its next start (its recorded key opens none)."""
    from humanwire.server.embedded import record_embedded_service

    key_file, embedded = _recorded_key_files(db_path)
    replaced = []
    if key_file is not None and _key_matches(_read_key(key_file), old_hash):
        _write_key(key_file, key)
        replaced.append(key_file)
    state = _read_json(embedded)
    if embedded is not None and _key_matches(state.get("api_key"), old_hash):
        record_embedded_service(str(state.get("base_url") or ""), key)
        replaced.append(embedded)
    return replaced


def _forget_recorded_key(db_path: str, key_hash: str) -> list[Path]:
    """A recorded key of the deleted account is forgotten: ``serve`` and embedded mode
    would otherwise create an account with it again (a fresh account gets a fresh key)."""
    key_file, embedded = _recorded_key_files(db_path)
    forgotten = []
    if key_file is not None and _key_matches(_read_key(key_file), key_hash):
        with contextlib.suppress(OSError):
            key_file.unlink()
        forgotten.append(key_file)
    state = _read_json(embedded)
    if embedded is not None and _key_matches(state.get("api_key"), key_hash):
        state.pop("api_key")
        _write_json(embedded, state)
        forgotten.append(embedded)
    return forgotten


def _printable(text: str) -> str:
    """An operator-given name as a terminal shows it safely (no control characters)."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)


async def _accounts_list(engine: Engine, *, as_json: bool) -> int:
    infos = await engine.account_list()
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


def _read_json(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)


# -- slack ---------------------------------------------------------------------------------
async def _slack(args: argparse.Namespace) -> int:
    """Works on the store directly, like ``accounts create``; listing and revoking need
    no Slack credentials (tokens are only ever deleted here, never read)."""
    from humanwire.server.delivery.slack.installs import SlackInstalls
    from humanwire.server.store import open_store

    db_path = _db_of(args)
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


# -- demo ---------------------------------------------------------------------------------
def _demo(*, auto: bool, stay_online: float | None = None) -> int:
    try:
        demo = importlib.import_module("humanwire.demo")
    except ModuleNotFoundError as exc:
        if exc.name not in ("humanwire.demo",):
            raise
        print("humanwire: the demo is not available in this version.", file=sys.stderr)
        return 1
    argv = [] if stay_online is None else ["--stay-online", str(stay_online)]
    result = demo.main(argv, auto=auto)
    return result if isinstance(result, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
