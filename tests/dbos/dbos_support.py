"""What tests/dbos share: DBOS's system database (a SQLite file, or a fresh schema of the
test PostgreSQL database, ``dbos_system_schema``), and the app processes the kill tests
start and SIGKILL."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

LIMIT = 120.0
"""Seconds any one wait of the kill tests may take on a slow, loaded machine."""
T = TypeVar("T")


def until(check: Callable[[], T | None], what: str) -> T:
    """``check()``'s first truthy value, polled until ``LIMIT``."""
    deadline = time.monotonic() + LIMIT
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.2)


class AppProcesses:
    """An app script's processes (``python <path> <command> <workflow id>``): started,
    killed, and cleaned up whatever the test does; their stderr kept in ``logs``."""

    def __init__(self, path: Path, env: dict[str, str], logs: Path) -> None:
        self.path = path
        self.env = env
        self.logs = logs
        self.processes: list[subprocess.Popen[str]] = []

    def run(self, command: str, workflow_id: str) -> subprocess.Popen[str]:
        log = (self.logs / f"{command}-{len(self.processes)}.log").open("w")
        process = subprocess.Popen(
            [sys.executable, str(self.path), command, workflow_id],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        self.processes.append(process)
        return process

    def stderr(self) -> str:
        return "\n".join(log.read_text() for log in sorted(self.logs.glob("*.log")))

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait(LIMIT)
            if process.stdout is not None:
                process.stdout.close()


class SystemDatabase:
    """Where DBOS keeps its workflows: the URL and the schema to pass to DBOS."""

    def __init__(self, kind: str, url: str, schema: str) -> None:
        self.kind = kind
        self.url = url
        self.schema = schema

    def config(self, name: str, **extra: Any) -> dict[str, Any]:
        return {
            "name": name,
            "system_database_url": self.url,
            "dbos_system_schema": self.schema,
            "log_level": "WARNING",
            # Pinned, as the guide says to (humanwire warns at each wait otherwise).
            "application_version": "humanwire-test",
            **extra,
        }
