"""The engine's runtime: the plain value every role of the engine is built with.

``Runtime.open`` opens what the service runs on (the store, the coordinator, the
schedule, the webhook outbox) and the small objects the roles share: which provider
carries each channel (``Carriers``), whether the engine is stopping (``Lifecycle``), the
work it runs beside the requests (``BackgroundWork``) and its live change notices
(``Notices``, on ``Wakeups`` and ``InboxStreams``), and ``KeyedLocks`` for work taken one at a
time per key. A role keeps the runtime and reaches another role only by a named
attribute given to it (docs/explanation/architecture.md, "Roles").

What differs between a service alone on its store and replicas sharing one goes through
the runtime's ``Coordinator``; the engine decides the same way in both:

- ``LocalCoordinator`` (here): one process (SQLite). Rate and spam counts live in memory,
  an answer ends the interaction with one write, nothing is published, no hold is
  recorded.
- ``ReplicaCoordinator`` (``replicas``): several processes on one PostgreSQL database
  (``Replicas``: notices, heartbeats, the sweep of dead replicas' holds). Counts live in
  the database; an answer ends the interaction, appends its outcome and publishes the
  notice in one transaction; a held send is recorded as held by its replica
  (``interactions.held_by``) so an answer arriving elsewhere is handed to it.

``Runtime.open`` picks one from the store (the facade names the replicas' one). Nothing
in a coordinator knows about holds' futures or HTTP: the engine passes what a call needs.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import hashlib
import json
import logging
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Generic, TypeVar

import httpx

from ..background.outbox import RESOLVE_TIMEOUT, Outbox, Resolver
from ..background.schedule import Schedule
from ..background.work import BackgroundWork
from ..config import ServiceConfig
from ..delivery import NumberSource, Provider, SandboxProvider
from ..delivery.chat import CHAT_CHANNELS
from ..errors import ServiceUnavailable
from ..forms.address import AddressValidator
from ..forms.address_providers import build_address_validator
from ..store import Store, open_store
from ..store.protocol import SharedStore, shared_store
from ..store.records import (
    AccountRecord,
    DeliveryRecord,
    IdempotencyRecord,
    InboundRecord,
    InteractionOutcome,
    InteractionRecord,
    WaitEndedAnswer,
)
from ..telemetry import Metrics
from ._common import InboxChange, RateCount

__all__ = [
    "CHANNELS",
    "Carriers",
    "Coordinator",
    "Ending",
    "HeldAnswer",
    "HostLookup",
    "InboxStreams",
    "KeyedLocks",
    "Lifecycle",
    "LocalCoordinator",
    "Notices",
    "RateLimiter",
    "ReplicaEvents",
    "Runtime",
    "SpamGuard",
    "Wakeups",
    "fingerprint",
]

logger = logging.getLogger("humanwire.engine")


HeldAnswer = Callable[[], WaitEndedAnswer | None]
"""Builds the ``wait.ended`` of a send held after its 202, for the one that ends it to
write with the end (``events.wait_ended``; None: its holder writes it)."""


@dataclass(frozen=True, slots=True)
class Ending:
    """What ending an interaction with its answer did (``Coordinator.end_answered``)."""

    done: bool
    """This call ended it (False: it had ended already)."""
    holder: str | None = None
    """The replica holding the send once it ended (None: nobody, or one process)."""
    let_go: bool = False
    """The hold asked to be let go was let go in the same statement."""
    reported: tuple[int, int] | None = None
    """The ``interaction.ended`` outcome appended with it: ``(id, previous id)``."""
    inbound_stored: bool = False
    """The inbound text was stored with it (linked if it ended, named in its notice)."""
    published: bool = False
    """The other replicas were told by the write itself."""
    waited: tuple[int, int] | None = None
    """The held send's ``wait.ended`` was written with the end: ``(id, previous id)``;
    its hold was let go in the store, and its holder writes nothing more."""
    answer: WaitEndedAnswer | None = None
    """That ``wait.ended`` (set with ``waited``)."""


@dataclass(frozen=True, slots=True)
class ReplicaEvents:
    """What the engine does when other replicas speak (``Replicas``' callbacks)."""

    on_notice: Callable[[str, str, str, Any], None]
    on_swept: Callable[[list[InteractionRecord]], Awaitable[None]]
    on_tick: Callable[[], None]
    on_resync: Callable[[], Awaitable[None]]


class Coordinator(abc.ABC):
    """What the engine agrees on with other processes; the one-process behaviour where
    it is the same for every store's (``ReplicaCoordinator`` overrides it)."""

    shared: SharedStore | None = None

    def __init__(self, store: Store, config: ServiceConfig) -> None:
        self.store = store
        self.config = config
        self.id = uuid.uuid4().hex[:16]
        """Who claims steps of the schedule (and, with replicas, holds sends)."""

    def attach(self, events: ReplicaEvents) -> None:
        """What the engine does when other processes speak (none speak to one alone)."""
        return None

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    # -- notices ------------------------------------------------------------------------
    def publish(self, kind: str, account_id: str, item_id: str) -> None:
        """Announces a change to the other processes (none here)."""
        return None

    def together(self) -> AbstractContextManager[None]:
        """Notices published inside the block go out together as it ends."""
        return contextlib.nullcontext()

    # -- limits -------------------------------------------------------------------------
    async def account_by_key(
        self, key_hash: str, named: str | None = None
    ) -> tuple[AccountRecord | None, RateCount | None, InteractionRecord | None]:
        """The key's account; the request's rate count when it is counted with the
        lookup (with replicas; None: count it with ``rate_hit``); and the interaction
        ``named`` by the request, read with the key (one round trip with replicas) and
        not checked against its account (the caller checks)."""
        if named is None:
            return await self.store.account_by_key_hash(key_hash), None, None
        account, interaction = await asyncio.gather(
            self.store.account_by_key_hash(key_hash), self.store.get_interaction(named)
        )
        return account, None, interaction

    @abc.abstractmethod
    async def rate_hit(self, account_id: str) -> float | None:
        """Counts a request against the rate limit: None when allowed, else seconds to
        wait."""

    @abc.abstractmethod
    async def spam_hit(self, account_id: str, text: str, to: str) -> bool:
        """Records the send; True when it makes the text spam (``spam_recipients``
        distinct recipients inside ``spam_window``)."""

    @abc.abstractmethod
    async def forget_spam(self, account_id: str) -> None:
        """The account's spam counts are forgotten (a suspension, a reinstatement)."""

    def forget_spam_here(self, account_id: str) -> None:
        """Counts this process keeps of the account are forgotten (it was seen
        suspended: what led there must not suspend it again once reinstated)."""
        return None

    # -- interactions and their holds ----------------------------------------------------
    def stamp(self, record: InteractionRecord, *, held: bool) -> InteractionRecord:
        """A new interaction as this process creates it (replicas: its owner and the
        replica holding its request)."""
        return record

    async def end_answered(
        self,
        record: InteractionRecord,
        now: float,
        event: dict[str, Any],
        outcome: InteractionOutcome | None,
        report: dict[str, Any],
        *,
        release: bool,
        inbound: InboundRecord | None,
        held_answer: HeldAnswer | None = None,
    ) -> Ending:
        """Ends ``record`` with its answer ``event``. ``release``: the request held here
        takes the answer now (replicas let go of its hold in the same statement);
        ``report`` is its ``interaction.ended`` outcome (appended with it where the store
        can); ``inbound`` the text that answered (stored with it where the store can);
        ``held_answer`` builds the answer of a send held after its 202, written with the
        end while it is held (replicas: ``Ending.waited``). One process never builds it:
        its holder is here and writes it as it wakes (no round trip to save)."""
        done = await self.store.end_interaction(record.id, now, result=event, outcome=outcome)
        return Ending(done)

    async def append_outcome(
        self,
        account_id: str,
        interaction_id: str,
        body: dict[str, Any],
        now: float,
        *,
        idempotency: IdempotencyRecord | None = None,
        release: bool = False,
    ) -> tuple[int, int]:
        """Stores an outcome event: ``(its id, the previous id)``. ``release``: the
        interaction's hold here is let go in the same transaction."""
        return await self.store.append_outcome(
            account_id, interaction_id, body, now, idempotency=idempotency
        )

    async def release_hold(
        self, interaction_id: str, *, ended_only: bool = False
    ) -> InteractionRecord | None:
        """Lets go of this process's hold on the send in the store: the interaction when
        it ended while held with an answer handed to this hold (None: nothing recorded,
        or not held here; with ``ended_only``, only once it ended)."""
        return None

    async def take(self, interaction_id: str, *, hold: bool) -> bool:
        """A retry re-attached here: the pending interaction is this process's now.
        False when it ended meanwhile."""
        return True


# -- one process's abuse counts (``LocalCoordinator``) ------------------------------
# Abuse limits kept in memory: a per-account sliding-window rate limit and the spam
# guard (the same text to many distinct recipients in a short window). Suspension itself
# is persisted by the engine; these only count.


class RateLimiter:
    """At most ``limit`` requests per ``window`` seconds per account (sliding log)."""

    def __init__(self, limit: int, window: float) -> None:
        self.limit = limit
        self.window = window
        self._hits: dict[str, deque[float]] = {}

    def hit(self, account_id: str, now: float) -> float | None:
        """Counts one request; returns None when allowed, else seconds until it would be."""
        hits = self._hits.setdefault(account_id, deque())
        cutoff = now - self.window
        while hits and hits[0] <= cutoff:
            hits.popleft()
        if len(hits) >= self.limit:
            return max(hits[0] + self.window - now, 0.001)
        hits.append(now)
        return None


def fingerprint(text: str) -> str:
    """The text as the spam guard counts it."""
    # Case and spacing do not make a bulk text a different one.
    normalized = " ".join(text.lower().split())
    return hashlib.sha256(normalized.encode()).hexdigest()


class SpamGuard:
    """Remembers, per account and text, which recipients got it and when."""

    def __init__(self, recipients: int, window: float) -> None:
        self.recipients = recipients
        self.window = window
        self._sent: dict[tuple[str, str], dict[str, float]] = {}

    def would_be_spam(self, account_id: str, text: str, to: str, now: float) -> bool:
        """Records the send of ``text`` to ``to``; True when it makes ``recipients``
        distinct recipients of the same text inside ``window``."""
        key = (account_id, fingerprint(text))
        seen = self._sent.setdefault(key, {})
        cutoff = now - self.window
        for recipient in [r for r, at in seen.items() if at <= cutoff]:
            del seen[recipient]
        seen[to] = now
        return len(seen) >= self.recipients

    def forget(self, account_id: str) -> None:
        for key in [key for key in self._sent if key[0] == account_id]:
            del self._sent[key]


class LocalCoordinator(Coordinator):
    """One process alone on its store (see the module docstring)."""

    def __init__(self, store: Store, config: ServiceConfig) -> None:
        super().__init__(store, config)
        self._rate = RateLimiter(config.rate_limit_requests, config.rate_limit_window)
        self._spam = SpamGuard(config.spam_recipients, config.spam_window)

    async def rate_hit(self, account_id: str) -> float | None:
        return self._rate.hit(account_id, time.monotonic())

    async def spam_hit(self, account_id: str, text: str, to: str) -> bool:
        return self._spam.would_be_spam(account_id, text, to, time.monotonic())

    async def forget_spam(self, account_id: str) -> None:
        self._spam.forget(account_id)

    def forget_spam_here(self, account_id: str) -> None:
        self._spam.forget(account_id)


CHANNELS = ("sms", "whatsapp", "slack", "call", "email", *CHAT_CHANNELS)
"""Every channel a provider carries (the chat channels by their registration)."""


# -- what waits for a change: long-polls, live streams, one-at-a-time keys -----------
K = TypeVar("K", bound=Hashable)

SUBSCRIBER_QUEUE = 256
"""Notices a live stream keeps for a reader that has not read them yet."""


class Wakeups(Generic[K]):
    """Futures waiting for a change of a key: ``wait`` one, ``wake`` all of a key."""

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: dict[K, set[asyncio.Future[None]]] = {}

    def add(self, key: K) -> asyncio.Future[None]:
        """A future settled at the next ``wake(key)`` (or ``wake_all``)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, set()).add(future)
        return future

    def discard(self, key: K, future: asyncio.Future[None]) -> None:
        """``future`` stops waiting (its request ended first)."""
        futures = self._waiting.get(key)
        if futures is not None:
            futures.discard(future)
            if not futures:
                del self._waiting[key]

    async def wait(self, key: K, timeout: float) -> None:
        """Until the next ``wake(key)``, at most ``timeout`` seconds."""
        future = self.add(key)
        try:
            await asyncio.wait({future}, timeout=max(timeout, 0.0))
        finally:
            self.discard(key, future)

    def wake(self, key: K) -> None:
        for future in self._waiting.pop(key, ()):
            if not future.done():
                future.set_result(None)

    def wake_all(self) -> None:
        """Every waiter looks again (the service stops, or missed notices are re-read)."""
        waiting, self._waiting = self._waiting, {}
        for futures in waiting.values():
            for future in futures:
                if not future.done():
                    future.set_result(None)

    def __len__(self) -> int:
        return sum(len(futures) for futures in self._waiting.values())


class InboxStreams:
    """The inbox's live streams, per account."""

    __slots__ = ("_queues",)

    def __init__(self) -> None:
        self._queues: dict[str, set[asyncio.Queue[InboxChange | None]]] = {}

    def subscribe(
        self, account_id: str, stopping: Callable[[], bool]
    ) -> AsyncIterator[InboxChange]:
        """The account's changes from now on. Registered at once, so nothing between this
        call and the first iteration is lost; it ends when the service stops
        (``stopping()``, ``end_all``). Close the iterator when done."""
        queue: asyncio.Queue[InboxChange | None] = asyncio.Queue(maxsize=SUBSCRIBER_QUEUE)
        queues = self._queues.setdefault(account_id, set())
        queues.add(queue)

        async def changes() -> AsyncIterator[InboxChange]:
            try:
                while not stopping():
                    change = await queue.get()
                    if change is None:  # end_all(): the service is stopping
                        return
                    yield change
            finally:
                queues.discard(queue)

        return changes()

    def notify(self, account_id: str, kind: Any, item_id: str) -> None:
        queues = self._queues.get(account_id)
        if not queues:
            return
        change = InboxChange(account_id=account_id, kind=kind, id=item_id)
        for queue in queues:
            _put_dropping_oldest(queue, change)

    def end_all(self) -> None:
        """Every stream ends (the browser reconnects)."""
        for queues in self._queues.values():
            for queue in queues:
                _put_dropping_oldest(queue, None)


def _put_dropping_oldest(
    queue: asyncio.Queue[InboxChange | None], item: InboxChange | None
) -> None:
    if queue.full():
        with contextlib.suppress(asyncio.QueueEmpty):
            queue.get_nowait()
    queue.put_nowait(item)


class KeyedLocks(Generic[K]):
    """``async with locks.hold(key)``: one holder per key at a time; a key's lock is kept
    only while someone holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[K, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: K) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


# -- the runtime's small objects ---------------------------------------------------
@dataclass
class Lifecycle:
    """Where the engine is in its stop: ``draining`` once ``drain()`` ran (held requests
    answer 503, sends are refused), ``closed`` once ``close()`` did."""

    draining: bool = False
    closed: bool = False


class Carriers:
    """Which provider carries each channel (the sandbox unless a real one took it over),
    and where reserved numbers come from (the sandbox's fictional pool unless a real
    provider supplies them)."""

    def __init__(self, default: Provider) -> None:
        self.default = default
        self.by_channel: dict[str, Provider] = dict.fromkeys(CHANNELS, default)
        self.numbers: NumberSource | None = None

    def use(self, provider: Provider, channels: Iterable[str]) -> None:
        """``provider`` carries ``channels`` from now on (the others keep theirs)."""
        for channel in channels:
            self.by_channel[channel] = provider

    def use_numbers(self, source: NumberSource) -> None:
        """Reserved numbers come from ``source`` (a real provider's) from now on."""
        self.numbers = source


@dataclass(frozen=True)
class HostLookup:
    """How a webhook's host is resolved for the SSRF guard: ``resolve`` (a blocking
    lookup run in a worker thread; None: the loop's ``getaddrinfo``) within ``timeout``
    seconds."""

    resolve: Resolver | None
    timeout: float


class Notices:
    """The live change notices: status long-polls by interaction, delivery followers by
    account, the inbox's live streams; a change made here is published to the other
    replicas through the coordinator."""

    def __init__(self, coordinator: Coordinator, lifecycle: Lifecycle) -> None:
        self._coordinator = coordinator
        self._lifecycle = lifecycle
        self.status: Wakeups[str] = Wakeups()
        self.delivery: Wakeups[str] = Wakeups()
        self.inbox = InboxStreams()

    def notify(self, account_id: str, kind: Any, item_id: str, *, publish: bool = True) -> None:
        """A change for the inbox's live streams, here and (``publish``) on the other
        replicas."""
        self.inbox.notify(account_id, kind, item_id)
        if publish:
            self._coordinator.publish(str(kind), account_id, item_id)

    def changed(self, record: InteractionRecord, *, published: bool = False) -> None:
        """Wakes what waits for a change of ``record``; ``published``: the other
        replicas were told already (by the write itself)."""
        self.status.wake(record.id)
        self.notify(record.account_id, "interaction", record.id, publish=not published)

    def delivered(self, record: DeliveryRecord) -> None:
        """A delivery was recorded (the sandbox's, or a provider's)."""
        self.delivery.wake(record.account_id)
        self.notify(record.account_id, "delivery", record.id)

    def subscribe(self, account_id: str) -> AsyncIterator[InboxChange]:
        """Live change notices for the inbox (server-sent events), ended by the stop."""
        return self.inbox.subscribe(account_id, lambda: self._lifecycle.draining)

    def wake_all(self) -> None:
        """Every status and delivery long-poll looks again."""
        self.status.wake_all()
        self.delivery.wake_all()


@dataclass(frozen=True)
class Runtime:
    """What every role of the engine is built with (see the module docstring)."""

    config: ServiceConfig
    store: Store
    coordinator: Coordinator
    schedule: Schedule
    outbox: Outbox
    metrics: Metrics
    carriers: Carriers
    addresses: AddressValidator
    """How address fields of forms are checked: offline, or a provider over HTTP."""
    lookup: HostLookup
    lifecycle: Lifecycle
    background: BackgroundWork
    notices: Notices
    clock: Callable[[], float] = time.time

    @classmethod
    def open(
        cls,
        config: ServiceConfig,
        *,
        metrics: Metrics,
        provider: Provider | None = None,
        webhook_transport: httpx.AsyncBaseTransport | None = None,
        resolve: Resolver | None = None,
        resolve_timeout: float = RESOLVE_TIMEOUT,
        replicas: Callable[[SharedStore, ServiceConfig], Coordinator],
    ) -> Runtime:
        """Opens the store at ``config.db_path`` (a SQLite file, or a postgresql:// URL
        with the ``postgres`` extra) and what runs on it; ``provider`` replaces the
        built-in sandbox provider (see ``Engine``); ``replicas`` builds the coordinator
        of a store other processes may serve from too (``replicas.ReplicaCoordinator``).
        """
        store = open_store(config.db_path, pool_size=config.db_pool_size)
        # What it agrees on with other processes on the store: one process alone, or
        # replicas sharing a database (their notices, leases, counts).
        shared = shared_store(store)
        coordinator = (
            LocalCoordinator(store, config) if shared is None else replicas(shared, config)
        )
        lifecycle = Lifecycle()
        notices = Notices(coordinator, lifecycle)
        outbox = Outbox(
            store,
            config,
            on_change=lambda account_id, row_id: notices.notify(account_id, "webhook", row_id),
            transport=webhook_transport,
            resolve=resolve,
            resolve_timeout=resolve_timeout,
            metrics=metrics,
        )
        # Every future step (interactions' windows, reminders, escalations, ...): a row
        # with a due time, claimed when due by one replica. Roles register a handler
        # per kind (``schedule.handlers[kind] = ...``) before ``start``.
        schedule = Schedule(
            store,
            owner=coordinator.id,
            handlers={},
            # A dead replica's steps go to the others after the replicas' own lease.
            lease=config.replica_lease,
            horizon=min(5.0, config.replica_lease / 2),
        )
        return cls(
            config=config,
            store=store,
            coordinator=coordinator,
            schedule=schedule,
            outbox=outbox,
            metrics=metrics,
            carriers=Carriers(provider or SandboxProvider(store, notices.delivered)),
            addresses=config.address_validator or build_address_validator(config.address),
            lookup=HostLookup(resolve, resolve_timeout),
            lifecycle=lifecycle,
            background=BackgroundWork("the engine"),
            notices=notices,
        )

    def unavailable(self) -> ServiceUnavailable:
        """What a request gets while the engine stops: 503 ``unavailable`` with
        ``Retry-After`` (the client retries with its key and re-attaches)."""
        return ServiceUnavailable(retry_after=self.config.unavailable_retry_after)


# -- small helpers the roles share -----------------------------------------------
def _timestamp(unix: float) -> datetime:
    return datetime.fromtimestamp(unix, tz=timezone.utc)


def _iso(unix: float | None) -> str | None:
    if unix is None:
        return None
    return _timestamp(unix).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _metadata(record: Any) -> dict[str, str] | None:
    """The ``metadata`` an interaction was sent with (None: none)."""
    if record is None:
        return None
    value = record.request.get("metadata")
    return dict(value) if value else None


def _event_dict(event: Any) -> dict[str, Any]:
    data: dict[str, Any] = event.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data


def _settle(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _mask(value: str) -> str:
    return f"{value[:4]}…" if len(value) > 4 else "…"


def wire_json(data: Any) -> bytes:
    """A JSON body as the service writes it (compact, UTF-8): what an HTTP answer carries
    and what an idempotency key stores of it."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
