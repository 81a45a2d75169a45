"""The engine: accounts, interactions and their windows, reply matching, forms, calls,
numbers, webhooks and channel cards. It knows nothing of HTTP: the routes in ``app.py``
validate bodies into wire models, call one method here, and serialize what comes back.
Errors are raised as ``humanwire.server.errors.ServiceError`` subclasses.

Waiting is event-driven: a held request awaits an ``asyncio.Future`` that the reply,
submission or call end resolves; the ``waitTime`` deadline is one ``loop.call_at`` timer
per interaction that resolves it with "no response" and then re-arms itself for the end
of the follow-up window. No polling loops and no task per wait, so ten thousand held
requests cost ten thousand futures and timer handles. Timers are re-armed from the store
on ``start()``, so open windows survive a restart.

Decisions this module makes where the specification is silent:

- A reply or submission handed to a held request is not sent to webhooks (the agent has
  it already); one that arrives when no request holds the interaction (after
  ``waitTime``, or with the request gone) becomes a webhook event carrying the
  ``interactionId``. Either way the interaction's status ``result`` shows it.
- Calls always emit ``call.conversation.ended`` when they end, whatever the outcome;
  a ``/phone/call`` that runs past the limit is ended (outcome ``timeout``) without one.
- An idempotent send stores key → interaction with the interaction, before delivering.
  A retry whose first run never finished (the service restarted while it was held)
  re-attaches to that interaction and delivers nothing; a reply that came while no
  request held it went to the webhooks and is also what the retry returns.
- ``from`` on an sms must be the account's reserved number (or the shared number);
  any other number is ``400 invalid_request`` with field ``from``. whatsapp always goes
  out from the shared whatsapp account, wrapped in the specification's templates.
- A stop (``drain()``, then ``close()``) answers every held request 503 ``unavailable``
  with ``Retry-After`` and ends nothing: the windows stay open in the store, re-armed at
  the next start, so the client's retry with the same key re-attaches.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import hashlib
import os
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

import httpx
from pydantic_core import PydanticCustomError

from humanwire.types import (
    DEFAULT_NO_RESPONSE_TEMPLATE,
    DEFAULT_RESPONSE_TEMPLATE,
    AvailableNumber,
    CallConversationEndedEvent,
    CallConversationEndedPayload,
    CallRequest,
    CallResponse,
    ChannelCard,
    ChannelCardCreateRequest,
    ChannelMessageRequest,
    Form,
    FormReceivedEvent,
    FormReceivedPayload,
    FormResponse,
    InteractionStatus,
    MessageReceivedEvent,
    MessageReceivedPayload,
    MessageResponse,
    PhoneCallRequest,
    PhoneSMSRequest,
    ReservedNumber,
    SandboxCallOutcomeRequest,
    SandboxDelivery,
    SandboxInboundCallRequest,
    SandboxReplyRequest,
    SlackFormRequest,
    SlackMessageRequest,
    SMSFormRequest,
    SMSMessageRequest,
    Webhook,
    WebhookCreateRequest,
    WhatsAppMessageRequest,
    WhatsAppOwnNumberFormRequest,
    WhatsAppSharedFormRequest,
    check_e164,
    event_adapter,
)

from . import templates
from .config import (
    SHARED_SLACK_WORKSPACE,
    SHARED_SMS_NUMBER,
    SHARED_WHATSAPP_NUMBER,
    ServiceConfig,
)
from .delivery import Outbound, Provider, SandboxProvider
from .errors import (
    AccountSuspended,
    CallTimeout,
    Conflict,
    FormInvalid,
    Gone,
    InvalidRequest,
    InvalidToNumber,
    NotFound,
    RateLimited,
    ServiceUnavailable,
)
from .limits import RateLimiter, SpamGuard
from .numbers import pool, pool_entry
from .outbox import RESOLVE_TIMEOUT, Outbox, Resolver, check_webhook_url_async
from .store import SQLiteStore, Store
from .store.base import (
    AccountRecord,
    ChannelRecord,
    DeliveryRecord,
    Duplicate,
    IdempotencyLinkRecord,
    IdempotencyRecord,
    InboundRecord,
    InteractionRecord,
    NumberRecord,
    WebhookRecord,
)

__all__ = [
    "Account",
    "Engine",
    "FormRequest",
    "FormState",
    "FormView",
    "InboxChange",
    "MessageRequest",
    "ReplyLinkView",
]

MessageRequest = SMSMessageRequest | WhatsAppMessageRequest | SlackMessageRequest
FormRequest = (
    SMSFormRequest | SlackFormRequest | WhatsAppSharedFormRequest | WhatsAppOwnNumberFormRequest
)
FormState = Literal["open", "submitted", "expired"]
ReplyLinkState = Literal["open", "answered", "expired"]
Channel = Literal["sms", "whatsapp", "slack", "call"]

SUSPENDED_MESSAGE = "this account was shut down automatically for sending bulk or promotional texts"
CALL_NOT_ANSWERED = "human did not respond"
_SUBSCRIBER_QUEUE = 256
_FORM_KEYS = frozenset(info.alias or name for name, info in Form.model_fields.items())


@dataclass(frozen=True)
class Account:
    id: str
    name: str
    suspended: bool = False


@dataclass(frozen=True)
class FormView:
    """What the form page needs to render a form reached by its token."""

    token: str
    interaction_id: str
    account_id: str
    form: Form
    state: FormState
    wait_deadline: float | None
    """Unix time the ``waitTime`` window closes (countdown target); None without one."""
    follow_up_deadline: float
    """Unix time after which the form is expired."""
    values: dict[str, str] | None
    """The submitted values, once submitted."""


@dataclass(frozen=True)
class ReplyLinkView:
    """What the reply page (``/r/<token>``) of a channel card with ``replyLink`` shows."""

    token: str
    interaction_id: str
    account_id: str
    channel: str
    to: str
    """The recipient (the person replying)."""
    from_: str
    text: str
    """The message as delivered (without the link)."""
    state: ReplyLinkState
    wait_deadline: float | None
    close_deadline: float | None
    """Unix time after which the link no longer takes a reply."""
    reply: str | None


@dataclass(frozen=True)
class InboxChange:
    """A notice for live inbox pages: something of this account changed."""

    account_id: str
    kind: Literal["delivery", "interaction", "webhook", "number", "channel", "inbound"]
    id: str


@dataclass
class _IdempotentRun:
    """The ``Idempotency-Key`` a send runs under (a context variable of its task): the
    interaction it creates is linked to the key, or, when ``resume`` names the one a
    first run created, re-attached to instead of sending again."""

    account_id: str
    key: str
    fingerprint: str
    resume: InteractionRecord | None
    used: bool = False


_IDEMPOTENT_RUN: contextvars.ContextVar[_IdempotentRun | None] = contextvars.ContextVar(
    "humanwire_idempotent_run", default=None
)

REQUESTER_GONE: contextvars.ContextVar[asyncio.Future[None] | None] = contextvars.ContextVar(
    "humanwire_requester_gone", default=None
)
"""Set by the HTTP layer around a send: a future settled when the client's connection
closes. A held request whose requester is gone lets go of its interaction, so a reply
inside ``waitTime`` goes to the webhooks instead of to nobody. Unset: held to the end."""


class _Requesters:
    """The requests waiting for one idempotent run (the first and retries that joined
    it): ``gone`` settles once every one of them has gone; never while one of them
    cannot tell (no ``REQUESTER_GONE``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.gone: asyncio.Future[None] = loop.create_future()
        self._waiting = 0
        self._untracked = False

    @property
    def untracked(self) -> bool:
        return self._untracked

    def attach(self, left: asyncio.Future[None] | None) -> None:
        if left is None:
            self._untracked = True
            return
        self._waiting += 1
        left.add_done_callback(self._left)

    def _left(self, _future: asyncio.Future[None]) -> None:
        self._waiting -= 1
        if self._waiting <= 0 and not self._untracked:
            _settle(self.gone, None)


def _hash_key(api_key: str) -> str:
    return hashlib.sha256(api_key.encode()).hexdigest()


def _timestamp(unix: float) -> datetime:
    return datetime.fromtimestamp(unix, tz=timezone.utc)


def _iso(unix: float | None) -> str | None:
    if unix is None:
        return None
    return _timestamp(unix).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _event_dict(event: Any) -> dict[str, Any]:
    data: dict[str, Any] = event.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data


def _settle(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _mask(value: str) -> str:
    return f"{value[:4]}…" if len(value) > 4 else "…"


class Engine:
    def __init__(
        self,
        config: ServiceConfig,
        *,
        provider: Provider | None = None,
        webhook_transport: httpx.AsyncBaseTransport | None = None,
        resolve: Resolver | None = None,
        resolve_timeout: float = RESOLVE_TIMEOUT,
    ) -> None:
        """Opens the store at ``config.db_path`` and the built-in sandbox provider.

        ``provider`` replaces the sandbox provider; ``webhook_transport`` and ``resolve``
        (a blocking host lookup, run in a worker thread; default: the loop's
        ``getaddrinfo``) let tests drive webhook deliveries and the SSRF guard without a
        network. A lookup longer than ``resolve_timeout`` seconds refuses the URL."""
        self.config = config
        self.store: Store = SQLiteStore(config.db_path)
        self.provider: Provider = provider or SandboxProvider(self.store, self._delivered)
        self._resolve = resolve
        self._resolve_timeout = resolve_timeout
        self.outbox = Outbox(
            self.store,
            config,
            on_change=lambda account_id, row_id: self._notify(account_id, "webhook", row_id),
            transport=webhook_transport,
            resolve=resolve,
            resolve_timeout=resolve_timeout,
        )
        self._rate = RateLimiter(config.rate_limit_requests, config.rate_limit_window)
        self._spam = SpamGuard(config.spam_recipients, config.spam_window)
        self._suspended: set[str] = set()
        # Per held interaction: the future its request awaits, and its one window timer.
        self._waiters: dict[str, asyncio.Future[InteractionRecord | None]] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        # Status long-polls and delivery followers, woken by the change they wait for.
        self._watchers: dict[str, list[asyncio.Future[None]]] = {}
        self._delivery_waiters: dict[str, list[asyncio.Future[None]]] = {}
        self._subscribers: dict[str, set[asyncio.Queue[InboxChange | None]]] = {}
        self._idempotent_runs: dict[
            tuple[str, str], tuple[str, asyncio.Task[tuple[int, bytes]], _Requesters]
        ] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._draining = False
        self._closed = False

    async def start(self) -> None:
        """Re-arm open windows from the store, start the webhook outbox worker. Must be
        called from the event loop that serves requests."""
        self._loop = asyncio.get_running_loop()
        now = time.time()
        self.store.delete_idempotency_before(now - self.config.idempotency_ttl)
        for record in self.store.open_interactions():
            if record.kind == "call":
                continue  # a call has no window: it ends when the callee hangs up
            close = record.close_deadline
            if close is None or close <= now:
                # The window passed while the service was down.
                self._end(record)
            elif record.wait_deadline is not None and record.wait_deadline > now:
                self._arm(record.id, record.wait_deadline, "wait")
            else:
                self._arm(record.id, close, "close")
        await self.outbox.start()

    @property
    def draining(self) -> bool:
        """True once ``drain()`` ran: the service is stopping."""
        return self._draining

    def drain(self) -> None:
        """The first step of a graceful stop (the runner calls it as soon as the server
        stops accepting connections, before it waits for open requests). Every held
        request (sends waiting for a reply, submission or call end, status and sandbox
        long polls) is answered ``ServiceUnavailable`` (503 ``unavailable`` with
        ``Retry-After``) instead of being cut off; from now on sends are refused before
        anything is created or delivered. Nothing is ended: windows stay open in the store
        (their timers run until ``close``; the next start re-arms them), so the client's
        retry with the same ``Idempotency-Key`` re-attaches after the restart. A response
        that reached a held request before this still answers it. Live inbox streams
        end (the browser reconnects). Idempotent; must run on the engine's loop."""
        self._draining = True
        # Each woken coroutine sees ``draining`` and raises (see ``_hold`` and the polls).
        for waiter in self._waiters.values():
            _settle(waiter, None)
        for futures in [*self._watchers.values(), *self._delivery_waiters.values()]:
            for future in futures:
                _settle(future, None)
        for queues in self._subscribers.values():
            for queue in queues:
                if queue.full():
                    with contextlib.suppress(asyncio.QueueEmpty):
                        queue.get_nowait()
                queue.put_nowait(None)  # ends the stream

    def _unavailable(self) -> ServiceUnavailable:
        return ServiceUnavailable(retry_after=self.config.unavailable_retry_after)

    async def close(self) -> None:
        if self._closed:
            return
        # A host that did not drain first: what is still held is answered, not cancelled.
        self.drain()
        held = [task for _fingerprint, task, _requesters in self._idempotent_runs.values()]
        if held:  # the woken requests answer 503 before what is left is cancelled
            await asyncio.wait(held, timeout=1.0)
        else:
            await asyncio.sleep(0)
        self._closed = True
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        self._waiters.clear()
        runs = [task for _fingerprint, task, _requesters in self._idempotent_runs.values()]
        for task in runs:
            task.cancel()
        for task in runs:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.outbox.close()
        self.store.close()

    @property
    def held_waits(self) -> int:
        """Requests held open right now (waiting for a reply, a submission, a call end)."""
        return len(self._waiters)

    @property
    def open_windows(self) -> int:
        """Interactions with an armed window timer."""
        return len(self._timers)

    # -- accounts -------------------------------------------------------------
    def create_account(
        self, name: str | None = None, api_key: str | None = None
    ) -> tuple[Account, str]:
        """Creates an account and returns it with its API key (the given one, or a new
        ``hw_`` + 32 url-safe characters). Only a hash of the key is stored."""
        key = api_key if api_key is not None else "hw_" + secrets.token_urlsafe(24)
        if not key.strip():
            raise InvalidRequest("the API key must not be empty", field="apiKey")
        record = AccountRecord(
            id=str(uuid.uuid4()),
            name=name or f"account {self.store.count_accounts() + 1}",
            key_hash=_hash_key(key),
            suspended=False,
            created_at=time.time(),
        )
        try:
            self.store.insert_account(record)
        except Duplicate:
            raise Conflict("an account with this API key exists already") from None
        return Account(id=record.id, name=record.name), key

    def authenticate(self, api_key: str) -> Account | None:
        record = self.store.account_by_key_hash(_hash_key(api_key))
        if record is None:
            return None
        return Account(id=record.id, name=record.name, suspended=record.suspended)

    def check_limits(self, account: Account) -> None:
        """Raises ``AccountSuspended`` or ``RateLimited`` (with ``retry_after``). The
        HTTP layer calls it once per authenticated request."""
        self._require_active(account)
        retry_after = self._rate.hit(account.id, time.monotonic())
        if retry_after is not None:
            raise RateLimited(
                f"rate limit of {self.config.rate_limit_requests} requests per "
                f"{self.config.rate_limit_window:g} s exceeded",
                retry_after=retry_after,
            )

    def _require_active(self, account: Account) -> None:
        if account.suspended or account.id in self._suspended:
            raise AccountSuspended(SUSPENDED_MESSAGE)

    def _check_send(self, account: Account, text: str, to: str) -> None:
        """The spam guard, run on every send before anything goes out."""
        self._require_active(account)
        if self._spam.would_be_spam(account.id, text, to, time.monotonic()):
            self.store.set_account_suspended(account.id, True)
            self._suspended.add(account.id)
            self._spam.forget(account.id)
            raise AccountSuspended(SUSPENDED_MESSAGE)

    async def idempotent(
        self,
        account: Account,
        key: str,
        fingerprint: str,
        run: Callable[[], Awaitable[tuple[int, bytes]]],
    ) -> tuple[int, bytes]:
        """Runs ``run`` (which produces the HTTP status and body) at most once per
        ``(account, key)`` within ``config.idempotency_ttl``: a later call with the same
        key and ``fingerprint`` (method, path and a hash of the body) returns the stored
        result; one arriving while the first is still held waits for it; a different
        fingerprint raises ``Conflict``. Results are stored, so a restart keeps them.

        A send run under a key stores a link key → interaction with the interaction it
        creates, before anything is delivered. A retry whose first run never finished
        (no stored result and none running here: the service restarted while it was
        held) runs ``run`` again with that interaction to re-attach to: nothing is
        delivered again, the retry waits for what is left of the first run's window (or
        gets what the interaction became) and answers in the same shape. An interaction
        whose delivery failed is not re-attached to (nothing reached the human).

        The run is its own task, shielded from the caller: a client that gives up and
        retries finds the first run still holding, not cancelled. Results with status
        429 or 5xx are not stored (a retry may succeed); an exception is not stored."""
        slot = (account.id, key)
        running = self._idempotent_runs.get(slot)
        if running is not None:
            if running[0] != fingerprint:
                raise self._idempotency_conflict()
            running[2].attach(REQUESTER_GONE.get())
            return await asyncio.shield(running[1])
        now = time.time()
        stored = self.store.get_idempotency(account.id, key)
        if stored is not None and stored.created_at + self.config.idempotency_ttl > now:
            if stored.fingerprint != fingerprint:
                raise self._idempotency_conflict()
            return stored.status_code, stored.body
        resume: InteractionRecord | None = None
        link = self.store.get_idempotency_link(account.id, key)
        if link is not None and link.created_at + self.config.idempotency_ttl > now:
            if link.fingerprint != fingerprint:
                raise self._idempotency_conflict()
            first = self.store.get_interaction(link.interaction_id)
            if first is not None and first.account_id == account.id and first.outcome != "failed":
                resume = first
        state = _IdempotentRun(account.id, key, fingerprint, resume)
        loop = asyncio.get_running_loop()
        requesters = _Requesters(loop)
        requesters.attach(REQUESTER_GONE.get())

        async def call() -> tuple[int, bytes]:
            # Set inside the task: its context is its own copy, the caller's stays clean.
            _IDEMPOTENT_RUN.set(state)
            # Held until every joined request left (not tracked: until the end).
            REQUESTER_GONE.set(None if requesters.untracked else requesters.gone)
            return await run()

        task = loop.create_task(call())
        self._idempotent_runs[slot] = (fingerprint, task, requesters)
        task.add_done_callback(functools.partial(self._idempotent_done, slot, fingerprint))
        return await asyncio.shield(task)

    @staticmethod
    def _idempotency_conflict() -> Conflict:
        return Conflict(
            "this Idempotency-Key was already used with a different request",
            field="Idempotency-Key",
        )

    def _idempotent_done(
        self, slot: tuple[str, str], fingerprint: str, task: asyncio.Task[tuple[int, bytes]]
    ) -> None:
        running = self._idempotent_runs.get(slot)
        if running is not None and running[1] is task:
            del self._idempotent_runs[slot]
        if task.cancelled() or task.exception() is not None or self._closed:
            return
        status, body = task.result()
        if status >= 500 or status == 429:
            return
        self.store.put_idempotency(
            IdempotencyRecord(
                account_id=slot[0],
                key=slot[1],
                fingerprint=fingerprint,
                status_code=status,
                body=body,
                created_at=time.time(),
            )
        )

    # -- the waiting core -----------------------------------------------------------
    def _arm(self, interaction_id: str, at: float, phase: Literal["wait", "close"]) -> None:
        """One timer per interaction: ``wait`` ends the held window, ``close`` the last."""
        loop = self._loop or asyncio.get_running_loop()
        old = self._timers.pop(interaction_id, None)
        if old is not None:
            old.cancel()
        when = loop.time() + (at - time.time())
        self._timers[interaction_id] = loop.call_at(when, self._on_deadline, interaction_id, phase)

    def _disarm(self, interaction_id: str) -> None:
        handle = self._timers.pop(interaction_id, None)
        if handle is not None:
            handle.cancel()

    def _on_deadline(self, interaction_id: str, phase: Literal["wait", "close"]) -> None:
        self._timers.pop(interaction_id, None)
        if self._closed:
            return
        record = self.store.get_interaction(interaction_id)
        if record is None or record.status != "pending":
            return
        if phase == "wait":
            waiter = self._waiters.get(interaction_id)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
            if record.follow_up_deadline is not None:
                self._arm(interaction_id, record.follow_up_deadline, "close")
                return
        self._end(record)

    def _end(self, record: InteractionRecord, outcome: str | None = None) -> None:
        """Ends an interaction without a response (its last window closed)."""
        self._disarm(record.id)
        if self.store.end_interaction(record.id, time.time(), outcome=outcome):
            waiter = self._waiters.get(record.id)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
            self._changed(record)

    def _answer(
        self,
        record: InteractionRecord,
        event: dict[str, Any],
        *,
        outcome: str | None = None,
        always_emit: bool = False,
    ) -> InteractionRecord | None:
        """Ends ``record`` with its response ``event``: the held request gets it, else
        (or with ``always_emit``) it goes to the webhooks. None if it had ended already."""
        now = time.time()
        if not self.store.end_interaction(record.id, now, result=event, outcome=outcome):
            return None
        self._disarm(record.id)
        ended = dataclasses.replace(
            record, status="ended", result=event, outcome=outcome, ended_at=now
        )
        waiter = self._waiters.get(record.id)
        handed_over = waiter is not None and not waiter.done()
        if waiter is not None and handed_over:
            waiter.set_result(ended)
        if always_emit or not handed_over:
            self.outbox.emit(record.account_id, event, record.id)
        self._changed(record)
        return ended

    def _register(self, interaction_id: str) -> asyncio.Future[InteractionRecord | None]:
        # Registered before the delivery goes out, so even an instant reply finds it.
        future: asyncio.Future[InteractionRecord | None] = (
            asyncio.get_running_loop().create_future()
        )
        self._waiters[interaction_id] = future
        return future

    def _unregister(self, interaction_id: str, future: asyncio.Future[Any]) -> None:
        if self._waiters.get(interaction_id) is future:
            del self._waiters[interaction_id]

    async def _hold(
        self,
        interaction_id: str,
        future: asyncio.Future[InteractionRecord | None],
        limit: float | None = None,
    ) -> InteractionRecord | None:
        """Awaits the response (the ended record) or None when the window closed first.
        ``limit`` (seconds) is for calls, which have no window timer of their own."""
        handle: asyncio.TimerHandle | None = None
        if limit is not None:
            handle = asyncio.get_running_loop().call_later(limit, _settle, future, None)
        if self._draining:
            _settle(future, None)  # registered after drain() woke the others
        gone = REQUESTER_GONE.get()
        try:
            if gone is not None:
                either: set[asyncio.Future[Any]] = {future, gone}
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
                if not future.done():
                    # Nobody to answer: unregistered (below), a reply inside waitTime
                    # goes to the webhooks; the window and the idempotency link stay.
                    raise ServiceUnavailable(
                        "the held request was closed by the client; retry",
                        retry_after=self.config.unavailable_retry_after,
                    )
            answered = await future
        finally:
            if handle is not None:
                handle.cancel()
            self._unregister(interaction_id, future)
        if answered is None and self._draining:
            # Stopping: 503, the interaction stays open for the retry to re-attach to.
            raise self._unavailable()
        return answered

    def _changed(self, record: InteractionRecord) -> None:
        for watcher in self._watchers.pop(record.id, []):
            if not watcher.done():
                watcher.set_result(None)
        self._notify(record.account_id, "interaction", record.id)

    def _create_interaction(
        self,
        account: Account,
        *,
        kind: Literal["message", "form", "call"],
        channel: Channel,
        to: str,
        from_addr: str,
        request: dict[str, Any],
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        form_token: str | None = None,
        reply_token: str | None = None,
        card_id: str | None = None,
        run: _IdempotentRun | None = None,
    ) -> InteractionRecord:
        now = time.time()
        wait_deadline = now + float(wait_time) if wait_time is not None else None
        follow_up_deadline = (
            (wait_deadline or now) + float(follow_up_time) if follow_up_time is not None else None
        )
        listening = kind == "call" or wait_deadline is not None or follow_up_deadline is not None
        record = InteractionRecord(
            id=str(uuid.uuid4()),
            account_id=account.id,
            kind=kind,
            channel=channel,
            to_addr=to,
            from_addr=from_addr,
            request=request,
            created_at=now,
            status="pending" if listening else "ended",
            wait_deadline=wait_deadline,
            follow_up_deadline=follow_up_deadline,
            form_token=form_token,
            reply_token=reply_token,
            card_id=card_id,
            ended_at=None if listening else now,
        )
        link = None
        if run is not None:
            link = IdempotencyLinkRecord(
                account_id=account.id,
                key=run.key,
                fingerprint=run.fingerprint,
                interaction_id=record.id,
                created_at=now,
            )
        self.store.insert_interaction(record, link)
        if wait_deadline is not None:
            self._arm(record.id, wait_deadline, "wait")
        elif follow_up_deadline is not None:
            self._arm(record.id, follow_up_deadline, "close")
        return record

    def _open_interaction(
        self,
        account: Account,
        *,
        kind: Literal["message", "form", "call"],
        channel: Channel,
        to: str,
        from_addr: str,
        request: dict[str, Any],
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        form_token: str | None = None,
        reply_token: str | None = None,
        card_id: str | None = None,
    ) -> tuple[InteractionRecord, bool]:
        """The interaction of a send: a new one (linked to the ``Idempotency-Key`` the
        send runs under, if any), or, for a retry whose first run created one and never
        finished, that one as it is now. True when re-attached: deliver nothing then."""
        if self._draining:
            raise self._unavailable()  # before anything is stored or delivered
        run = _IDEMPOTENT_RUN.get()
        if run is not None and (run.used or run.account_id != account.id):
            run = None
        if run is not None:
            run.used = True  # one interaction per send; anything after it is not linked
            first = run.resume
            if first is not None and first.kind == kind:
                return self.store.get_interaction(first.id) or first, True
        record = self._create_interaction(
            account,
            kind=kind,
            channel=channel,
            to=to,
            from_addr=from_addr,
            request=request,
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            form_token=form_token,
            reply_token=reply_token,
            card_id=card_id,
            run=run,
        )
        return record, False

    def _rejoin(
        self, record: InteractionRecord, future: asyncio.Future[InteractionRecord | None] | None
    ) -> None:
        """A retry re-attached to ``record``: its held request gets what the interaction
        became, or "no response" when the ``waitTime`` window has passed; else it waits
        on the window timer armed at creation (or re-armed at start) like the first."""
        if future is None:
            return
        if record.status != "pending":
            _settle(future, record if record.result is not None else None)
        elif record.kind != "call" and (
            record.wait_deadline is None or record.wait_deadline <= time.time()
        ):
            _settle(future, None)

    def _remaining(self, record: InteractionRecord, limit: float, resumed: bool) -> float:
        """A call's hold limit, counted from its creation for a re-attached retry."""
        if not resumed:
            return limit
        return max(0.0, record.created_at + limit - time.time())

    async def _deliver(
        self,
        record: InteractionRecord,
        text: str,
        *,
        form_url: str | None = None,
        future: asyncio.Future[Any] | None = None,
    ) -> None:
        item = Outbound(
            account_id=record.account_id,
            interaction_id=record.id,
            channel=record.channel,  # type: ignore[arg-type]
            kind=record.kind,  # type: ignore[arg-type]
            from_addr=record.from_addr,
            to_addr=record.to_addr,
            text=text,
            form_url=form_url,
        )
        try:
            await self.provider.deliver(item)
        except BaseException:
            # Nothing reached the human: the interaction must not stay open for a reply.
            if future is not None:
                self._unregister(record.id, future)
            self._end(record, outcome="failed")
            raise
        self._notify(record.account_id, "interaction", record.id)

    def _status_of(self, interaction_id: str) -> Literal["pending", "ended"]:
        record = self.store.get_interaction(interaction_id)
        return "pending" if record is not None and record.status == "pending" else "ended"

    # -- senders --------------------------------------------------------------------
    def _reserved_number(self, account: Account) -> str | None:
        numbers = self.store.numbers_of(account.id)
        return numbers[0].phone_number if numbers else None

    def _phone_sender(self, account: Account, requested: str | None) -> str:
        """The number a text or call goes out from. A requested ``from`` must be the
        account's reserved number or the shared number (400 ``from`` otherwise)."""
        reserved = self._reserved_number(account)
        if requested is None:
            return reserved or SHARED_SMS_NUMBER
        if requested in (reserved, SHARED_SMS_NUMBER):
            return requested
        raise InvalidRequest(
            "from must be the account's reserved number (GET /numbers); "
            "reserve one with POST /numbers/reserve",
            field="from",
        )

    # -- sends: each delivers through the provider, then holds for waitTime -----
    async def send_message(self, account: Account, request: MessageRequest) -> MessageResponse:
        if isinstance(request, SMSMessageRequest):
            channel: Channel = "sms"
            sender = self._phone_sender(account, request.from_)
            text = request.message
        elif isinstance(request, WhatsAppMessageRequest):
            channel = "whatsapp"
            sender = SHARED_WHATSAPP_NUMBER
            text = templates.whatsapp_message(request.message, request.wait_time)
        else:
            channel = "slack"
            sender = request.from_ or SHARED_SLACK_WORKSPACE
            text = request.message
        self._check_send(account, request.message, request.to)
        return await self._message_flow(
            account,
            channel=channel,
            to=request.to,
            sender=sender,
            text=text,
            request=request.to_wire(),
            wait_time=request.wait_time,
            follow_up_time=request.follow_up_time,
        )

    async def _message_flow(
        self,
        account: Account,
        *,
        channel: Channel,
        to: str,
        sender: str,
        text: str,
        request: dict[str, Any],
        wait_time: float | None,
        follow_up_time: float | None,
        response_template: str | None = None,
        no_response_template: str | None = None,
        card_id: str | None = None,
        reply_link: bool = False,
    ) -> MessageResponse:
        record, resumed = self._open_interaction(
            account,
            kind="message",
            channel=channel,
            to=to,
            from_addr=sender,
            request={**request, "_text": text},
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            reply_token=secrets.token_urlsafe(32) if reply_link else None,
            card_id=card_id,
        )
        future = self._register(record.id) if wait_time is not None else None
        if resumed:
            self._rejoin(record, future)
        else:
            delivered = text
            if record.reply_token is not None:
                link_url = self.reply_link_url(record.reply_token)
                delivered = templates.reply_link_text(text, link_url)
            await self._deliver(record, delivered, future=future)
        if future is None:
            return MessageResponse(interaction_id=record.id, status=record.status)  # type: ignore[arg-type]
        answered = await self._hold(record.id, future)
        if answered is not None and answered.result is not None:
            reply = str(answered.result["payload"]["body"])
            return MessageResponse(
                interaction_id=record.id,
                status="ended",
                responded=True,
                response=templates.response_text(response_template, reply),
                reply=reply,
            )
        return MessageResponse(
            interaction_id=record.id,
            status=self._status_of(record.id),
            responded=False,
            response=templates.no_response_text(no_response_template),
        )

    def reply_link_url(self, token: str) -> str:
        return f"{self.config.public_url.rstrip('/')}/r/{token}"

    def form_url(self, token: str) -> str:
        return f"{self.config.public_url.rstrip('/')}/f/{token}"

    async def send_channel_message(
        self, account: Account, channel_id: str, request: ChannelMessageRequest
    ) -> MessageResponse:
        """Applies the card. A call card places a call with the rendered message as the
        prompt and, with a waitTime, holds for its end (response template on the summary)."""
        card = self.store.get_channel(account.id, channel_id)
        if card is None:
            raise NotFound(f"no channel {channel_id!r}", field="channelId")
        text = templates.card_message(card.message_template, request.message, card.wait_time)
        self._check_send(account, request.message, card.to_addr)
        wire = {**request.to_wire(), "_channelId": card.id}
        if card.type == "call":
            return await self._call_card(account, card, text, wire)
        if card.type == "sms":
            sender = self._phone_sender(account, None)
        elif card.type == "whatsapp":
            sender = SHARED_WHATSAPP_NUMBER
            text = templates.whatsapp_message(text, card.wait_time)
        else:
            sender = SHARED_SLACK_WORKSPACE
        return await self._message_flow(
            account,
            channel=card.type,  # type: ignore[arg-type]
            to=card.to_addr,
            sender=sender,
            text=text,
            request=wire,
            wait_time=card.wait_time,
            follow_up_time=card.follow_up_time,
            response_template=card.response_template,
            no_response_template=card.no_response_template,
            card_id=card.id,
            reply_link=card.reply_link,
        )

    async def _call_card(
        self, account: Account, card: ChannelRecord, prompt: str, wire: dict[str, Any]
    ) -> MessageResponse:
        record, resumed = self._open_interaction(
            account,
            kind="call",
            channel="call",
            to=card.to_addr,
            from_addr=self._phone_sender(account, None),
            request={**wire, "prompt": prompt, "to": card.to_addr},
            card_id=card.id,
        )
        future = self._register(record.id) if card.wait_time is not None else None
        if resumed:
            self._rejoin(record, future)
        else:
            await self._deliver(record, prompt, future=future)
        if future is None:
            return MessageResponse(interaction_id=record.id, status=self._status_of(record.id))
        limit = self._remaining(record, float(card.wait_time or 0), resumed)
        ended = await self._hold(record.id, future, limit=limit)
        if ended is not None and ended.result is not None and ended.outcome != "no_answer":
            summary = str(ended.result["payload"]["summary"])
            return MessageResponse(
                interaction_id=record.id,
                status="ended",
                responded=True,
                response=templates.response_text(card.response_template, summary),
                reply=summary,
            )
        return MessageResponse(
            interaction_id=record.id,
            status=self._status_of(record.id),
            responded=False,
            response=templates.no_response_text(card.no_response_template),
        )

    async def send_form(self, account: Account, request: FormRequest) -> FormResponse:
        text_for: Callable[[str], str]
        if isinstance(request, SMSFormRequest):
            channel: Channel = "sms"
            sender = self._phone_sender(account, None)
            text_for = functools.partial(templates.form_message, request.message)
        elif isinstance(request, SlackFormRequest):
            channel = "slack"
            sender = request.from_ or SHARED_SLACK_WORKSPACE
            text_for = functools.partial(templates.form_message, request.message)
        elif isinstance(request, WhatsAppOwnNumberFormRequest):
            channel = "whatsapp"
            if request.from_ != self._reserved_number(account):
                raise InvalidRequest(
                    "from must be the account's own (reserved) whatsapp number", field="from"
                )
            sender = request.from_
            variables = ", ".join(f"{k}={v}" for k, v in request.template.variables.items())
            header = f"[template {request.template.id}{': ' + variables if variables else ''}]"

            def text_for(url: str) -> str:
                return f"{header}\n{templates.whatsapp_form_message(url)}"

        else:
            channel = "whatsapp"
            sender = SHARED_WHATSAPP_NUMBER
            text_for = templates.whatsapp_form_message
        message = getattr(request, "message", None)
        self._check_send(account, f"{request.title}\n{message or ''}", request.to)
        record, resumed = self._open_interaction(
            account,
            kind="form",
            channel=channel,
            to=request.to,
            from_addr=sender,
            request=request.to_wire(),
            wait_time=request.wait_time,
            follow_up_time=request.effective_follow_up_time,
            form_token=secrets.token_urlsafe(32),
        )
        assert record.form_token is not None
        url = self.form_url(record.form_token)
        future = self._register(record.id) if request.wait_time is not None else None
        if resumed:
            self._rejoin(record, future)
        else:
            await self._deliver(record, text_for(url), form_url=url, future=future)
        if future is None:
            status: Literal["pending", "ended"] = (
                "pending" if record.status == "pending" else "ended"
            )
            return FormResponse(interaction_id=record.id, status=status, form_url=url)
        answered = await self._hold(record.id, future)
        if answered is not None and answered.result is not None:
            from .forms.validate import format_content

            values = dict(answered.result["payload"]["values"])
            return FormResponse(
                interaction_id=record.id,
                status="ended",
                form_url=url,
                responded=True,
                values=values,
                content=format_content(self._form_of(answered), values),
            )
        return FormResponse(
            interaction_id=record.id,
            status=self._status_of(record.id),
            form_url=url,
            responded=False,
            response=DEFAULT_NO_RESPONSE_TEMPLATE,
        )

    async def place_call(self, account: Account, request: CallRequest) -> CallResponse:
        return await self._call(
            account,
            prompt=request.prompt,
            to=request.to,
            request=request.model_dump(mode="json", by_alias=True),
            wait=request.wait_for_call_end,
            limit=self.config.call_wait_limit,
        )

    async def _call(
        self,
        account: Account,
        *,
        prompt: str,
        to: str,
        request: dict[str, Any],
        wait: bool,
        limit: float,
    ) -> CallResponse:
        sender = self._phone_sender(account, None)
        self._check_send(account, prompt, to)
        record, resumed = self._open_interaction(
            account, kind="call", channel="call", to=to, from_addr=sender, request=request
        )
        future = self._register(record.id) if wait else None
        if resumed:
            self._rejoin(record, future)
        else:
            await self._deliver(record, prompt, future=future)
        if future is None:
            return CallResponse(interaction_id=record.id, status=self._status_of(record.id))
        ended = await self._hold(record.id, future, limit=self._remaining(record, limit, resumed))
        if ended is None or ended.result is None:
            return CallResponse(interaction_id=record.id, status=self._status_of(record.id))
        return self._call_response(ended)

    @staticmethod
    def _call_response(record: InteractionRecord) -> CallResponse:
        assert record.result is not None
        payload = record.result["payload"]
        return CallResponse(
            interaction_id=record.id,
            status="ended",
            outcome=record.outcome,  # type: ignore[arg-type]
            summary=payload["summary"],
            from_=payload["from"],
            to=payload["to"],
            error=CALL_NOT_ANSWERED if record.outcome == "no_answer" else None,
        )

    async def phone_sms(self, account: Account, request: PhoneSMSRequest) -> MessageResponse:
        return await self.send_message(
            account, SMSMessageRequest(message=request.message, to=request.to)
        )

    async def phone_call(self, account: Account, request: PhoneCallRequest) -> CallResponse:
        """Holds up to ``config.phone_call_limit``; past it raises ``CallTimeout``
        (the call is not retried). A transferTo comes from the skill setting
        ``SERVICE_TRANSFER_NUMBER`` in the environment, when set."""
        transfer_to = os.environ.get("SERVICE_TRANSFER_NUMBER") or None
        if transfer_to is not None:
            try:
                check_e164(transfer_to)
            except PydanticCustomError:
                raise InvalidToNumber(field="transferTo") from None
        wire: dict[str, Any] = {"message": request.message, "to": request.to, "_phone": True}
        if transfer_to is not None:
            wire["transferTo"] = transfer_to
        response = await self._call(
            account,
            prompt=request.message,
            to=request.to,
            request=wire,
            wait=True,
            limit=self.config.phone_call_limit,
        )
        if response.status == "ended" and response.outcome is not None:
            return response
        record = self.store.get_interaction(response.interaction_id)
        if record is not None and record.status == "pending":
            self._end(record, outcome="timeout")  # never retried: it is over for the skill
        raise CallTimeout("timeout")

    async def interaction_status(
        self, account: Account, interaction_id: str, wait: float | None = None
    ) -> InteractionStatus:
        """With ``wait``: holds until the status changes or ``wait`` seconds pass;
        returns at once for an ended interaction."""
        record = self._interaction_of(account, interaction_id)
        if wait is not None and wait > 0 and record.status == "pending":
            if self._draining:
                raise self._unavailable()
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._watchers.setdefault(record.id, []).append(future)
            try:
                await asyncio.wait({future}, timeout=min(wait, self.config.max_status_wait))
            finally:
                watchers = self._watchers.get(record.id)
                if watchers is not None and future in watchers:
                    watchers.remove(future)
                    if not watchers:
                        del self._watchers[record.id]
            if self._draining:
                raise self._unavailable()
            record = self._interaction_of(account, interaction_id)
        return self._status(record)

    def _interaction_of(self, account: Account, interaction_id: str) -> InteractionRecord:
        record = self.store.get_interaction(interaction_id)
        if record is None or record.account_id != account.id:
            raise NotFound(f"no interaction {interaction_id!r}", field="interactionId")
        return record

    @staticmethod
    def _status(record: InteractionRecord) -> InteractionStatus:
        return InteractionStatus(
            interaction_id=record.id,
            status=record.status,  # type: ignore[arg-type]
            created_at=_timestamp(record.created_at),
            kind=record.kind,  # type: ignore[arg-type]
            channel=record.channel,  # type: ignore[arg-type]
            result=event_adapter.validate_python(record.result) if record.result else None,
        )

    # -- numbers --------------------------------------------------------------
    def available_numbers(
        self, country: str | None = None, area_code: str | None = None
    ) -> list[AvailableNumber]:
        """Every free number of the pool (``US``, then ``GB``), filtered."""
        if country is not None and country not in ("US", "GB"):
            raise InvalidRequest("country must be US or GB", field="country")
        taken = self.store.reserved_phone_numbers()
        return [
            AvailableNumber(
                phone_number=entry.phone_number,
                country=entry.country,  # type: ignore[arg-type]
                area_code=entry.area_code,
            )
            for entry in pool()
            if (country is None or entry.country == country)
            and (not area_code or entry.area_code == area_code)
            and entry.phone_number not in taken
        ]

    def reserve_number(self, account: Account, phone_number: str) -> ReservedNumber:
        try:
            check_e164(phone_number)
        except PydanticCustomError:
            raise InvalidToNumber(field="phoneNumber") from None
        if pool_entry(phone_number) is None:
            raise InvalidRequest(
                f"{phone_number} is not an available number (GET /numbers/available)",
                field="phoneNumber",
            )
        own = self.store.numbers_of(account.id)
        if own:
            if own[0].phone_number == phone_number:
                raise Conflict("this number is already reserved by this account")
            raise Conflict(
                "the account already has a reserved number: delete it first "
                "(one number per account)"
            )
        holder = self.store.number_by_phone(phone_number)
        if holder is not None:
            raise Conflict("this number is taken")
        now = time.time()
        record = NumberRecord(
            id=str(uuid.uuid4()),
            account_id=account.id,
            phone_number=phone_number,
            created_at=now,
            updated_at=now,
        )
        try:
            self.store.insert_number(record)
        except Duplicate:
            raise Conflict("this number is taken") from None
        self._notify(account.id, "number", record.id)
        return self._reserved(record)

    @staticmethod
    def _reserved(record: NumberRecord) -> ReservedNumber:
        return ReservedNumber(
            id=record.id,
            phone_number=record.phone_number,
            created_at=_timestamp(record.created_at),
            updated_at=_timestamp(record.updated_at),
        )

    def list_numbers(self, account: Account) -> list[ReservedNumber]:
        return [self._reserved(record) for record in self.store.numbers_of(account.id)]

    def delete_number(self, account: Account, number_id: str) -> None:
        if not self.store.delete_number(account.id, number_id):
            raise NotFound(f"no reserved number {number_id!r}", field="numberId")
        self._notify(account.id, "number", number_id)

    # -- webhooks ---------------------------------------------------------------
    async def create_webhook(self, account: Account, request: WebhookCreateRequest) -> Webhook:
        """Refuses private and loopback targets unless ``config.local_mode``. The host is
        resolved off the event loop (``loop.getaddrinfo``, or the ``resolve`` hook in a
        thread), within ``resolve_timeout`` seconds; IP literals need no lookup."""
        await check_webhook_url_async(
            request.url,
            local_mode=self.config.local_mode,
            resolve=self._resolve,
            timeout=self._resolve_timeout,
        )
        record = WebhookRecord(
            id=str(uuid.uuid4()),
            account_id=account.id,
            url=request.url,
            event_types=list(request.event_types),
            headers=dict(request.headers or {}),
            secret="whsec_" + secrets.token_urlsafe(32),
            created_at=time.time(),
        )
        self.store.insert_webhook(record)
        self._notify(account.id, "webhook", record.id)
        return self._webhook(record, reveal=True)

    @staticmethod
    def _webhook(record: WebhookRecord, *, reveal: bool) -> Webhook:
        return Webhook(
            id=record.id,
            url=record.url,
            event_types=record.event_types,  # type: ignore[arg-type]
            headers=(
                record.headers
                if reveal
                else {name: _mask(value) for name, value in record.headers.items()}
            ),
            created_at=_timestamp(record.created_at),
            secret=record.secret if reveal else None,
        )

    def list_webhooks(self, account: Account) -> list[Webhook]:
        return [
            self._webhook(record, reveal=False) for record in self.store.webhooks_of(account.id)
        ]

    def delete_webhook(self, account: Account, webhook_id: str) -> None:
        if not self.store.delete_webhook(account.id, webhook_id):
            raise NotFound(f"no webhook {webhook_id!r}", field="webhookId")
        self.store.cancel_outbox_for_webhook(webhook_id, time.time())
        self._notify(account.id, "webhook", webhook_id)

    def list_deliveries_log(self, account: Account) -> list[dict[str, object]]:
        """Webhook deliveries with status and attempts, newest first, for the inbox."""
        urls = {record.id: record.url for record in self.store.webhooks_of(account.id)}
        log: list[dict[str, object]] = []
        for row in self.store.list_outbox(account.id, 500):
            event = self.store.get_event(row.event_id)
            log.append(
                {
                    "id": row.id,
                    "eventId": row.event_id,
                    "eventType": event.event_type if event else None,
                    "interactionId": event.interaction_id if event else None,
                    "webhookId": row.webhook_id,
                    "url": urls.get(row.webhook_id),
                    "status": row.status,
                    "attempts": row.attempts,
                    "lastError": row.last_error,
                    "lastStatusCode": row.last_status_code,
                    "nextAttemptAt": _iso(row.next_attempt_at) if row.status == "pending" else None,
                    "createdAt": _iso(row.created_at),
                    "deliveredAt": _iso(row.delivered_at),
                }
            )
        return log

    def list_events(self, account: Account, limit: int = 200) -> list[dict[str, object]]:
        """Every event the account's webhooks would get (delivered or not, wanted by a
        webhook or not), newest first: ``{"id", "eventType", "payload", "interactionId",
        "createdAt"}``. Inbound texts and calls with no webhook are visible here."""
        return [
            {
                "id": record.id,
                "eventType": record.event_type,
                "payload": record.body.get("payload"),
                "interactionId": record.interaction_id,
                "createdAt": _iso(record.created_at),
            }
            for record in self.store.list_events(account.id, limit)
        ]

    def list_inbound(self, account: Account, limit: int = 200) -> list[InboundRecord]:
        """Every inbound text, matched to an interaction or not, newest first."""
        return self.store.list_inbound(account.id, limit)

    # -- channel cards ----------------------------------------------------------
    def create_channel(self, account: Account, request: ChannelCardCreateRequest) -> ChannelCard:
        record = ChannelRecord(
            id="ch_" + secrets.token_urlsafe(18),
            account_id=account.id,
            type=request.type,
            to_addr=request.to,
            wait_time=request.wait_time,
            follow_up_time=request.follow_up_time,
            message_template=request.message_template,
            response_template=request.response_template or DEFAULT_RESPONSE_TEMPLATE,
            no_response_template=request.no_response_template or DEFAULT_NO_RESPONSE_TEMPLATE,
            reply_link=request.reply_link,
            created_at=time.time(),
        )
        self.store.insert_channel(record)
        self._notify(account.id, "channel", record.id)
        return self._card(record)

    @staticmethod
    def _card(record: ChannelRecord) -> ChannelCard:
        return ChannelCard(
            id=record.id,
            type=record.type,  # type: ignore[arg-type]
            to=record.to_addr,
            wait_time=record.wait_time,
            follow_up_time=record.follow_up_time,
            message_template=record.message_template,
            response_template=record.response_template,
            no_response_template=record.no_response_template,
            reply_link=record.reply_link,
            created_at=_timestamp(record.created_at),
        )

    def list_channels(self, account: Account) -> list[ChannelCard]:
        return [self._card(record) for record in self.store.channels_of(account.id)]

    def get_channel(self, account: Account, channel_id: str) -> ChannelCard:
        record = self.store.get_channel(account.id, channel_id)
        if record is None:
            raise NotFound(f"no channel {channel_id!r}", field="channelId")
        return self._card(record)

    def delete_channel(self, account: Account, channel_id: str) -> None:
        if not self.store.delete_channel(account.id, channel_id):
            raise NotFound(f"no channel {channel_id!r}", field="channelId")
        self._notify(account.id, "channel", channel_id)

    # -- forms reached by link (no key: the token is the credential) -------------
    @staticmethod
    def _form_of(record: InteractionRecord) -> Form:
        """The stored form, parsed again. Its windows were checked when it was sent; they
        are put back as stored (the engine itself accepts sub-second windows)."""
        data = {k: v for k, v in record.request.items() if k in _FORM_KEYS}
        windows = {"wait_time": data.pop("waitTime", None)}
        windows["follow_up_time"] = data.pop("followUpTime", None)
        form = Form.model_validate({**data, "followUpTime": 1})
        return form.model_copy(update=windows)

    def _form_view(self, token: str, record: InteractionRecord) -> FormView:
        values: dict[str, str] | None = None
        if record.result is not None and record.result.get("eventType") == "form.received":
            values = dict(record.result["payload"]["values"])
        state: FormState
        if values is not None:
            state = "submitted"
        elif record.status == "ended" or time.time() >= (record.follow_up_deadline or 0.0):
            state = "expired"
        else:
            state = "open"
        return FormView(
            token=token,
            interaction_id=record.id,
            account_id=record.account_id,
            form=self._form_of(record),
            state=state,
            wait_deadline=record.wait_deadline,
            follow_up_deadline=record.follow_up_deadline or record.created_at,
            values=values,
        )

    def get_form(self, token: str) -> FormView:
        """Raises ``NotFound`` for an unknown token."""
        record = self.store.interaction_by_form_token(token) if token else None
        if record is None:
            raise NotFound("no such form")
        return self._form_view(token, record)

    async def submit_form(self, token: str, values: dict[str, str]) -> FormView:
        """Validates with ``humanwire.server.forms.validate.validate_submission``; raises
        ``FormInvalid`` (an ``InvalidRequest``; field = the first failing field id,
        ``errors`` all of them) on a failed rule, ``Conflict`` when already submitted,
        ``Gone`` once the follow-up window has closed. Inside waitTime the held request
        gets the values; after it, a ``form.received`` event goes to the webhooks."""
        from .forms.validate import validate_submission

        view = self.get_form(token)
        if view.state == "submitted":
            raise Conflict("this form was already submitted")
        if view.state == "expired":
            raise Gone("this form has expired")
        normalized, errors = validate_submission(view.form, values)
        if errors:
            raise FormInvalid(errors)
        record = self.store.get_interaction(view.interaction_id)
        assert record is not None
        event = _event_dict(
            FormReceivedEvent(
                payload=FormReceivedPayload(interaction_id=record.id, values=normalized)
            )
        )
        if self._answer(record, event) is None:
            # Ended between the check and now (its window closed): same answers as above.
            return self._raise_closed_form(token)
        return dataclasses.replace(view, state="submitted", values=normalized)

    def _raise_closed_form(self, token: str) -> FormView:
        view = self.get_form(token)
        if view.state == "submitted":
            raise Conflict("this form was already submitted")
        raise Gone("this form has expired")

    # -- reply links of channel cards ---------------------------------------------
    def get_reply_link(self, token: str) -> ReplyLinkView:
        """What the reply page shows; ``NotFound`` for an unknown token."""
        record = self.store.interaction_by_reply_token(token) if token else None
        if record is None:
            raise NotFound("no such reply link")
        reply: str | None = None
        if record.result is not None and record.result.get("eventType") == "message.received":
            reply = str(record.result["payload"]["body"])
        state: ReplyLinkState = (
            "answered" if reply is not None else "open" if record.status == "pending" else "expired"
        )
        return ReplyLinkView(
            token=token,
            interaction_id=record.id,
            account_id=record.account_id,
            channel=record.channel,
            to=record.to_addr,
            from_=record.from_addr,
            text=str(record.request.get("_text", "")),
            state=state,
            wait_deadline=record.wait_deadline,
            close_deadline=record.close_deadline,
            reply=reply,
        )

    async def reply_by_link(self, token: str, body: str) -> None:
        """The recipient answers through the card's reply link: as if they had replied
        in the channel. ``Conflict`` once answered, ``Gone`` once the windows closed."""
        view = self.get_reply_link(token)
        if view.state == "answered":
            raise Conflict("this message was already answered")
        if view.state == "expired":
            raise Gone("this reply link has expired")
        if not body.strip():
            raise InvalidRequest("the reply must not be empty", field="body")
        record = self.store.get_interaction(view.interaction_id)
        assert record is not None
        self._inbound_text(
            account_id=record.account_id,
            channel=record.channel,
            from_addr=record.to_addr,
            to_addr=record.from_addr,
            body=body,
            media_urls=[],
            record=record,
        )

    # -- the human's side (sandbox API and inbox) --------------------------------
    def list_interactions(self, account: Account, limit: int = 200) -> list[InteractionStatus]:
        return [self._status(record) for record in self.store.list_interactions(account.id, limit)]

    def list_sandbox_deliveries(
        self,
        account: Account,
        to: str | None = None,
        channel: str | None = None,
        interaction_id: str | None = None,
    ) -> list[SandboxDelivery]:
        """Newest first, at most the 500 newest that match."""
        return [
            SandboxDelivery(
                id=record.id,
                interaction_id=record.interaction_id,
                channel=record.channel,  # type: ignore[arg-type]
                kind=record.kind,  # type: ignore[arg-type]
                from_=record.from_addr,
                to=record.to_addr,
                text=record.text,
                form_url=record.form_url,
                created_at=_timestamp(record.created_at),
            )
            for record in self.store.list_deliveries(
                account.id, to_addr=to, channel=channel, interaction_id=interaction_id
            )
        ]

    async def wait_for_delivery(
        self, account: Account, after_id: str | None, timeout: float
    ) -> None:
        """Returns when a delivery newer than ``after_id`` exists, or after ``timeout``
        (lets the scripted human and the inbox follow without busy polling). With
        ``after_id`` None (or unknown) any delivery of the account counts."""
        if self._draining:
            raise self._unavailable()
        after = self.store.delivery_seq(account.id, after_id) if after_id else None
        if self.store.max_delivery_seq(account.id) > (after or 0):
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._delivery_waiters.setdefault(account.id, [])
        waiters.append(future)
        try:
            await asyncio.wait({future}, timeout=max(timeout, 0.0))
        finally:
            if future in waiters:
                waiters.remove(future)
        if self._draining:
            raise self._unavailable()

    def _delivered(self, record: DeliveryRecord) -> None:
        for future in self._delivery_waiters.pop(record.account_id, []):
            if not future.done():
                future.set_result(None)
        self._notify(record.account_id, "delivery", record.id)

    async def sandbox_reply(self, account: Account, request: SandboxReplyRequest) -> None:
        """An inbound text: answers the matching open interaction (number pair for sms and
        whatsapp; the thread for slack) or becomes an unsolicited message.received.

        sms / whatsapp: the most recent open message interaction sent to ``from`` from
        ``to`` on that channel; ``interactionId`` is ignored, as on a phone. slack: only
        the interaction named by ``interactionId`` (the thread), which must be one of the
        account's (``NotFound`` otherwise); a thread whose interaction ended, or a message
        outside any thread, is unsolicited."""
        record: InteractionRecord | None
        if request.channel == "slack":
            record = None
            if request.interaction_id is not None:
                thread = self._interaction_of(account, request.interaction_id)
                if thread.channel == "slack" and thread.kind == "message":
                    record = thread if thread.status == "pending" else None
        else:
            record = self.store.latest_open_message(
                account.id, request.channel, to_addr=request.from_, from_addr=request.to
            )
        self._inbound_text(
            account_id=account.id,
            channel=request.channel,
            from_addr=request.from_,
            to_addr=request.to,
            body=request.body,
            media_urls=list(request.media_urls or []),
            record=record,
        )

    def _inbound_text(
        self,
        *,
        account_id: str,
        channel: str,
        from_addr: str,
        to_addr: str,
        body: str,
        media_urls: list[str],
        record: InteractionRecord | None,
    ) -> None:
        def event_for(interaction_id: str | None) -> dict[str, Any]:
            return _event_dict(
                MessageReceivedEvent(
                    payload=MessageReceivedPayload(
                        interaction_id=interaction_id,
                        medium=channel,  # type: ignore[arg-type]
                        from_=from_addr,
                        to=to_addr,
                        body=body,
                        media_urls=media_urls,
                    )
                )
            )

        answered = None
        if record is not None:
            answered = self._answer(record, event_for(record.id))
        if answered is None:
            self.outbox.emit(account_id, event_for(None), None)
        inbound = InboundRecord(
            id=str(uuid.uuid4()),
            account_id=account_id,
            channel=channel,
            from_addr=from_addr,
            to_addr=to_addr,
            body=body,
            media_urls=media_urls,
            interaction_id=answered.id if answered is not None else None,
            created_at=time.time(),
        )
        self.store.insert_inbound(inbound)
        self._notify(account_id, "inbound", inbound.id)

    async def sandbox_end_call(
        self, account: Account, interaction_id: str, request: SandboxCallOutcomeRequest
    ) -> CallResponse:
        """The callee ends an outbound call. ``Conflict`` if it has ended already;
        ``NotFound`` for an interaction that is not one of the account's calls."""
        record = self._interaction_of(account, interaction_id)
        if record.kind != "call":
            raise NotFound(f"no call {interaction_id!r}", field="interactionId")
        if record.status != "pending":
            raise Conflict("this call has already ended")
        summary = self._call_summary(record, request)
        event = _event_dict(
            CallConversationEndedEvent(
                payload=CallConversationEndedPayload(
                    interaction_id=record.id,
                    summary=summary,
                    from_=record.from_addr,
                    to=record.to_addr,
                )
            )
        )
        ended = self._answer(record, event, outcome=request.outcome, always_emit=True)
        if ended is None:
            raise Conflict("this call has already ended")
        return self._call_response(ended)

    @staticmethod
    def _call_summary(record: InteractionRecord, request: SandboxCallOutcomeRequest) -> str:
        given = (request.summary or "").strip()
        if request.outcome == "completed":
            return given or "The call was completed."
        if request.outcome == "no_answer":
            return given or "The call was not answered: human did not respond."
        transfer_to = record.request.get("transferTo")
        base = given or "The callee asked for a human."
        if not transfer_to:
            return f"{base} The call was transferred to a human."
        if str(transfer_to) in base:
            return base
        return f"{base} The call was transferred to {transfer_to}."

    async def sandbox_inbound_call(
        self, account: Account, request: SandboxInboundCallRequest
    ) -> None:
        """``to`` must be the account's reserved number (else ``NotFound``). The
        voicemail-style agent takes the message: a call interaction is recorded, ended,
        and a ``call.conversation.ended`` event carries the summary."""
        number = self.store.number_by_phone(request.to)
        if number is None or number.account_id != account.id:
            raise NotFound(f"{request.to} is not a reserved number of this account", field="to")
        if not request.from_.strip():
            raise InvalidToNumber(field="from")
        record = self._create_interaction(
            account,
            kind="call",
            channel="call",
            to=request.to,
            from_addr=request.from_,
            request={"inbound": True, "from": request.from_, "to": request.to},
        )
        event = _event_dict(
            CallConversationEndedEvent(
                payload=CallConversationEndedPayload(
                    interaction_id=record.id,
                    summary=request.summary,
                    from_=request.from_,
                    to=request.to,
                )
            )
        )
        self._answer(record, event, outcome="completed", always_emit=True)
        self._notify(account.id, "inbound", record.id)

    # -- live change notices ------------------------------------------------------
    def subscribe(self, account: Account) -> AsyncIterator[InboxChange]:
        """Live change notices for the inbox (server-sent events). Registered at once, so
        nothing between this call and the first iteration is lost; a slow reader loses
        the oldest notices, never blocks the engine. Close the iterator when done."""
        queue: asyncio.Queue[InboxChange | None] = asyncio.Queue(maxsize=_SUBSCRIBER_QUEUE)
        queues = self._subscribers.setdefault(account.id, set())
        queues.add(queue)

        async def changes() -> AsyncIterator[InboxChange]:
            try:
                while not self._draining:
                    change = await queue.get()
                    if change is None:  # drain(): the service is stopping
                        return
                    yield change
            finally:
                queues.discard(queue)

        return changes()

    def _notify(self, account_id: str, kind: Any, item_id: str) -> None:
        queues = self._subscribers.get(account_id)
        if not queues:
            return
        change = InboxChange(account_id=account_id, kind=kind, id=item_id)
        for queue in queues:
            if queue.full():
                with contextlib.suppress(asyncio.QueueEmpty):
                    queue.get_nowait()
            queue.put_nowait(change)
