"""Several real ``humanwire serve`` processes on one PostgreSQL schema, and a small
round-robin TCP load balancer in front of them (as nginx or HAProxy would be).

Each replica is a subprocess started with ``--db <url> --port 0 --api-key <key>`` and a
short ``HUMANWIRE_REPLICA_LEASE`` (so a killed replica's work is taken over within a
second or two); its ``Base URL`` is read from what it prints.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

__all__ = ["LoadBalancer", "Replica", "replicas"]

LEASE = 1.0
"""Seconds without a heartbeat before a replica counts as dead (tests only)."""

_SERVE = "from humanwire.cli import main; raise SystemExit(main())"


class Replica:
    """One ``humanwire serve`` process."""

    def __init__(self, db_url: str, api_key: str, home: Path, name: str) -> None:
        self.db_url = db_url
        self.api_key = api_key
        self.home = home
        self.name = name
        self.base_url = ""
        self.process: subprocess.Popen[str] | None = None
        self._output: list[str] = []

    def start(self, timeout: float = 90.0) -> Replica:
        env = {
            **os.environ,
            "HUMANWIRE_HOME": str(self.home),
            "HUMANWIRE_REPLICA_LEASE": str(LEASE),
            "PYTHONUNBUFFERED": "1",
        }
        for name in ("HUMANWIRE_BASE_URL", "HUMANWIRE_API_KEY", "HUMANWIRE_DB"):
            env.pop(name, None)
        command = [sys.executable, "-c", _SERVE, "serve", "--db", self.db_url, "--port", "0"]
        self.process = subprocess.Popen(
            [*command, "--api-key", self.api_key],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        found = threading.Event()

        def read() -> None:
            assert self.process is not None and self.process.stdout is not None
            for line in self.process.stdout:
                self._output.append(line)
                if line.startswith("Base URL:"):
                    self.base_url = line.split(":", 1)[1].strip()
                    found.set()

        threading.Thread(target=read, daemon=True, name=f"replica-{self.name}").start()
        if not found.wait(timeout):
            self.kill()
            raise AssertionError(f"replica {self.name} did not start:\n{self.output}")
        return self

    @property
    def output(self) -> str:
        return "".join(self._output)

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1])

    def client(self, **options: object) -> httpx.Client:
        """Raw HTTP to this replica with the account's key."""
        return httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {self.api_key}"},
            timeout=30,
            trust_env=False,
            **options,  # type: ignore[arg-type]
        )

    def kill(self) -> None:
        """SIGKILL: no drain, no retiring, nothing written on the way out."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        """A graceful stop (SIGTERM): held requests answered 503, windows handed over."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()


@contextlib.contextmanager
def replicas(db_url: str, count: int, home: Path, api_key: str) -> Iterator[list[Replica]]:
    """``count`` replicas on ``db_url`` (started together), stopped at the end."""
    started = [Replica(db_url, api_key, home, chr(ord("A") + i)) for i in range(count)]
    try:
        threads = [threading.Thread(target=r.start) for r in started]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for replica in started:
            assert replica.base_url, f"replica {replica.name} did not start:\n{replica.output}"
        yield started
    finally:
        for replica in started:
            replica.stop()


class LoadBalancer:
    """Round-robin TCP proxy on 127.0.0.1: each new connection goes to the next target
    that accepts one (a dead replica is skipped); when either side closes, so does the
    other, as a load balancer does when a backend dies mid-request."""

    def __init__(self, targets: list[Replica]) -> None:
        self.targets = targets
        self._next = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.routed: list[str] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="lb").start()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._server.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                downstream, _ = self._server.accept()
            except OSError:
                return
            upstream = self._connect()
            if upstream is None:
                downstream.close()
                continue
            for a, b in ((downstream, upstream), (upstream, downstream)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _connect(self) -> socket.socket | None:
        for _ in range(len(self.targets)):
            target = self.targets[self._next % len(self.targets)]
            self._next += 1
            try:
                upstream = socket.create_connection(("127.0.0.1", target.port), timeout=2)
            except OSError:
                continue
            upstream.settimeout(None)
            self.routed.append(target.name)
            return upstream
        return None

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    sock.close()


def wait_until(predicate: object, timeout: float = 20.0, every: float = 0.05) -> None:
    """Polls ``predicate`` (a callable) until true; AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(every)
    raise AssertionError(f"condition not met within {timeout:g} s")
