"""Python's work per send, counted: what one revision does per send that another does not.

Throughput and CPU per send move with the machine's load; the number of Python function
calls a send makes does not. ``run`` starts one service process (``ServiceRunner`` on a
fresh PostgreSQL database, or ``--sqlite``), holds a warm-up of 64 Slack asks from one
default ``AsyncHumanWire``, then profiles the service's event-loop thread (``cProfile``,
deterministic) while ``N`` more asks are sent and held, and writes the profile. It prints
the calls per send, and the service's CPU per send by thread (from ``/proc``; with
``--no-profile`` the profiler's own cost is left out, the figure then the one to compare).

``compare A.prof B.prof`` prints the calls per send of each, then by module (ours by path,
the rest by package), largest differences first. Run it from a worktree of each revision::

    cd /tmp/before && PYTHONPATH=src python $HW/benchmarks/profile_sends.py run 2000 /tmp/a.prof
    cd /tmp/after && PYTHONPATH=src python $HW/benchmarks/profile_sends.py run 2000 /tmp/b.prof
    python benchmarks/profile_sends.py compare /tmp/a.prof /tmp/b.prof
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import multiprocessing
import os
import pstats
import sys
import tempfile
import time
import uuid
from collections import Counter
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

DATABASE_URL = "postgresql://127.0.0.1:5432/test"
SLACK_HUMAN = "U0HUMAN0001"
WARM_UP = 64


def service_main(conn: Connection, db_path: str, key: str, output: str) -> None:
    """The service: answers "on", "off" (the profiler) and "held" on ``conn``."""
    logging.getLogger("mcp").setLevel(logging.WARNING)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_waits import bench_config  # type: ignore[import-not-found]

    try:
        from humanwire.server.runtime.runner import ServiceRunner
    except ImportError:  # revisions before the runtime package (to compare against them)
        from humanwire.server.runner import ServiceRunner  # type: ignore[no-redef,import-not-found]

    with ServiceRunner(bench_config(db_path)) as runner:
        runner.create_account("bench", api_key=key)
        conn.send(runner.base_url)
        profiler = cProfile.Profile()
        while True:
            command = conn.recv()
            if command == "on":
                runner.call(profiler.enable)
                conn.send(True)
            elif command == "off":
                runner.call(profiler.disable)
                profiler.dump_stats(output)
                conn.send(True)
            elif command == "held":
                conn.send(runner.call(lambda: runner.engine.held_waits))
            else:
                break


def thread_cpu(pid: int) -> dict[tuple[str, str], float]:
    """CPU seconds (user + system) of each thread of ``pid``, by (tid, name)."""
    ticks = os.sysconf("SC_CLK_TCK")
    seconds: dict[tuple[str, str], float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        seconds[(tid, name)] = (int(fields[11]) + int(fields[12])) / ticks
    return seconds


async def run(n: int, output: str, *, sqlite: bool, profile: bool) -> None:
    from humanwire import AsyncHumanWire

    drop: Any = None
    if sqlite:
        directory = tempfile.TemporaryDirectory(prefix="humanwire-profile-")
        db_path, drop = str(Path(directory.name) / "profile.db"), directory.cleanup
    else:
        import psycopg
        from psycopg import sql

        database = f"hw_profile_{uuid.uuid4().hex[:8]}"
        name = sql.Identifier(database)
        with psycopg.connect(DATABASE_URL, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(name))
        db_path = DATABASE_URL.rsplit("/", 1)[0] + f"/{database}"

        def drop() -> None:
            with psycopg.connect(DATABASE_URL, autocommit=True) as admin:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))

    context = multiprocessing.get_context("spawn")
    here, there = context.Pipe()
    key = "hw_test_" + uuid.uuid4().hex
    process = context.Process(target=service_main, args=(there, db_path, key, output))
    process.daemon = True
    process.start()
    client = AsyncHumanWire(api_key=key, base_url=here.recv())

    def held() -> int:
        here.send("held")
        return int(here.recv())

    async def ask(i: int) -> Any:
        return await client.messages.slack(
            message=f"question {i}, please?", to=SLACK_HUMAN, wait_time=600
        )

    tasks = [asyncio.create_task(ask(i)) for i in range(WARM_UP)]
    while held() < WARM_UP:
        await asyncio.sleep(0.05)
    before = thread_cpu(process.pid or 0)
    if profile:
        here.send("on")
        here.recv()
    started = time.perf_counter()
    tasks += [asyncio.create_task(ask(WARM_UP + i)) for i in range(n)]
    while held() < WARM_UP + n:
        await asyncio.sleep(0.05)
    seconds = time.perf_counter() - started
    after = thread_cpu(process.pid or 0)
    if profile:
        here.send("off")
        here.recv()
    spent = {k: v - before.get(k, 0.0) for k, v in after.items()}
    by_thread = ", ".join(f"{k[1]} {1000 * v / n:.3f}" for k, v in spent.items() if v > 0.001)
    print(
        f"{n} sends in {seconds:.2f} s ({n / seconds:.0f}/s); service CPU per send "
        f"{1000 * sum(spent.values()) / n:.3f} ms (by thread: {by_thread})"
    )
    if profile:
        print(f"calls per send {calls(output)[0] / n:.1f}; profile in {output}")
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    here.send("stop")
    process.join(20)
    if process.is_alive():
        process.terminate()
    drop()


def module(filename: str) -> str:
    """Ours by path inside the package, the rest by package or file."""
    if "/humanwire/" in filename:
        return filename.rsplit("/humanwire/", 1)[1]
    if "site-packages/" in filename:
        return filename.split("site-packages/", 1)[1].split("/", 1)[0]
    return filename


def calls(path: str) -> tuple[int, Counter[str]]:
    stats: dict[Any, Any] = pstats.Stats(path).stats  # type: ignore[attr-defined]
    by_module: Counter[str] = Counter()
    for (filename, _line, _name), (_primitive, count, *_rest) in stats.items():
        by_module[module(filename)] += count
    return sum(by_module.values()), by_module


def compare(first: str, second: str, n: int, rows: int) -> None:
    total_a, a = calls(first)
    total_b, b = calls(second)
    print(f"calls per send: {total_a / n:.1f} ({first}), {total_b / n:.1f} ({second})")
    ordered = sorted(set(a) | set(b), key=lambda m: -abs(b[m] - a[m]))
    for name in ordered[:rows]:
        print(f"{a[name] / n:9.1f} {b[name] / n:9.1f} {(b[name] - a[name]) / n:+9.1f}  {name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    running = commands.add_parser("run", help="profile N sends")
    running.add_argument("n", type=int)
    running.add_argument("output")
    running.add_argument("--sqlite", action="store_true", help="a SQLite file, not PostgreSQL")
    running.add_argument("--no-profile", action="store_true", help="CPU per send alone")
    comparing = commands.add_parser("compare", help="two profiles' calls per send by module")
    comparing.add_argument("first")
    comparing.add_argument("second")
    comparing.add_argument("--n", type=int, default=2000, help="the sends each profile holds")
    comparing.add_argument("--rows", type=int, default=30)
    args = parser.parse_args(argv)
    if args.command == "run":
        asyncio.run(run(args.n, args.output, sqlite=args.sqlite, profile=not args.no_profile))
    else:
        compare(args.first, args.second, args.n, args.rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
