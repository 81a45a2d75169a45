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
import asyncio
import contextlib
import multiprocessing
import socket
import statistics
import sys
import time
from types import TracebackType

CHUNK = 256 * 1024


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Copies ``reader`` to ``writer``, each chunk ``delay`` seconds after it arrived."""
    loop = asyncio.get_running_loop()
    line: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def deliver() -> None:
        while True:
            due, data = await line.get()
            if not data:
                break
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        with contextlib.suppress(OSError):
            if writer.can_write_eof():
                writer.write_eof()

    sender = asyncio.create_task(deliver())
    try:
        while data := await reader.read(CHUNK):
            line.put_nowait((loop.time() + delay, data))
    except OSError:
        pass
    line.put_nowait((loop.time() + delay, b""))
    with contextlib.suppress(OSError):
        await sender


async def serve(listen: socket.socket, host: str, port: int, delay: float) -> None:
    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(host, port)
        except OSError:
            client_w.close()
            return
        for writer in (client_w, server_w):
            sock = writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await asyncio.gather(_pipe(client_r, server_w, delay), _pipe(server_r, client_w, delay))
        for writer in (client_w, server_w):
            writer.close()

    server = await asyncio.start_server(handle, sock=listen)
    async with server:
        await server.serve_forever()


def _proxy_main(listen: socket.socket, host: str, port: int, delay: float) -> None:
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(listen, host, port, delay))


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

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._process.terminate()
        self._process.join()


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
