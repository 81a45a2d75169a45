"""How many held waits one service process carries, and what they cost.

For each N (default 100, 1,000, 10,000) it holds N requests open at once (slack messages
with a 600 s ``waitTime``, each with its own text), then answers them and prints:

- sends per second while the N waits are being opened (and the CPU each side spent per
  send, which a shared machine disturbs less than wall time),
- p50 / p99 latency from the human's reply to the agent's held response, measured one
  reply at a time with all N held (every wait when N <= ``--sample``, else a random
  ``--sample`` of them; the rest are then answered in bulk, unmeasured). Beside it the
  reply POST's own round trip, so the part that is the wait resuming is visible,
- memory per held wait.

Two modes:

``--mode http`` (default): the real service (``ServiceRunner``: uvicorn, SQLite file) in a
process of its own, started with ``multiprocessing`` so its config can lift the rate limit
and the spam guard; this process is only the load generator, speaking loopback HTTP
through raw ``httpx.AsyncClient``s of ``POOL_SIZE`` connections each (``--client
humanwire`` sends through the project's ``AsyncHumanWire`` instead; it costs the load
generator about 20 % more CPU per send, so raw httpx is the default). Both hold one
connection per wait. ``--client multiplexed`` is what a user writes: ONE
``AsyncHumanWire()`` built with defaults and an ``asyncio.gather`` of all N asks at once;
past a handful of waits it asks for 202s and reads the answers from the account's outcome
stream (``humanwire._outcomes``), so the figures add the connections it used (peak, and in
use while the N waits are held) and the time until all N messages were delivered.
Memory is the SERVICE process's RSS growth (``VmRSS``, after a ``gc.collect()`` there)
per held wait: the connection, the request's coroutine, the waiter, the stored rows.
A small pipe to the service process answers "how many waits are held" and "which
interaction has which text" (the sandbox API lists only the 500 newest deliveries).

``--floor`` adds, in the same run and for each N, the same procedure against a bare
Starlette app under the same uvicorn settings (``floor_main``: ``POST /messages/slack``
holds a future until ``POST /sandbox/replies`` names it; no key, no store, no engine),
driven by the same load generator. Its figures are what HTTP, uvicorn and the load
generator cost by themselves; the summary prints the service's p50 over the floor's.
(``--client httpx`` only: the floor has no outcome stream.)

``--tracemalloc`` (http): where the bytes of a held wait go. The service process (and the
floor's, with ``--floor``) traces its allocations (``tracemalloc``, ``TRACE_FRAMES`` frames
each) during the measured round; the opening pauses once ``--trace-from`` waits (1,000)
are held and again once all N are, a snapshot is taken at each (after a ``gc.collect()``),
and the difference over the waits between them is printed per held wait: by the package
whose code allocated (ours, uvicorn, h11, starlette, asyncio, ...), by the site that asked
for it (the innermost frame outside the standard library: an ``asyncio`` task is counted
where it was created), and the top sites by file:line. Tracing slows the service and adds
its own bytes to its RSS: a traced run's timings and RSS are not figures to report.

``--mode engine``: the engine alone, in-process, no HTTP; memory is what ``tracemalloc``
sees allocated per held wait (the engine's own cost: a future, a timer handle, the
request's coroutine).

Run::

    python benchmarks/bench_waits.py                      # http, N = 100, 1000, 10000
    python benchmarks/bench_waits.py --runs 2             # twice, then the medians
    python benchmarks/bench_waits.py --mode engine
    python benchmarks/bench_waits.py --sizes 10000 --floor --runs 3   # against the floor
    python benchmarks/bench_waits.py --sizes 1000 --profile /tmp/hw   # py-spy the service
    python benchmarks/bench_waits.py --sizes 10000 --floor --tracemalloc   # where bytes go
    python benchmarks/bench_waits.py --sizes 10000 --client multiplexed --tracemalloc

N = 10,000 over HTTP holds 10,000 sockets on each side: both processes raise their
open-files limit to the hard limit, which must be above N + a few hundred (not with
``--client multiplexed``: its N waits share a handful of connections).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import math
import multiprocessing
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

    from humanwire.server.config import ServiceConfig

SLACK_HUMAN = "U0HUMAN0001"
WAIT_TIME = 600
OPENING = 64
"""Requests handed to the client at once while opening; with at most twice this many not
yet held, the service's listen backlog (128) never overflows into SYN retries."""
POOL_SIZE = 32
"""Connections per ``httpx.AsyncClient``: its pool scans every connection it has (and polls
each idle one's socket) whenever a request starts or a response ends, so one pool of
10,000 — or even of 250 — would make the load generator the bottleneck and its
bookkeeping part of every measured latency."""
WARM_UP = 32
"""Waits held and answered before measuring, so first-use costs are not counted per wait."""
BULK_REPLIES = 16
"""Replies in flight at once for the unmeasured rest."""
POLL = 0.01
"""Seconds between two looks at how many waits the service holds, once all are sent (each
look is a round trip to the service process, on both processes' CPU)."""
PHASE_LIMIT = 300.0
"""Seconds any phase may take before the run is abandoned (it stops by itself)."""
TRACED_PHASE_LIMIT = 3600.0
"""``PHASE_LIMIT`` of the opening while tracing (every allocation is recorded: the
service runs several times slower)."""
TRACE_FRAMES = 16
"""Frames ``--tracemalloc`` keeps per allocation: enough to reach, from an ``asyncio`` or
uvicorn allocation, the frame of ours (if any) that led to it."""
TRACE_SETTLE = 1.0
"""Seconds between the waits being held and a snapshot: the last answers (202s, batch
answers) are written and their buffers freed."""
TRACE_TOP = 30
"""Sites printed per table."""
TRACE_OURS_BELOW = 8.0
"""Bytes a wait below which a site of ours is left out of its table."""


def question(i: int) -> str:
    return f"bench question {i}"


def answer(i: int) -> str:
    return f"answer {i}"


def bench_config(db_path: str) -> ServiceConfig:
    from humanwire.server.config import ServiceConfig

    # One account sends N messages in seconds: no abuse limits in the way of a benchmark
    # (N held waits are N connections from 127.0.0.1: no per-address bound either).
    return ServiceConfig(
        db_path=db_path,
        rate_limit_requests=10_000_000,
        spam_recipients=10_000_000,
        max_connections_per_address=0,
    )


def raise_open_files_limit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        return hard
    return soft


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc status")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as stat:
        # The command name may hold spaces: the fields after it follow the last ")".
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_average() -> str:
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def percentiles(values: Sequence[float]) -> tuple[float, float]:
    """p50 and p99 in milliseconds."""
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, math.ceil(len(ordered) * 0.99) - 1)]
    return statistics.median(ordered) * 1000, p99 * 1000


@dataclass
class Result:
    mode: str
    n: int
    send_seconds: float
    latencies: list[float]
    bytes_per_wait: float
    load: str
    reply_round_trips: list[float] | None = None
    server_cpu_per_send: float | None = None
    client_cpu_per_send: float | None = None
    connections: tuple[int, int] | None = None
    """(peak, in use while every wait is held): ``--client multiplexed`` only."""
    batches: int | None = None
    """``POST /batch`` requests that carried the sends: ``--client multiplexed`` only."""
    trace: str | None = None
    """``--tracemalloc``: where the bytes of a held wait went (``trace_report``)."""

    @property
    def sends_per_second(self) -> float:
        return self.n / self.send_seconds

    def line(self) -> str:
        p50, p99 = percentiles(self.latencies)
        text = (
            f"{self.mode:11} N={self.n:>6}  sends/s={self.sends_per_second:>6.0f}  "
            f"reply->response p50={p50:6.2f} ms p99={p99:6.2f} ms "
            f"(n={len(self.latencies)})  memory/held wait={self.bytes_per_wait / 1024:5.1f} KiB"
        )
        if self.reply_round_trips:
            post50, post99 = percentiles(self.reply_round_trips)
            text += f"  reply POST alone p50={post50:.2f} ms p99={post99:.2f} ms"
        if self.server_cpu_per_send is not None and self.client_cpu_per_send is not None:
            text += (
                f"  CPU/send: service {self.server_cpu_per_send * 1000:.2f} ms,"
                f" load generator {self.client_cpu_per_send * 1000:.2f} ms"
            )
        if self.connections is not None:
            peak, in_use = self.connections
            text += f"  connections: peak {peak}, in use while held {in_use}"
        if self.batches is not None:
            text += f"  in {self.batches} batches"
        text += f"  [load avg {self.load}]"
        if self.trace is not None:
            text += " (traced: timings and RSS include tracemalloc's cost)"
        return text


# -- the service's process ---------------------------------------------------------------
class Tracing:
    """``--tracemalloc`` in a service (or floor) process, driven by the benchmark's pipe:
    ``trace`` starts tracing, ``snapshot`` takes one (after a collection), ``report:K``
    prints the difference between the last two over K waits and stops tracing."""

    COMMANDS = ("trace", "snapshot")

    def __init__(self) -> None:
        self.snapshots: list[tracemalloc.Snapshot] = []

    def handles(self, command: str) -> bool:
        return command in self.COMMANDS or command.startswith("report:")

    def run(self, command: str) -> Any:
        if command == "trace":
            self.snapshots.clear()
            tracemalloc.start(TRACE_FRAMES)
            return True
        if command == "snapshot":
            gc.collect()
            snapshot = tracemalloc.take_snapshot().filter_traces(
                (
                    tracemalloc.Filter(False, tracemalloc.__file__),
                    tracemalloc.Filter(False, "<frozen importlib._bootstrap*>"),
                )
            )
            self.snapshots.append(snapshot)
            return len(self.snapshots)
        waits = int(command.removeprefix("report:"))
        before, after = self.snapshots[-2:]
        self.snapshots.clear()
        tracemalloc.stop()
        return trace_report(after.compare_to(before, "traceback"), waits)


STDLIB = sysconfig.get_paths()["stdlib"]
AREAS = (
    "humanwire",
    "uvicorn",
    "h11",
    "starlette",
    "pydantic",
    "pydantic_core",
    "anyio",
    "sqlite3",
    "aiosqlite",
    "psycopg",
    "asyncio",
)


def area(filename: str) -> str:
    """Whose code a file is: a package of ``AREAS``, ``benchmark`` (this file: the floor's
    app), another ``site-packages`` package by name, else ``stdlib`` or ``other``."""
    path = Path(filename)
    if path.name == Path(__file__).name:
        return "benchmark"
    parts = path.parts
    for name in AREAS:
        if name in parts:
            return name
    if "site-packages" in parts:
        return parts[parts.index("site-packages") + 1].split(".")[0]
    if filename.startswith(STDLIB):
        return "stdlib"
    return "other"


def asker(traceback: tracemalloc.Traceback) -> tuple[str, str]:
    """Who asked for an allocation, as (area, site): the innermost frame outside the
    standard library (asyncio included), e.g. the line of ours that created a task or a
    future. An allocation of the event loop's own callbacks (a connection's transport and
    socket, made by asyncio as it accepts) is ``asyncio``'s, at the innermost frame."""
    for frame in reversed(traceback):  # oldest first: reversed is innermost first
        if frame.filename.endswith(LOOP_CALLBACK):
            break
        frame_area = area(frame.filename)
        if frame_area not in ("stdlib", "asyncio", "other"):
            return frame_area, site(frame)
    innermost = traceback[-1]
    return area(innermost.filename), site(innermost)


LOOP_CALLBACK = os.path.join("asyncio", "events.py")
"""Where the event loop runs a callback (``Handle._run``): a frame outward of it is the
loop's, not the caller of what was allocated."""


def site(frame: tracemalloc.Frame) -> str:
    filename = frame.filename
    for prefix in (STDLIB + "/site-packages/", STDLIB + "/", str(Path(__file__).parents[1])):
        if filename.startswith(prefix):
            filename = filename[len(prefix) :].lstrip("/")
            break
    return f"{filename}:{frame.lineno}"


def trace_report(diffs: list[tracemalloc.StatisticDiff], waits: int) -> str:
    """The bytes (and blocks) that appeared between two snapshots, per wait, grouped."""
    by_area: dict[str, list[int]] = {}
    by_asker_area: dict[str, list[int]] = {}
    by_line: dict[str, list[int]] = {}
    by_asker: dict[str, list[int]] = {}
    ours: dict[str, list[int]] = {}
    total = [0, 0]
    for diff in diffs:
        if diff.size_diff == 0 and diff.count_diff == 0:
            continue
        innermost = diff.traceback[-1]
        asker_area, asker_site = asker(diff.traceback)
        for table, key in (
            (by_area, area(innermost.filename)),
            (by_asker_area, asker_area),
            (by_line, site(innermost)),
            (by_asker, asker_site),
        ):
            entry = table.setdefault(key, [0, 0])
            entry[0] += diff.size_diff
            entry[1] += diff.count_diff
        if asker_area == "humanwire":
            entry = ours.setdefault(asker_site, [0, 0])
            entry[0] += diff.size_diff
            entry[1] += diff.count_diff
        total[0] += diff.size_diff
        total[1] += diff.count_diff

    def table(title: str, rows: dict[str, list[int]], top: int) -> str:
        ranked = sorted(rows.items(), key=lambda item: -item[1][0])
        if top:
            ranked = ranked[:top]
        else:  # every row from TRACE_OURS_BELOW
            ranked = [row for row in ranked if row[1][0] / waits >= TRACE_OURS_BELOW]
        lines = [f"  {title}:"]
        for key, (size, count) in ranked:
            lines.append(f"    {size / waits:9.1f} B {count / waits:6.2f} blocks  {key}")
        return "\n".join(lines)

    return "\n".join(
        (
            f"  traced: {total[0] / waits / 1024:.2f} KiB and {total[1] / waits:.1f} blocks"
            f" per held wait (over {waits:,} waits)",
            table("by the package whose code allocated", by_area, len(by_area)),
            table(
                "by the package that asked (the innermost frame outside the standard library)",
                by_asker_area,
                len(by_asker_area),
            ),
            table("top sites that asked", by_asker, TRACE_TOP),
            table(f"our sites that asked (from {TRACE_OURS_BELOW:g} B a wait)", ours, 0),
            table("top allocating lines", by_line, TRACE_TOP),
        )
    )


def service_main(conn: Connection, db_path: str) -> None:
    """The service process: the runner serves on a free loopback port; this thread only
    answers the benchmark's questions on ``conn`` (blocked in ``recv`` otherwise)."""
    raise_open_files_limit()
    from humanwire.server.runtime.runner import ServiceRunner, tune_gc_for_service

    with ServiceRunner(bench_config(db_path)) as runner:
        engine = runner.engine
        key = runner.create_account("bench")
        tune_gc_for_service()  # as ``humanwire serve`` does in its process
        account = runner.call(engine.accounts.authenticate, key)
        assert account is not None
        conn.send((runner.base_url, key))
        tracing = Tracing()
        while True:
            command = conn.recv()
            if tracing.handles(command):
                conn.send(tracing.run(command))
            elif command == "held":
                conn.send(runner.call(lambda: engine.held_waits))
            elif command == "rss":
                gc.collect()
                conn.send(rss_bytes(os.getpid()))
            elif command == "deliveries":
                records = runner.call(
                    lambda: engine.store.list_deliveries(account.id, limit=10_000_000)
                )
                conn.send([(record.text, record.interaction_id) for record in records])
            else:
                break


def floor_main(conn: Connection, db_path: str) -> None:
    """The floor's process: a bare Starlette hold/reply app under uvicorn, configured as
    the runner configures the service, answering the same pipe commands."""
    raise_open_files_limit()
    import threading
    import uuid

    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from humanwire.server.runtime.runner import (
        KEEP_ALIVE_TIMEOUT,
        bind_listener,
        tune_gc_for_service,
    )

    held: dict[str, asyncio.Future[str]] = {}
    ids: dict[str, str] = {}

    async def send(request: Request) -> JSONResponse:
        body = await request.json()
        interaction_id = str(uuid.uuid4())
        ids[body["message"]] = interaction_id
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        held[interaction_id] = future
        try:
            reply = await asyncio.wait_for(future, body["waitTime"])
        finally:
            held.pop(interaction_id, None)
        return JSONResponse(
            {"interactionId": interaction_id, "status": "ended", "responded": True, "reply": reply}
        )

    async def sandbox_reply(request: Request) -> JSONResponse:
        body = await request.json()
        future = held.get(body["interactionId"])
        if future is not None and not future.done():
            future.set_result(body["body"])
        return JSONResponse({"interactionId": body["interactionId"]})

    app = Starlette(
        routes=[
            Route("/messages/slack", send, methods=["POST"]),
            Route("/sandbox/replies", sandbox_reply, methods=["POST"]),
        ]
    )
    sock = bind_listener("127.0.0.1", 0)  # as the service binds (TCP_NODELAY)
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="off",
        loop="asyncio",
        timeout_keep_alive=KEEP_ALIVE_TIMEOUT,
        access_log=False,
        log_config=None,
    )
    server = uvicorn.Server(config)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(
        target=loop.run_until_complete, args=(server.serve(sockets=[sock]),), daemon=True
    )
    thread.start()
    while not server.started:
        time.sleep(0.01)
    tune_gc_for_service()

    def on_loop(read: Any) -> Any:
        async def call() -> Any:
            return read()

        return asyncio.run_coroutine_threadsafe(call(), loop).result(60)

    conn.send((f"http://127.0.0.1:{sock.getsockname()[1]}", "floor"))
    tracing = Tracing()
    while True:
        command = conn.recv()
        if tracing.handles(command):
            conn.send(tracing.run(command))
        elif command == "held":
            conn.send(on_loop(lambda: len(held)))
        elif command == "rss":
            gc.collect()
            conn.send(rss_bytes(os.getpid()))
        elif command == "deliveries":
            conn.send(on_loop(lambda: list(ids.items())))
        else:
            break
    server.should_exit = True
    thread.join(10)


class ServiceProcess:
    """The service (or with ``floor``, the floor) in a child process, for one N: fresh
    database, fresh memory."""

    def __init__(self, floor: bool = False) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child_conn = context.Pipe()
        self._dir = tempfile.TemporaryDirectory(prefix="humanwire-bench-")
        self._process = context.Process(
            target=floor_main if floor else service_main,
            args=(child_conn, str(Path(self._dir.name) / "bench.db")),
            name="humanwire-bench-floor" if floor else "humanwire-bench-service",
            daemon=True,
        )
        self.base_url = ""
        self.key = ""

    @property
    def pid(self) -> int:
        assert self._process.pid is not None
        return self._process.pid

    def __enter__(self) -> ServiceProcess:
        self._process.start()
        if not self._conn.poll(60):
            self._process.terminate()
            raise RuntimeError("the service process did not start within 60 s")
        self.base_url, self.key = self._conn.recv()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with contextlib.suppress(OSError):
            self._conn.send("stop")
        self._process.join(30)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(10)
        self._conn.close()
        self._dir.cleanup()

    def _ask(self, command: str, timeout: float = 60) -> Any:
        self._conn.send(command)
        if not self._conn.poll(timeout):
            raise RuntimeError(f"the service process did not answer {command!r}")
        return self._conn.recv()

    def held(self) -> int:
        return int(self._ask("held"))

    def trace(self) -> None:
        self._ask("trace")

    def snapshot(self) -> None:
        self._ask("snapshot", TRACED_PHASE_LIMIT)

    def trace_report(self, waits: int) -> str:
        return str(self._ask(f"report:{waits}", TRACED_PHASE_LIMIT))

    def rss(self) -> int:
        return int(self._ask("rss"))

    def interaction_ids(self) -> dict[str, str]:
        """Delivered text -> interaction id."""
        return {text: interaction_id for text, interaction_id in self._ask("deliveries")}

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)


# -- the load generator ------------------------------------------------------------------
class Senders:
    """Sends the held requests: raw ``httpx.AsyncClient``s (``--client httpx``) or the
    project's ``AsyncHumanWire`` on them (``--client humanwire``, max_retries=0), one client
    per ``POOL_SIZE`` requests."""

    def __init__(self, kind: str, base_url: str, key: str, n: int) -> None:
        import ssl

        import httpx

        from humanwire import AsyncHumanWire

        self.kind = kind
        self.one = AsyncHumanWire(key, base_url) if kind == "multiplexed" else None
        self.peak = 0
        if self.one is not None:
            self.clients = []
            self.humanwire = []
            return
        timeout = httpx.Timeout(WAIT_TIME + 60, connect=60)
        # Plain http; one context for all clients, not one each (milliseconds apiece).
        tls = ssl.create_default_context()
        limits = httpx.Limits(max_connections=POOL_SIZE, max_keepalive_connections=POOL_SIZE)
        self.clients = [
            httpx.AsyncClient(
                base_url=base_url,
                headers={"Authorization": f"Bearer {key}"},
                limits=limits,
                timeout=timeout,
                verify=tls,
            )
            for _ in range(math.ceil(n / POOL_SIZE))
        ]
        self.humanwire = [
            AsyncHumanWire(
                key,
                base_url,
                timeout=timeout,
                max_retries=0,
                http_client=client,
                multiplex_waits=False,  # one connection per wait, as before the stream
            )
            for client in self.clients
        ]

    async def send(self, i: int, text: str) -> tuple[bool | None, str | None]:
        """Holds one wait; returns (responded, the human's reply)."""
        if self.one is not None:
            response = await self.one.messages.slack(
                to=SLACK_HUMAN, message=text, wait_time=WAIT_TIME
            )
            return response.responded, response.reply
        if self.kind == "humanwire":
            response = await self.humanwire[i // POOL_SIZE].messages.slack(
                to=SLACK_HUMAN, message=text, wait_time=WAIT_TIME
            )
            return response.responded, response.reply
        raw = await self.clients[i // POOL_SIZE].post(
            "/messages/slack", json={"message": text, "to": SLACK_HUMAN, "waitTime": WAIT_TIME}
        )
        raw.raise_for_status()
        body = raw.json()
        return body.get("responded"), body.get("reply")

    def connections(self) -> tuple[int, int]:
        """(open, in use) connections of the multiplexed client's pool; (0, 0) otherwise."""
        if self.one is None:
            return 0, 0
        pool: Any = self.one._http._transport._pool  # type: ignore[attr-defined]
        opened = list(pool.connections)
        in_use = sum(1 for connection in opened if not connection.is_idle())
        self.peak = max(self.peak, len(opened))
        return len(opened), in_use

    async def aclose(self) -> None:
        if self.one is not None:
            await self.one.aclose()
        await asyncio.gather(*(client.aclose() for client in self.clients))


def reply_body(interaction_id: str, text: str) -> dict[str, Any]:
    from humanwire.server.config import SHARED_SLACK_WORKSPACE

    return {
        "channel": "slack",
        "from": SLACK_HUMAN,
        "to": SHARED_SLACK_WORKSPACE,
        "body": text,
        "interactionId": interaction_id,
    }


def start_profiler(pid: int, output: str) -> subprocess.Popen[bytes]:
    """py-spy on the service process (``pip install py-spy``; needs ptrace rights),
    collapsed stacks, idle threads left out."""
    spy = subprocess.Popen(
        [
            *("py-spy", "record", "--pid", str(pid), "--format", "raw", "--rate", "500"),
            *("--output", output, "--nonblocking"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1.0)  # attached before the first timed reply
    return spy


def stop_profiler(spy: subprocess.Popen[bytes], output: str) -> None:
    spy.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
    spy.wait(30)
    print(f"{output}: where the process spent its samples (own time)")
    for share, frame in top_frames(output):
        print(f"  {share:5.1f} %  {frame}")


def top_frames(collapsed: str, count: int = 12) -> list[tuple[float, str]]:
    """The innermost frames with the most samples in py-spy's collapsed stacks."""
    own: dict[str, int] = {}
    total = 0
    with open(collapsed) as lines:
        for line in lines:
            stack, _, samples = line.rstrip().rpartition(" ")
            total += int(samples)
            frame = stack.rsplit(";", 1)[-1]
            own[frame] = own.get(frame, 0) + int(samples)
    ranked = sorted(own.items(), key=lambda item: -item[1])[:count]
    return [(100 * samples / max(total, 1), frame) for frame, samples in ranked]


@dataclass
class Round:
    send_seconds: float
    rss_growth: int
    server_cpu: float
    client_cpu: float
    latencies: list[float]
    round_trips: list[float]
    connections: tuple[int, int] | None = None
    batches: int | None = None
    trace: str | None = None


async def hold_and_answer(
    service: ServiceProcess,
    human: httpx.AsyncClient,
    kind: str,
    n: int,
    offset: int,
    sample: int,
    rng: random.Random,
    profile: str | None = None,
    trace_from: int | None = None,
) -> Round:
    """Holds waits ``offset .. offset+n-1``, then answers them (a sample one at a time,
    timed; the rest in bulk) and checks each held request got its own answer. With
    ``profile``, py-spy records the service while opening (``{profile}-open.txt``; the
    load generator in ``{profile}-open-client.txt``) and during the timed replies
    (``{profile}-replies.txt``). With ``trace_from`` (the service traces its
    allocations), the opening pauses once that many are held for a snapshot, and another
    is taken once all N are (``Round.trace``: the difference per wait)."""
    loop = asyncio.get_running_loop()
    arrived: list[asyncio.Future[float]] = [loop.create_future() for _ in range(n)]
    senders = Senders(kind, service.base_url, service.key, n)

    async def hold(i: int) -> None:
        responded, reply = await senders.send(i, question(offset + i))
        at = time.perf_counter()
        if not responded or reply != answer(offset + i):
            raise AssertionError(f"wait {offset + i} got {responded=} {reply=}")
        arrived[i].set_result(at)

    failed: list[asyncio.Task[None]] = []

    def note_failure(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            failed.append(task)

    def check(deadline: float) -> None:
        # Cheap: it runs every few milliseconds while 10,000 sends are in flight, and its
        # CPU counts as the load generator's.
        senders.connections()
        if failed:
            raise RuntimeError("a held request failed") from failed[0].exception()
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{service.held()} of {n} waits held in time")

    tasks: list[asyncio.Task[None]] = []
    try:
        rss_before = service.rss()
        spy = start_profiler(service.pid, f"{profile}-open.txt") if profile else None
        own_spy = start_profiler(os.getpid(), f"{profile}-open-client.txt") if profile else None
        server_cpu = service.cpu_seconds()
        client_cpu = time.process_time()
        started = time.perf_counter()
        deadline = started + (TRACED_PHASE_LIMIT if trace_from is not None else PHASE_LIMIT)
        for i in range(n):
            if i == trace_from:
                while service.held() < i:
                    check(deadline)
                    await asyncio.sleep(POLL)
                await asyncio.sleep(TRACE_SETTLE)
                service.snapshot()
            tasks.append(asyncio.create_task(hold(i)))
            tasks[-1].add_done_callback(note_failure)
            if kind != "multiplexed" and len(tasks) % OPENING == 0:
                while service.held() < len(tasks) - OPENING:
                    check(deadline)
                    await asyncio.sleep(0.002)
        while service.held() < n:
            check(deadline)
            await asyncio.sleep(POLL)
        send_seconds = time.perf_counter() - started
        server_cpu = service.cpu_seconds() - server_cpu
        client_cpu = time.process_time() - client_cpu
        if spy is not None:
            stop_profiler(spy, f"{profile}-open.txt")
        if own_spy is not None:
            stop_profiler(own_spy, f"{profile}-open-client.txt")
        rss_growth = service.rss() - rss_before
        await asyncio.sleep(0.2)  # the last 202s are read
        trace = None
        if trace_from is not None:
            await asyncio.sleep(TRACE_SETTLE)
            service.snapshot()
            trace = service.trace_report(n - trace_from)
            # Printed now: the timed replies of a traced run may yet time out.
            print(f"where the bytes of a held wait went (N={n:,}):\n{trace}", flush=True)
        connections = (senders.peak, senders.connections()[1]) if senders.one else None
        batcher = senders.one._driver.batcher if senders.one else None
        batches = batcher.batches if batcher is not None else None

        ids = service.interaction_ids()
        interaction = [ids[question(offset + i)] for i in range(n)]
        measured = list(range(n)) if n <= sample else rng.sample(range(n), sample)
        latencies: list[float] = []
        round_trips: list[float] = []
        spy = start_profiler(service.pid, f"{profile}-replies.txt") if profile else None
        for i in measured:
            sent = time.perf_counter()
            response = await human.post(
                "/sandbox/replies", json=reply_body(interaction[i], answer(offset + i))
            )
            posted = time.perf_counter()
            response.raise_for_status()
            latencies.append(await asyncio.wait_for(arrived[i], 30) - sent)
            round_trips.append(posted - sent)
        if spy is not None:
            stop_profiler(spy, f"{profile}-replies.txt")

        chosen = set(measured)
        gate = asyncio.Semaphore(BULK_REPLIES)

        async def answer_one(i: int) -> None:
            async with gate:
                response = await human.post(
                    "/sandbox/replies", json=reply_body(interaction[i], answer(offset + i))
                )
                response.raise_for_status()

        await asyncio.gather(*(answer_one(i) for i in range(n) if i not in chosen))
        await asyncio.wait_for(asyncio.gather(*tasks), PHASE_LIMIT)
    finally:
        for task in tasks:
            task.cancel()
        await senders.aclose()
    return Round(
        send_seconds,
        rss_growth,
        server_cpu,
        client_cpu,
        latencies,
        round_trips,
        connections,
        batches,
        trace,
    )


async def bench_http_in(
    service: ServiceProcess,
    n: int,
    kind: str,
    sample: int,
    profile: str | None,
    trace_from: int | None = None,
) -> Result:
    import httpx

    rng = random.Random(n)
    # The human's side has its own small client, so its requests never queue behind the
    # agent's thousands of held connections.
    async with httpx.AsyncClient(
        base_url=service.base_url,
        headers={"Authorization": f"Bearer {service.key}"},
        timeout=httpx.Timeout(60),
        limits=httpx.Limits(max_connections=BULK_REPLIES),
    ) as human:
        await hold_and_answer(service, human, kind, WARM_UP, 0, WARM_UP, rng)
        load = load_average()
        if trace_from is not None:
            service.trace()
        measured = await hold_and_answer(
            service,
            human,
            kind,
            n,
            WARM_UP,
            sample,
            rng,
            f"{profile}-{n}" if profile else None,
            trace_from,
        )
    return Result(
        mode=f"http/{kind}",
        n=n,
        send_seconds=measured.send_seconds,
        latencies=measured.latencies,
        bytes_per_wait=measured.rss_growth / n,
        load=load,
        reply_round_trips=measured.round_trips,
        server_cpu_per_send=measured.server_cpu / n,
        client_cpu_per_send=measured.client_cpu / n,
        connections=measured.connections,
        batches=measured.batches,
        trace=measured.trace,
    )


def bench_http(
    n: int,
    kind: str,
    sample: int,
    profile: str | None,
    floor: bool = False,
    trace_from: int | None = None,
) -> Result:
    with ServiceProcess(floor) as service:
        result = asyncio.run(bench_http_in(service, n, kind, sample, profile, trace_from))
    if floor:
        result.mode = "floor"
    return result


# -- engine mode -------------------------------------------------------------------------
async def bench_engine(n: int, sample: int) -> Result:
    from humanwire.server.engine import Engine
    from humanwire.types import SandboxReplyRequest, SlackMessageRequest

    with tempfile.TemporaryDirectory(prefix="humanwire-bench-") as directory:
        engine = Engine(bench_config(str(Path(directory) / "bench.db")))
        await engine.start()
        account, _ = await engine.accounts.create("bench")
        requests = [
            SlackMessageRequest(message=question(i), to=SLACK_HUMAN, wait_time=WAIT_TIME)
            for i in range(n)
        ]
        done_at: dict[str, float] = {}

        async def one(request: SlackMessageRequest) -> None:
            response = await engine.send_message(account, request)
            assert response.responded, response
            done_at[response.interaction_id] = time.perf_counter()

        load = load_average()
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        started = time.perf_counter()
        tasks = [asyncio.ensure_future(one(request)) for request in requests]
        while engine.held_waits < n:
            await asyncio.sleep(0.001)
        send_seconds = time.perf_counter() - started
        gc.collect()
        held_bytes = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()

        ids = [d.interaction_id for d in await engine.store.list_deliveries(account.id, limit=n)]
        rng = random.Random(n)
        measured = ids if n <= sample else rng.sample(ids, sample)
        replied_at: dict[str, float] = {}
        for interaction_id in [*measured, *set(ids).difference(measured)]:
            assert interaction_id is not None
            reply = SandboxReplyRequest.model_validate(reply_body(interaction_id, "ok"))
            replied_at[interaction_id] = time.perf_counter()
            await engine.sandbox_reply(account, reply)
            await asyncio.sleep(0)  # let the held request resume, as a server would
        await asyncio.gather(*tasks)
        await engine.close()
    latencies = [done_at[key] - replied_at[key] for key in measured if key is not None]
    return Result("engine", n, send_seconds, latencies, held_bytes / n, load)


# -- main --------------------------------------------------------------------------------
def summary(results: list[Result]) -> str:
    """Medians over the runs, per N and mode, as a Markdown table; with the floor, the
    service's p50 over the floor's."""
    modes = list(dict.fromkeys(result.mode for result in results))
    tables = [_summary([r for r in results if r.mode == mode]) for mode in modes]
    text = "\n\n".join(f"{mode}:\n{table}" for mode, table in zip(modes, tables, strict=True))
    if "floor" in modes and len(modes) == 2:
        service = next(mode for mode in modes if mode != "floor")
        for n in sorted({result.n for result in results}):
            p50 = {
                mode: statistics.median(
                    percentiles(r.latencies)[0] for r in results if r.n == n and r.mode == mode
                )
                for mode in modes
            }
            text += (
                f"\nN={n:,}: reply→response p50 {p50[service]:.2f} ms against the floor's "
                f"{p50['floor']:.2f} ms = {p50[service] / p50['floor']:.1f}× (target <= 3×)"
            )
    return text


def _summary(results: list[Result]) -> str:
    http = any(result.reply_round_trips for result in results)
    head = "| N | sends/s | reply→response p50 | p99 |"
    rule = "|---:|---:|---:|---:|"
    if http:
        head += " reply POST alone p50 | service CPU per send |"
        rule += "---:|---:|"
    lines = [head + " memory per held wait |", rule + "---:|"]
    for n in sorted({result.n for result in results}):
        runs = [result for result in results if result.n == n]
        p50s, p99s = zip(*(percentiles(result.latencies) for result in runs), strict=True)
        row = (
            f"| {n:,} | {statistics.median(r.sends_per_second for r in runs):,.0f} "
            f"| {statistics.median(p50s):.1f} ms | {statistics.median(p99s):.1f} ms |"
        )
        if http:
            posts = [percentiles(r.reply_round_trips or [0.0])[0] for r in runs]
            cpu = [(r.server_cpu_per_send or 0.0) * 1000 for r in runs]
            row += f" {statistics.median(posts):.1f} ms | {statistics.median(cpu):.2f} ms |"
        memory = statistics.median(r.bytes_per_wait for r in runs) / 1024
        lines.append(row + f" {memory:.1f} KiB |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--mode", choices=("http", "engine"), default="http")
    parser.add_argument("--client", choices=("httpx", "humanwire", "multiplexed"), default="httpx")
    parser.add_argument("--sizes", default="100,1000,10000", help="comma-separated N")
    parser.add_argument("--sample", type=int, default=1000, help="replies timed one by one")
    parser.add_argument("--runs", type=int, default=1, help="repeat, then print medians")
    parser.add_argument(
        "--profile",
        metavar="PREFIX",
        help="http: py-spy the service while opening and during the timed replies "
        "(PREFIX-N-open.txt, the load generator in PREFIX-N-open-client.txt, "
        "PREFIX-N-replies.txt; profiled runs are slower)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="http: also measure a bare Starlette hold/reply app (the floor) for each N, "
        "alternating with the service",
    )
    parser.add_argument(
        "--tracemalloc",
        action="store_true",
        help="http: trace the service's (and the floor's) allocations and print where the "
        "bytes of a held wait go, from the difference between snapshots at --trace-from "
        "and at N held waits (traced runs are slower; their RSS includes the tracing)",
    )
    parser.add_argument(
        "--trace-from",
        type=int,
        default=1000,
        help="--tracemalloc: held waits at the first snapshot (below every N)",
    )
    args = parser.parse_args(argv)
    if args.floor and (args.mode != "http" or args.client != "httpx"):
        parser.error("--floor needs --mode http --client httpx")
    sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
    trace_from: int | None = None
    if args.tracemalloc:
        if args.mode != "http" or args.profile:
            parser.error("--tracemalloc needs --mode http and no --profile")
        if not 0 < args.trace_from < min(sizes):
            parser.error("--trace-from must be above 0 and below every N")
        trace_from = args.trace_from
    limit = raise_open_files_limit()
    # The multiplexed client holds its N waits over a handful of connections.
    if args.mode == "http" and args.client != "multiplexed" and limit < max(sizes) + 512:
        print(f"open-files limit {limit} is too low for N={max(sizes)}", file=sys.stderr)
        return 1
    print(f"{os.cpu_count()} CPUs, load average {load_average()}", flush=True)
    results: list[Result] = []
    for run in range(args.runs):
        for n in sizes:
            if args.mode == "engine":
                result = asyncio.run(bench_engine(n, args.sample))
                results.append(result)
                print(result.line(), flush=True)
                continue
            # With the floor, the order alternates from run to run (the machine drifts).
            floors = [False, True] if args.floor else [False]
            if run % 2:
                floors.reverse()
            for floor in floors:
                result = bench_http(n, args.client, args.sample, args.profile, floor, trace_from)
                results.append(result)
                print(result.line(), flush=True)
    print(f"\nmedians of {args.runs} run(s):\n{summary(results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
