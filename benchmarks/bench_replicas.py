"""Replicas on one PostgreSQL database holding many waits, beside one process on SQLite.

R replicas (default 3: ``ServiceRunner`` in ``multiprocessing`` processes, rate limit and
spam guard lifted as in ``bench_waits.py``) serve one account on a fresh PostgreSQL
database. The load generator is this process: ONE ``AsyncHumanWire(api_key, base_url)``
per replica, built with defaults (multiplexed: past four waits in flight it asks for
202s and reads the answers from the account's outcome stream, so each client needs a
handful of connections, not one per wait), and an ``asyncio.gather`` of
``--per-replica`` asks through each (Slack messages, ``waitTime`` 600, each its own
text). Then, in the same run, the same procedure on one service process on a SQLite file
with ``--sqlite-n`` waits. It prints, for each:

- sends/s: the N asks over the time until all N are delivered and pending (counted in
  the database: ``delivery_status`` set, ``status`` pending),
- reply→response p50 / p99: with all N held, the human's reply (``POST /sandbox/replies``,
  Slack) goes to a RANDOM replica, one at a time for a random ``--sample`` of the asks,
  timed from just before that POST until the ask's ``await`` returns in the load
  generator (p50 split by whether the reply reached the ask's own replica or another;
  beside it the reply POST's own round trip). The rest are then answered in bulk, 16 at
  a time, to random replicas,
- lost / duplicated answers: every ask must return exactly its own answer, nothing may
  stay pending, and no interaction may have two outcome events of one type. A reply POST
  whose connection breaks is sent again and counted; what the replicas log at WARNING or
  ERROR is counted too (their logs are kept in a temporary directory, named, if any),
- memory per held wait: the replicas' RSS growth (summed, ``gc.collect()`` first) from
  before the sends to all N held, over N,
- database transactions per send (PostgreSQL only): the growth of ``xact_commit`` in
  ``pg_stat_database`` during the send phase, less this script's own queries and the
  idle rate (heartbeats) measured just before, over N; the same for the timed replies,
  per reply. An estimate: a busy backend publishes its counters at most once a second
  and an idle one within 10 s (PostgreSQL 15), so counts leak between the phases (the
  longer the sends, the more reach the replies' window),
- store calls per send and per timed reply (every replica's store methods counted in
  their processes; exact), and the store's own count of round trips and transactions
  (``PostgresStore.round_trips``, ``transactions``) over the same steps,
- CPU per send: the replicas' (summed), the load generator's, and the PostgreSQL backends'
  serving the benchmark database (from ``/proc``; background processes left out), and how
  busy the load generator was during the send phase (1.0 = one core: then it, not the
  service, bounds sends/s).

``--trace`` prints, for the timed replies that reached another replica than their ask's,
each step on the reply's replica (B), the ask's (A) and the third (C): every store call
and every notice heard, with its median start and duration from the reply POST's start,
then when the POST returned and when the answer arrived.

Every ``AsyncHumanWire`` reads the ACCOUNT's outcome stream, so each of the R clients
receives every answer of all R replicas, not only its own (it keeps the others a while,
unclaimed): the outcome streams carry R times the events a load balancer in front of the
replicas would.

By default the benchmark creates a database of its own on the server (``CREATE DATABASE``,
dropped at the end) so that ``pg_stat_database`` counts only its transactions;
``--schema-only`` uses a fresh schema in the ``--database-url`` database instead (as the
tests do), where other users of that database count too.

Run by hand, never in tests::

    python benchmarks/bench_replicas.py                       # 3 x 10,000 beside 10,000
    python benchmarks/bench_replicas.py --per-replica 300 --sqlite-n 300 --sample 50
    python benchmarks/bench_replicas.py --runs 2 --skip-sqlite
    python benchmarks/bench_replicas.py --skip-sqlite --per-replica 1000 --trace
    python benchmarks/bench_replicas.py --skip-sqlite --busy 1   # one core taken by others
    python benchmarks/bench_replicas.py --skip-sqlite --db-latency-ms 0.75 --per-replica 3000
    python benchmarks/bench_replicas.py --skip-sqlite --db-latency-ms 0.75 --per-replica 3000 \
        --runs 5 --floor

``--db-latency-ms X`` puts a forwarding proxy (``latency_proxy.py``, a process of its own)
between the replicas and PostgreSQL that adds X ms each way, and prints the round trip
measured through it (``SELECT 1``, median); each run then measures the replicas twice,
the database far and the database local, alternately, and the table's ratio column is
far over local. The load generator's own queries go to the database directly. The proxy
itself adds about 0.3 ms to a round trip: ``--db-latency-ms 0.75`` measures about 2.05 ms
here, the issue's "2 ms away".

The proxy is a process on the same two cores: the CPU it takes is printed with the send
phase's (``latency proxy``, per send and in cores), since a real network takes none of the
replicas' CPU and the far sends/s would otherwise read as the service's alone.

``--proxied-local`` sends the local measurement through the same proxy at no delay (its
round trip then about 0.4 ms): the far/local ratios then measure the added delay alone.
Without it the local leg has no proxy, so they measure the delay and the proxy's CPU.

``--floor`` adds, after each measurement of the replicas, the same waits written bare
(``floor_replicas.py``: R bare Starlette servers that read the key and the thread at once,
end the item with one durable statement and its ``pg_notify``, and stream the notice) on
the same database, far or local, and prints the replicas' p50 beside the floor's: what the
service adds to what the network, PostgreSQL and the machine cost anyway.

``--busy K`` runs K processes that only spin, at normal priority, for the whole run: a
reproducible stand-in for the other tenants of a shared machine (its "slow hours").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import inspect
import json
import logging
import multiprocessing
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_waits import (  # the benchmarks directory is not a package
    BULK_REPLIES,
    PHASE_LIMIT,
    SLACK_HUMAN,
    WAIT_TIME,
    answer,
    bench_config,
    cpu_seconds,
    load_average,
    percentiles,
    question,
    raise_open_files_limit,
    reply_body,
    rss_bytes,
)
from floor_replicas import Floor, run_floor
from latency_proxy import LatencyProxy, in_schema, postgres_round_trip_ms

if TYPE_CHECKING:
    import httpx

    from humanwire import AsyncHumanWire

DATABASE_URL = "postgresql://127.0.0.1:5432/test"
WARM_UP = 32
"""Asks per replica held and answered before measuring (first-use costs, the clients'
outcome streams opened)."""
POLL = 0.025
"""Seconds between the load generator's "how many are held" queries near the end of the
send phase; FAR_POLL while fewer than NEAR of them are held (each query counts the whole
table: 40 a second of them took a noticeable share of PostgreSQL's CPU at 30,000)."""
FAR_POLL = 0.5
NEAR = 0.98
STATS_FLUSH = 1.2
"""Wait this long before reading ``pg_stat_database`` (a backend publishes its counters at
most once a second; an idle one may take up to 10 s: the figure is an estimate)."""
POST_ATTEMPTS = 3
"""Tries of one reply POST whose connection breaks."""
IDLE_WINDOW = 3.0
"""Seconds of idle counted before the sends, for the background transaction rate."""


# -- the replicas' processes -------------------------------------------------------------
def replica_main(conn: Connection, db_path: str, key: str, create: bool, log: str) -> None:
    """One service process: the runner serves on a free loopback port; this thread only
    answers the benchmark's questions on ``conn``. Its stderr (the service's log) goes
    to the file ``log``."""
    with open(log, "ab", buffering=0) as log_file:
        os.dup2(log_file.fileno(), 2)
    raise_open_files_limit()
    # The MCP app logs its session manager's start and stop at INFO: not the benchmark's.
    logging.getLogger("mcp").setLevel(logging.WARNING)
    from humanwire.server.runtime.runner import ServiceRunner

    with ServiceRunner(bench_config(db_path)) as runner:
        calls = count_calls(runner.engine.store)
        trace_notices(runner.engine)
        if create:
            runner.create_account("bench", api_key=key)
        if not runner.authenticate(key):
            raise RuntimeError("the benchmark's account is not in the database")
        conn.send(runner.base_url)
        while True:
            command = conn.recv()
            if command == "rss":
                gc.collect()
                conn.send(rss_bytes(os.getpid()))
            elif command == "trace on":
                TRACE.clear()
                TRACING[0] = True
                conn.send(True)
            elif command == "trace off":
                TRACING[0] = False
                conn.send(list(TRACE))
                TRACE.clear()
            elif command == "held":
                conn.send(runner.call(lambda: runner.engine.held_waits))
            elif command == "calls":
                counted = dict(calls)
                store = runner.engine.store
                for name in ("round_trips", "transactions"):  # the store's own counts
                    if isinstance(getattr(store, name, None), int):
                        counted[f"({name.replace('_', ' ')})"] = getattr(store, name)
                conn.send(counted)
            else:
                break


TRACING = [False]
TRACE: list[tuple[float, float, str]] = []
"""``--trace``: in a replica's process, each store call (wall-clock start, end, method)
and each notice heard from another replica (``notice <kinds>``, at its arrival)."""


def trace_notices(engine: Any) -> None:
    """Records in ``TRACE`` when each notice payload arrives (LISTEN), with its kinds."""
    # The replicas' listener: the coordinator's (an older engine kept it itself).
    replicas = getattr(getattr(engine, "coordinator", None), "_replicas", None)
    replicas = replicas if replicas is not None else getattr(engine, "replicas", None)
    if replicas is None:
        return
    received = replicas._received

    def traced(payload: str) -> None:
        if not TRACING[0]:
            received(payload)
            return
        at = time.time()
        try:
            message = json.loads(payload)
            kinds = "+".join(sorted({str(n[0]) for n in message["n"]}))
            own = message.get("r") == replicas.id
        except (ValueError, KeyError, TypeError):
            kinds, own = "?", False
        received(payload)
        if not own:
            TRACE.append((at, time.time(), f"notice {kinds}"))

    replicas._received = traced


def count_calls(store: Any) -> Counter[str]:
    """Counts the calls of each of ``store``'s public methods (wrapped on the instance,
    so the engine, the outbox and the provider, which share it, are all counted)."""
    calls: Counter[str] = Counter()

    def counted(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(method):

            async def call_async(*args: Any, **kwargs: Any) -> Any:
                calls[name] += 1
                if not TRACING[0]:
                    return await method(*args, **kwargs)
                started = time.time()
                try:
                    return await method(*args, **kwargs)
                finally:
                    TRACE.append((started, time.time(), name))

            return call_async

        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            if not TRACING[0]:
                return method(*args, **kwargs)
            started = time.time()
            try:
                return method(*args, **kwargs)
            finally:
                TRACE.append((started, time.time(), name))

        return call

    for name in dir(type(store)):
        method = getattr(store, name)
        if not name.startswith("_") and callable(method) and inspect.ismethod(method):
            setattr(store, name, counted(name, method))
    return calls


class Replica:
    """One service process on ``db_path``."""

    def __init__(self, index: int, db_path: str, key: str, create: bool, log: str) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child_conn = context.Pipe()
        self.log = log
        self._process = context.Process(
            target=replica_main,
            args=(child_conn, db_path, key, create, log),
            name=f"humanwire-bench-replica-{index}",
            daemon=True,
        )
        self.base_url = ""

    @property
    def pid(self) -> int:
        assert self._process.pid is not None
        return self._process.pid

    def start(self) -> None:
        self._process.start()

    def ready(self) -> None:
        deadline = time.monotonic() + 60
        while not self._conn.poll(0.2):
            if not self._process.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self._process.name} did not start (log: {self.log})")
        self.base_url = self._conn.recv()

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self._conn.send("stop")
        self._process.join(30)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(10)
        self._conn.close()

    def rss(self) -> int:
        self._conn.send("rss")
        if not self._conn.poll(60):
            raise RuntimeError(f"{self._process.name} did not answer")
        return int(self._conn.recv())

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def calls(self) -> Counter[str]:
        """Calls of each store method so far."""
        self._conn.send("calls")
        if not self._conn.poll(60):
            raise RuntimeError(f"{self._process.name} did not answer")
        return Counter(self._conn.recv())

    def trace(self, on: bool) -> list[tuple[float, float, str]]:
        """``--trace``: starts recording (``on``), or stops and returns what was."""
        self._conn.send("trace on" if on else "trace off")
        if not self._conn.poll(60):
            raise RuntimeError(f"{self._process.name} did not answer")
        answer = self._conn.recv()
        return [] if on else [tuple(item) for item in answer]

    def log_problems(self) -> tuple[int, int]:
        """(warnings, errors) the service logged so far."""
        with open(self.log, errors="replace") as lines:
            text = lines.read()
        return text.count("WARNING"), text.count("ERROR")


# -- what the load generator reads from the database -------------------------------------
class Database:
    """The store's database, read directly: held asks, which text has which interaction,
    the end-of-run checks, and (PostgreSQL) the server's counters. Each query counts in
    ``queries`` (on PostgreSQL each is one transaction of its own: autocommit)."""

    def __init__(self, kind: str, location: str) -> None:
        self.kind = kind
        self.queries = 0
        self._pg: Any = None
        self._lite: sqlite3.Connection | None = None
        if kind == "postgres":
            import psycopg

            self._pg = psycopg.connect(location, autocommit=True)
        else:
            self._lite = sqlite3.connect(
                f"file:{location}?mode=ro", uri=True, check_same_thread=False
            )

    def close(self) -> None:
        if self._pg is not None:
            self._pg.close()
        if self._lite is not None:
            self._lite.close()

    def rows(self, query: str) -> list[tuple[Any, ...]]:
        self.queries += 1
        if self._pg is not None:
            return list(self._pg.execute(query).fetchall())
        assert self._lite is not None
        return self._lite.execute(query).fetchall()

    def held(self) -> int:
        """Asks delivered and still pending."""
        return int(
            self.rows(
                "SELECT count(*) FROM interactions "
                "WHERE delivery_status IS NOT NULL AND status = 'pending'"
            )[0][0]
        )

    def interaction_ids(self) -> dict[str, str]:
        """Question text -> interaction id, from the stored request."""
        rows = self.rows("SELECT id, request FROM interactions WHERE kind = 'message'")
        return {json.loads(request)["message"]: interaction_id for interaction_id, request in rows}

    def pending(self) -> int:
        return int(self.rows("SELECT count(*) FROM interactions WHERE status = 'pending'")[0][0])

    def duplicated_events(self) -> int:
        """Interactions with more than one outcome event of one type."""
        seen: dict[tuple[str, str], int] = {}
        for interaction_id, body in self.rows("SELECT interaction_id, body FROM outcomes"):
            kind = str(json.loads(body).get("eventType"))
            seen[(interaction_id, kind)] = seen.get((interaction_id, kind), 0) + 1
        return sum(1 for count in seen.values() if count > 1)

    def xact_commit(self) -> int:
        return int(
            self.rows(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
            )[0][0]
        )

    def backend_pids(self) -> list[int]:
        """The PostgreSQL backends serving this database, this connection's left out."""
        rows = self.rows(
            "SELECT pid FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return [int(pid) for (pid,) in rows]


def backends_cpu(pids: Sequence[int]) -> dict[int, float]:
    cpu: dict[int, float] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            cpu[pid] = cpu_seconds(pid)
    return cpu


# -- the service: replicas on PostgreSQL, or one process on SQLite --------------------------
class Cluster:
    """``replicas`` service processes on a fresh database, one account (its key is made
    here; the first replica creates the account, the others find it)."""

    def __init__(
        self,
        kind: str,
        replicas: int,
        database_url: str,
        schema_only: bool,
        latency_ms: float = 0.0,
        proxied: bool = False,
    ) -> None:
        self.kind = kind
        self.count = replicas
        self.database_url = database_url
        self.schema_only = schema_only
        self.key = "hw_bench_" + uuid.uuid4().hex
        self.replicas: list[Replica] = []
        self.location = ""
        """Where the load generator reads the database (directly)."""
        self.replica_location = ""
        """Where the replicas reach it: through the latency proxy when there is one."""
        self.latency_ms = latency_ms
        self.proxied = proxied or latency_ms > 0
        """Through the latency proxy, at no delay when ``latency_ms`` is 0."""
        self.round_trip_ms: float | None = None
        self._proxy: LatencyProxy | None = None
        self.label = ""
        self._drop: Callable[[], None] = lambda: None
        self.logs = tempfile.mkdtemp(prefix=f"humanwire-bench-{kind}-logs-")

    def log(self, index: int) -> str:
        return str(Path(self.logs) / f"replica-{index}.log")

    def __enter__(self) -> Cluster:
        self.location = self.replica_location = self._create_database()
        try:
            if self.kind == "postgres":
                self._reach_through_proxy()
            first = Replica(0, self.replica_location, self.key, create=True, log=self.log(0))
            self.replicas.append(first)
            first.start()
            first.ready()
            rest = [
                Replica(index, self.replica_location, self.key, create=False, log=self.log(index))
                for index in range(1, self.count)
            ]
            self.replicas.extend(rest)
            for replica in rest:
                replica.start()
            for replica in rest:
                replica.ready()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for replica in self.replicas:
            with contextlib.suppress(Exception):
                replica.stop()
        if self._proxy is not None:
            self._proxy.__exit__(None, None, None)
        self._drop()
        if not any(sum(replica.log_problems()) for replica in self.replicas):
            shutil.rmtree(self.logs, ignore_errors=True)

    def log_problems(self) -> str:
        """What the replicas logged at WARNING or ERROR, and where; "" if nothing."""
        counts = [replica.log_problems() for replica in self.replicas]
        if not any(sum(count) for count in counts):
            return ""
        return (
            "the service logged "
            + ", ".join(
                f"replica {index}: {warnings} warnings, {errors} errors"
                for index, (warnings, errors) in enumerate(counts)
            )
            + f" (logs in {self.logs})"
        )

    def _reach_through_proxy(self) -> None:
        """With ``latency_ms`` (or ``proxied``), the replicas' URL goes through a latency
        proxy; the round trip through it is measured either way (the label says it)."""
        parts = urlsplit(self.location)
        if self.proxied:
            self._proxy = LatencyProxy(
                parts.hostname or "127.0.0.1", parts.port or 5432, self.latency_ms
            ).__enter__()
            self.replica_location = self._proxy.url(self.location)
        self.round_trip_ms = postgres_round_trip_ms(self.replica_location)
        where = "far" if self.latency_ms > 0 else "local"
        if self.proxied and self.latency_ms <= 0:
            where += " through the proxy"
        self.label += f", database {where} ({self.round_trip_ms:.2f} ms round trip)"

    def proxy_cpu(self) -> float | None:
        """The latency proxy's CPU seconds so far (None without one)."""
        if self._proxy is None or self._proxy.pid is None:
            return None
        return cpu_seconds(self._proxy.pid)

    @property
    def base_urls(self) -> list[str]:
        return [replica.base_url for replica in self.replicas]

    def _create_database(self) -> str:
        if self.kind == "sqlite":
            directory = tempfile.TemporaryDirectory(prefix="humanwire-bench-")
            self._drop = directory.cleanup
            self.label = f"{self.count} x SQLite" if self.count > 1 else "SQLite, 1 process"
            return str(Path(directory.name) / "bench.db")
        import psycopg
        from psycopg import sql

        name = f"hw_bench_{uuid.uuid4().hex[:12]}"
        parts = urlsplit(self.database_url)
        with psycopg.connect(self.database_url, autocommit=True, connect_timeout=5) as conn:
            if self.schema_only:
                conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
            else:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))

        def drop() -> None:
            with psycopg.connect(self.database_url, autocommit=True, connect_timeout=5) as conn:
                if self.schema_only:
                    statement = sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE")
                else:
                    statement = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                conn.execute(statement.format(sql.Identifier(name)))

        self._drop = drop
        self.label = f"{self.count} x PostgreSQL"
        if self.schema_only:
            return in_schema(self.database_url, name)
        return urlunsplit(parts._replace(path=f"/{name}"))


# -- one round: hold N asks, answer them ---------------------------------------------------
@dataclass
class Round:
    n: int
    send_seconds: float
    latencies: list[float]
    same_replica: list[bool]
    round_trips: list[float]
    rss_growth: int
    replicas_cpu: float
    client_cpu: float
    backends_cpu: float | None
    proxy_cpu: float | None
    """The latency proxy's, with the database far: CPU a real network would not take."""
    transactions: float | None
    reply_transactions: float | None
    """Per timed reply (the POST, the answer reaching its ask), PostgreSQL only."""
    idle_rate: float | None
    send_calls: Counter[str]
    """Store method calls (all replicas) during the send phase."""
    reply_calls: Counter[str]
    """Store method calls (all replicas) during the timed replies."""
    connections: int
    lost: int
    wrong: int
    duplicated_events: int
    left_pending: int
    failed_posts: int
    trace: str = ""


@dataclass
class Result:
    label: str
    replicas: int
    rounds: list[Round] = field(default_factory=list)
    load: str = ""


def open_connections(client: AsyncHumanWire) -> int:
    pool: Any = client._http._transport._pool  # type: ignore[attr-defined]
    return len(list(pool.connections))


def all_calls(cluster: Cluster) -> Counter[str]:
    total: Counter[str] = Counter()
    for replica in cluster.replicas:
        total.update(replica.calls())
    return total


def breakdown(calls: Counter[str], per: int) -> str:
    """The store's own counts (PostgreSQL: round trips and transactions), then
    ``method calls-per-item``, most called first."""
    own = sorted(name for name in calls if name.startswith("("))
    methods = [(name, count) for name, count in calls.most_common() if name not in own]
    return (
        ", ".join(f"{name} {calls[name] / per:.2f}" for name in own)
        + ("; " if own else "")
        + ", ".join(f"{name} {count / per:.2f}" for name, count in methods)
    )


async def run_round(
    cluster: Cluster,
    db: Database,
    clients: list[AsyncHumanWire],
    humans: list[httpx.AsyncClient],
    per_replica: int,
    offset: int,
    sample: int,
    rng: random.Random,
    *,
    measure: bool,
    trace: bool = False,
) -> Round:
    """Asks ``per_replica`` questions through each replica's client (all at once), waits
    until all are held, answers a random ``sample`` one at a time (each to a random
    replica, timed) and the rest in bulk, then checks every ask got its own answer."""
    import httpx

    loop = asyncio.get_running_loop()
    count = len(clients)
    n = per_replica * count
    limit = PHASE_LIMIT + n / 50
    arrived: list[asyncio.Future[float]] = [loop.create_future() for _ in range(n)]
    owner = [i % count for i in range(n)]
    replies: list[str | None] = [None] * n

    async def ask(i: int) -> None:
        response = await clients[owner[i]].messages.slack(
            message=question(offset + i), to=SLACK_HUMAN, wait_time=WAIT_TIME
        )
        at = time.perf_counter()
        replies[i] = response.reply if response.responded else None
        arrived[i].set_result(at)

    async def held() -> int:
        return await asyncio.to_thread(db.held)

    postgres = db.kind == "postgres" and measure
    idle_rate: float | None = None
    if postgres:
        # The background rate (heartbeats, the outcome streams' keep-alives).
        await asyncio.sleep(STATS_FLUSH)
        first, queries, started = db.xact_commit(), db.queries, time.perf_counter()
        await asyncio.sleep(IDLE_WINDOW)
        idle = db.xact_commit() - first - (db.queries - queries)
        idle_rate = idle / (time.perf_counter() - started)
    rss_before = sum(replica.rss() for replica in cluster.replicas)
    pids = db.backend_pids() if postgres else []
    backends_before = backends_cpu(pids)
    xact_before = db.xact_commit() if postgres else 0
    queries_before = db.queries
    calls_before = all_calls(cluster)
    replicas_cpu = sum(replica.cpu_seconds() for replica in cluster.replicas)
    proxy_cpu = cluster.proxy_cpu()
    client_cpu = time.process_time()
    started = time.perf_counter()
    deadline = started + limit
    tasks = [asyncio.create_task(ask(i)) for i in range(n)]
    try:
        while (now_held := await held()) < n:
            for task in tasks:
                if task.done() and task.exception() is not None:
                    raise RuntimeError("an ask failed") from task.exception()
            if time.perf_counter() > deadline:
                raise TimeoutError(f"{await held()} of {n} asks held after {limit:.0f} s")
            await asyncio.sleep(POLL if now_held >= NEAR * n else FAR_POLL)
        send_seconds = time.perf_counter() - started
        replicas_cpu = sum(r.cpu_seconds() for r in cluster.replicas) - replicas_cpu
        if proxy_cpu is not None:
            proxy_cpu = (cluster.proxy_cpu() or 0.0) - proxy_cpu
        send_calls = all_calls(cluster) - calls_before
        client_cpu = time.process_time() - client_cpu
        backends = None
        transactions = None
        if postgres:
            after = backends_cpu(db.backend_pids())
            backends = sum(cpu - backends_before.get(pid, 0.0) for pid, cpu in after.items())
            own = db.queries - queries_before + 1  # and the read below
            await asyncio.sleep(STATS_FLUSH)
            elapsed = time.perf_counter() - started
            transactions = db.xact_commit() - xact_before - own - (idle_rate or 0.0) * elapsed
        rss_growth = sum(replica.rss() for replica in cluster.replicas) - rss_before
        connections = sum(open_connections(client) for client in clients)

        ids = await asyncio.to_thread(db.interaction_ids)
        interaction = [ids[question(offset + i)] for i in range(n)]
        failed_posts = 0

        async def reply(target: int, i: int) -> None:
            """The human's reply to ask ``i`` through replica ``target``. A POST whose
            connection breaks is counted and sent again (as a provider retries a webhook);
            the retry may find the answer taken already, so its status is not checked."""
            nonlocal failed_posts
            body = reply_body(interaction[i], answer(offset + i))
            for attempt in range(POST_ATTEMPTS):
                try:
                    response = await humans[target].post("/sandbox/replies", json=body)
                except httpx.TransportError:
                    failed_posts += 1
                    if attempt == POST_ATTEMPTS - 1:
                        raise
                    continue
                if attempt == 0:
                    response.raise_for_status()
                return

        measured = rng.sample(range(n), min(sample, n))
        if postgres:
            await asyncio.sleep(STATS_FLUSH)
            xact_before, queries_before = db.xact_commit(), db.queries
            replies_started = time.perf_counter()
        latencies: list[float] = []
        same: list[bool] = []
        round_trips: list[float] = []
        calls_before = all_calls(cluster)
        timeline: list[tuple[float, float, float, int, int]] = []
        if trace:
            for replica in cluster.replicas:
                replica.trace(True)
        wall = time.time() - time.perf_counter()
        for i in measured:
            target = rng.randrange(count)
            sent = time.perf_counter()
            await reply(target, i)
            posted = time.perf_counter()
            latencies.append(await asyncio.wait_for(arrived[i], 30) - sent)
            same.append(target == owner[i])
            round_trips.append(posted - sent)
            timeline.append(
                (sent + wall, posted + wall, arrived[i].result() + wall, target, owner[i])
            )
        trace_text = ""
        if trace:
            traces = [replica.trace(False) for replica in cluster.replicas]
            trace_text = describe_trace(timeline, traces)

        reply_calls = all_calls(cluster) - calls_before
        reply_transactions = None
        if postgres:
            own = db.queries - queries_before + 1
            await asyncio.sleep(STATS_FLUSH)
            elapsed = time.perf_counter() - replies_started
            reply_transactions = (
                db.xact_commit() - xact_before - own - (idle_rate or 0.0) * elapsed
            ) / len(measured)

        chosen = set(measured)
        gate = asyncio.Semaphore(BULK_REPLIES)

        async def answer_one(i: int) -> None:
            async with gate:
                await reply(rng.randrange(count), i)

        await asyncio.gather(*(answer_one(i) for i in range(n) if i not in chosen))
        done, _ = await asyncio.wait(tasks, timeout=60)
        for task in done:
            if task.exception() is not None:
                raise RuntimeError("an ask failed") from task.exception()
    finally:
        for task in tasks:
            task.cancel()
    lost = sum(1 for i in range(n) if not arrived[i].done() or replies[i] is None)
    wrong = sum(1 for i in range(n) if replies[i] is not None and replies[i] != answer(offset + i))
    return Round(
        n=n,
        send_seconds=send_seconds,
        latencies=latencies,
        same_replica=same,
        round_trips=round_trips,
        rss_growth=rss_growth,
        replicas_cpu=replicas_cpu,
        client_cpu=client_cpu,
        backends_cpu=backends,
        proxy_cpu=proxy_cpu,
        transactions=transactions,
        reply_transactions=reply_transactions,
        idle_rate=idle_rate,
        send_calls=send_calls,
        reply_calls=reply_calls,
        connections=connections,
        lost=lost,
        wrong=wrong,
        duplicated_events=await asyncio.to_thread(db.duplicated_events),
        left_pending=await asyncio.to_thread(db.pending),
        failed_posts=failed_posts,
        trace=trace_text if measure else "",
    )


async def bench_cluster(
    cluster: Cluster, per_replica: int, sample: int, seed: int, trace: bool = False
) -> Round:
    import httpx

    from humanwire import AsyncHumanWire

    rng = random.Random(seed)
    db = Database(cluster.kind, cluster.location)
    clients = [AsyncHumanWire(api_key=cluster.key, base_url=url) for url in cluster.base_urls]
    # The human's side: a small client per replica, never queued behind the agent's.
    humans = [
        httpx.AsyncClient(
            base_url=url,
            headers={"Authorization": f"Bearer {cluster.key}"},
            timeout=httpx.Timeout(60),
            # Idle connections dropped before uvicorn's 5 s keep-alive timeout closes
            # them: with equal timeouts a reused connection can meet the server's close.
            limits=httpx.Limits(max_connections=BULK_REPLIES, keepalive_expiry=2.0),
        )
        for url in cluster.base_urls
    ]
    try:
        await run_round(cluster, db, clients, humans, WARM_UP, 0, WARM_UP, rng, measure=False)
        return await run_round(
            cluster,
            db,
            clients,
            humans,
            per_replica,
            1_000_000,
            sample,
            rng,
            measure=True,
            trace=trace,
        )
    finally:
        for client in clients:
            await client.aclose()
        for human in humans:
            await human.aclose()
        db.close()


def proxied_local(args: argparse.Namespace) -> bool:
    """``--proxied-local``, which counts only beside ``--db-latency-ms``: the local leg
    (the replicas' and the floor's) goes through the latency proxy at no delay."""
    return bool(args.db_latency_ms and args.proxied_local)


def bench(
    kind: str,
    replicas: int,
    per_replica: int,
    sample: int,
    args: argparse.Namespace,
    latency_ms: float = 0.0,
) -> tuple[str, Round, str]:
    proxied = proxied_local(args)
    with Cluster(
        kind, replicas, args.database_url, args.schema_only, latency_ms, proxied
    ) as cluster:
        load = load_average()
        try:
            measured = asyncio.run(
                bench_cluster(cluster, per_replica, sample, per_replica, args.trace)
            )
        finally:
            problems = cluster.log_problems()
            if problems:
                print(f"{cluster.label}: {problems}", flush=True)
        return cluster.label, measured, load


# -- reporting -----------------------------------------------------------------------------
def describe(label: str, r: Round, load: str) -> str:
    p50, p99 = percentiles(r.latencies)
    text = (
        f"{label}: N={r.n:,} sends/s={r.n / r.send_seconds:,.0f} ({r.send_seconds:.1f} s) "
        f"reply->response p50={p50:.2f} ms p99={p99:.2f} ms (n={len(r.latencies)}) "
        f"memory/held wait={r.rss_growth / r.n / 1024:.1f} KiB "
        f"CPU/send: service {r.replicas_cpu / r.n * 1000:.2f} ms, "
        f"load generator {r.client_cpu / r.n * 1000:.2f} ms"
    )
    if r.backends_cpu is not None:
        text += f", PostgreSQL backends {r.backends_cpu / r.n * 1000:.2f} ms"
    if r.proxy_cpu is not None:
        text += f", latency proxy {r.proxy_cpu / r.n * 1000:.2f} ms"
    if r.transactions is not None:
        text += f"; transactions/send={r.transactions / r.n:.2f}"
    if r.reply_transactions is not None:
        text += f", per timed reply={r.reply_transactions:.2f}"
    text += (
        f"\n  store calls per send: {breakdown(r.send_calls, r.n)}"
        f"\n  store calls per timed reply: {breakdown(r.reply_calls, len(r.latencies))}"
        f"\n  lost={r.lost} wrong={r.wrong} duplicated events={r.duplicated_events} "
        f"left pending={r.left_pending} reply POSTs broken (sent again)={r.failed_posts} "
        f"[load avg {load}]"
    )
    if r.trace:
        text += "\n" + r.trace
    return text


def describe_trace(
    timeline: list[tuple[float, float, float, int, int]],
    traces: list[list[tuple[float, float, str]]],
) -> str:
    """``--trace``: for the timed replies that reached another replica than their ask's,
    each step (a store call or a notice heard, on the reply's replica B, the ask's A or
    a third C) seen in at least half of them: its median start and duration in ms from
    the reply POST's start; then the POST's return and the answer's arrival."""
    steps: dict[tuple[str, str, int], list[tuple[float, float]]] = {}
    replies = 0
    for sent, posted, got, target, owner in timeline:
        if target == owner:
            continue
        replies += 1
        seen: Counter[tuple[str, str]] = Counter()
        for index, events in enumerate(traces):
            role = "B" if index == target else "A" if index == owner else "C"
            for start, end, name in sorted(events):
                if sent <= start <= got:
                    nth = seen[(role, name)]
                    seen[(role, name)] += 1
                    steps.setdefault((role, name, nth), []).append(
                        ((start - sent) * 1000, (end - start) * 1000)
                    )
        steps.setdefault(("LG", "reply POST returned", 0), []).append(((posted - sent) * 1000, 0))
        steps.setdefault(("LG", "answer arrived", 0), []).append(((got - sent) * 1000, 0))
    if not replies:
        return "  trace: no timed reply went to another replica"
    rows = []
    for (role, name, nth), values in steps.items():
        if len(values) * 2 < replies:
            continue
        starts = statistics.median(v[0] for v in values)
        took = statistics.median(v[1] for v in values)
        label = name if nth == 0 else f"{name} ({nth + 1})"
        rows.append(
            (
                starts,
                f"    {role:>2} {label:<40} at {starts:7.2f} ms, took {took:6.2f} ms "
                f"({len(values)}/{replies})",
            )
        )
    rows.sort()
    return (
        f"  trace of {replies} timed replies on another replica (median ms from the POST):\n"
        + "\n".join(row for _, row in rows)
    )


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def figures(rounds: list[Round]) -> dict[str, tuple[float, str] | None]:
    """Medians over runs: name -> (value, formatted)."""

    def fig(values: list[float], fmt: str) -> tuple[float, str]:
        value = median(values)
        return value, fmt.format(value)

    split: dict[bool, list[float]] = {True: [], False: []}
    for r in rounds:
        for same in (True, False):
            chosen = [lat for lat, s in zip(r.latencies, r.same_replica, strict=True) if s == same]
            if chosen:
                split[same].append(percentiles(chosen)[0])
    backends = [r.backends_cpu / r.n * 1000 for r in rounds if r.backends_cpu is not None]
    proxy = [r.proxy_cpu / r.n * 1000 for r in rounds if r.proxy_cpu is not None]
    proxy_cores = [r.proxy_cpu / r.send_seconds for r in rounds if r.proxy_cpu is not None]
    transactions = [r.transactions / r.n for r in rounds if r.transactions is not None]
    per_reply = [r.reply_transactions for r in rounds if r.reply_transactions is not None]
    return {
        "waits held (N)": fig([r.n for r in rounds], "{:,.0f}"),
        "sends/s (all delivered)": fig([r.n / r.send_seconds for r in rounds], "{:,.0f}"),
        "time to deliver all": fig([r.send_seconds for r in rounds], "{:.1f} s"),
        "reply→response p50": fig([percentiles(r.latencies)[0] for r in rounds], "{:.2f} ms"),
        "reply→response p99": fig([percentiles(r.latencies)[1] for r in rounds], "{:.2f} ms"),
        "  p50, reply on the ask's replica": fig(split[True], "{:.2f} ms") if split[True] else None,
        "  p50, reply on another replica": fig(split[False], "{:.2f} ms") if split[False] else None,
        "reply POST alone p50": fig([percentiles(r.round_trips)[0] for r in rounds], "{:.2f} ms"),
        "memory per held wait (service RSS)": fig(
            [r.rss_growth / r.n / 1024 for r in rounds], "{:.1f} KiB"
        ),
        "DB transactions per send": fig(transactions, "{:.2f}") if transactions else None,
        "DB transactions per timed reply": fig(per_reply, "{:.2f}") if per_reply else None,
        "service CPU per send (all replicas)": fig(
            [r.replicas_cpu / r.n * 1000 for r in rounds], "{:.2f} ms"
        ),
        "PostgreSQL backends' CPU per send": fig(backends, "{:.2f} ms") if backends else None,
        "latency proxy's CPU per send": fig(proxy, "{:.2f} ms") if proxy else None,
        "latency proxy busy while sending": fig(proxy_cores, "{:.2f} cores")
        if proxy_cores
        else None,
        "load generator CPU per send": fig(
            [r.client_cpu / r.n * 1000 for r in rounds], "{:.2f} ms"
        ),
        "load generator busy while sending": fig(
            [r.client_cpu / r.send_seconds for r in rounds], "{:.2f} cores"
        ),
        "client connections open while held": fig([r.connections for r in rounds], "{:.0f}"),
        "lost / wrong answers": fig([r.lost + r.wrong for r in rounds], "{:.0f}"),
        "duplicated outcome events / left pending": fig(
            [r.duplicated_events + r.left_pending for r in rounds], "{:.0f}"
        ),
        "reply POSTs broken (sent again)": fig([r.failed_posts for r in rounds], "{:.0f}"),
    }


def table(results: list[Result]) -> str:
    columns = [(result.label, figures(result.rounds)) for result in results]
    head = "| figure | " + " | ".join(label for label, _ in columns) + " |"
    rule = "|---|" + "---:|" * len(columns)
    if len(columns) >= 2:
        head += " ratio, first / second |"
        rule += "---:|"
    lines = [head, rule]
    for name in columns[0][1]:
        cells = [values.get(name) for _, values in columns]
        if all(cell is None for cell in cells):
            continue
        row = f"| {name} | " + " | ".join(cell[1] if cell else "—" for cell in cells) + " |"
        if len(columns) >= 2:
            first, second = cells[:2]
            ratio = "—"
            if (
                first
                and second
                and second[0]
                and not name.startswith(("lost", "dupl", "reply POSTs"))
            ):
                ratio = f"{first[0] / second[0]:.2f}"
            row += f" {ratio} |"
        lines.append(row)
    return "\n".join(lines)


def latency_verdict(far: Result, local: Result) -> str:
    """The issue's target for a database 2 ms away: >= 80 % of the local sends/s."""
    far_rate = median([r.n / r.send_seconds for r in far.rounds])
    local_rate = median([r.n / r.send_seconds for r in local.rounds])
    share = far_rate / local_rate
    return (
        f"database far: {far_rate:,.0f} sends/s against {local_rate:,.0f} "
        f"({local.label}) = "
        f"{share:.0%} (target >= 80 %: {'met' if share >= 0.8 else 'NOT met'})"
    )


def floor_verdict(result: Result, floors: list[Floor]) -> str:
    """The replicas' p50 beside the floor's: the same waits written bare, in the same run
    (``--floor``)."""
    p50 = median([percentiles(r.latencies)[0] for r in result.rounds])
    floor_p50 = median([floor.p50 for floor in floors])
    ratios = [
        percentiles(r.latencies)[0] / floor.p50
        for r, floor in zip(result.rounds, floors, strict=True)
    ]
    return (
        f"{result.label}: p50 {p50:.2f} ms against the floor's {floor_p50:.2f} ms "
        f"({', '.join(f'{floor.p50:.2f}' for floor in floors)}; floor p99 "
        f"{median([floor.p99 for floor in floors]):.2f} ms): the service adds "
        f"{p50 - floor_p50:.2f} ms, {median(ratios):.2f}x the floor (median of the runs' ratios)"
    )


def verdict(result: Result) -> str:
    p50 = median([percentiles(r.latencies)[0] for r in result.rounds])
    p99 = median([percentiles(r.latencies)[1] for r in result.rounds])
    faults = sum(r.lost + r.wrong + r.duplicated_events + r.left_pending for r in result.rounds)
    n = result.rounds[0].n
    return (
        f"targets at {n:,} waits ({result.label}): p50 {p50:.2f} ms <= 10 ms "
        f"{'met' if p50 <= 10 else 'NOT met'}; p99 {p99:.2f} ms <= 50 ms "
        f"{'met' if p99 <= 50 else 'NOT met'}; no lost or duplicated answer "
        f"{'met' if faults == 0 else f'NOT met ({faults})'}"
        + ("" if n >= 30_000 else " (the issue's targets are stated at 30,000)")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--per-replica", type=int, default=10_000, help="waits per replica")
    parser.add_argument("--sqlite-n", type=int, default=10_000, help="waits on SQLite")
    parser.add_argument("--sample", type=int, default=300, help="replies timed one by one")
    parser.add_argument("--runs", type=int, default=1, help="repeat, then print medians")
    parser.add_argument("--skip-sqlite", action="store_true", help="replicas only")
    parser.add_argument(
        "--trace",
        action="store_true",
        help="print where the time of the timed replies goes (each store call and notice "
        "on each replica, from the reply POST to the answer's arrival)",
    )
    parser.add_argument(
        "--busy",
        type=int,
        default=0,
        help="K processes that only spin beside the run (a machine shared with other work)",
    )
    parser.add_argument(
        "--db-latency-ms",
        type=float,
        default=0.0,
        help="measure the replicas with the database X ms away each way (a forwarding "
        "proxy) beside the database local, alternately in each run",
    )
    parser.add_argument(
        "--proxied-local",
        action="store_true",
        help="with --db-latency-ms, the local measurement goes through the same proxy at "
        "no delay: the far/local ratios then measure the delay alone, not the proxy's CPU",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="after each measurement of the replicas, the same waits written bare "
        "(floor_replicas.py) on the same database, far or local",
    )
    parser.add_argument("--database-url", default=DATABASE_URL, help="the PostgreSQL server")
    parser.add_argument(
        "--schema-only",
        action="store_true",
        help="a fresh schema in --database-url's database instead of a database of its "
        "own (transactions per send then count that database's other users too)",
    )
    args = parser.parse_args(argv)
    raise_open_files_limit()
    print(
        f"{os.cpu_count()} CPUs shared by everything (the replicas, PostgreSQL, the load "
        f"generator and whatever else runs); load average at start {load_average()}",
        flush=True,
    )
    with busy_processes(args.busy):
        return run_all(args)


@contextlib.contextmanager
def busy_processes(count: int) -> Iterator[None]:
    """``count`` processes spinning until the block ends (``--busy``)."""
    if count:
        print(f"{count} busy process(es) spinning beside the run (--busy)", flush=True)
    context = multiprocessing.get_context("spawn")
    spinners = [context.Process(target=_spin, daemon=True) for _ in range(count)]
    for spinner in spinners:
        spinner.start()
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.terminate()
            spinner.join()


def _spin() -> None:
    while True:
        pass


def run_all(args: argparse.Namespace) -> int:
    far = Result(f"{args.replicas} x PostgreSQL far", args.replicas)
    replicas = Result(f"{args.replicas} x PostgreSQL", args.replicas)
    sqlite = Result("SQLite, 1 process", 1)
    floors: dict[float, list[Floor]] = {}
    started = time.perf_counter()
    for run in range(args.runs):
        # With a far database, the order alternates from run to run (the machine drifts).
        latencies = [args.db_latency_ms, 0.0] if args.db_latency_ms else [0.0]
        if run % 2:
            latencies.reverse()
        for latency in latencies:
            label, measured, load = bench(
                "postgres", args.replicas, args.per_replica, args.sample, args, latency
            )
            result = far if latency else replicas
            result.label = label.replace(", database far", " far").replace(
                ", database local", " local"
            )
            if latency and args.proxied_local:
                result.label += ", against local through the proxy"
            result.rounds.append(measured)
            print(f"run {run + 1}: {describe(label, measured, load)}", flush=True)
            if args.floor:
                floor = run_floor(
                    args.database_url,
                    servers=args.replicas,
                    sample=args.sample,
                    latency_ms=latency,
                    proxied=proxied_local(args),
                )
                floors.setdefault(latency, []).append(floor)
                print(f"run {run + 1}: {floor.describe()}", flush=True)
        if not args.skip_sqlite:
            label, measured, load = bench("sqlite", 1, args.sqlite_n, args.sample, args)
            sqlite.label = label
            sqlite.rounds.append(measured)
            print(f"run {run + 1}: {describe(label, measured, load)}", flush=True)
    results = [replicas] if args.skip_sqlite else [replicas, sqlite]
    if args.db_latency_ms:
        results.insert(0, far)
    print(
        f"\nmedians of {args.runs} run(s); {time.perf_counter() - started:.0f} s in all; "
        f"load average now {load_average()}\n"
    )
    print(table(results))
    print(
        "\nDB transactions: xact_commit growth during the sends (the timed replies), less "
        "this script's own queries and the idle rate, per send (per reply, its ask's answer "
        "included): an estimate (the server publishes its counters late); the store's own "
        "round trips and transactions, printed with each run, are exact."
    )
    print(verdict(replicas))
    if args.db_latency_ms:
        print(verdict(far))
        print(latency_verdict(far, replicas))
    for latency, measured_floors in floors.items():
        print(floor_verdict(far if latency else replicas, measured_floors))
    faults = sum(
        r.lost + r.wrong + r.duplicated_events + r.left_pending
        for result in results
        for r in result.rounds
    )
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
