"""The engine's state and what every part of it uses: its start, drain and stop; the
account checks of a request (suspension, the spam guard, the rate limit, through the
``Coordinator``); the live notices (``live``); the interaction's status and form views.

No account or key is cached: every request reads its account from the store. The parts
built on this one are listed on ``core.EngineCore``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Coroutine, Iterable
from typing import Any

import httpx

from humanwire.types import (
    CallResponse,
    Form,
    InteractionStatus,
    event_adapter,
)
from humanwire.types.forms import STORED_FORM

from ..config import (
    ServiceConfig,
)
from ..delivery import (
    NumberSource,
    Provider,
    SandboxProvider,
)
from ..errors import (
    AccountSuspended,
    NotFound,
    ServiceUnavailable,
    Unauthorized,
)
from ..forms.address import AddressValidator
from ..forms.address_providers import build_address_validator
from ..literals import CALL_OUTCOME
from ..outbox import RESOLVE_TIMEOUT, Outbox, Resolver
from ..schedule import Schedule
from ..store import Store, open_store
from ..store.records import WINDOW_STEP, DeliveryRecord, InteractionOutcome, InteractionRecord
from ..telemetry import Metrics, new_metrics
from ._common import (
    _FORM_KEYS,
    CALL_NOT_ANSWERED,
    DELETED_MESSAGE,
    SPAM_MESSAGE,
    SUSPENDED_MESSAGE,
    Account,
    InboxChange,
    OutcomeCollector,
    _metadata,
    _timestamp,
)
from .audit_checkpoints import AuditCheckpoints
from .context import IdempotentRun, Requesters
from .coordination import Coordinator, coordinator_for
from .holds import Holds
from .live import InboxStreams, KeyedLocks, Wakeups
from .windows import Windows

logger = logging.getLogger("humanwire.engine")

CHANNELS = ("sms", "whatsapp", "slack", "call", "email")
UNDELIVERED: InteractionOutcome = "undelivered"
"""The outcome of an interaction the provider could not deliver."""
EARLY_STATUS = "early-delivery-status"
EARLY_STATUS_TTL = 24 * 3600.0
STATUS_RANK = {"queued": 1, "sent": 2, "delivered": 3, "read": 4, "undelivered": 5, "failed": 5}


OUTCOME_TTL = 25 * 3600.0
"""Outcome events are kept at least 24 hours (docs/design.md), pruned after 25."""
OUTCOME_PRUNE_EVERY = 1000
WINDOW_MOVED = 0.001
"""Seconds an interaction's last window may be past its step's due time before the step
counts as armed for an older deadline (and moves) rather than due."""


class EngineState:
    """The engine's state, its start and stop, and what every part uses (see
    ``core``). ``Deadlines`` adds the window timers (``_windows``)."""

    _windows: Windows

    @staticmethod
    def _call_response(record: InteractionRecord) -> CallResponse:
        assert record.result is not None
        payload = record.result["payload"]
        return CallResponse(
            interaction_id=record.id,
            status="ended",
            outcome=CALL_OUTCOME.optional(record.outcome),  # an answered call's
            summary=payload["summary"],
            from_=payload["from"],
            to=payload["to"],
            error=CALL_NOT_ANSWERED if record.outcome == "no_answer" else None,
            delivery_status=record.delivery_status,
            metadata=_metadata(record),
        )

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
        # A SQLite file, or a postgresql:// URL (the ``postgres`` extra).
        self.store: Store = open_store(config.db_path, pool_size=config.db_pool_size)
        self.provider: Provider = provider or SandboxProvider(self.store, self._delivered)
        # Which provider carries each channel: the sandbox unless a real one took it over
        # (``use_provider``; the app wires the configured ones).
        self.providers: dict[str, Provider] = dict.fromkeys(CHANNELS, self.provider)
        # Where reserved numbers come from: the sandbox's fictional pool unless a real
        # provider supplies them (``use_numbers``).
        self.number_source: NumberSource | None = None
        # How address fields of forms are checked: offline, or a provider over HTTP.
        self.addresses: AddressValidator = config.address_validator or build_address_validator(
            config.address
        )
        self._resolve = resolve
        self._resolve_timeout = resolve_timeout
        # This service's own metrics (a registry per engine: several share a process).
        self.metrics: Metrics = new_metrics(self)
        self.outbox = Outbox(
            self.store,
            config,
            on_change=lambda account_id, row_id: self._notify(account_id, "webhook", row_id),
            transport=webhook_transport,
            resolve=resolve,
            resolve_timeout=resolve_timeout,
            metrics=self.metrics,
        )
        # What it agrees on with other processes on the store (``coordination``): one
        # process alone, or replicas sharing a database (their notices, leases, counts).
        self.coordinator: Coordinator = coordinator_for(self.store, config)
        # Every future step (interactions' windows, reminders, escalations, ...): a row
        # with a due time, claimed when due by one replica. Parts of the engine register
        # a handler per kind (``schedule.handlers[kind] = ...``) before ``start``.
        self.schedule = Schedule(
            self.store,
            owner=self.coordinator.id,
            handlers={},
            # A dead replica's steps go to the others after the replicas' own lease.
            lease=config.replica_lease,
            horizon=min(5.0, config.replica_lease / 2),
        )
        # Signed checkpoints of the accounts' audit heads, with ``[audit] signing_key``.
        self.audit_checkpoints = AuditCheckpoints.configured(
            config, self.store, self.schedule, self.outbox
        )
        self.outbox_depth_read = 0
        """``outbox_depth`` as ``read_outbox_depth`` last found it."""
        # No account or key is cached here: every request reads its account from the
        # store, so a suspension, reinstatement, key rotation or deletion (``humanwire
        # accounts``, from any process) holds from the next request on every replica.
        # Accounts the spam guard suspended here: sends already past authentication
        # are refused too. Only a hint, checked against the store (a reinstatement from
        # another process must hold at once).
        self._suspended: set[str] = set()
        # The requests held here, each with its waitTime timer (``holds``).
        self._holds = Holds()
        # Texts matched by their number pair, taken one at a time per pair (``_receive``).
        self._number_pairs: KeyedLocks[tuple[str, str, str]] = KeyedLocks()
        # Status long-polls (by interaction) and delivery followers (by account), woken
        # by the change they wait for; the inbox's live streams.
        self._status_wakeups: Wakeups[str] = Wakeups()
        self._delivery_wakeups: Wakeups[str] = Wakeups()
        self._inbox_streams = InboxStreams()
        self._idempotent_runs: dict[
            tuple[str, str],
            tuple[str, asyncio.Task[tuple[int, bytes]], Requesters, IdempotentRun],
        ] = {}
        # Keys whose stored result and link one request is reading (``idempotent``).
        self._idempotent_lookups: dict[tuple[str, str], asyncio.Future[None]] = {}
        # GET /events long-polls by account, and the holds of respond-async sends.
        self._outcome_wakeups: Wakeups[str] = Wakeups()
        self._outcome_collectors: dict[str, set[OutcomeCollector]] = {}
        """Per account: its stream readers' collectors of what was appended."""
        self._outcomes_appended = 0
        # The tasks of requests answered 202 whose hold goes on (kept from the collector).
        self._async_holds: set[asyncio.Task[Any]] = set()
        # Deadlines and notices handled beside the requests (``_spawn``).
        self._background: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._draining = False
        self._closed = False

    async def start(self) -> None:
        """Prunes what expired, joins the replicas, starts the webhook outbox worker and
        the schedule (which runs the windows falling due). Must be called from the event
        loop that serves requests."""
        self._loop = asyncio.get_running_loop()
        self._windows.start(self._loop)
        now = time.time()
        await self.store.delete_idempotency_before(now - self.config.idempotency_ttl)
        # Statuses of refs never stored (another app's messages on the same account).
        await self.store.delete_provider_state_before(EARLY_STATUS, now - EARLY_STATUS_TTL)
        await self.store.delete_outcomes_before(now - OUTCOME_TTL)
        await self.store.prune_inbox_sessions(now, now - self.config.inbox_session_idle)
        # Replicas: sweeps the holds of replicas that died (the windows are the schedule's).
        await self.coordinator.start()
        await self.outbox.start()
        if self.audit_checkpoints is not None:
            await self.audit_checkpoints.start()
        # Windows that passed while the service (or the replica holding them) was down
        # are claimed by the first tick and end.
        self.schedule.start()

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
        (their steps stay in the store: those this replica holds in memory are given up
        at ``close`` to the other replicas or the next start), so the client's
        retry with the same ``Idempotency-Key`` re-attaches after the restart. A response
        that reached a held request before this still answers it. Live inbox streams
        end (the browser reconnects). Idempotent; must run on the engine's loop."""
        self._draining = True
        # Each woken coroutine sees ``draining`` and raises (see ``_hold`` and the polls).
        for hold in self._holds:
            hold.drain()
        self._wake_long_polls()
        self._inbox_streams.end_all()

    def _wake_long_polls(self) -> None:
        """Every status, delivery and outcome long-poll looks again."""
        self._status_wakeups.wake_all()
        self._delivery_wakeups.wake_all()
        self._outcome_wakeups.wake_all()

    def _unavailable(self) -> ServiceUnavailable:
        return ServiceUnavailable(retry_after=self.config.unavailable_retry_after)

    async def close(self) -> None:
        if self._closed:
            return
        # A host that did not drain first: what is still held is answered, not cancelled.
        self.drain()
        held = [task for _fingerprint, task, _requesters, _state in self._idempotent_runs.values()]
        if held:  # the woken requests answer 503 before what is left is cancelled
            await asyncio.wait(held, timeout=1.0)
        else:
            await asyncio.sleep(0)
        self._closed = True
        self._windows.close()
        self._holds.stop_timers()
        background = set(self._background)
        if background:  # deadlines and notices under way finish their writes
            await asyncio.wait(background, timeout=5.0)
            for work in background:
                work.cancel()
        self._holds.clear()
        runs = [task for _fingerprint, task, _requesters, _state in self._idempotent_runs.values()]
        for task in runs:
            task.cancel()
        for task in runs:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.schedule.close()
        await self.outbox.close()
        await self.addresses.aclose()
        await self.coordinator.close()
        await self.store.close()

    @property
    def held_waits(self) -> int:
        """Requests held open right now (waiting for a reply, a submission, a call end),
        counted once their delivery went out."""
        return self._holds.started

    @property
    def open_windows(self) -> int:
        """Window timers in this process's memory: held requests' waits, window steps
        due within the schedule's horizon, deadlines to run again. An open window no
        request holds is a row of the schedule, not counted here until it falls due."""
        return self._holds.timed() + len(self._windows) + self.schedule.held(WINDOW_STEP)

    async def outbox_depth(self) -> int:
        """Webhook deliveries waiting in the outbox (0 once the store is closed)."""
        return 0 if self._closed else await self.store.outbox_depth()

    async def read_outbox_depth(self) -> None:
        """Reads ``outbox_depth`` into ``outbox_depth_read``, for ``/metrics`` (whose
        collector cannot await)."""
        self.outbox_depth_read = await self.outbox_depth()

    async def _account(self, account_id: str) -> Account:
        """The account of a record found by something other than its key (a number, a
        provider's callback)."""
        record = await self.store.get_account(account_id)
        if record is None:
            raise NotFound(f"no account {account_id!r}")
        return Account(id=record.id, name=record.name, suspended=record.suspended)

    async def _require_active(self, account: Account) -> None:
        suspended = account.suspended
        if not suspended and account.id in self._suspended:
            current = await self.store.get_account(account.id)
            if current is None:
                raise Unauthorized(DELETED_MESSAGE)
            suspended = current.suspended
            if not suspended:
                self._suspended.discard(account.id)  # reinstated (by any process)
        if suspended:
            # Counts from before the suspension must not suspend it again once reinstated.
            self.coordinator.forget_spam_here(account.id)
            raise AccountSuspended(SUSPENDED_MESSAGE)

    async def _check_send(self, account: Account, text: str, to: str) -> None:
        """The spam guard, run on every send before anything goes out (counted in the
        database when replicas share it)."""
        await self._require_active(account)
        if await self.coordinator.spam_hit(account.id, text, to):
            await self.store.set_account_suspended(account.id, True)
            self._suspended.add(account.id)
            await self.coordinator.forget_spam(account.id)
            raise AccountSuspended(SPAM_MESSAGE)

    async def _rate_hit(self, account_id: str) -> float | None:
        """Counts a request against the rate limit: None when allowed, else seconds to
        wait (counted in the database when replicas share it)."""
        return await self.coordinator.rate_hit(account_id)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Runs ``work`` beside the requests (a deadline, a notice's reads); kept until
        it ends, its failure logged, and awaited (or cancelled) by ``close``."""
        assert self._loop is not None
        task = self._loop.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background_done)

    def _background_done(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("background work of the engine failed", exc_info=task.exception())

    def use_numbers(self, source: NumberSource) -> None:
        """Reserved numbers come from ``source`` (a real provider's) from now on."""
        self.number_source = source

    def use_provider(self, provider: Provider, channels: Iterable[str]) -> None:
        """``provider`` carries ``channels`` from now on (the others keep theirs)."""
        for channel in channels:
            self.providers[channel] = provider

    async def _current(self, interaction_id: str) -> InteractionRecord:
        record = await self.store.get_interaction(interaction_id)
        if record is None:
            # Interactions go only with their account (``humanwire accounts delete``).
            raise Unauthorized(DELETED_MESSAGE)
        return record

    async def _interaction_of(
        self, account: Account, interaction_id: str, named: InteractionRecord | None = None
    ) -> InteractionRecord:
        """The account's interaction (``NotFound`` for none or another's). ``named``: the
        interaction as read with the key (``authenticate_request``); read here when None."""
        record = named if named is not None and named.id == interaction_id else None
        if record is None:
            record = await self.store.get_interaction(interaction_id)
        if record is None or record.account_id != account.id:
            raise NotFound(f"no interaction {interaction_id!r}", field="interactionId")
        return record

    @staticmethod
    def _status(record: InteractionRecord) -> InteractionStatus:
        return InteractionStatus(
            interaction_id=record.id,
            status=record.status,
            created_at=_timestamp(record.created_at),
            kind=record.kind,
            channel=record.channel,
            result=event_adapter.validate_python(record.result) if record.result else None,
            delivery_status=record.delivery_status,
            metadata=_metadata(record),
        )

    @staticmethod
    def _form_of(record: InteractionRecord) -> Form:
        """The stored form, parsed again. Its windows and patterns were checked when it
        was sent; the windows are put back as stored (the engine itself accepts
        sub-second windows), the patterns not checked again (``STORED_FORM``)."""
        data = {k: v for k, v in record.request.items() if k in _FORM_KEYS}
        windows = {"wait_time": data.pop("waitTime", None)}
        windows["follow_up_time"] = data.pop("followUpTime", None)
        form = Form.model_validate({**data, "followUpTime": 1}, context={STORED_FORM: True})
        return form.model_copy(update=windows)

    def form_of(self, record: InteractionRecord) -> Form:
        """The form ``record`` sent (providers render it their own way)."""
        return self._form_of(record)

    def reply_link_url(self, token: str) -> str:
        return f"{self.config.public_url.rstrip('/')}/r/{token}"

    def form_url(self, token: str) -> str:
        return f"{self.config.public_url.rstrip('/')}/f/{token}"

    def _delivered(self, record: DeliveryRecord) -> None:
        self._delivery_wakeups.wake(record.account_id)
        self._notify(record.account_id, "delivery", record.id)

    def subscribe(self, account: Account) -> AsyncIterator[InboxChange]:
        """Live change notices for the inbox (server-sent events). Registered at once, so
        nothing between this call and the first iteration is lost; a slow reader loses
        the oldest notices, never blocks the engine. Close the iterator when done."""
        return self._inbox_streams.subscribe(account.id, lambda: self._draining)

    def _notify(self, account_id: str, kind: Any, item_id: str, *, publish: bool = True) -> None:
        """A change for the inbox's live streams, here and (``publish``) on the other
        replicas."""
        self._inbox_streams.notify(account_id, kind, item_id)
        if publish:
            self.coordinator.publish(str(kind), account_id, item_id)

    def _changed(self, record: InteractionRecord, *, published: bool = False) -> None:
        """Wakes what waits for a change of ``record``; ``published``: the other
        replicas were told already (by the write itself)."""
        self._status_wakeups.wake(record.id)
        self._notify(record.account_id, "interaction", record.id, publish=not published)
