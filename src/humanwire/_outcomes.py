"""Many waits over a handful of connections (docs/design.md "Many waits from one client").

A held send keeps its HTTP connection for the whole wait, so a client holding thousands
of waits would need thousands of connections. Past ``MULTIPLEX_WAITS_AFTER`` waits in
flight, a driver sends with ``Prefer: respond-async``: the service answers 202 once the
message is out, keeps the wait itself, and reports its end on the account's outcome
stream (``GET /events/stream``) as a ``wait.ended`` event carrying exactly the body the
held request would have returned. An *outcome hub* reads that stream on one connection
and hands each event to the call waiting for it.

The hub's cursor is taken (``GET /events?wait=0``) before the first such send, so no
event of a later send can be missed; a dropped stream reconnects from the last event it
read (``Last-Event-ID``), so nothing is lost or seen twice. ``AsyncOutcomeHub`` runs on
the caller's event loop, ``SyncOutcomeHub`` in a daemon thread for ``HumanWire`` used
from many threads. An event that arrives before its send has read the 202 is kept (for
``EARLY_TTL`` seconds) until the send asks for it.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import httpx

if TYPE_CHECKING:
    import asyncio

__all__ = ["AsyncOutcomeHub", "SseParser", "SyncOutcomeHub"]

EARLY_TTL = 300.0
"""How long an event nobody waits for (yet) is kept: a 202 is read long before."""
STREAM_READ_TIMEOUT = 60.0
"""The service sends a comment every 15 s: a silent minute means the stream is dead."""
RECONNECT_DELAYS = (0.05, 0.2, 0.5, 1.0, 2.0)


class SseParser:
    """Server-sent events, line by line: ``feed`` returns an event's ``data`` (parsed)
    once its blank line arrives; a block with an ``id:`` and no data (the service's
    keepalive past events an ``eventType`` left out) as ``{"id": ...}``, which only
    moves the reader's cursor."""

    def __init__(self) -> None:
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, line: str) -> dict[str, Any] | None:
        if line == "":
            block_id, self._id = self._id, None
            if not self._data:
                return None if block_id is None else {"id": block_id}
            text, self._data = "\n".join(self._data), []
            try:
                parsed = json.loads(text)
            except ValueError:
                return None
            return parsed if isinstance(parsed, dict) else None
        if line.startswith("data:"):
            self._data.append(line[5:].lstrip(" "))
        elif line.startswith("id:"):
            self._id = line[3:].lstrip(" ")
        return None  # event: (the data repeats it), comments, retry:


class _Hub:
    """What both hubs share: the request headers, the cursor, early events."""

    def __init__(self, base_url: str, headers: dict[str, str]) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = {
            "Authorization": headers["Authorization"],
            "User-Agent": headers.get("User-Agent", "humanwire-python"),
        }
        self.cursor: str | None = None
        self.event_type: str | None = "wait.ended"
        """The stream asks only for the events it uses (None: a service that does not
        know ``eventType`` refused it, so all of them)."""
        self._early: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()
        self.reconnects = 0
        """How many times the stream was opened again after it dropped (tests read it)."""

    def _stream_request(self) -> tuple[str, dict[str, str], dict[str, str]]:
        headers = {**self.headers, "Accept": "text/event-stream"}
        assert self.cursor is not None
        headers["Last-Event-ID"] = self.cursor
        params = {"after": self.cursor}
        if self.event_type is not None:
            params["eventType"] = self.event_type
        return f"{self.base_url}/events/stream", headers, params

    def _filter_refused(self, response: httpx.Response) -> bool:
        """A service older than ``eventType`` refused it (400 naming it): the stream is
        asked again without it (the events it did not want are passed over here)."""
        if response.status_code != 400 or self.event_type is None:
            return False
        try:
            field = response.json()["error"].get("field")
        except (ValueError, KeyError, TypeError, AttributeError):
            return False
        if field != "eventType":
            return False
        self.event_type = None
        return True

    def _keep_early(self, interaction_id: str, event: dict[str, Any]) -> None:
        now = time.monotonic()
        early = self._early
        if len(early) > 1000:
            # Kept in arrival order, so the expired ones are the first: a look at the
            # oldest per event, not a scan of all of them (a client sharing its
            # account's stream with other clients keeps their thousands of answers,
            # and scanning them on every event made reading the stream quadratic).
            while early:
                at, _ = next(iter(early.values()))
                if now - at <= EARLY_TTL:
                    break
                early.popitem(last=False)
        early.pop(interaction_id, None)
        early[interaction_id] = (now, event)

    def _take_early(self, interaction_id: str) -> dict[str, Any] | None:
        found = self._early.pop(interaction_id, None)
        return found[1] if found is not None else None


def _refused(response: httpx.Response) -> BaseException | None:
    """A read stream answer that is not 200 (its body read): the error that ends the
    hub (a revoked key…), or None after raising a retryable one (5xx, 429)."""
    from .errors import error_from_response

    error = error_from_response(response)
    if response.status_code < 500 and response.status_code != 429:
        return error
    raise httpx.TransportError(str(error))


def _cursor_of(response: httpx.Response) -> str:
    if response.status_code != 200:
        from .errors import error_from_response

        raise error_from_response(response)
    return str(response.json()["cursor"])


def _lines_events(parser: SseParser, lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        event = parser.feed(line)
        if event is not None:
            yield event


def _expire(future: asyncio.Future[Any], interaction_id: str, timeout: float) -> None:
    if not future.done():
        future.set_exception(TimeoutError(f"no outcome for {interaction_id} in {timeout} s"))


class AsyncOutcomeHub(_Hub):
    """The outcome stream on an ``httpx.AsyncClient``, read by one task."""

    def __init__(self, http: httpx.AsyncClient, base_url: str, headers: dict[str, str]) -> None:
        super().__init__(base_url, headers)
        import asyncio

        self._asyncio = asyncio
        self.http = http
        self._waiters: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._failure: BaseException | None = None
        self._response: httpx.Response | None = None

    async def start(self) -> None:
        """Takes the cursor (once) and starts reading the stream from it."""
        if self._task is not None and not self._task.done():
            return
        async with self._lock:
            if self._task is not None and not self._task.done():
                return
            if self.cursor is None:
                response = await self.http.get(
                    f"{self.base_url}/events", params={"wait": "0"}, headers=self.headers
                )
                self.cursor = _cursor_of(response)
            self._failure = None
            self._task = self._asyncio.get_running_loop().create_task(self._read())

    async def wait_for(self, interaction_id: str, timeout: float | None) -> dict[str, Any]:
        """The ``wait.ended`` event of ``interaction_id``; ``TimeoutError`` after
        ``timeout`` seconds; the stream's fatal error (a revoked key…) if it stopped."""
        early = self._take_early(interaction_id)
        if early is not None:
            return early
        if self._failure is not None:
            raise self._failure
        loop = self._asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._waiters[interaction_id] = future
        # A timer on the future itself, not ``asyncio.wait_for`` (a second future and
        # callbacks per wait, thousands of them at once).
        expiry = None
        if timeout is not None:
            expiry = loop.call_later(timeout, _expire, future, interaction_id, timeout)
        try:
            return await future
        finally:
            if expiry is not None:
                expiry.cancel()
            self._waiters.pop(interaction_id, None)

    def _dispatch(self, event: dict[str, Any]) -> None:
        self.cursor = str(event.get("id", self.cursor))
        if event.get("eventType") != "wait.ended":
            return
        interaction_id = str(event.get("interactionId"))
        future = self._waiters.pop(interaction_id, None)
        if future is not None and not future.done():
            future.set_result(event)
        else:
            self._keep_early(interaction_id, event)

    async def _read(self) -> None:
        attempt = 0
        timeout = httpx.Timeout(10.0, read=STREAM_READ_TIMEOUT)
        while True:
            url, headers, params = self._stream_request()
            try:
                async with self.http.stream(
                    "GET", url, headers=headers, params=params, timeout=timeout
                ) as response:
                    if response.status_code != 200:
                        await response.aread()
                        if self._filter_refused(response):
                            continue
                        fatal = _refused(response)
                        if fatal is not None:
                            self._fail(fatal)
                            return
                    attempt = 0
                    self._response = response
                    parser = SseParser()
                    async for line in response.aiter_lines():
                        event = parser.feed(line)
                        if event is not None:
                            self._dispatch(event)
            except (httpx.TransportError, httpx.StreamError):
                pass
            except RuntimeError:
                return  # the http client was closed under the stream: nothing to read
            finally:
                self._response = None
            self.reconnects += 1
            await self._asyncio.sleep(RECONNECT_DELAYS[min(attempt, len(RECONNECT_DELAYS) - 1)])
            attempt += 1

    def _fail(self, error: BaseException) -> None:
        self._failure = error
        for future in self._waiters.values():
            if not future.done():
                future.set_exception(error)

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


class SyncOutcomeHub(_Hub):
    """The outcome stream on an ``httpx.Client``, read by a daemon thread; waits are
    threading events, so any number of threads may wait at once."""

    def __init__(self, http: httpx.Client, base_url: str, headers: dict[str, str]) -> None:
        super().__init__(base_url, headers)
        self.http = http
        self._lock = threading.Lock()
        self._waiters: dict[str, tuple[threading.Event, list[dict[str, Any]]]] = {}
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()
        self._failure: BaseException | None = None
        self._response: httpx.Response | None = None

    def start(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            if self.cursor is None:
                response = self.http.get(
                    f"{self.base_url}/events", params={"wait": "0"}, headers=self.headers
                )
                self.cursor = _cursor_of(response)
            self._failure = None
            self._thread = threading.Thread(
                target=self._read, name="humanwire-outcomes", daemon=True
            )
            self._thread.start()

    def wait_for(self, interaction_id: str, timeout: float | None) -> dict[str, Any]:
        with self._lock:
            early = self._take_early(interaction_id)
            if early is not None:
                return early
            if self._failure is not None:
                raise self._failure
            ready, box = threading.Event(), cast("list[dict[str, Any]]", [])
            self._waiters[interaction_id] = (ready, box)
        try:
            if not ready.wait(timeout):
                raise TimeoutError(f"no outcome for {interaction_id} in {timeout} s")
        finally:
            with self._lock:
                self._waiters.pop(interaction_id, None)
        if not box:
            assert self._failure is not None
            raise self._failure
        found: dict[str, Any] = box[0]
        return found

    def _dispatch(self, event: dict[str, Any]) -> None:
        with self._lock:
            self.cursor = str(event.get("id", self.cursor))
            if event.get("eventType") != "wait.ended":
                return
            interaction_id = str(event.get("interactionId"))
            waiter = self._waiters.pop(interaction_id, None)
            if waiter is None:
                self._keep_early(interaction_id, event)
                return
        ready, box = waiter
        box.append(event)
        ready.set()

    def _read(self) -> None:
        attempt = 0
        timeout = httpx.Timeout(10.0, read=STREAM_READ_TIMEOUT)
        while not self._closed.is_set():
            with self._lock:
                url, headers, params = self._stream_request()
            try:
                with self.http.stream(
                    "GET", url, headers=headers, params=params, timeout=timeout
                ) as response:
                    self._response = response
                    if response.status_code != 200:
                        response.read()
                        if self._filter_refused(response):
                            continue
                        fatal = _refused(response)
                        if fatal is not None:
                            self._fail(fatal)
                            return
                    attempt = 0
                    for event in _lines_events(SseParser(), response.iter_lines()):
                        self._dispatch(event)
            except (httpx.TransportError, httpx.StreamError, OSError, ValueError):
                pass  # ValueError: the response was closed under us (close())
            except RuntimeError:
                return  # the http client was closed under the stream
            finally:
                self._response = None
            if self._closed.wait(RECONNECT_DELAYS[min(attempt, len(RECONNECT_DELAYS) - 1)]):
                return
            self.reconnects += 1
            attempt += 1

    def _fail(self, error: BaseException) -> None:
        with self._lock:
            self._failure = error
            waiters, self._waiters = self._waiters, {}
        for ready, _ in waiters.values():
            ready.set()

    def close(self) -> None:
        self._closed.set()
        response = self._response
        if response is not None:
            with contextlib.suppress(Exception):
                response.close()
