"""A TCP forwarder that adds a fixed delay each way: a database "in another zone" on
loopback, for the benchmarks (``bench_replicas.py --db-latency-ms``).

Every chunk read from one side is written to the other ``delay`` seconds after it was
read, in order: a latency line, not a bandwidth limit, so a pipeline of statements
still overlaps as it would over a real network. Run it alone::

    python benchmarks/latency_proxy.py --target 127.0.0.1:5432 --delay-ms 1
    # then: psql "postgresql://127.0.0.1:<printed port>/test"

or in a process of its own from a benchmark (:class:`LatencyProxy`): its CPU then stays
out of the load generator's event loop.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import queue
import socket
import statistics
import sys
import threading
import time
from types import TracebackType
from urllib.parse import quote, urlsplit, urlunsplit

CHUNK = 256 * 1024


def _pipe(source: socket.socket, sink: socket.socket, delay: float) -> None:
    """Copies ``source`` to ``sink``, each chunk ``delay`` seconds after it arrived.

    Threads, not asyncio: an event loop's timers wait in whole milliseconds (the selector
    rounds its timeout up), which made 0.5 ms each way the same as 1 ms; ``time.sleep``
    keeps to a few tens of microseconds."""
    line: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()

    def deliver() -> None:
        while True:
            due, data = line.get()
            if not data:
                break
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            try:
                sink.sendall(data)
            except OSError:
                break
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    sender = threading.Thread(target=deliver, daemon=True)
    sender.start()
    try:
        while data := source.recv(CHUNK):
            line.put((time.monotonic() + delay, data))
    except OSError:
        pass
    line.put((time.monotonic() + delay, b""))
    sender.join()


def _forward(client: socket.socket, host: str, port: int, delay: float) -> None:
    try:
        server = socket.create_connection((host, port))
    except OSError:
        client.close()
        return
    for sock in (client, server):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    back = threading.Thread(target=_pipe, args=(server, client, delay), daemon=True)
    back.start()
    _pipe(client, server, delay)
    back.join()
    for sock in (client, server):
        sock.close()


def serve(listen: socket.socket, host: str, port: int, delay: float) -> None:
    # Threads wake from their sleeps to forward: a short switch interval lets one take
    # the GIL at once rather than after another's 5 ms slice.
    sys.setswitchinterval(0.0002)
    while True:
        client, _ = listen.accept()
        threading.Thread(target=_forward, args=(client, host, port, delay), daemon=True).start()


def _proxy_main(listen: socket.socket, host: str, port: int, delay: float) -> None:
    with contextlib.suppress(KeyboardInterrupt):
        serve(listen, host, port, delay)


class LatencyProxy:
    """``with LatencyProxy("127.0.0.1", 5432, delay_ms=1) as proxy:`` forwards
    ``proxy.port`` on loopback to the target, ``delay_ms`` each way, in a process of its
    own."""

    def __init__(self, host: str, port: int, delay_ms: float) -> None:
        self.host, self.target_port, self.delay = host, port, delay_ms / 1000
        self._listen = socket.create_server(("127.0.0.1", 0), backlog=1024)
        self.port: int = self._listen.getsockname()[1]
        context = multiprocessing.get_context("fork")
        self._process = context.Process(
            target=_proxy_main,
            args=(self._listen, host, port, self.delay),
            daemon=True,
            name="latency-proxy",
        )

    def __enter__(self) -> LatencyProxy:
        self._process.start()
        self._listen.close()  # the child serves it
        return self

    def url(self, url: str) -> str:
        """``url`` (a database URL pointing at the target) through this proxy."""
        parts = urlsplit(url)
        netloc = f"127.0.0.1:{self.port}"
        if parts.username:
            netloc = f"{parts.username}@{netloc}"
        return urlunsplit(parts._replace(netloc=netloc))

    @property
    def pid(self) -> int | None:
        """The forwarding process's (for its CPU: on one machine it is taken from the
        processes it stands between, as a real network's is not)."""
        return self._process.pid

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._process.terminate()
        self._process.join()


def in_schema(url: str, schema: str) -> str:
    """A PostgreSQL ``url`` whose connections use ``schema`` (``search_path``)."""
    parts = urlsplit(url)
    option = "options=" + quote(f"-csearch_path={schema}")
    query = f"{parts.query}&{option}" if parts.query else option
    return urlunsplit(parts._replace(query=query))


def postgres_round_trip_ms(url: str, samples: int = 50) -> float:
    """The median time of ``SELECT 1`` on one connection to ``url``, in ms."""
    import psycopg

    times: list[float] = []
    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        conn.execute("SELECT 1")
        for _ in range(samples):
            started = time.perf_counter()
            conn.execute("SELECT 1").fetchone()
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--target", default="127.0.0.1:5432", help="host:port to forward to")
    parser.add_argument("--delay-ms", type=float, default=1.0, help="added each way")
    parser.add_argument("--port", type=int, default=0, help="loopback port to listen on")
    args = parser.parse_args(argv)
    host, _, port = args.target.rpartition(":")
    listen = socket.create_server(("127.0.0.1", args.port), backlog=1024)
    print(
        f"forwarding 127.0.0.1:{listen.getsockname()[1]} -> {args.target}, "
        f"{args.delay_ms} ms each way",
        flush=True,
    )
    _proxy_main(listen, host, int(port), args.delay_ms / 1000)
    return 0


if __name__ == "__main__":
    sys.exit(main())
