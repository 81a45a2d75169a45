"""What the Temporal tests share: the servers' binaries, waiting with a generous bound,
counting history events."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import sysconfig
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
from temporalio.client import Client, WorkflowHandle

HUMAN = "+12025550100"
LIMIT = 90.0
"""Seconds any one wait of these tests may take on a slow, loaded machine."""


def binary(name: str) -> str:
    path = os.path.join(sysconfig.get_path("scripts"), name)
    assert os.path.exists(path), f"{name} is installed by the dev extra ({path})"
    return path


async def until(check: Callable[[], Awaitable[Any]], what: str, limit: float = LIMIT) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while True:
        value = await check()
        if value:
            return value
        assert loop.time() < deadline, f"gave up waiting for {what}"
        await asyncio.sleep(0.2)


async def count_events(handle: WorkflowHandle[Any, Any], kind: int) -> int:
    history = await handle.fetch_history()
    return sum(1 for event in history.events if event.event_type == kind)


def at_least(
    handle: WorkflowHandle[Any, Any], kind: int, count: int
) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return await count_events(handle, kind) >= count

    return check


HERE = Path(__file__).parent
START_LIMIT = 240.0
"""Seconds a child process may take to start (importing temporalio and humanwire on a
loaded 2-core machine took over a minute)."""


class ChildProcess:
    """A Python script of this folder in a process of its own, killed by its pid."""

    def __init__(self, script: str, *args: str, log: Path) -> None:
        self.script = script
        self.args = args
        self.log = log
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> ChildProcess:
        """Starts it and waits for its ``ready`` line."""
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        }
        with self.log.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                str(HERE / self.script),
                *self.args,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                env=env,
                cwd=str(HERE),
            )
        assert self.process.stdout is not None
        try:
            line = await asyncio.wait_for(self.process.stdout.readline(), START_LIMIT)
        except asyncio.TimeoutError:
            await self.kill()
            raise AssertionError(f"{self.script} did not start: {self.log.read_text()}") from None
        assert line.strip() == b"ready", f"{self.script}: {line!r} {self.log.read_text()}"
        return self

    async def kill(self) -> None:
        """SIGKILL, then reaps it."""
        if self.process is None or self.process.returncode is not None:
            return
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class DevServerProcess:
    """Temporal's dev server on a database file, stopped and started again on it."""

    def __init__(self, database: Path, log: Path) -> None:
        self.database = database
        self.log = log
        self.port = free_port()
        self.process: asyncio.subprocess.Process | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self) -> DevServerProcess:
        with self.log.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                binary("temporal"),
                "server",
                "start-dev",
                "--headless",
                "--ip",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--http-port",
                str(free_port()),
                "--metrics-port",
                str(free_port()),
                "--db-filename",
                str(self.database),
                "--log-level",
                "error",
                stdout=log,
                stderr=log,
            )
        await until(self._serves, "the dev server to serve", START_LIMIT)
        return self

    async def _serves(self) -> bool:
        assert self.process is not None
        assert self.process.returncode is None, self.log.read_text()
        try:
            client = await Client.connect(self.address)
            await client.workflow_service.get_system_info(GetSystemInfoRequest())
        except Exception:
            return False
        return True

    async def kill(self) -> None:
        """SIGKILL: the server closes nothing; then reaps it."""
        if self.process is None or self.process.returncode is not None:
            return
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()

    async def stop(self) -> None:
        """SIGTERM (the server closes its database), then reaps it."""
        if self.process is None or self.process.returncode is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.process.wait(), LIMIT)
        except asyncio.TimeoutError:
            self.process.send_signal(signal.SIGKILL)
            await self.process.wait()
