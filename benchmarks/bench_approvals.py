"""Approvals at scale: N requests of three approvers each, decided by quorum, consumed once,
and the audit chain they leave verified.

One service process (``ServiceRunner`` on a SQLite file, rate limit and spam guard lifted
as in ``bench_waits.py``); this process is the load generator: ONE default
``AsyncHumanWire``. Each request asks three SMS approvers of its own (3 N numbers, each
with one open request, so a bare "YES" decides it) with a quorum of two, about an action
(``deploy`` of a service of its own). It prints, in one run:

- **create**: the N ``POST /approvals`` (an ``asyncio.gather``) until all 3 N texts are
  delivered (counted in the store), as seconds and asks/s;
- **decide**: two approvers of each reply "YES" (``POST /sandbox/replies``, 64 at a time):
  seconds; then every request is read back and must be ``approved`` with two approvals
  from two different approvers, and its third approver's text must still be pending
  nowhere (the request ended);
- **consume**: each request consumed with its action's digest (64 at a time): seconds;
  then a second consume of each of a sample must be refused ``already_consumed``;
- **audit verify**: ``humanwire audit verify --db`` over the resulting chain (a process of
  its own, the service still running): seconds and its exit status;
- the service's CPU and the load generator's, per request.

Nothing lost or doubled is checked, not timed: a request left pending, decided otherwise,
or consumed twice fails the run. Run by hand, never in tests::

    python benchmarks/bench_approvals.py              # 10,000 requests (30,000 asks)
    python benchmarks/bench_approvals.py --n 1000
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_waits import cpu_seconds, load_average, service_main

AREAS = ("202", "212", "303", "312", "415", "617", "646", "718", "805", "919")
"""Area codes of the approvers' numbers: ``+1 <area> 555 <line>``, 10,000 a code."""
CONCURRENCY = 64
SAMPLE = 200
"""Requests consumed a second time (each must be refused)."""
DELIVERY_POLL = 0.5


def number(i: int) -> str:
    area, line = divmod(i, 10_000)
    return f"+1{AREAS[area]}555{line:04d}"


def action(i: int) -> dict[str, Any]:
    return {"name": "deploy", "arguments": {"service": f"service-{i}", "version": "1.2.3"}}


@dataclass
class Phase:
    name: str
    seconds: float
    count: int

    service_cpu: float = 0.0
    client_cpu: float = 0.0

    def line(self) -> str:
        return (
            f"{self.name:>12}: {self.seconds:7.2f} s  ({self.count / self.seconds:,.0f}/s)"
            f"  CPU: service {self.service_cpu:.1f} s, load generator {self.client_cpu:.1f} s"
        )


async def limited(count: int, step: Callable[[int], Awaitable[None]]) -> None:
    """``step(i)`` for every i below ``count``, ``CONCURRENCY`` at a time."""
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> None:
        async with gate:
            await step(i)

    await asyncio.gather(*(one(i) for i in range(count)))


async def run(n: int, db_path: str, base_url: str, key: str, conn: Any, pid: int) -> int:
    from humanwire import AsyncHumanWire
    from humanwire.errors import AlreadyConsumedError
    from humanwire.types.approvals import action_digest

    if 3 * n > 10_000 * len(AREAS):
        raise SystemExit(f"at most {10_000 * len(AREAS) // 3} requests (numbers run out)")
    client = AsyncHumanWire(api_key=key, base_url=base_url)
    print(f"{n:,} approval requests, 3 SMS approvers each, quorum 2 [load avg {load_average()}]")
    phases: list[Phase] = []
    service_cpu, client_cpu = cpu_seconds(pid), time.process_time()
    marks = [(service_cpu, client_cpu)]

    def done(name: str, started: float, count: int) -> None:
        """Records a phase and prints it at once (a long run shows where it is)."""
        service, client_ = cpu_seconds(pid), time.process_time()
        last = marks[-1]
        marks.append((service, client_))
        phase = Phase(name, time.perf_counter() - started, count)
        phase.service_cpu, phase.client_cpu = service - last[0], client_ - last[1]
        phases.append(phase)
        print(phase.line(), flush=True)

    def delivered() -> int:
        conn.send("deliveries")
        return len(conn.recv())

    # -- create --------------------------------------------------------------------------
    ids: list[str] = [""] * n

    async def create(i: int) -> None:
        approval = await client.approvals.create(
            title=f"Deploy service-{i}?",
            action=action(i),
            approvers=[{"channel": "sms", "to": number(3 * i + k)} for k in range(3)],
            quorum=2,
            follow_up_time=3600,
        )
        ids[i] = approval.interaction_id

    started = time.perf_counter()
    await asyncio.gather(*(create(i) for i in range(n)))
    while delivered() < 3 * n:
        await asyncio.sleep(DELIVERY_POLL)
    done("create", started, 3 * n)
    sender = (await client.sandbox.deliveries(to=number(0)))[0].from_
    assert sender, "the first approver's text has no sender"

    # -- decide --------------------------------------------------------------------------
    async def decide(i: int) -> None:
        for k in range(2):
            await client.sandbox.reply(
                channel="sms", from_=number(3 * i + k), to=sender, body="YES"
            )

    started = time.perf_counter()
    await limited(n, decide)
    done("decide", started, 2 * n)

    wrong: list[str] = []

    async def check(i: int) -> None:
        approval = await client.approvals.get(ids[i])
        deciders = {d.approver.to for d in approval.decisions if d.decision == "approve"}
        if approval.decision != "approved" or deciders != {number(3 * i), number(3 * i + 1)}:
            wrong.append(ids[i])

    started = time.perf_counter()
    await limited(n, check)
    done("read back", started, n)

    # -- consume -------------------------------------------------------------------------
    async def consume(i: int) -> None:
        await client.approvals.consume(ids[i], action_digest=action_digest(action(i)))

    started = time.perf_counter()
    await limited(n, consume)
    done("consume", started, n)
    doubled = 0
    for i in range(0, n, max(1, n // SAMPLE)):
        try:
            await client.approvals.consume(ids[i], action_digest=action_digest(action(i)))
            doubled += 1
        except AlreadyConsumedError:
            pass
    service_cpu, client_cpu = cpu_seconds(pid) - service_cpu, time.process_time() - client_cpu
    await client.aclose()

    # -- audit verify --------------------------------------------------------------------
    started = time.perf_counter()
    verify = subprocess.run(
        [sys.executable, "-m", "humanwire.cli", "audit", "verify", "--db", db_path],
        capture_output=True,
        text=True,
    )
    done("audit verify", started, n)
    print(
        f"CPU per request: service {1000 * service_cpu / n:.2f} ms, "
        f"load generator {1000 * client_cpu / n:.2f} ms"
    )
    print(
        f"not approved by its two approvers: {len(wrong)}; consumed twice: {doubled}; "
        f"audit verify exit {verify.returncode}: {verify.stdout.strip()[-200:]}"
    )
    if verify.returncode:
        print(verify.stderr[-2000:], file=sys.stderr)
    return 1 if wrong or doubled or verify.returncode else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="approval requests")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="humanwire-bench-") as directory:
        db_path = str(Path(directory) / "bench.db")
        context = multiprocessing.get_context("spawn")
        here, there = context.Pipe()
        process = context.Process(target=service_main, args=(there, db_path), daemon=True)
        process.start()
        base_url, key = here.recv()
        try:
            assert process.pid is not None
            return asyncio.run(run(args.n, db_path, base_url, key, here, process.pid))
        finally:
            here.send("stop")
            process.join(30)
            if process.is_alive():
                process.terminate()


if __name__ == "__main__":
    raise SystemExit(main())
