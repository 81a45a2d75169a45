"""How many held waits one service process carries, and what they cost.

For each N (default 100, 1,000, 10,000) it holds N requests open at once (slack messages
with a 600 s ``waitTime``), then answers every one in its thread and prints:

- sends per second (until all N are held),
- p50 / p99 latency from the human's reply to the agent's response (http mode: from
  the start of the reply POST, so one loopback round trip is included; its own p50 is
  printed beside it),
- memory per held wait.

Two modes:

``--mode http`` (default): the real service on 127.0.0.1 (``ServiceRunner``, uvicorn,
SQLite file), a client in the same process speaking real loopback HTTP; replies go
through ``POST /sandbox/replies``. Memory is the process RSS growth per held wait, so it
includes the client's side of each connection.

``--mode engine``: the engine alone, in-process; memory is what ``tracemalloc`` sees
allocated per held wait (the service's own cost: a future, a timer handle, the
request's coroutine).

Run::

    python benchmarks/bench_waits.py                 # http, N = 100, 1000, 10000
    python benchmarks/bench_waits.py --mode engine --sizes 100,1000,10000

A shared or small machine will not like N = 10,000 over HTTP (10,000 sockets on each
side); raise ``ulimit -n`` first.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SLACK_HUMAN = "U0HUMAN0001"
WAIT_TIME = 600
OPENING = 256
"""Connections being opened at once in http mode (the listen backlog is 128)."""


@dataclass
class Result:
    n: int
    mode: str
    send_seconds: float
    latencies: list[float]
    bytes_per_wait: float
    reply_round_trips: list[float] | None = None
    """http mode: how long the reply POST itself took (the part that is not waiting)."""

    def line(self) -> str:
        p50, p99 = _percentiles(self.latencies)
        text = (
            f"{self.mode:6} N={self.n:>6}  sends/s={self.n / self.send_seconds:>8.0f}  "
            f"reply->response p50={p50:7.2f} ms  p99={p99:7.2f} ms  "
            f"memory/held wait={self.bytes_per_wait / 1024:6.2f} KiB"
        )
        if self.reply_round_trips:
            post50, post99 = _percentiles(self.reply_round_trips)
            text += f"  (reply POST itself p50={post50:.2f} ms p99={post99:.2f} ms)"
        return text


def _percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
    return p50, p99


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * resource.getpagesize()
    except OSError:  # not Linux: the peak is the best we have
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _config(db_path: str) -> Any:
    from humanwire.server.config import ServiceConfig

    # No abuse limits in the way of a benchmark.
    return ServiceConfig(
        db_path=db_path,
        rate_limit_requests=10_000_000,
        spam_recipients=10_000_000,
    )


# -- engine mode -----------------------------------------------------------------------
async def bench_engine(n: int) -> Result:
    from humanwire.server.config import SHARED_SLACK_WORKSPACE
    from humanwire.server.engine import Engine
    from humanwire.types import SandboxReplyRequest, SlackMessageRequest

    engine = Engine(_config(str(Path(tempfile.mkdtemp()) / "bench.db")))
    await engine.start()
    account, _ = engine.create_account("bench")
    requests = [
        SlackMessageRequest(message=f"q{i}", to=SLACK_HUMAN, wait_time=WAIT_TIME) for i in range(n)
    ]
    done_at: dict[str, float] = {}

    async def one(request: SlackMessageRequest) -> None:
        response = await engine.send_message(account, request)
        assert response.responded, response
        done_at[response.interaction_id] = time.perf_counter()

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

    replied_at: dict[str, float] = {}
    for delivery in engine.store.list_deliveries(account.id, limit=n):
        assert delivery.interaction_id is not None
        reply = SandboxReplyRequest.model_validate(
            {
                "channel": "slack",
                "from": SLACK_HUMAN,
                "to": SHARED_SLACK_WORKSPACE,
                "body": "ok",
                "interactionId": delivery.interaction_id,
            }
        )
        replied_at[delivery.interaction_id] = time.perf_counter()
        await engine.sandbox_reply(account, reply)
        await asyncio.sleep(0)  # let the held request resume, as a server would
    await asyncio.gather(*tasks)
    await engine.close()
    latencies = [done_at[key] - replied_at[key] for key in replied_at]
    return Result(n, "engine", send_seconds, latencies, held_bytes / n)


# -- http mode -------------------------------------------------------------------------
async def _http_client_side(runner: Any, key: str, n: int, concurrency: int) -> Result:
    import httpx

    from humanwire.server.config import SHARED_SLACK_WORKSPACE

    engine = runner.engine
    account = runner.call(engine.authenticate, key)
    limits = httpx.Limits(max_connections=n + 64, max_keepalive_connections=n + 64)
    headers = {"Authorization": f"Bearer {key}"}
    timeout = httpx.Timeout(WAIT_TIME + 60, connect=60)
    done_at: dict[str, float] = {}
    async with httpx.AsyncClient(
        base_url=runner.base_url, headers=headers, limits=limits, timeout=timeout
    ) as client:

        async def one(i: int) -> None:
            response = await client.post(
                "/messages/slack",
                json={"message": f"q{i}", "to": SLACK_HUMAN, "waitTime": WAIT_TIME},
            )
            response.raise_for_status()
            body = response.json()
            assert body["responded"], body
            done_at[body["interactionId"]] = time.perf_counter()

        def held() -> int:
            return int(runner.call(lambda: engine.held_waits))

        gc.collect()
        rss_before = _rss_bytes()
        started = time.perf_counter()
        tasks: list[asyncio.Task[None]] = []
        for i in range(n):
            tasks.append(asyncio.ensure_future(one(i)))
            if len(tasks) % OPENING == 0:
                # Let the server take these before opening more connections.
                while held() < len(tasks) - OPENING // 2:
                    await asyncio.sleep(0.005)
        while held() < n:
            await asyncio.sleep(0.005)
        send_seconds = time.perf_counter() - started
        held_bytes = _rss_bytes() - rss_before

        deliveries = runner.call(lambda: engine.store.list_deliveries(account.id, limit=n))
        # The human's side has its own small client: httpx's pool gets slow to pick a
        # connection when thousands of its connections are busy, which is not the service.
        human = httpx.AsyncClient(base_url=runner.base_url, headers=headers, timeout=timeout)
        replied_at: dict[str, float] = {}
        round_trips: list[float] = []
        # Few replies at once: the latency measured is the service's, not a queue's.
        sem = asyncio.Semaphore(concurrency)

        async def answer(interaction_id: str) -> None:
            async with sem:
                replied_at[interaction_id] = time.perf_counter()
                response = await human.post(
                    "/sandbox/replies",
                    json={
                        "channel": "slack",
                        "from": SLACK_HUMAN,
                        "to": SHARED_SLACK_WORKSPACE,
                        "body": "ok",
                        "interactionId": interaction_id,
                    },
                )
                response.raise_for_status()
                round_trips.append(time.perf_counter() - replied_at[interaction_id])

        async with human:
            await asyncio.gather(*(answer(d.interaction_id) for d in deliveries))
            await asyncio.gather(*tasks)
    latencies = [done_at[key] - replied_at[key] for key in replied_at]
    return Result(n, "http", send_seconds, latencies, held_bytes / n, round_trips)


def bench_http(n: int, concurrency: int) -> Result:
    from humanwire.server.runner import ServiceRunner

    config = _config(str(Path(tempfile.mkdtemp()) / "bench.db"))
    with ServiceRunner(config) as runner:
        key = runner.create_account("bench")
        return asyncio.run(_http_client_side(runner, key, n, concurrency))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("http", "engine"), default="http")
    parser.add_argument("--sizes", default="100,1000,10000", help="comma-separated N")
    parser.add_argument(
        "--reply-concurrency", type=int, default=4, help="http mode: replies in flight at once"
    )
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
    # Client and service share one process in http mode: hand the GIL over quickly, or
    # every reply waits out the default 5 ms switch interval behind the other thread.
    sys.setswitchinterval(0.0002)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if args.mode == "http" and soft < 2 * max(sizes) + 256:
        wanted = min(hard, 2 * max(sizes) + 256)
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    for n in sizes:
        if args.mode == "engine":
            result = asyncio.run(bench_engine(n))
        else:
            result = bench_http(n, args.reply_concurrency)
        print(result.line(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
