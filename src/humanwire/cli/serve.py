"""``humanwire serve``: the service in the foreground (settings: flags, then ``HUMANWIRE_*``
variables, then ``--config FILE``), its base URL, an API key and the inbox address printed."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from humanwire.server.config import ServiceConfig
    from humanwire.server.runtime.runner import ServiceRunner
    from humanwire.server.runtime.settings import Settings
from .databases import is_database_url
from .key_files import key_file_of, read_key, write_key

__all__ = ["DEFAULT_PORT", "add_parser", "run", "serve_config", "serve_settings"]


DEFAULT_PORT = 8765


def add_parser(commands: Any) -> None:
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


def run(args: argparse.Namespace) -> int:
    from humanwire.server.runtime.settings import SettingsError

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


def _serve_flags(args: argparse.Namespace) -> dict[str, Any]:
    from humanwire.server.runtime.settings import FLAG_KEYS

    return {key: getattr(args, key, None) for key in FLAG_KEYS}


def serve_settings(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> Settings:
    """The settings of ``humanwire serve``: flags, then ``env`` (default ``os.environ``),
    then the ``--config`` file, then the defaults. Raises ``SettingsError``."""
    from humanwire.server.runtime.settings import load_settings

    return load_settings(
        getattr(args, "config", None),
        os.environ if env is None else env,
        _serve_flags(args),
    )


def serve_config(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> ServiceConfig:
    """The service configuration of ``humanwire serve``: local mode (loopback webhook
    targets allowed) only when serving on loopback. Raises ``SettingsError``."""
    return serve_settings(args, env).to_service_config()


def _print_config(settings: Settings, api_key: str | None) -> None:
    """The effective configuration, nothing opened or created (docs/operating/configuration.md)."""
    from humanwire.server.runtime.settings import effective_configuration, format_configuration

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
    from humanwire.server.delivery.chat import startup_lines
    from humanwire.server.http.startup import StartupAccount
    from humanwire.server.runtime.embedded import embedded_home
    from humanwire.server.runtime.runner import ServiceRunner

    host, port, public_url = settings.host, settings.port, settings.public_url
    db_path, local = config.db_path, config.local_mode
    if db_path != ":memory:" and not is_database_url(db_path):
        Path(db_path).parent.mkdir(parents=True, exist_ok=True)
    key_file = key_file_of(db_path)
    # Made before the service answers: a script that waits for /healthz and then calls
    # with this key is never refused.
    account = StartupAccount("default", api_key or read_key(key_file))
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
            write_key(key_file, key)
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
            from humanwire.server.runtime.runner import tune_gc_for_service

            tune_gc_for_service()  # this process is the service's alone
        _wait_for_stop(runner, stop, quiet=settings.log_format == "json")
    finally:
        runner.stop()
    return 0


def _record_for_embedded(base_url: str, key: str) -> None:
    from humanwire.server.runtime.embedded import record_embedded_service

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
