"""``FakeServer``: a provider's contract fake served over loopback HTTP by uvicorn in a
daemon thread, so the code under test reaches it as it would reach the provider
(``twilio.api_base``, ``slack.api_base``). It imports nothing of ``humanwire.server``: a
fake that loaded the implementation it checks could agree with it by construction.

The socket is bound before the thread starts (``port=0``: a free port), so
``base_url`` is known at once; ``start`` returns once uvicorn accepts connections and
the fake is bound to the server's loop (its callbacks run there).

``FakeBackground`` is the other half every fake shares: what it does on the serving loop
beside answering requests (callbacks, delivery reports, calls, retried events), bound to
that loop by the app's lifespan, counted so ``wait_idle`` knows when it is over, driven
from the test's thread by ``run``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import httpx
from typing_extensions import Self

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette

__all__ = ["FakeBackground", "FakeServer", "ServedFake", "apoll_until", "poll_until"]

_START_TIMEOUT = 30.0
_STOP_TIMEOUT = 10.0


class ServedFake(Protocol):
    """What a fake offers the server: its ASGI app, whose lifespan binds the fake to the
    serving loop."""

    def app(self) -> Starlette: ...


F = TypeVar("F", bound=ServedFake)
T = TypeVar("T")


def _bind_listener(host: str, port: int) -> socket.socket:
    """A listening, non-blocking socket (``port=0``: a free port), bound before uvicorn
    starts so the real port is known at once."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Nagle off (inherited by accepted sockets): uvicorn writes a head and a body
        # apart, and the body would wait for the client's delayed ACK (~40 ms).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def _thread_server(config: uvicorn.Config, ready: threading.Event) -> uvicorn.Server:
    """A uvicorn server for a thread: no signal handlers, ``ready`` set once it accepts
    connections."""
    import uvicorn

    class ThreadServer(uvicorn.Server):
        def install_signal_handlers(self) -> None:  # uvicorn < 0.29
            pass

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                ready.set()

    return ThreadServer(config)


def poll_until(
    predicate: Callable[[], T], lock: AbstractContextManager[Any], timeout: float, what: str
) -> T:
    """Polls ``predicate`` (under the fake's ``lock``) until it is truthy; returns it.
    ``what`` names the fake in the ``TimeoutError``."""
    deadline = time.monotonic() + timeout
    while True:
        with lock:
            value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"the {what} did not reach the expected state")
        time.sleep(0.01)


async def apoll_until(
    predicate: Callable[[], T], lock: AbstractContextManager[Any], timeout: float, what: str
) -> T:
    """``poll_until`` for a coroutine: sleeps on its loop between polls."""
    deadline = time.monotonic() + timeout
    while True:
        with lock:
            value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"the {what} did not reach the expected state")
        await asyncio.sleep(0.01)


_CANCEL_WAIT = 2.0


class FakeBackground:
    """A fake's work on the serving loop beside the requests, and its HTTP client to the
    code under test.

    ``serving`` (entered by the app's lifespan) binds it to the loop; ``spawn`` starts a
    coroutine there from any thread and counts it until it ends, so ``idle`` is False from
    the call on (a test's ``wait_idle`` never sees a delivery not yet begun); ``run`` waits
    for a coroutine from another thread, ``arun`` from any loop. A failure of spawned work
    goes to ``on_error`` (the fake's ``errors``), named by the spawn's ``what``.
    """

    def __init__(
        self,
        label: str,
        server: str,
        lock: threading.RLock,
        on_error: Callable[[str], None],
        *,
        http_timeout: float = 10.0,
    ) -> None:
        self.label = label
        """Names the fake in errors: ``fake Slack``."""
        self.server = server
        """The server class that serves it, for the "not being served" error."""
        self.lock = lock
        self.on_error = on_error
        self.http_timeout = http_timeout
        self.loop: asyncio.AbstractEventLoop | None = None
        self._http: httpx.AsyncClient | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._pending = 0

    def _not_served(self) -> RuntimeError:
        return RuntimeError(f"the {self.label} is not being served ({self.server})")

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """For the app's lifespan: binds to the running loop; at the end cancels the work
        under way (waiting a little for it) and closes the client."""
        self.loop = asyncio.get_running_loop()
        self._http = httpx.AsyncClient(timeout=self.http_timeout)
        try:
            yield
        finally:
            with self.lock:
                tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=_CANCEL_WAIT)
            await self._http.aclose()
            self._http = None
            self.loop = None

    @property
    def http(self) -> httpx.AsyncClient:
        """The client the fake's callbacks go out with (only while served)."""
        if self._http is None:
            raise self._not_served()
        return self._http

    @property
    def idle(self) -> bool:
        """No spawned work is waiting to start or running."""
        with self.lock:
            return self._pending == 0

    def spawn(self, coro: Coroutine[Any, Any, Any], what: str) -> None:
        """Runs ``coro`` on the serving loop in the background (from any thread)."""
        loop = self.loop
        if loop is None:
            coro.close()
            raise self._not_served()
        with self.lock:
            self._pending += 1

        def start() -> None:
            task = loop.create_task(coro)
            with self.lock:
                self._tasks.add(task)
            task.add_done_callback(done)

        def done(task: asyncio.Task[Any]) -> None:
            with self.lock:
                self._tasks.discard(task)
                self._pending -= 1
            if not task.cancelled() and task.exception() is not None:
                self.on_error(f"{what}: {task.exception()!r}")

        if _running_loop() is loop:
            start()
        else:
            loop.call_soon_threadsafe(start)

    def cancel_all(self) -> None:
        """Cancels the work under way (from any thread): a fake's ``reset``."""
        loop = self.loop
        with self.lock:
            tasks = list(self._tasks)
        if loop is None or not tasks:
            return
        if _running_loop() is loop:
            for task in tasks:
                task.cancel()
        else:
            for task in tasks:
                loop.call_soon_threadsafe(task.cancel)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        """Runs ``coro`` on the serving loop and waits for it, from another thread."""
        loop = self.loop
        if loop is None:
            coro.close()
            raise self._not_served()
        if _running_loop() is loop:  # waiting here would block the loop the coroutine needs
            coro.close()
            raise RuntimeError("called on the fake's own loop: use the async twin (a…) instead")
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        """Runs ``coro`` on the serving loop, awaited from any loop."""
        loop = self.loop
        if loop is None:
            coro.close()
            raise self._not_served()
        if asyncio.get_running_loop() is loop:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class FakeServer(Generic[F]):
    """Serves ``fake`` (``fake.app()``); ``label`` names it in errors and thread names."""

    label = "fake"

    def __init__(self, fake: F, host: str = "127.0.0.1", port: int = 0) -> None:
        self.fake = fake
        self.host = host
        self.requested_port = port
        self.port = 0
        self._thread: threading.Thread | None = None
        self._server: uvicorn.Server | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        if not self.port:
            raise RuntimeError(f"the {self.label} is not started")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._ready.is_set()

    def start(self) -> Self:
        """Binds, serves in a daemon thread, returns once connections are accepted."""
        import uvicorn

        with self._lock:
            if self._thread is not None:
                return self
            sock = _bind_listener(self.host, self.requested_port)
            self.port = sock.getsockname()[1]
            config = uvicorn.Config(
                self.fake.app(),
                log_level="warning",
                lifespan="on",
                loop="asyncio",
                access_log=False,
                timeout_graceful_shutdown=2,
            )
            server = _thread_server(config, self._ready)
            self._server = server
            self._failure = None
            self._ready.clear()

            def run() -> None:
                try:
                    asyncio.run(server.serve(sockets=[sock]))
                except BaseException as exc:  # SystemExit from uvicorn on a failed startup
                    self._failure = exc
                finally:
                    sock.close()
                    self._ready.set()

            thread = threading.Thread(
                target=run, name=f"{self.label.replace(' ', '-')}-{self.port}", daemon=True
            )
            self._thread = thread
            thread.start()
        if not self._ready.wait(_START_TIMEOUT) or not server.started or not thread.is_alive():
            failure = self._failure
            self.stop()
            raise RuntimeError(f"the {self.label} did not start: {failure!r}") from failure
        self.started()
        return self

    def started(self) -> None:
        """Called once serving (``base_url`` known): a subclass tells its fake."""

    def stop(self) -> None:
        """Stops serving: the calls and callbacks under way are cancelled."""
        with self._lock:
            thread, server = self._thread, self._server
            if thread is None or server is None:
                return
            server.should_exit = True
            thread.join(_STOP_TIMEOUT)
            if thread.is_alive():
                server.force_exit = True
                thread.join(_STOP_TIMEOUT)
            self._thread = None
            self._server = None
            self.port = 0

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
