"""Run the service under uvicorn in a background thread with its own event loop.

Used by the embedded mode, ``humanwire serve`` and the pytest plugin::

    with ServiceRunner(ServiceConfig(db_path="hw.db")) as runner:
        key = runner.create_account("me")
        print(runner.base_url)

The socket is bound before the app is built, so with ``port=0`` the real port is known
and ``config.public_url`` (which form links are built from) is the real address. Nothing
is answered before the startup steps (``before_serving``, such as the account of a key
given at start) have run: connections made meanwhile wait in the listener's queue.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import socket
import threading
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, overload

from ..config import ServiceConfig
from ..http.startup import StartupStep

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette

    from ..engine import Engine

__all__ = [
    "ServiceRunner",
    "bind_listener",
    "format_base_url",
    "thread_server",
    "tune_gc_for_service",
]

logger = logging.getLogger("humanwire")

T = TypeVar("T")

_START_TIMEOUT = 300.0
"""Seconds a start may take before it counts as hung. A start is seconds of work (the
first in a process imports the app's modules, the MCP SDK's most of all; then the
migrations and the startup steps), but on a heavily loaded machine it took 60-90 s, and
a slow start is no reason to refuse to serve."""
_STOP_TIMEOUT = 15.0
_GRACEFUL_SHUTDOWN = 3
"""Seconds open requests get to finish before they are cancelled. Held requests do not
need it: the stop answers them 503 at once (``Engine.drain``)."""
KEEP_ALIVE_TIMEOUT = 75
"""Seconds an idle connection stays open. Longer than clients keep idle connections
(httpx: 5 s) and than load balancers' idle timeouts (60 s), so the server never closes
a connection just as a client reuses it (uvicorn's 5 s default raced httpx's 5 s: a
request sent on a closing connection failed with a read error)."""


SERVICE_GC_THRESHOLDS = (50_000, 20, 20)
"""The collector's thresholds in a process that is the service (``tune_gc_for_service``)."""


def tune_gc_for_service() -> None:
    """For a process whose job is the service (``humanwire serve``; never a library
    user's process, whose collector is theirs): what was loaded so far (modules, the app)
    is moved out of the collector's sight, and collections run less often. Ten thousand
    held requests keep hundreds of thousands of objects alive, which every full
    collection would walk again; with Python's defaults that is a large part of the CPU a
    send costs the service."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVICE_GC_THRESHOLDS)


def format_base_url(host: str, port: int, scheme: str = "http") -> str:
    """``http://host:port``; IPv6 hosts in brackets, wildcard binds shown as loopback."""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


def bind_listener(host: str, port: int) -> socket.socket:
    """A listening, non-blocking socket on ``host:port`` (``port=0``: a free port), bound
    before a server is built so its real port is known at once."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # Nagle off on every connection: uvicorn writes an answer's head and body apart, and
    # the body waited for the client's delayed ACK (~40 ms). asyncio sets TCP_NODELAY only
    # on sockets that say they are TCP (IPPROTO_TCP named, not left 0), and the option set
    # on the listener below is inherited by the accepted sockets (Linux) in any case.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        # SO_REUSEADDR lets a restart reuse a port in TIME_WAIT; it does not let two
        # listeners share a port on Linux/macOS, so a busy port still fails here.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


class ServiceRunner:
    """The service on ``host:port`` (``port=0``: a free port) in a daemon thread.

    ``public_url`` keeps a given public address (behind a proxy); without it, the
    runner's ``config.public_url`` is set to the real bound address before the app is
    built. The runner works on its own copy of ``config`` (``runner.config``): the
    caller's object is left as it was, so two runners built from one config never share
    one address.

    ``before_serving``: steps run at each start before anything is answered (``start``
    returns after them; one that raises fails the start with its error).
    """

    def __init__(
        self,
        config: ServiceConfig,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        public_url: str | None = None,
        before_serving: Sequence[StartupStep] = (),
    ) -> None:
        self.config = dataclasses.replace(config)
        self._before_serving = list(before_serving)
        self.host = host
        self.requested_port = port
        self._public_url = public_url.rstrip("/") if public_url else None
        self._port: int | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: uvicorn.Server | None = None
        self._engine: Engine | None = None
        self._app: Starlette | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._lock = threading.Lock()

    # -- lifecycle ----------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the service is not started")
        return self._port

    @property
    def base_url(self) -> str:
        """The address clients use: the public URL when one was given, else the bound one."""
        if self._port is None:
            raise RuntimeError("the service is not started")
        return self.config.public_url

    @property
    def bound_url(self) -> str:
        """The address the socket is bound to (loopback form for wildcard binds)."""
        return format_base_url(self.host, self.port)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._ready.is_set()

    @property
    def engine(self) -> Engine:
        """The engine; only touch it on the server's loop (see ``call``)."""
        if self._engine is None:
            raise RuntimeError("the service is not started")
        return self._engine

    @property
    def app(self) -> Starlette:
        """The ASGI application served (its ``routes``, for tests that sweep them)."""
        if self._app is None:
            raise RuntimeError("the service is not started")
        return self._app

    def start(self) -> ServiceRunner:
        """Binds the socket, starts the thread, blocks until the app's lifespan has run
        and the server accepts connections. Raises ``OSError`` when the port is taken and
        ``RuntimeError`` when the app fails to start."""
        with self._lock:
            if self._thread is not None:
                return self
            sock = bind_listener(self.host, self.requested_port)
            self._port = sock.getsockname()[1]
            self.config.public_url = self._public_url or format_base_url(self.host, self._port)
            self._failure = None
            self._ready.clear()
            thread = threading.Thread(
                target=self._run, args=(sock,), name=f"humanwire-service-{self._port}", daemon=True
            )
            self._thread = thread
            thread.start()
        # Readiness: the thread sets the event once uvicorn is serving, or on failure.
        if not self._ready.wait(_START_TIMEOUT):
            self.stop()
            raise RuntimeError(f"the humanwire service did not start within {_START_TIMEOUT}s")
        if self._failure is not None or not thread.is_alive():
            failure = self._failure
            thread.join(_STOP_TIMEOUT)
            self._reset()
            self._port = None
            raise RuntimeError(f"the humanwire service failed to start: {failure!r}") from failure
        logger.debug("humanwire service listening at %s", self.bound_url)
        return self

    def stop(self) -> None:
        """Graceful stop: the listener closes, every held request is answered 503
        ``unavailable`` with ``Retry-After`` (its interaction stays open, re-armed at the
        next start on the same database, so the client's retry re-attaches), open
        connections finish, then the app's lifespan closes the engine. The port and the
        database are released when this returns."""
        with self._lock:
            thread, server = self._thread, self._server
            if thread is None:
                return
            if server is not None:
                # uvicorn's main loop checks this flag every 0.1 s.
                server.should_exit = True
            thread.join(_STOP_TIMEOUT)
            if thread.is_alive() and server is not None:
                server.force_exit = True
                thread.join(_STOP_TIMEOUT)
            self._reset()

    def _reset(self) -> None:
        self._thread = None
        self._server = None
        self._loop = None
        self._engine = None
        self._app = None

    def __enter__(self) -> ServiceRunner:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- talking to the engine from other threads ------------------------------------
    @overload
    def call(
        self, function: Callable[..., Awaitable[T]], *args: Any, timeout: float = 30.0
    ) -> T: ...
    @overload
    def call(self, function: Callable[..., T], *args: Any, timeout: float = 30.0) -> T: ...
    def call(self, function: Callable[..., Any], *args: Any, timeout: float = 30.0) -> Any:
        """Runs ``function(*args)`` on the server's event loop thread and returns its
        result (awaited, for a coroutine function such as a store's or the engine's):
        the engine and its store belong to that loop."""
        loop = self._loop
        if loop is None or not self.running:
            raise RuntimeError("the service is not running")

        async def run() -> Any:
            result = function(*args)
            return await result if inspect.isawaitable(result) else result

        return asyncio.run_coroutine_threadsafe(run(), loop).result(timeout)

    def create_account(self, name: str | None = None, *, api_key: str | None = None) -> str:
        """Creates an account (with ``api_key`` when given) and returns its API key."""
        _account, key = self.call(self.engine.accounts.create, name, api_key)
        return key

    def authenticate(self, api_key: str) -> bool:
        return self.call(self.engine.accounts.authenticate, api_key) is not None

    # -- the thread -------------------------------------------------------------------
    def _run(self, sock: socket.socket) -> None:
        try:
            asyncio.run(self._serve(sock))
        except BaseException as exc:  # SystemExit from uvicorn on a failed startup too
            if not self._ready.is_set():
                # A startup step's own error says more than uvicorn's exit after it.
                self._failure = self._failure or exc
            else:
                logger.exception("humanwire service stopped with an error")
        finally:
            sock.close()
            self._ready.set()

    async def _serve(self, sock: socket.socket) -> None:
        import uvicorn

        from ..engine import Engine
        from ..http.app import create_app
        from ..http.middleware import guarded_protocol

        self._loop = asyncio.get_running_loop()
        # Built in this thread: the engine's SQLite connection is used from this loop only.
        engine = Engine(self.config)
        self._engine = engine
        app = create_app(self.config, engine=engine, before_serving=[self._startup_step])
        self._app = app
        uv_config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="on",
            loop="asyncio",
            timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN,
            timeout_keep_alive=KEEP_ALIVE_TIMEOUT,
            # X-Forwarded-Proto/-For are believed from these peers only (uvicorn would
            # otherwise read FORWARDED_ALLOW_IPS from the environment).
            proxy_headers=True,
            forwarded_allow_ips=list(self.config.trusted_proxies),
            # h11 with the request time limits and the per-address bound
            # (humanwire.server.http.middleware), which counts an upgraded connection until
            # it closes. WebSockets only for the relay of real-time calls; a frame larger
            # than any relay message closes the socket (1009).
            http=guarded_protocol(self.config),
            ws="websockets-sansio",
            ws_max_size=WS_MAX_SIZE,
            # humanwire.access logs requests (only `humanwire serve` shows it), and
            # uvicorn must not configure logging in an embedding process.
            access_log=False,
            log_config=None,
        )
        server = thread_server(uv_config, self._ready, engine.drain)
        self._server = server
        await server.serve(sockets=[sock])

    async def _startup_step(self, engine: Engine) -> None:
        """The given steps, a failure kept for ``start`` to raise (uvicorn only logs a
        failed startup and returns)."""
        try:
            for step in self._before_serving:
                await step(engine)
        except BaseException as exc:
            self._failure = exc
            raise


WS_MAX_SIZE = 64 * 1024
"""Largest WebSocket frame the service reads (relay messages are a few hundred bytes)."""


def _make_thread_server() -> type[uvicorn.Server]:
    import uvicorn

    class ThreadServer(uvicorn.Server):
        def __init__(
            self, config: uvicorn.Config, ready: threading.Event, drain: Callable[[], None]
        ) -> None:
            super().__init__(config)
            self._ready_event = ready
            self._drain = drain

        def install_signal_handlers(self) -> None:  # uvicorn < 0.29
            pass

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                self._ready_event.set()

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            # uvicorn waits for open requests, then cancels them (a plain-text 500).
            # Held requests would wait for a human: stop accepting connections, answer
            # them 503 now (Engine.drain), then let uvicorn finish as usual.
            for server in self.servers:
                server.close()
            self._drain()
            await super().shutdown(sockets=sockets)

    return ThreadServer


def thread_server(
    config: uvicorn.Config, ready: threading.Event, drain: Callable[[], None] = lambda: None
) -> uvicorn.Server:
    """A uvicorn server for a thread: ``ready`` set once it accepts connections,
    ``drain`` called as soon as it stops accepting them (before open requests finish)."""
    # The subclass is built lazily so importing this module does not import uvicorn.
    cls: Any = _make_thread_server()
    server: uvicorn.Server = cls(config, ready, drain)
    return server
