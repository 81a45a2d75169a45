"""What metrics and logs cost on the send path.

Each run is a fresh interpreter that builds the real app around a real engine (SQLite
file), runs its lifespan and sends ``--sends`` texts with ``POST /messages/sms`` (no
wait) over ASGI in the same process, one after another, timing each request. Three
set-ups alternate, so the machine's drift hits each alike:

- ``bare``: ``prometheus_client`` hidden (no-op metrics) and humanwire's loggers off:
  what an embedded service without the ``metrics`` extra pays;
- ``metrics``: Prometheus metrics on (the request id, the HTTP and engine counters);
- ``metrics+logs``: metrics and INFO logging through the JSON formatter to a file
  (``os.devnull``), as ``humanwire serve --log-format json`` writes them.

It prints the median per-request time of each (the median of the runs' medians) and the
difference to the first (``bare``, or ``before``: ``--before SRC`` runs the same sends on
another source tree first, e.g. the commit before metrics and logs from ``git archive``).
ASGI in process leaves the socket out, so the difference is not drowned by it: over the
network the relative cost is smaller still.

Run::

    python benchmarks/bench_observe.py             # 5 runs of 1000 sends each
    python benchmarks/bench_observe.py --runs 9 --sends 2000
    git archive 9c82a51 src | tar -x -C /tmp/before
    python benchmarks/bench_observe.py --before /tmp/before/src
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

SETUPS = ("bare", "metrics", "metrics+logs")
BEFORE = "before"
"""``--before SRC``: the same sends on another source tree (e.g. the commit before
metrics and logs, from ``git archive``), with humanwire's loggers off."""

CHILD = r"""
import asyncio, logging, os, statistics, sys, tempfile, time
setup, sends = sys.argv[1], int(sys.argv[2])
if setup == "bare":
    sys.modules["prometheus_client"] = None  # as if the extra were not installed
import httpx
from humanwire.server.http.app import create_app
from humanwire.server.config import ServiceConfig
from humanwire.server.engine import Engine
if setup == "metrics+logs":
    from humanwire.server.http.middleware import JsonFormatter

    handler = logging.FileHandler(os.devnull)
    handler.setFormatter(JsonFormatter())
    logging.getLogger().addHandler(handler)
    logging.getLogger("humanwire").setLevel(logging.INFO)
else:
    logging.getLogger("humanwire").setLevel(logging.WARNING)

async def main():
    db = os.path.join(tempfile.mkdtemp(), "bench.db")
    config = ServiceConfig(db_path=db, rate_limit_requests=10**9, spam_recipients=10**9)
    engine = Engine(config)
    assert getattr(engine, "metrics", None) is None or engine.metrics.enabled is (setup != "bare")
    app = create_app(config, engine=engine)
    async with app.router.lifespan_context(app):
        _account, key = await engine.accounts.create("bench")
        headers = {"Authorization": f"Bearer {key}"}
        transport = httpx.ASGITransport(app)
        client = httpx.AsyncClient(transport=transport, base_url="http://t", headers=headers)
        async with client as c:
            times = []
            for i in range(100 + sends):  # the first 100 warm up
                body = {"to": "+12025550100", "message": f"bench {i}"}
                start = time.perf_counter()
                response = await c.post("/messages/sms", json=body)
                elapsed = time.perf_counter() - start
                assert response.status_code == 200, response.text
                if i >= 100:
                    times.append(elapsed)
    print(statistics.median(times))

asyncio.run(main())
"""


def run(setup: str, sends: int, before: str | None = None) -> float:
    env = dict(os.environ)
    if setup == BEFORE and before is not None:
        env["PYTHONPATH"] = before
    out = subprocess.run(
        [sys.executable, "-c", CHILD, setup, str(sends)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sends", type=int, default=1000)
    parser.add_argument("--before", metavar="SRC", help="another tree's src/ to compare")
    args = parser.parse_args()
    setups = ((BEFORE,) if args.before else ()) + SETUPS
    medians: dict[str, list[float]] = {setup: [] for setup in setups}
    for _ in range(args.runs):
        for setup in setups:
            medians[setup].append(run(setup, args.sends, args.before))
    base = statistics.median(medians[setups[0]])
    print(f"{args.runs} runs x {args.sends} sends, POST /messages/sms over ASGI, median each")
    for setup in setups:
        value = statistics.median(medians[setup])
        delta = value - base
        print(
            f"  {setup:<13} {value * 1e6:8.0f} µs   {delta * 1e6:+6.0f} µs "
            f"({delta / base * 100:+.1f} %)"
        )


if __name__ == "__main__":
    main()
