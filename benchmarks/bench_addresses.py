"""What a network address check costs a service: N form posts at once, each address
checked by Google's contract fake answering after ``--latency`` seconds, while a prober
asks ``/healthz`` every 20 ms.

Prints the wall time of the N posts (checked one after another they would take N x
latency), their p50 / p99, and the prober's p50 / p99 / worst /healthz time during the
burst (the event loop is never blocked on a provider: it stays near its idle figure).
``--provider structural`` runs the same posts with the offline check, for the floor.

Run::

    python benchmarks/bench_addresses.py                    # N = 50, latency 0.2 s
    python benchmarks/bench_addresses.py --posts 200 --latency 0.5
    python benchmarks/bench_addresses.py --provider structural
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from address_fakes import API_KEY, AddressFakeServer, GoogleFake
from humanwire import HumanWire
from humanwire.server.config import AddressConfig
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.service import fast_config

FIELDS = [{"id": "home", "label": "Address", "type": "address", "required": True}]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def burst(urls: list[str]) -> list[float]:
    async def one(client: httpx.AsyncClient, index: int, url: str) -> float:
        started = time.perf_counter()
        # A distinct address each: no answer comes from the cache.
        answer = await client.post(url, data={"home": f"{index} Main Street, Springfield 12345"})
        assert answer.status_code in (303, 400), answer.status_code
        return time.perf_counter() - started

    limits = httpx.Limits(max_connections=len(urls) + 10)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        return list(await asyncio.gather(*(one(client, i, u) for i, u in enumerate(urls))))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--posts", type=int, default=50)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--provider", choices=["google", "structural"], default="google")
    args = parser.parse_args()

    fake = AddressFakeServer(GoogleFake(latency=args.latency)).start()
    address = AddressConfig()
    if args.provider == "google":
        address = AddressConfig(provider="google", api_key=API_KEY, api_base=fake.base_url)
    with tempfile.TemporaryDirectory() as tmp:
        config = replace(fast_config(Path(tmp) / "bench.db"), address=address)
        runner = ServiceRunner(config, "127.0.0.1", 0).start()
        try:
            with HumanWire(api_key=runner.create_account(), base_url=runner.base_url) as hw:
                urls = [
                    hw.forms.sms(
                        to="+12025550100", title="T", fields=FIELDS, follow_up_time=600
                    ).form_url
                    for _ in range(args.posts)
                ]
            probes: list[float] = []
            done = threading.Event()

            def probe() -> None:
                with httpx.Client(base_url=runner.base_url) as prober:
                    while not done.is_set():
                        started = time.perf_counter()
                        prober.get("/healthz")
                        probes.append(time.perf_counter() - started)
                        time.sleep(0.02)

            prober = threading.Thread(target=probe)
            prober.start()
            time.sleep(0.5)
            idle = len(probes)
            started = time.perf_counter()
            times = asyncio.run(burst(urls))
            wall = time.perf_counter() - started
            done.set()
            prober.join()
        finally:
            runner.stop()
            fake.stop()
    during = probes[idle:] or probes
    print(f"provider {args.provider}, {args.posts} posts at once, latency {args.latency} s")
    print(f"  wall {wall:.2f} s (one after another: {args.posts * args.latency:.1f} s)")
    p50, p99 = statistics.median(times) * 1000, percentile(times, 0.99) * 1000
    print(f"  post p50 {p50:.0f} ms, p99 {p99:.0f} ms")
    print(
        f"  /healthz during the burst: p50 {statistics.median(during) * 1000:.1f} ms, "
        f"p99 {percentile(during, 0.99) * 1000:.1f} ms, worst {max(during) * 1000:.1f} ms "
        f"({len(during)} probes)"
    )


if __name__ == "__main__":
    main()
