"""The humanwire service as a real ``humanwire serve`` process on a database (a SQLite
file or a PostgreSQL URL) and a fixed loopback port, for the tests that SIGKILL it mid-wait
and start it again on the same data at the same address (its clients reconnect as they
would to a restarted host)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

__all__ = ["ServiceProcess"]

_SERVE = "from humanwire.cli import main; raise SystemExit(main())"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServiceProcess:
    """``humanwire serve --db <file or url> --port <port> --api-key <key>``, killed by its
    pid."""

    def __init__(self, database: Path | str, api_key: str, home: Path, log: Path) -> None:
        self.database = database
        self.api_key = api_key
        self.home = home
        self.log = log
        self.port = _free_port()
        self.process: subprocess.Popen[str] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 180.0) -> ServiceProcess:
        """Starts it and waits until it prints its address (it serves from then on)."""
        env = {**os.environ, "HUMANWIRE_HOME": str(self.home), "PYTHONUNBUFFERED": "1"}
        for name in ("HUMANWIRE_BASE_URL", "HUMANWIRE_API_KEY", "HUMANWIRE_DB"):
            env.pop(name, None)
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-c", _SERVE, "serve", "--db", str(self.database)),
                *("--port", str(self.port), "--api-key", self.api_key),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        found = threading.Event()

        def read() -> None:
            assert self.process is not None and self.process.stdout is not None
            with self.log.open("a", encoding="utf-8") as log:
                for line in self.process.stdout:
                    log.write(line)
                    log.flush()
                    if line.startswith("Base URL:"):
                        found.set()

        threading.Thread(target=read, daemon=True, name="humanwire-serve").start()
        if not found.wait(timeout):
            self.kill()
            raise AssertionError(f"humanwire serve did not start:\n{self.log.read_text()}")
        return self

    def kill(self) -> None:
        """SIGKILL: nothing drained, nothing written on the way out; then reaps it."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)
