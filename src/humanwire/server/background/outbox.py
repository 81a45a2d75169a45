"""The webhook outbox: events are stored with one row per webhook that wants them, and a
worker task on the engine's loop POSTs them, retrying with exponential back-off.

Persistent: a row stays ``pending`` until delivered or out of attempts, so a restart
re-reads it and loses nothing. Rows are claimed with a lease (``Store.claim_outbox``), so
several replicas on one database deliver each row once, and the rows of a replica that
dies mid-delivery are retried by another when their lease ends. Delivery is at least
once: a process killed after the receiver answered but before it recorded the answer
leaves the row to be sent again; receivers de-duplicate on ``Humanwire-Event-Id``.
Order is not guaranteed. The worker sleeps until the next row is due or a new event
wakes it; alone on its store it never polls (with replicas, each heartbeat also wakes
it for rows other processes added or left behind).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import json
import logging
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import httpx

from humanwire.types.webhooks import webhook_header_problem
from humanwire.webhooks import sign

from ..config import ServiceConfig
from ..errors import InvalidRequest
from ..literals import EVENT_TYPE
from ..store.protocol import Store
from ..store.records import EventRecord, OutboxRecord
from ..telemetry import Metrics, log_event

__all__ = [
    "EVENT_ID_HEADER",
    "RESOLVE_TIMEOUT",
    "SIGNATURE_HEADER",
    "HostLookupTimeout",
    "Outbox",
    "Resolver",
    "check_webhook_url",
    "check_webhook_url_async",
    "event_body",
    "signature_header",
]

logger = logging.getLogger("humanwire.outbox")

EVENT_ID_HEADER = "Humanwire-Event-Id"
SIGNATURE_HEADER = "Humanwire-Signature"

Resolver = Callable[[str, int], list[str]]
"""Host and port → the IP addresses it resolves to (blocking; run off the event loop)."""

RESOLVE_TIMEOUT = 5.0
"""Seconds a webhook host lookup may take before the URL counts as not resolving."""


class HostLookupTimeout(InvalidRequest):
    """The webhook host did not resolve in time (a slow or unreachable DNS server)."""


def resolve_host(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


async def _resolve_on_loop(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def signature_header(secret: str, body: bytes, timestamp: int) -> str:
    """``t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`` (docs/design.md), made
    by the same code the receiving side verifies with."""
    return sign(secret, body, timestamp)


def event_body(event: dict[str, Any]) -> bytes:
    """The exact bytes POSTed (and signed): compact JSON of ``{"eventType","payload"}``."""
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode()


def _refused(address: ipaddress.IPv4Address | ipaddress.IPv6Address, local_mode: bool) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    # Never: cloud metadata (link-local), multicast, the unspecified address, reserved space.
    if (
        address.is_link_local
        or address.is_multicast
        or address.is_unspecified
        or address.is_reserved
    ):
        return True
    if local_mode:
        # A developer's receiver on loopback or the LAN (a container) is the point of it.
        return False
    return address.is_loopback or address.is_private or not address.is_global


Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _ip_literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _parse_addresses(resolved: list[str]) -> list[Address]:
    try:
        return [ipaddress.ip_address(a.split("%")[0]) for a in resolved]
    except ValueError:
        return []


def _target(url: str) -> tuple[str, int]:
    """The host and port of a webhook URL; ``InvalidRequest`` when it is no http(s) URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidRequest("url must be an http or https URL", field="url")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise InvalidRequest("url has an invalid port", field="url") from None
    return parts.hostname, port


def _check_addresses(host: str, addresses: list[Address], local_mode: bool) -> None:
    if not addresses:
        raise InvalidRequest(f"url host {host!r} does not resolve", field="url")
    for address in addresses:
        if _refused(address, local_mode):
            raise InvalidRequest(
                "url must be a public address: private, loopback, link-local and reserved "
                "targets are refused",
                field="url",
            )


def check_webhook_url(url: str, *, local_mode: bool, resolve: Resolver = resolve_host) -> None:
    """The SSRF guard. Outside local mode a target whose host is, or resolves to, a
    private, loopback, link-local or reserved address is refused (400, field ``url``);
    in local mode loopback and private targets are allowed. Blocking: on the event loop
    use ``check_webhook_url_async``."""
    host, port = _target(url)
    literal = _ip_literal(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            addresses = _parse_addresses(resolve(host, port))
        except (OSError, UnicodeError, ValueError):
            addresses = []
    _check_addresses(host, addresses, local_mode)


async def check_webhook_url_async(
    url: str,
    *,
    local_mode: bool,
    resolve: Resolver | None = None,
    timeout: float = RESOLVE_TIMEOUT,
) -> None:
    """``check_webhook_url`` without blocking the event loop: the host is looked up with
    ``loop.getaddrinfo`` (or the ``resolve`` hook, run in a worker thread), at most
    ``timeout`` seconds; past it ``HostLookupTimeout`` (a 400 on ``url``). The same
    rules; an IP literal needs no lookup."""
    host, port = _target(url)
    literal = _ip_literal(host)
    if literal is not None:
        _check_addresses(host, [literal], local_mode)
        return
    lookup: Awaitable[list[str]]
    if resolve is None:
        lookup = _resolve_on_loop(host, port)
    else:
        lookup = asyncio.get_running_loop().run_in_executor(None, resolve, host, port)
    try:
        resolved = await asyncio.wait_for(lookup, timeout)
    except asyncio.TimeoutError:
        # The lookup thread cannot be interrupted; it finishes on its own, unheard.
        raise HostLookupTimeout(
            f"url host {host!r} did not resolve within {timeout:g} s", field="url"
        ) from None
    except (OSError, UnicodeError, ValueError):
        resolved = []
    _check_addresses(host, _parse_addresses(resolved), local_mode)


class Outbox:
    """Stores events and delivers them to the account's webhooks."""

    def __init__(
        self,
        store: Store,
        config: ServiceConfig,
        *,
        on_change: Callable[[str, str], None] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        resolve: Resolver | None = None,
        resolve_timeout: float = RESOLVE_TIMEOUT,
        metrics: Metrics | None = None,
    ) -> None:
        """``resolve`` replaces the host lookup of the SSRF check (None: the loop's
        ``getaddrinfo``)."""
        self._metrics = metrics or Metrics()
        self._store = store
        self._config = config
        self._on_change = on_change
        self._transport = transport
        self._resolve = resolve
        self._resolve_timeout = resolve_timeout
        self._client: httpx.AsyncClient | None = None
        self._worker: asyncio.Task[None] | None = None
        self._closing = False
        self._wake: asyncio.Event | None = None
        self._in_flight: dict[str, asyncio.Task[None]] = {}

    # -- producing ------------------------------------------------------------------
    async def emit(
        self, account_id: str, event: dict[str, Any], interaction_id: str | None
    ) -> EventRecord:
        """Stores ``event`` and one outbox row per webhook of the account that subscribed
        to its type (none: the event is still kept for the inbox)."""
        now = time.time()
        record = EventRecord(
            id=str(uuid.uuid4()),
            account_id=account_id,
            event_type=EVENT_TYPE(event["eventType"]),
            interaction_id=interaction_id,
            body=event,
            created_at=now,
        )
        rows = [
            OutboxRecord(
                id=str(uuid.uuid4()),
                event_id=record.id,
                webhook_id=webhook.id,
                account_id=account_id,
                status="pending",
                attempts=0,
                next_attempt_at=now,
                last_error=None,
                created_at=now,
                updated_at=now,
            )
            for webhook in await self._store.webhooks_of(account_id)
            if record.event_type in webhook.event_types
        ]
        await self._store.insert_event(record, rows)
        if rows and self._wake is not None:
            self._wake.set()
        return record

    # -- the worker -----------------------------------------------------------------
    async def start(self) -> None:
        if self._worker is not None:
            return
        self._closing = False
        self._wake = asyncio.Event()
        self._client = httpx.AsyncClient(
            transport=self._transport,
            timeout=self._config.webhook_timeout,
            follow_redirects=False,
            headers={"User-Agent": "humanwire-webhooks"},
        )
        self._worker = asyncio.get_running_loop().create_task(self._run(), name="humanwire-outbox")

    async def close(self) -> None:
        worker, self._worker = self._worker, None
        # The flag (not only the cancellation) ends the worker: on Python 3.11,
        # ``wait_for`` swallows a cancellation that lands as its inner wait completes
        # (a delivery finishing wakes the worker at that moment), and the worker would
        # then wait for a wake that never comes.
        self._closing = True
        self.wake()
        tasks = [*self._in_flight.values()]
        if worker is not None:
            tasks.append(worker)
        for task in tasks:
            task.cancel()
        if tasks:
            _done, stuck = await asyncio.wait(tasks, timeout=5.0)
            for task in stuck:
                logger.warning("webhook outbox task %s did not stop", task.get_name())
        self._in_flight.clear()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def wake(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def _run(self) -> None:
        assert self._wake is not None
        limit = max(1, self._config.webhook_concurrency)
        while not self._closing:
            self._wake.clear()
            now = time.time()
            free = limit - len(self._in_flight)
            if free > 0:
                # The lease keeps a row out of every worker's next claim while it is sent
                # (several replicas share the rows); it runs out if this process dies.
                lease = now + self._config.webhook_timeout + 5
                for row in await self._store.claim_outbox(now, free, lease):
                    if row.id in self._in_flight:
                        continue
                    task = asyncio.get_running_loop().create_task(self._deliver(row))
                    self._in_flight[row.id] = task
                    task.add_done_callback(functools.partial(self._finished, row.id))
            timeout: float | None = None
            if len(self._in_flight) < limit:
                due = await self._store.next_outbox_due()
                if due is not None:
                    timeout = max(0.0, due - time.time())
            if timeout == 0.0:
                await asyncio.sleep(0)  # let deliveries progress before the next batch
                continue
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    def _finished(self, row_id: str, _task: asyncio.Task[None]) -> None:
        self._in_flight.pop(row_id, None)
        if self._wake is not None:
            self._wake.set()

    async def _deliver(self, row: OutboxRecord) -> None:
        started = time.perf_counter()
        result, status_code, error = "retry", None, None
        event: EventRecord | None = None
        try:
            event = await self._store.get_event(row.event_id)
            result, status_code, error = await self._attempt(row, event)
        except asyncio.CancelledError:
            raise
        except Exception:  # a bug must not kill the worker; the row is retried
            logger.exception("webhook delivery %s failed unexpectedly", row.id)
            error = "internal error while delivering"
            result = await self._record_failure(row, error, None)
        seconds = time.perf_counter() - started
        self._metrics.webhook_attempt(result, seconds)
        log_event(
            logger,
            "webhook.attempt",
            interaction_id=event.interaction_id if event is not None else None,
            request_id=False,
            account_id=row.account_id,
            webhook_id=row.webhook_id,
            event_id=row.event_id,
            attempt=row.attempts + 1,
            result=result,
            status_code=status_code,
            error=error,
            duration_ms=round(seconds * 1000, 1),
            level=logging.INFO if result in ("delivered", "cancelled") else logging.WARNING,
        )

    async def _attempt(
        self, row: OutboxRecord, event: EventRecord | None
    ) -> tuple[str, int | None, str | None]:
        """One delivery attempt: its result (``delivered``, ``retry``, ``failed``,
        ``cancelled``), the receiver's status code and the error, if any."""
        assert self._client is not None
        webhook = await self._store.get_webhook(row.webhook_id)
        now = time.time()
        if event is None or webhook is None:
            await self._store.update_outbox(
                row.id,
                status="cancelled",
                attempts=row.attempts,
                next_attempt_at=now,
                last_error="webhook deleted",
                last_status_code=None,
                delivered_at=None,
                updated_at=now,
            )
            return "cancelled", None, "webhook deleted"
        if not self._config.local_mode:
            # Checked again at delivery: a name may have been re-pointed since registration.
            try:
                await check_webhook_url_async(
                    webhook.url,
                    local_mode=False,
                    resolve=self._resolve,
                    timeout=self._resolve_timeout,
                )
            except HostLookupTimeout as exc:
                # DNS may answer next time
                return await self._record_failure(row, exc.message, None), None, exc.message
            except InvalidRequest as exc:
                return (
                    await self._record_failure(row, exc.message, None, final=True),
                    None,
                    exc.message,
                )
        body = event_body(event.body)
        headers = _sendable(webhook.id, webhook.headers)
        headers["Content-Type"] = "application/json"
        headers[EVENT_ID_HEADER] = event.id
        headers[SIGNATURE_HEADER] = signature_header(webhook.secret, body, int(time.time()))
        try:
            response = await self._client.post(webhook.url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            # The type only in the returned (logged) error: a message may quote the URL.
            failed = await self._record_failure(
                row, f"{type(exc).__name__}: {exc}".rstrip(": "), None
            )
            return failed, None, type(exc).__name__
        if 200 <= response.status_code < 300:
            done = time.time()
            await self._store.update_outbox(
                row.id,
                status="delivered",
                attempts=row.attempts + 1,
                next_attempt_at=done,
                last_error=None,
                last_status_code=response.status_code,
                delivered_at=done,
                updated_at=done,
            )
            self._changed(row)
            return "delivered", response.status_code, None
        error = f"HTTP {response.status_code}"
        return (
            await self._record_failure(row, error, response.status_code),
            response.status_code,
            error,
        )

    async def _record_failure(
        self, row: OutboxRecord, error: str, status_code: int | None, *, final: bool = False
    ) -> str:
        """Records a failed attempt: ``retry`` when another is due, else ``failed``."""
        attempts = row.attempts + 1
        now = time.time()
        exhausted = final or attempts >= self._config.webhook_max_attempts
        delay = self._config.webhook_retry_base * 2 ** (attempts - 1)
        await self._store.update_outbox(
            row.id,
            status="failed" if exhausted else "pending",
            attempts=attempts,
            next_attempt_at=now if exhausted else now + delay,
            last_error=error[:500],
            last_status_code=status_code,
            delivered_at=None,
            updated_at=now,
        )
        self._changed(row)
        return "failed" if exhausted else "retry"

    def _changed(self, row: OutboxRecord) -> None:
        if self._on_change is not None:
            self._on_change(row.account_id, row.id)


def _sendable(webhook_id: str, registered: dict[str, str]) -> httpx.Headers:
    """The registered headers a delivery can carry. Registration refuses the others; one
    stored before it did is left out (with a warning) rather than failing every delivery."""
    headers = httpx.Headers()
    for name, value in registered.items():
        problem = webhook_header_problem(name, value)
        if problem is not None:
            logger.warning("webhook %s: header %r left out: %s", webhook_id, name, problem)
            continue
        headers[name] = value
    return headers
