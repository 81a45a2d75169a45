"""A webhook receiver on loopback that records what the service delivers."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, overload

from humanwire.errors import InvalidSignatureError, WebhookVerificationError
from humanwire.types import (
    EVENT_TYPES,
    CallConversationEndedEvent,
    Event,
    FormReceivedEvent,
    MessageReceivedEvent,
    Webhook,
)
from humanwire.webhooks import EVENT_ID_HEADER, SIGNATURE_HEADER, parse_event

if TYPE_CHECKING:
    from humanwire import AsyncHumanWire, HumanWire

__all__ = ["ReceivedDelivery", "WebhookReceiver"]

_EVENT_ID = EVENT_ID_HEADER.lower()
_SIGNATURE = SIGNATURE_HEADER.lower()


def _parse(
    body: bytes, headers: Mapping[str, str], secret: str | None
) -> tuple[Event | None, bool | None]:
    """(event, signature valid) with ``humanwire.webhooks.parse_event``, as a user's
    receiver would do it. The event is still parsed when the signature is bad, so a
    failing test can show what arrived."""
    valid: bool | None = None
    if secret is not None:
        try:
            return parse_event(body, signature=headers.get(_SIGNATURE, ""), secret=secret), True
        except InvalidSignatureError:
            valid = False
        except WebhookVerificationError:
            return None, True
    try:
        return parse_event(body), valid
    except WebhookVerificationError:
        return None, valid


@dataclass(frozen=True)
class ReceivedDelivery:
    """One HTTP request that reached the receiver, and what it answered."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: bytes
    event: Event | None
    """The parsed event; None when the body is not a valid event."""
    signature_valid: bool | None
    """None when no secret is known (nothing to verify against)."""
    status: int
    """The status the receiver answered."""
    received_at: float

    @property
    def event_id(self) -> str | None:
        return self.headers.get(_EVENT_ID)

    @property
    def accepted(self) -> bool:
        return 200 <= self.status < 300

    def json(self) -> Any:
        return json.loads(self.body)


class WebhookReceiver:
    """An HTTP server on ``127.0.0.1`` that records every delivery.

    ``deliveries`` holds every request, failed attempts included; ``events`` the events
    the receiver accepted (answered 2xx), one per ``Humanwire-Event-Id`` — what a real
    receiver would act on. When the secret is known (``register`` remembers it, or pass
    ``secret=``) each signature is checked and a bad one is answered 401 and not counted.
    """

    def __init__(self, *, secret: str | None = None, path: str = "/webhooks") -> None:
        self.secret = secret
        self.path = path if path.startswith("/") else f"/{path}"
        self._deliveries: list[ReceivedDelivery] = []
        self._cond = threading.Condition()
        self._status = 200
        self._fail_next = 0
        self._fail_status = 500
        self._delay = 0.0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> WebhookReceiver:
        if self._server is not None:
            return self
        server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="humanwire-webhook-receiver",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(5)

    def __enter__(self) -> WebhookReceiver:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the webhook receiver is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.path}"

    # -- what arrived -----------------------------------------------------------------------
    @property
    def deliveries(self) -> list[ReceivedDelivery]:
        with self._cond:
            return list(self._deliveries)

    @property
    def events(self) -> list[Event]:
        with self._cond:
            return self._accepted_events()

    def _accepted_events(self) -> list[Event]:
        seen: set[str] = set()
        events: list[Event] = []
        for delivery in self._deliveries:
            if not delivery.accepted or delivery.event is None:
                continue
            if delivery.event_id is not None:
                if delivery.event_id in seen:
                    continue
                seen.add(delivery.event_id)
            events.append(delivery.event)
        return events

    @overload
    def wait_for(
        self,
        event_type: Literal["message.received"],
        *,
        count: int = 1,
        timeout: float = 10.0,
    ) -> list[MessageReceivedEvent]: ...
    @overload
    def wait_for(
        self, event_type: Literal["form.received"], *, count: int = 1, timeout: float = 10.0
    ) -> list[FormReceivedEvent]: ...
    @overload
    def wait_for(
        self,
        event_type: Literal["call.conversation.ended"],
        *,
        count: int = 1,
        timeout: float = 10.0,
    ) -> list[CallConversationEndedEvent]: ...
    @overload
    def wait_for(
        self, event_type: str | None = None, *, count: int = 1, timeout: float = 10.0
    ) -> list[Event]: ...
    def wait_for(
        self, event_type: str | None = None, *, count: int = 1, timeout: float = 10.0
    ) -> list[Any]:
        """Blocks until at least ``count`` accepted events (of ``event_type``, or of any
        type) arrived and returns all of them (typed by ``event_type``); raises
        AssertionError after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                events = [
                    event
                    for event in self._accepted_events()
                    if event_type is None or event.event_type == event_type
                ]
                if len(events) >= count:
                    return events
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(self._timeout_message(event_type, count, timeout))
                self._cond.wait(remaining)

    def _timeout_message(self, event_type: str | None, count: int, timeout: float) -> str:
        wanted = f"{count} {event_type or 'webhook'} event(s)"
        lines = [f"webhook receiver: expected {wanted} within {timeout:g}s at {self.url}"]
        if not self._deliveries:
            lines.append("no delivery arrived at all")
        for delivery in self._deliveries:
            kind = delivery.event.event_type if delivery.event is not None else "unparsed body"
            note = ""
            if delivery.signature_valid is False:
                note = " (bad signature)"
            lines.append(f"  {delivery.method} {delivery.path} {kind} -> {delivery.status}{note}")
        return "\n".join(lines)

    @overload
    async def async_wait_for(
        self,
        event_type: Literal["message.received"],
        *,
        count: int = 1,
        timeout: float = 10.0,
    ) -> list[MessageReceivedEvent]: ...
    @overload
    async def async_wait_for(
        self, event_type: Literal["form.received"], *, count: int = 1, timeout: float = 10.0
    ) -> list[FormReceivedEvent]: ...
    @overload
    async def async_wait_for(
        self,
        event_type: Literal["call.conversation.ended"],
        *,
        count: int = 1,
        timeout: float = 10.0,
    ) -> list[CallConversationEndedEvent]: ...
    @overload
    async def async_wait_for(
        self, event_type: str | None = None, *, count: int = 1, timeout: float = 10.0
    ) -> list[Event]: ...
    async def async_wait_for(
        self, event_type: str | None = None, *, count: int = 1, timeout: float = 10.0
    ) -> list[Any]:
        """``wait_for`` without blocking the event loop of an async test."""
        import asyncio

        return await asyncio.to_thread(self.wait_for, event_type, count=count, timeout=timeout)

    def clear(self) -> None:
        with self._cond:
            self._deliveries.clear()

    # -- behaviour ----------------------------------------------------------------------
    def set_status(self, code: int) -> None:
        """Answer every following delivery with ``code`` (200 again to recover)."""
        with self._cond:
            self._status = code

    def set_delay(self, seconds: float) -> None:
        """Hold every following delivery ``seconds`` before answering (a slow receiver;
        the delivery is recorded when it arrives). 0 to answer at once again."""
        with self._cond:
            self._delay = max(0.0, seconds)

    def fail_next(self, n: int = 1, *, status: int = 500) -> None:
        """Answer the next ``n`` deliveries with ``status`` (the service retries them)."""
        with self._cond:
            self._fail_next = n
            self._fail_status = status

    # -- registration ------------------------------------------------------------------------
    def register(
        self,
        client: HumanWire,
        event_types: Iterable[str] = EVENT_TYPES,
        headers: Mapping[str, str] | None = None,
    ) -> Webhook:
        """Registers this receiver on the client's account and remembers its secret."""
        webhook = client.webhooks.create(
            url=self.url,
            event_types=list(event_types),  # type: ignore[arg-type]
            headers=dict(headers) if headers is not None else None,
        )
        self._remember(webhook)
        return webhook

    async def aregister(
        self,
        client: AsyncHumanWire,
        event_types: Iterable[str] = EVENT_TYPES,
        headers: Mapping[str, str] | None = None,
    ) -> Webhook:
        """``register`` for an ``AsyncHumanWire``."""
        webhook = await client.webhooks.create(
            url=self.url,
            event_types=list(event_types),  # type: ignore[arg-type]
            headers=dict(headers) if headers is not None else None,
        )
        self._remember(webhook)
        return webhook

    def _remember(self, webhook: Webhook) -> None:
        if webhook.secret:
            self.secret = webhook.secret

    # -- called by the handler ------------------------------------------------------------
    def _record(self, method: str, path: str, headers: dict[str, str], body: bytes) -> int:
        with self._cond:
            secret = self.secret
        event, valid = _parse(body, headers, secret)
        with self._cond:
            if method != "POST":
                status = 405
            elif valid is False:
                status = 401
            elif event is None:
                status = 400
            elif self._fail_next > 0:
                self._fail_next -= 1
                status = self._fail_status
            else:
                status = self._status
            self._deliveries.append(
                ReceivedDelivery(
                    method=method,
                    path=path,
                    headers=headers,
                    body=body,
                    event=event,
                    signature_valid=valid,
                    status=status,
                    received_at=time.time(),
                )
            )
            self._cond.notify_all()
        return status


def _make_handler(receiver: WebhookReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length > 0 else b""
            headers = {name.lower(): value for name, value in self.headers.items()}
            status = receiver._record(self.command, self.path, headers, body)
            with receiver._cond:
                delay = receiver._delay
            if delay:
                time.sleep(delay)
            reply = json.dumps({"received": 200 <= status < 300}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        do_POST = do_GET = do_PUT = do_DELETE = _handle

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler
