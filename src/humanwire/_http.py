"""The one request pipeline, written once and driven twice.

A request is a *flow*: a generator that yields actions — ``Send`` an HTTP request,
``Sleep`` for a back-off — and receives their results. Auth, timeouts, idempotency keys,
retries and error mapping live in the flow, so they exist once; ``SyncDriver`` and
``AsyncDriver`` are the only code that knows whether I/O blocks or awaits. Multi-step
operations (``interactions.wait``) are flows built from other flows with ``yield from``.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx
from pydantic import TypeAdapter, ValidationError

from . import _constants as C
from .errors import (
    APIConnectionError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    ProviderError,
    RateLimitError,
    error_from_response,
)
from .types import RequestModel

if TYPE_CHECKING:
    import asyncio

    from ._batch import AsyncBatcher
    from ._outcomes import AsyncOutcomeHub, SyncOutcomeHub

__all__ = [
    "AsyncDriver",
    "AwaitOutcome",
    "ClientOptions",
    "Flow",
    "RequestSpec",
    "Send",
    "Sleep",
    "SyncDriver",
    "compact_json",
    "default_timeout",
    "request_flow",
]

T = TypeVar("T")


@dataclass(frozen=True)
class Send:
    """Send this request; the driver answers with the ``httpx.Response`` or throws the
    ``httpx.TransportError`` into the flow."""

    method: str
    url: str
    headers: dict[str, str]
    params: dict[str, str] | None
    json: Any
    timeout: httpx.Timeout
    wait: float | None = None
    """Seconds a send asks the service to hold it: the driver may ask for a 202 instead
    (``Prefer: respond-async``) and collect the answer from the outcome stream."""
    base_url: str = ""


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class AwaitOutcome:
    """A send was accepted (202): the driver answers with its ``wait.ended`` event from
    the outcome stream, or throws ``httpx.ReadTimeout`` after ``timeout`` seconds."""

    interaction_id: str
    timeout: float | None
    request: httpx.Request


Action = Send | Sleep | AwaitOutcome
Flow = Generator[Action, Any, T]


def default_timeout() -> httpx.Timeout:
    return httpx.Timeout(C.DEFAULT_READ_TIMEOUT, connect=C.DEFAULT_CONNECT_TIMEOUT)


@dataclass(frozen=True)
class ClientOptions:
    """Everything a flow needs to know about the client it runs for."""

    base_url: str
    api_key: str
    timeout: httpx.Timeout = field(default_factory=default_timeout)
    max_retries: int = C.DEFAULT_MAX_RETRIES
    retry_initial_delay: float = C.RETRY_INITIAL_DELAY
    retry_max_delay: float = C.RETRY_MAX_DELAY
    max_retry_after: float = C.MAX_RETRY_AFTER
    jitter: Callable[[float, float], float] = random.uniform
    clock: Callable[[], float] = time.monotonic
    user_agent: str = "humanwire-python"

    def copy(self, **changes: Any) -> ClientOptions:
        return replace(self, **changes)


@dataclass(frozen=True)
class RequestSpec(Generic[T]):
    """One endpoint call, described: what to send and how to read the answer."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    body: RequestModel | None = None
    params: Mapping[str, str | int | float | None] | None = None
    wait: float | None = None
    """Seconds the request asks the service to hold it open: the read timeout covers it."""
    idempotency_key: str | None = None
    never_retry_pending: bool = False
    """``/phone/call``: once the request may have reached the service, never send it again
    (a pending call is never retried); only failures to connect are retried."""


# -- response readers ------------------------------------------------------------------


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        raise APIResponseValidationError(
            f"the service answered {response.status_code} with a body that is not JSON",
            response=response,
            body=response.text,
        ) from None


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def _adapter(kind: Any) -> TypeAdapter[Any]:
    """One ``TypeAdapter`` per response type, built on first use (building one per call
    costs more than validating a body)."""
    try:
        adapter = _ADAPTERS.get(kind)
    except TypeError:  # an unhashable type form
        return TypeAdapter(kind)
    if adapter is None:
        adapter = _ADAPTERS[kind] = TypeAdapter(kind)
    return adapter


def parse_as(kind: type[T] | Any) -> Callable[[httpx.Response], T]:
    """A reader validating the JSON body as ``kind`` (a model, or ``list[Model]``)."""
    adapter: TypeAdapter[T] = _adapter(kind)

    def parse(response: httpx.Response) -> T:
        body = _json(response)
        try:
            return adapter.validate_python(body)
        except ValidationError as exc:
            raise APIResponseValidationError(
                f"unexpected response body: {exc.errors(include_url=False)[0]['msg']}",
                response=response,
                body=body,
            ) from exc

    return parse


def parse_nothing(response: httpx.Response) -> None:
    return None


# -- the flow ----------------------------------------------------------------------------


def read_timeout_for(base: httpx.Timeout, wait: float | None) -> httpx.Timeout:
    """The base timeout, with a read timeout long enough for the wait asked of the service."""
    if wait is None or base.read is None:
        return base
    read = max(base.read, wait + C.WAIT_MARGIN)
    return httpx.Timeout(connect=base.connect, read=read, write=base.write, pool=base.pool)


def backoff(options: ClientOptions, retry_number: int) -> float:
    """Exponential back-off with full jitter: uniform in [0, min(max, initial·2ⁿ)]."""
    ceiling = min(options.retry_max_delay, options.retry_initial_delay * (2**retry_number))
    return options.jitter(0.0, ceiling)


def _join(base_url: str, path: str) -> str:
    return base_url.rstrip("/") + "/" + path.lstrip("/")


# Failures that happen before the request can have reached the service.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def request_flow(options: ClientOptions, spec: RequestSpec[T]) -> Flow[T]:
    """Send ``spec`` with auth, derived timeout and retries; return the parsed answer."""
    headers = {
        "Authorization": f"Bearer {options.api_key}",
        "Accept": "application/json",
        "User-Agent": options.user_agent,
    }
    if spec.method == "POST":
        # One key for all tries of this call: a retry never texts a human twice.
        headers[C.IDEMPOTENCY_KEY_HEADER] = spec.idempotency_key or str(uuid.uuid4())
    params = {k: str(v) for k, v in spec.params.items() if v is not None} if spec.params else None
    send = Send(
        method=spec.method,
        url=_join(options.base_url, spec.path),
        headers=headers,
        params=params or None,
        json=spec.body.to_wire() if spec.body is not None else None,
        timeout=read_timeout_for(options.timeout, spec.wait),
        wait=spec.wait if spec.method == "POST" else None,
        base_url=options.base_url,
    )
    # Every request is safe to repeat: GET and DELETE by nature, POST by its key.
    retry_number = 0
    while True:
        retries_left = options.max_retries - retry_number
        try:
            response: httpx.Response = yield send
            if response.status_code == 202 and _accepted_async(response):
                response = yield from _held_answer(response, send)
        except httpx.TransportError as exc:
            may_repeat = isinstance(exc, _NOT_SENT) or not spec.never_retry_pending
            if retries_left > 0 and may_repeat:
                yield Sleep(backoff(options, retry_number))
                retry_number += 1
                continue
            if isinstance(exc, httpx.TimeoutException):
                raise APITimeoutError(f"the request timed out: {exc}", request=exc.request) from exc
            raise APIConnectionError(
                f"could not reach the service at {options.base_url}: {exc}", request=exc.request
            ) from exc

        if response.is_success:
            return spec.parse(response)

        error = error_from_response(response)
        delay = _retry_delay(options, error, retry_number)
        if retries_left > 0 and delay is not None:
            yield Sleep(delay)
            retry_number += 1
            continue
        raise error


def _accepted_async(response: httpx.Response) -> bool:
    applied: str = response.headers.get("preference-applied", "")
    return applied.lower() == "respond-async"


def _held_answer(accepted: httpx.Response, send: Send) -> Flow[httpx.Response]:
    """The answer a held send would have had, from its ``wait.ended`` event: as an
    ``httpx.Response``, so parsing, errors and retries stay the flow's own."""
    interaction_id = str(_json(accepted)["interactionId"])
    event: dict[str, Any] = yield AwaitOutcome(interaction_id, send.timeout.read, accepted.request)
    return httpx.Response(
        int(event.get("status") or 200), json=event.get("response"), request=accepted.request
    )


def _retry_delay(options: ClientOptions, error: APIStatusError, retry_number: int) -> float | None:
    """How long to wait before repeating a request that failed with ``error``; None: don't."""
    if isinstance(error, RateLimitError):
        if error.retry_after is None:
            return backoff(options, retry_number)
        return error.retry_after if error.retry_after <= options.max_retry_after else None
    if error.status_code == 504 and error.code == "timeout":
        return None  # a pending call is never retried
    if isinstance(error, ProviderError) and error.retry_after is not None:
        return error.retry_after if error.retry_after <= options.max_retry_after else None
    if error.status_code >= 500:
        return backoff(options, retry_number)
    return None


# -- drivers ---------------------------------------------------------------------------


def _build(client: httpx.Client | httpx.AsyncClient, send: Send) -> httpx.Request:
    if send.json is None:
        return client.build_request(
            send.method, send.url, headers=send.headers, params=send.params, timeout=send.timeout
        )
    # Written as in ``POST /batch`` (whatever httpx's own JSON style): the service
    # fingerprints an idempotency key on these bytes, so a retry may go either way.
    return client.build_request(
        send.method,
        send.url,
        headers={**send.headers, "Content-Type": "application/json"},
        params=send.params,
        content=compact_json(send.json),
        timeout=send.timeout,
    )


def compact_json(value: Any) -> bytes:
    """A body as the client writes it, alone or in ``POST /batch``."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


class _Multiplexing:
    """When a driver asks for 202s: past ``multiplex_after`` waits in flight (the
    outcome stream then carries the answers, ``humanwire._outcomes``)."""

    multiplex_after: float = C.MULTIPLEX_WAITS_AFTER
    waits = 0

    def _prefer_async(self, send: Send) -> Send:
        return replace(send, headers={**send.headers, "Prefer": "respond-async"})

    def _no_stream(self, exc: BaseException) -> None:
        # A service without the outcome stream (older, or another implementation):
        # every wait holds its own connection, as before.
        self.multiplex_after = float("inf")


class SyncDriver(_Multiplexing):
    """Runs flows with blocking I/O (from any number of threads)."""

    def __init__(self, client: httpx.Client, sleep: Callable[[float], None] | None = None) -> None:
        self.client = client
        self.sleep = sleep or time.sleep
        self.hub: SyncOutcomeHub | None = None
        self._count = threading.Lock()

    def _multiplexed(self, send: Send) -> Send:
        if self.waits <= self.multiplex_after:
            return send
        try:
            if self.hub is None:
                from ._outcomes import SyncOutcomeHub

                with self._count:
                    if self.hub is None:
                        self.hub = SyncOutcomeHub(self.client, send.base_url, send.headers)
            self.hub.start()
        except (httpx.HTTPError, APIStatusError) as exc:
            self._no_stream(exc)
            return send
        return self._prefer_async(send)

    def run(self, flow: Flow[T]) -> T:
        result: Any = None
        error: BaseException | None = None
        holding = False
        try:
            while True:
                try:
                    action = flow.throw(error) if error is not None else flow.send(result)
                except StopIteration as stop:
                    return stop.value  # type: ignore[no-any-return]
                result, error = None, None
                if isinstance(action, Sleep):
                    self.sleep(action.seconds)
                    continue
                if isinstance(action, AwaitOutcome):
                    assert self.hub is not None
                    try:
                        result = self.hub.wait_for(action.interaction_id, action.timeout)
                    except TimeoutError:
                        error = httpx.ReadTimeout("no outcome in time", request=action.request)
                    continue
                if action.wait is not None:
                    if not holding:
                        holding = True
                        with self._count:
                            self.waits += 1
                    action = self._multiplexed(action)
                try:
                    result = self.client.send(_build(self.client, action))
                except httpx.TransportError as exc:
                    error = exc
        finally:
            if holding:
                with self._count:
                    self.waits -= 1

    def close(self) -> None:
        if self.hub is not None:
            self.hub.close()


class AsyncDriver(_Multiplexing):
    """Runs flows with awaited I/O."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        if sleep is None:
            import asyncio  # here: ``import humanwire`` does not need asyncio loaded

            sleep = asyncio.sleep
        self.client = client
        self.sleep = sleep
        self.hub: AsyncOutcomeHub | None = None
        self.batcher: AsyncBatcher | None = None
        self._sending: asyncio.Semaphore | None = None
        self._short: asyncio.Semaphore | None = None

    async def _multiplexed(self, send: Send) -> Send:
        if self.waits <= self.multiplex_after:
            return send
        try:
            if self.hub is None:
                from ._outcomes import AsyncOutcomeHub

                self.hub = AsyncOutcomeHub(self.client, send.base_url, send.headers)
            await self.hub.start()
        except (httpx.HTTPError, APIStatusError) as exc:
            self._no_stream(exc)
            return send
        return self._prefer_async(send)

    async def run(self, flow: Flow[T]) -> T:
        result: Any = None
        error: BaseException | None = None
        holding = False
        try:
            while True:
                try:
                    action = flow.throw(error) if error is not None else flow.send(result)
                except StopIteration as stop:
                    return stop.value  # type: ignore[no-any-return]
                result, error = None, None
                if isinstance(action, Sleep):
                    await self.sleep(action.seconds)
                    continue
                if isinstance(action, AwaitOutcome):
                    assert self.hub is not None
                    try:
                        result = await self.hub.wait_for(action.interaction_id, action.timeout)
                    except TimeoutError:
                        error = httpx.ReadTimeout("no outcome in time", request=action.request)
                    continue
                gate = None
                if action.wait is not None:
                    if not holding:
                        holding = True
                        self.waits += 1
                    action = await self._multiplexed(action)
                    if "Prefer" in action.headers:
                        gate = self._gate()
                try:
                    if action.wait is None:
                        # A short request (no hold): thousands at once (a gather of
                        # approvals, replies) wait their turn here, so none spends its
                        # pool timeout queued in httpx's pool.
                        async with self._short_gate():
                            result = await self.client.send(_build(self.client, action))
                    elif gate is None:
                        result = await self.client.send(_build(self.client, action))
                    else:
                        result = await self._batched(action)
                        if result is None:
                            # Thousands of sends at once queue here, not in httpx's pool,
                            # whose bookkeeping grows with its queue (each answer scans it).
                            async with gate:
                                result = await self.client.send(_build(self.client, action))
                except httpx.TransportError as exc:
                    error = exc
        finally:
            if holding:
                self.waits -= 1

    async def _batched(self, send: Send) -> httpx.Response | None:
        """The answer of ``send`` sent in a ``POST /batch``; None: send it alone."""
        from ._batch import AsyncBatcher, batch_path

        path = batch_path(send)
        if path is None:
            return None
        if self.batcher is None:
            self.batcher = AsyncBatcher(self.client)
        if not self.batcher.supported:
            return None
        return await self.batcher.send(send, path)

    def _short_gate(self) -> asyncio.Semaphore:
        if self._short is None:
            import asyncio

            self._short = asyncio.Semaphore(C.SHORT_REQUESTS_AT_ONCE)
        return self._short

    def _gate(self) -> asyncio.Semaphore:
        if self._sending is None:
            import asyncio

            self._sending = asyncio.Semaphore(C.MULTIPLEXED_SENDS_AT_ONCE)
        return self._sending

    async def aclose(self) -> None:
        if self.batcher is not None:
            await self.batcher.aclose()
        if self.hub is not None:
            await self.hub.aclose()
