"""The floor under ``bench_replicas.py``'s reply→response: the same path, written bare.

R bare servers (Starlette on uvicorn's h11 and asyncio, as the service runs; psycopg 3
async with a connection pool, as the store does) share one PostgreSQL schema and each
LISTENs on one channel. The load generator (this process) reads an event stream from each
(as every ``AsyncHumanWire`` of ``bench_replicas.py`` reads its account's outcome stream)
and posts a human's reply to a random server. That server waits on what the service's
answer waits on, and on nothing else:

1. the key and the item its thread names, read together on one pooled connection (one
   pipeline: one round trip),
2. the end: the item's row updated and a ``pg_notify`` naming it, committed durably (one
   round trip and a WAL flush),

then answers the POST; every server hears the notice and writes it to its stream. The
time is taken from just before the POST until the ask's own server's stream delivers the
item's event in the load generator. No authentication beyond the read, no rate count, no
matching, no outcome log, no middleware: what is left is the network, PostgreSQL, two
HTTP hops and the machine's cost of waking each process in turn. ``bench_replicas.py
--floor`` runs it in the same run as the replicas; alone::

    python benchmarks/floor_replicas.py                        # database local
    python benchmarks/floor_replicas.py --db-latency-ms 0.75   # ~2 ms round trip, and local
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import random
import socket
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any
from urllib.parse import urlsplit

from bench_waits import percentiles  # the benchmarks directory is not a package
from latency_proxy import LatencyProxy, in_schema, postgres_round_trip_ms

DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/test"
CHANNEL = "floor_ended"


# -- the bare server ------------------------------------------------------------------------
def server_main(sock: socket.socket, url: str, ready: Connection) -> None:
    import uvicorn
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    streams: set[asyncio.Queue[str]] = set()
    state: dict[str, Any] = {}

    async def listen(conn: AsyncConnection[Any]) -> None:
        async for notice in conn.notifies():
            for queue in streams:
                queue.put_nowait(notice.payload)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        pool = AsyncConnectionPool(
            url, min_size=4, max_size=8, kwargs={"autocommit": True}, open=False
        )
        await pool.open(wait=True)
        listener = await AsyncConnection.connect(url, autocommit=True)
        await listener.execute(f"LISTEN {CHANNEL}")
        state["pool"] = pool
        task = asyncio.create_task(listen(listener))
        ready.send("ready")
        yield
        task.cancel()
        await listener.close()
        await pool.close()

    async def reply(request: Request) -> JSONResponse:
        body = json.loads(await request.body())
        async with state["pool"].connection() as conn:
            async with conn.pipeline():
                keys = await conn.execute(
                    "SELECT account FROM floor_keys WHERE hash = %s", (request.headers["x-key"],)
                )
                items = await conn.execute(
                    "SELECT id, account FROM floor_items WHERE thread = %s", (body["thread"],)
                )
            key, item = await keys.fetchone(), await items.fetchone()
        if key is None or item is None or item[1] != key[0]:
            return JSONResponse({"error": "not found"}, status_code=404)
        # One statement in autocommit: one round trip, committed (and flushed) with it.
        async with state["pool"].connection() as conn:
            await conn.execute(
                "WITH ended AS (UPDATE floor_items SET status = 'ended', result = %s "
                "WHERE id = %s AND status = 'pending' RETURNING id) "
                "SELECT pg_notify(%s, id) FROM ended",
                (body["text"], item[0], CHANNEL),
            )
        return JSONResponse({"ok": True})

    async def stream(request: Request) -> StreamingResponse:
        queue: asyncio.Queue[str] = asyncio.Queue()
        streams.add(queue)

        async def events() -> AsyncIterator[str]:
            try:
                yield ": open\n\n"
                while True:
                    yield f"data: {await queue.get()}\n\n"
            finally:
                streams.discard(queue)

        return StreamingResponse(events(), media_type="text/event-stream")

    app = Starlette(
        routes=[Route("/reply", reply, methods=["POST"]), Route("/stream", stream)],
        lifespan=lifespan,
    )
    config = uvicorn.Config(app, log_level="warning", loop="asyncio", http="h11")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


# -- the load generator ---------------------------------------------------------------------
@dataclass
class Floor:
    label: str
    round_trip_ms: float
    other: list[float]  # seconds; the reply posted to another server than the ask's
    own: list[float]  # to the ask's own server

    @property
    def p50(self) -> float:
        return percentiles(self.other + self.own)[0]

    @property
    def p99(self) -> float:
        return percentiles(self.other + self.own)[1]

    def describe(self) -> str:
        return (
            f"{self.label}: reply->response p50={self.p50:.2f} ms p99={self.p99:.2f} ms "
            f"(n={len(self.other) + len(self.own)}; on another server "
            f"{percentiles(self.other)[0]:.2f} ms, on the ask's own "
            f"{percentiles(self.own)[0]:.2f} ms)"
        )


def new_schema(database_url: str, items: int) -> tuple[str, str]:
    import psycopg

    name = f"hw_floor_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database_url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
        conn.execute(f"CREATE TABLE {name}.floor_keys (hash TEXT PRIMARY KEY, account TEXT)")
        conn.execute(
            f"CREATE TABLE {name}.floor_items (id TEXT PRIMARY KEY, thread TEXT UNIQUE, "
            "account TEXT, status TEXT, result TEXT)"
        )
        conn.execute(f"INSERT INTO {name}.floor_keys VALUES ('k', 'acct')")
        with conn.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {name}.floor_items VALUES (%s, %s, 'acct', 'pending', NULL)",
                [(f"i{n}", f"t{n}") for n in range(items)],
            )
    return name, in_schema(database_url, name)


def drop_schema(database_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(database_url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


async def drive(base_urls: Sequence[str], items: Sequence[int]) -> tuple[list[float], list[float]]:
    import httpx

    arrived: dict[tuple[int, str], asyncio.Future[float]] = {}
    loop = asyncio.get_running_loop()

    def waiter(server: int, item: str) -> asyncio.Future[float]:
        return arrived.setdefault((server, item), loop.create_future())

    async def read_stream(client: httpx.AsyncClient, server: int, opened: asyncio.Event) -> None:
        async with client.stream("GET", f"{base_urls[server]}/stream") as response:
            async for line in response.aiter_lines():
                if line.startswith(": open"):
                    opened.set()
                elif line.startswith("data: "):
                    future = waiter(server, line[6:])
                    if not future.done():
                        future.set_result(time.perf_counter())

    other: list[float] = []
    own: list[float] = []
    limits = httpx.Limits(max_connections=len(base_urls) * 2)
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:
        opened = [asyncio.Event() for _ in base_urls]
        readers = [
            asyncio.create_task(read_stream(client, n, opened[n])) for n in range(len(base_urls))
        ]
        await asyncio.gather(*(event.wait() for event in opened))
        try:
            for n in items:
                ask_server = random.randrange(len(base_urls))
                target = random.randrange(len(base_urls))
                done = waiter(ask_server, f"i{n}")
                started = time.perf_counter()
                response = await client.post(
                    f"{base_urls[target]}/reply",
                    json={"thread": f"t{n}", "text": "yes"},
                    headers={"x-key": "k"},
                )
                assert response.status_code == 200, response.text
                took = await asyncio.wait_for(done, 10) - started
                (own if target == ask_server else other).append(took)
        finally:
            for reader in readers:
                reader.cancel()
    return other, own


def run_floor(
    database_url: str,
    *,
    servers: int = 3,
    sample: int = 300,
    latency_ms: float = 0.0,
    proxied: bool = False,
) -> Floor:
    """One floor round: ``servers`` bare servers, ``sample`` replies timed one by one, the
    database ``latency_ms`` away each way (0: local; through the proxy at no delay if
    ``proxied``)."""
    name, url = new_schema(database_url, sample)
    target = urlsplit(url)
    proxy = None
    if latency_ms or proxied:
        proxy = LatencyProxy(target.hostname or "127.0.0.1", target.port or 5432, latency_ms)
    context = multiprocessing.get_context("spawn")
    processes = []
    try:
        if proxy is not None:
            proxy.__enter__()
            url = proxy.url(url)
        round_trip = postgres_round_trip_ms(url)
        base_urls = []
        for _ in range(servers):
            sock = socket.create_server(("127.0.0.1", 0), backlog=1024)
            base_urls.append(f"http://127.0.0.1:{sock.getsockname()[1]}")
            ours, theirs = context.Pipe()
            process = context.Process(target=server_main, args=(sock, url, theirs), daemon=True)
            process.start()
            sock.close()
            processes.append((process, ours))
        for _, ours in processes:
            if not ours.poll(60):
                raise RuntimeError("a floor server did not start")
            ours.recv()
        other, own = asyncio.run(drive(base_urls, range(sample)))
    finally:
        for process, _ in processes:
            process.terminate()
            process.join()
        if proxy is not None:
            proxy.__exit__(None, None, None)
        drop_schema(database_url, name)
    where = "far" if latency_ms else "local" + (" through the proxy" if proxied else "")
    label = f"floor, {servers} bare servers, database {where} ({round_trip:.2f} ms round trip)"
    return Floor(label, round_trip, other, own)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--servers", type=int, default=3)
    parser.add_argument("--sample", type=int, default=300, help="replies timed one by one")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--db-latency-ms", type=float, default=0.0, help="added each way")
    parser.add_argument("--database-url", default=DATABASE_URL)
    args = parser.parse_args(argv)
    latencies = [args.db_latency_ms, 0.0] if args.db_latency_ms else [0.0]
    for run in range(args.runs):
        for latency in latencies:
            floor = run_floor(
                args.database_url, servers=args.servers, sample=args.sample, latency_ms=latency
            )
            print(f"run {run + 1}: {floor.describe()}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
