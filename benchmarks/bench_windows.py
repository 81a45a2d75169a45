"""Open windows nobody holds cost nothing until they fall due (issue 27, "one schedule").

For each size (default 1,000 then 1,000,000): three replicas (``ServiceRunner`` in
``multiprocessing`` processes, as in ``bench_replicas.py``) on a fresh PostgreSQL
database; N open follow-up windows are loaded through the store (``PostgresStore.
insert_interaction`` with the window step, as a send writes them; the windows end in
about 30 days, nobody holds them), plus ``--due`` windows that fall due during the
measured period. Then, after ``--settle`` seconds, an idle period of ``--seconds`` (a
minute by default) is measured:

- idle CPU: the replicas' (summed, from ``/proc``) and the PostgreSQL backends' serving
  the database (``pg_stat_activity``; any that appear during the period counted whole);
  the large size's over the small size's (target: within 2x),
- memory per open window: the replicas' RSS growth (summed, ``gc.collect()`` first) from
  before the load to the end of the settle period, over N (target: at most 0.5 KiB),
- lateness of the windows falling due: each one's ``ended_at`` minus its deadline, read
  from the database after the period (target: every one within 1 s).

Autovacuum is off for the benchmark's database and the tables are vacuumed and analyzed
after the load, so the idle period measures the service, not the server's upkeep of a
table just loaded.

Run by hand, never in tests::

    python benchmarks/bench_windows.py                          # 1,000 vs 1,000,000, 60 s
    python benchmarks/bench_windows.py --large 100000 --seconds 20
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_replicas import DATABASE_URL, Cluster, Database, backends_cpu  # not a package
from bench_waits import cpu_seconds

FAR = 30 * 24 * 3600.0
"""Seconds until the loaded windows close (spread over a further day)."""


@dataclass
class Result:
    n: int
    load_seconds: float
    replicas_cpu: float
    backends_cpu: float
    rss_growth: int
    lateness: list[float]
    due: int
    still_open: int

    @property
    def cpu(self) -> float:
        return self.replicas_cpu + self.backends_cpu


async def load(
    url: str, account_id: str, n: int, due_at: Sequence[float], concurrency: int
) -> float:
    """``n`` far windows and one per ``due_at``, through the store; seconds taken."""
    from humanwire.server.store.postgres import PostgresStore
    from humanwire.server.store.records import WINDOW_STEP, InteractionRecord, StepRecord

    store = PostgresStore(url, min_size=1, max_size=max(2, concurrency // 8))
    started = time.monotonic()
    now = time.time()
    slots = asyncio.Semaphore(concurrency)

    async def one(i: int, deadline: float) -> None:
        record = InteractionRecord(
            id=str(uuid.uuid4()),
            account_id=account_id,
            kind="message",
            channel="sms",
            to_addr=f"+1202{i % 10_000_000:07d}",
            from_addr="+12025550000",
            request={"message": f"window {i}", "followUpTime": deadline - now},
            created_at=now,
            status="pending",
            follow_up_deadline=deadline,
            delivery_status="delivered",
        )
        step = StepRecord(WINDOW_STEP, record.id, deadline, account_id)
        async with slots:
            await store.insert_interaction(record, step=step)

    try:
        batch = 10_000
        for first in range(0, n, batch):
            deadlines = [now + FAR + (i % 86_400) for i in range(first, min(n, first + batch))]
            await asyncio.gather(*(one(first + k, d) for k, d in enumerate(deadlines)))
            if first and first % 100_000 == 0:
                print(f"  {first:,} loaded ({time.monotonic() - started:.0f} s)", flush=True)
        await asyncio.gather(*(one(n + k, d) for k, d in enumerate(due_at)))
    finally:
        await store.close()
    return time.monotonic() - started


def execute(db: Database, statement: str) -> None:
    """A statement that returns no rows, on the benchmark's own connection."""
    db._pg.execute(statement)


def measure(n: int, args: argparse.Namespace) -> Result:
    with Cluster("postgres", 3, args.database_url, schema_only=False) as cluster:
        db = Database("postgres", cluster.location)
        try:
            db.rows("SELECT 1")
            [(account_id,)] = db.rows("SELECT id FROM accounts")
            for table in ("interactions", "schedule"):
                execute(db, f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
            rss_before = sum(replica.rss() for replica in cluster.replicas)
            estimate = n / args.load_rate
            print(f"{n:,} open windows: loading (about {estimate:.0f} s)...", flush=True)
            took = asyncio.run(load(cluster.location, account_id, n, [], args.concurrency))
            print(f"  loaded in {took:.1f} s ({n / took:,.0f}/s); vacuuming", flush=True)
            execute(db, "VACUUM ANALYZE interactions")
            execute(db, "VACUUM ANALYZE schedule")
            # The windows falling due, written once the load is over (so none is written
            # after its time), spread over the measured period after the settle period.
            start_at = time.time() + args.settle + 1
            due_at = [start_at + (k + 0.5) * args.seconds / args.due for k in range(args.due)]
            asyncio.run(load(cluster.location, account_id, 0, due_at, args.concurrency))
            time.sleep(max(0.0, start_at - time.time()))
            rss_after = sum(replica.rss() for replica in cluster.replicas)
            pids = db.backend_pids()
            backends_before = backends_cpu(pids)
            replicas_before = sum(cpu_seconds(r.pid) for r in cluster.replicas)
            measured_from = time.time()
            time.sleep(args.seconds)
            replicas_cpu = sum(cpu_seconds(r.pid) for r in cluster.replicas) - replicas_before
            backends_after = backends_cpu(sorted(set(pids) | set(db.backend_pids())))
            backends = sum(
                cpu - backends_before.get(pid, 0.0) for pid, cpu in backends_after.items()
            )
            print(f"  measured {time.time() - measured_from:.1f} s idle", flush=True)
            time.sleep(2.0)  # the last window's end is written
            due = db.rows(
                "SELECT follow_up_deadline, ended_at FROM interactions "
                f"WHERE follow_up_deadline < {time.time() + FAR / 2}"
            )
        finally:
            db.close()
    lateness = [float(ended) - float(deadline) for deadline, ended in due if ended is not None]
    return Result(
        n=n,
        load_seconds=took,
        replicas_cpu=replicas_cpu,
        backends_cpu=backends,
        rss_growth=rss_after - rss_before,
        lateness=lateness,
        due=len(due),
        still_open=sum(1 for _, ended in due if ended is None),
    )


def describe(result: Result, seconds: float) -> str:
    per_minute = 60.0 / seconds
    late = sorted(result.lateness)
    worst = f"{late[-1] * 1000:.0f} ms" if late else "-"
    median = f"{statistics.median(late) * 1000:.0f} ms" if late else "-"
    return (
        f"{result.n:>10,} open | idle CPU/min: replicas {result.replicas_cpu * per_minute:6.2f} s"
        f", PostgreSQL {result.backends_cpu * per_minute:6.2f} s | memory/window "
        f"{result.rss_growth / max(result.n, 1):8.1f} B (RSS +{result.rss_growth / 2**20:.1f}"
        f" MiB) | due {result.due - result.still_open}/{result.due} closed, late p50 {median}"
        f", max {worst}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=float, default=60.0, help="idle period measured")
    parser.add_argument("--settle", type=float, default=10.0, help="seconds before it")
    parser.add_argument("--due", type=int, default=20, help="windows due during it")
    parser.add_argument("--concurrency", type=int, default=64, help="inserts in flight")
    parser.add_argument(
        "--load-rate", type=float, default=2000.0, help="inserts/s expected (the estimate)"
    )
    parser.add_argument("--database-url", default=DATABASE_URL)
    args = parser.parse_args(argv)
    results = [measure(n, args) for n in (args.small, args.large)]
    print()
    for result in results:
        print(describe(result, args.seconds))
    small, large = results
    ratio = large.cpu / small.cpu if small.cpu > 0 else float("inf")
    per_window = large.rss_growth / max(large.n, 1)
    late = max((x for r in results for x in r.lateness), default=0.0)
    closed = all(r.still_open == 0 for r in results)
    print(
        f"\nidle CPU {large.n:,} over {small.n:,}: {ratio:.2f}x (target within 2x); "
        f"memory per open window {per_window / 1024:.3f} KiB (target <= 0.5); "
        f"windows due closed {'all' if closed else 'NOT all'}, latest {late * 1000:.0f} ms "
        "after its time (target within 1 s)"
    )
    ok = ratio <= 2.0 and per_window <= 512 and closed and late <= 1.0
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
