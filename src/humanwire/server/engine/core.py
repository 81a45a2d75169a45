"""The waiting core of the engine: the engine's state, its start and stop, the window
deadlines, the held requests and what wakes them, the spam and suspension checks of a send,
and the live change notices. Every other part of the engine builds on ``EngineCore``.

Waiting is event-driven: each held request is a ``Hold`` (``holds``: its future, its
state, its hold in the store) registered in ``Holds``; the reply, submission or call end
answers it. A held request's ``waitTime`` is a timer of its own on the replica holding it
(it expires the hold with "no response"). An interaction's last window (the end of its
follow-up window, or of its wait when it has none) is a step of the schedule
(``WINDOW_STEP``, ``docs/explanation/schedule.md``), armed in the statement that creates
the interaction and run, once due, by whichever replica claimed it: an open window no
request holds costs no memory and no work until it falls due, and survives a restart or
the death of the replica that created it. No polling loops and no task per wait."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import logging
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable
from typing import Any

import httpx

from humanwire.types import (
    CallResponse,
    Form,
    InteractionStatus,
    event_adapter,
)
from humanwire.types.forms import STORED_FORM
from humanwire.types.interactions import InteractionChannel, InteractionKind

from ..config import (
    ServiceConfig,
)
from ..delivery import (
    CallSpec,
    NumberSource,
    Outbound,
    Provider,
    ProviderFailure,
    RecipientUnreachable,
    SandboxProvider,
    WhatsAppTemplate,
)
from ..errors import (
    AccountSuspended,
    Conflict,
    InvalidToNumber,
    NotFound,
    ProviderError,
    ServiceUnavailable,
    Unauthorized,
)
from ..forms.address import AddressValidator
from ..forms.address_providers import build_address_validator
from ..limits import RateLimiter, SpamGuard, fingerprint
from ..literals import CALL_OUTCOME, DELIVERY_CHANNEL, DELIVERY_KIND, DELIVERY_STATUS
from ..outbox import RESOLVE_TIMEOUT, Outbox, Resolver
from ..replicas import Replicas
from ..schedule import Schedule
from ..store import Store, open_store
from ..store.base import (
    INTERACTION_OUTCOME,
    WINDOW_STEP,
    DeliveryRecord,
    Duplicate,
    IdempotencyLinkRecord,
    IdempotencyRecord,
    InboundRecord,
    InteractionOutcome,
    InteractionRecord,
    SharedStore,
    StepRecord,
    shared_store,
)
from ..store.commits import StoreUnavailable
from ..telemetry import Metrics, log_event, mask_address, new_metrics, note_interaction
from ._common import (
    _FORM_KEYS,
    _SUBSCRIBER_QUEUE,
    CALL_NOT_ANSWERED,
    DELETED_MESSAGE,
    SPAM_MESSAGE,
    SUSPENDED_MESSAGE,
    Account,
    InboxChange,
    OutcomeCollector,
    OutcomeHandoff,
    _metadata,
    _settle,
    _timestamp,
)
from .context import HELD_TO_THE_END, IdempotentRun, Requesters, SendContext
from .holds import Hold, Holds, HoldState, Release
from .windows import Phase, Windows

logger = logging.getLogger("humanwire.engine")

CHANNELS = ("sms", "whatsapp", "slack", "call", "email")
UNDELIVERED: InteractionOutcome = "undelivered"
"""The outcome of an interaction the provider could not deliver."""
_EARLY_STATUS = "early-delivery-status"
_EARLY_STATUS_TTL = 24 * 3600.0
_STATUS_RANK = {"queued": 1, "sent": 2, "delivered": 3, "read": 4, "undelivered": 5, "failed": 5}


OUTCOME_TTL = 25 * 3600.0
"""Outcome events are kept at least 24 hours (docs/design.md), pruned after 25."""
OUTCOME_PRUNE_EVERY = 1000
_WINDOW_MOVED = 0.001
"""Seconds an interaction's last window may be past its step's due time before the step
counts as armed for an older deadline (and moves) rather than due."""


class EngineCore:
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
        self.store: Store = open_store(config.db_path)
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
        # Several replicas on one database: notices, leases, limits counted there.
        self.shared: SharedStore | None = shared_store(self.store)
        self.replicas: Replicas | None = None
        if self.shared is not None:
            self.replicas = Replicas(
                self.shared,
                lease=config.replica_lease,
                on_notice=self._on_notice,
                on_swept=self._swept,
                on_tick=self._on_tick,
                on_resync=self._resync,
            )
        # Every future step (interactions' windows, reminders, escalations, ...): a row
        # with a due time, claimed when due by one replica. Parts of the engine register
        # a handler per kind (``schedule.handlers[kind] = ...``) before ``start``.
        self.schedule = Schedule(
            self.store,
            owner=self.replicas.id if self.replicas is not None else uuid.uuid4().hex[:16],
            handlers={},
            # A dead replica's steps go to the others after the replicas' own lease.
            lease=config.replica_lease,
            horizon=min(5.0, config.replica_lease / 2),
        )
        self.schedule.handlers[WINDOW_STEP] = self._window_due
        self._ticks = 0
        self.outbox_depth_read = 0
        """``outbox_depth`` as ``read_outbox_depth`` last found it."""
        self._rate = RateLimiter(config.rate_limit_requests, config.rate_limit_window)
        # No account or key is cached here: every request reads its account from the
        # store, so a suspension, reinstatement, key rotation or deletion (``humanwire
        # accounts``, from any process) holds from the next request on every replica.
        self._spam = SpamGuard(config.spam_recipients, config.spam_window)
        # Accounts the spam guard suspended here: sends already past authentication
        # are refused too. Only a hint, checked against the store (a reinstatement from
        # another process must hold at once).
        self._suspended: set[str] = set()
        # The requests held here (``holds``) and their waitTime timers; the deadlines
        # run again after the store could not take what they did (``_retry_deadline``).
        self._holds = Holds()
        self._wait_timers: dict[Hold, asyncio.TimerHandle] = {}
        self._deadlines_running: dict[tuple[str, Phase], asyncio.Future[bool]] = {}
        self._windows = Windows(self._on_deadline)
        # Status long-polls and delivery followers, woken by the change they wait for.
        self._watchers: dict[str, list[asyncio.Future[None]]] = {}
        self._delivery_waiters: dict[str, list[asyncio.Future[None]]] = {}
        self._subscribers: dict[str, set[asyncio.Queue[InboxChange | None]]] = {}
        self._idempotent_runs: dict[
            tuple[str, str],
            tuple[str, asyncio.Task[tuple[int, bytes]], Requesters, IdempotentRun],
        ] = {}
        # Keys whose stored result and link one request is reading (``idempotent``).
        self._idempotent_lookups: dict[tuple[str, str], asyncio.Future[None]] = {}
        # GET /events long-polls by account, and the holds of respond-async sends.
        self._outcome_waiters: dict[str, set[asyncio.Future[None]]] = {}
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
        await self.store.delete_provider_state_before(_EARLY_STATUS, now - _EARLY_STATUS_TTL)
        await self.store.delete_outcomes_before(now - OUTCOME_TTL)
        await self.store.prune_inbox_sessions(now, now - self.config.inbox_session_idle)
        if self.replicas is not None:
            # Sweeps the holds of replicas that died (the windows are the schedule's).
            await self.replicas.start()
        await self.outbox.start()
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
        futures: list[Iterable[asyncio.Future[Any]]] = [
            *self._watchers.values(),
            *self._delivery_waiters.values(),
            *self._outcome_waiters.values(),
        ]
        for group in futures:
            for future in group:
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
        held = [task for _fingerprint, task, _requesters, _state in self._idempotent_runs.values()]
        if held:  # the woken requests answer 503 before what is left is cancelled
            await asyncio.wait(held, timeout=1.0)
        else:
            await asyncio.sleep(0)
        self._closed = True
        self._windows.close()
        for timer in self._wait_timers.values():
            timer.cancel()
        self._wait_timers.clear()
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
        if self.replicas is not None:
            await self.replicas.close()
        await self.store.close()

    @property
    def held_waits(self) -> int:
        """Requests held open right now (waiting for a reply, a submission, a call end)."""
        return len(self._holds)

    @property
    def open_windows(self) -> int:
        """Window timers in this process's memory: held requests' waits, window steps
        due within the schedule's horizon, deadlines to run again. An open window no
        request holds is a row of the schedule, not counted here until it falls due."""
        return len(self._wait_timers) + len(self._windows) + self.schedule.held(WINDOW_STEP)

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
            self._spam.forget(account.id)
            raise AccountSuspended(SUSPENDED_MESSAGE)

    async def _check_send(self, account: Account, text: str, to: str) -> None:
        """The spam guard, run on every send before anything goes out (counted in the
        database when replicas share it)."""
        await self._require_active(account)
        if self.shared is not None:
            recipients = await self.shared.spam_hit(
                account.id, fingerprint(text), to, time.time(), self.config.spam_window
            )
            spam = recipients >= self.config.spam_recipients
        else:
            spam = self._spam.would_be_spam(account.id, text, to, time.monotonic())
        if spam:
            await self.store.set_account_suspended(account.id, True)
            self._suspended.add(account.id)
            self._spam.forget(account.id)
            if self.shared is not None:
                await self.shared.forget_spam(account.id)
            raise AccountSuspended(SPAM_MESSAGE)

    async def _rate_hit(self, account_id: str) -> float | None:
        """Counts a request against the rate limit: None when allowed, else seconds to
        wait (counted in the database when replicas share it)."""
        limit, window = self.config.rate_limit_requests, self.config.rate_limit_window
        if self.shared is not None:
            return await self.shared.rate_hit(account_id, time.time(), limit, window)
        return self._rate.hit(account_id, time.monotonic())

    # -- the waiting core -----------------------------------------------------------
    def _arm(self, interaction_id: str, at: float, phase: Phase) -> None:
        """A deadline run again in memory (``_retry_deadline``)."""
        self._windows.arm(interaction_id, at, phase)

    def _disarm(self, interaction_id: str) -> None:
        """The interaction ended: nothing of its windows is left in memory (the store
        dropped its step with the end)."""
        self._windows.disarm(interaction_id)
        self.schedule.forget(WINDOW_STEP, interaction_id)

    def _wait_passed(self, hold: Hold) -> None:
        """A held request's ``waitTime`` passed (its timer, on the replica holding it)."""
        self._wait_timers.pop(hold, None)
        if self._holds.get(hold.interaction_id) is hold:
            self._on_deadline(hold.interaction_id, "wait")

    async def _window_due(self, step: StepRecord) -> None:
        """The schedule's handler of ``WINDOW_STEP``: the interaction's last window
        closes, if it really did (steps run at least once: read it first). Raises when the
        store could not take the end (the schedule runs it again)."""
        record = await self.store.get_interaction(step.key)
        if record is None or record.status != "pending" or record.kind == "call":
            if record is None and (hold := self._holds.get(step.key)) is not None:
                hold.expire()  # its account was deleted
            return
        close = record.close_deadline
        if close is not None and close > step.due_at + _WINDOW_MOVED:
            # Its window is later than this step was armed for: the step moves there.
            # (Compared with the step's time, not this replica's clock: a clock a little
            # behind the one that armed it must not arm it again at the same time.)
            await self.schedule.arm(WINDOW_STEP, record.id, close, account_id=record.account_id)
            return
        # Without a follow-up window, the last window is the wait: it passes as the
        # held request's own timer would have it (``interaction.wait_expired``).
        phase: Phase = "close" if record.follow_up_deadline is not None else "wait"
        await self._deadline_passed(record.id, phase, record)
        # What it wrote (the end, its outcome) may yet be rolled back with its batch.
        self.store.committed().on_rollback(
            functools.partial(self._retry_deadline, record.id, phase)
        )

    def _on_deadline(self, interaction_id: str, phase: Phase) -> None:
        """A window's timer fired: what it does reads and writes the store, so it runs
        as a task of its own (the timer callback cannot await)."""
        if not self._closed:
            self._spawn(self._deadline(interaction_id, phase))

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

    async def _deadline(self, interaction_id: str, phase: Phase) -> None:
        if self._closed:
            return
        retry = functools.partial(self._retry_deadline, interaction_id, phase)
        try:
            await self._deadline_passed(interaction_id, phase)
        except StoreUnavailable:
            retry()
            return
        # What it wrote (the end, its outcome) may yet be rolled back with its batch.
        self.store.committed().on_rollback(retry)

    def _retry_deadline(self, interaction_id: str, phase: Phase) -> None:
        """The database could not store what a deadline did: it runs again shortly (the
        window stays open in the store until then), so no restart is needed."""
        if not self._closed and not self._windows.armed(interaction_id):
            at = time.time() + self.config.unavailable_retry_after
            self._arm(interaction_id, at, phase)

    async def _deadline_passed(
        self, interaction_id: str, phase: Phase, record: InteractionRecord | None = None
    ) -> None:
        """What a passed deadline does. The held request's wait timer and the window's
        step may fall due together (a wait without a follow-up): the second waits for
        the first here and does it again only if the first failed."""
        running = self._deadlines_running.get((interaction_id, phase))
        if running is not None and await asyncio.shield(running):
            return
        done = asyncio.get_running_loop().create_future()
        self._deadlines_running[(interaction_id, phase)] = done
        ok = False
        try:
            await self._deadline_passed_now(interaction_id, phase, record)
            ok = True
        finally:
            if self._deadlines_running.get((interaction_id, phase)) is done:
                del self._deadlines_running[(interaction_id, phase)]
            done.set_result(ok)

    async def _deadline_passed_now(
        self, interaction_id: str, phase: Phase, record: InteractionRecord | None
    ) -> None:
        if record is None:
            record = await self.store.get_interaction(interaction_id)
        hold = self._holds.get(interaction_id)
        if record is None:
            # Its account was deleted: a request held for it ends now (401, ``_current``).
            if hold is not None:
                hold.expire()
            return
        if record.status != "pending":
            return
        if phase == "wait":
            log_event(
                logger,
                "interaction.wait_expired",
                interaction_id=interaction_id,
                account_id=record.account_id,
                held=hold is not None,
                follow_up=record.follow_up_deadline is not None,
            )
            if record.follow_up_deadline is not None:
                # The follow-up window's end is the interaction's step (armed with it).
                if hold is not None:
                    hold.expire()
                return
        await self._end(record)
        if hold is not None:
            # After the end is stored (an awaited write): the request it wakes reads
            # the interaction ended, as when the deadline ran without a pause.
            hold.expire()

    async def _end(
        self, record: InteractionRecord, outcome: InteractionOutcome | None = None
    ) -> None:
        """Ends an interaction without a response (its last window closed)."""
        self._disarm(record.id)
        if await self.store.end_interaction(record.id, time.time(), outcome=outcome):
            hold = self._holds.get(record.id)
            if hold is not None:
                hold.expire()
            label = outcome or "no_response"
            self.metrics.ended(record.kind, record.channel, label)
            log_event(
                logger,
                "interaction.expired" if outcome is None else "interaction.ended",
                interaction_id=record.id,
                account_id=record.account_id,
                kind=record.kind,
                channel=record.channel,
                outcome=label,
            )
            await self._ended_outcome(record, None, outcome)
            self._changed(record)

    async def _answer(
        self,
        record: InteractionRecord,
        event: dict[str, Any],
        *,
        outcome: InteractionOutcome | None = None,
        always_emit: bool = False,
        inbound: InboundRecord | None = None,
    ) -> InteractionRecord | None:
        """Ends ``record`` with its response ``event``: the held request gets it, else
        (or with ``always_emit``) it goes to the webhooks. None if it had ended already.
        ``inbound``, the text that answered (linked to ``record``), is stored and
        announced too: with the end, or without the link if it had ended already."""
        now = time.time()
        holder: str | None = None
        published = stored = False
        reported: tuple[int, int] | None = None
        report = self._ended_report(record, event, outcome)
        hold = self._holds.waiting(record.id)
        handed_over = hold is not None
        if self.shared is not None:
            # A request held here takes the answer now: its hold is let go in the same
            # statement (not in one more when it wakes, ``_let_go``).
            release = self.replicas.id if handed_over and self.replicas is not None else None
            if self.replicas is not None:
                # The end, its interaction.ended outcome and their notice in one
                # transaction: a request held on another replica is answered, and the
                # outcome streams there are handed the event, as soon as it commits.
                published = True
                done, holder, reported = await self.shared.end_and_report(
                    record.id,
                    record.account_id,
                    now,
                    event,
                    outcome,
                    report,
                    self.replicas.id,
                    release=release,
                    inbound=inbound,
                )
                stored = inbound is not None  # linked if it ended, named in its notice
            else:
                done, holder = await self.shared.end_held_interaction(
                    record.id, now, result=event, outcome=outcome, release=release
                )
            if done and release is not None and hold is not None:
                hold.let_go()  # with the end, in the same statement
        else:
            done = await self.store.end_interaction(record.id, now, result=event, outcome=outcome)
        if inbound is not None and not stored:
            if not done:
                inbound = dataclasses.replace(inbound, interaction_id=None)
            await self.store.insert_inbound(inbound)
        if not done:
            if inbound is not None:
                self._notify(inbound.account_id, "inbound", inbound.id)
            return None
        self._disarm(record.id)
        ended = dataclasses.replace(
            record, status="ended", result=event, outcome=outcome, ended_at=now
        )
        if hold is not None:
            hold.answer(ended)
        # With replicas, a send held when it ended is its holder's to hand over: another
        # replica's gets it from the notice ``_changed`` publishes; this one's, whose
        # hold is just ending, takes it when it lets go (``_let_go``).
        webhook = always_emit or (not handed_over and holder is None)
        if webhook:
            await self.outbox.emit(record.account_id, event, record.id)
        seconds = now - record.created_at
        self.metrics.ended(record.kind, record.channel, outcome or "answered")
        if outcome != "no_answer":
            self.metrics.answered(record.kind, record.channel, seconds)
        log_event(
            logger,
            "interaction.answered",
            interaction_id=record.id,
            account_id=record.account_id,
            kind=record.kind,
            channel=record.channel,
            outcome=outcome or "answered",
            after_s=round(seconds, 3),
            handed_to="held_request" if handed_over else "webhooks" if webhook else "holder",
        )
        if reported is not None:
            seq, after = reported
            await self._outcome_stored(record.account_id, OutcomeHandoff(after, seq, report), now)
        else:
            await self.append_outcome(record.account_id, record.id, report)
        self._changed(record, published=published)
        if inbound is not None:
            self._notify(inbound.account_id, "inbound", inbound.id, publish=not published)
        return ended

    # -- the outcome stream (GET /events) -------------------------------------------
    async def _ended_outcome(
        self, record: InteractionRecord, event: dict[str, Any] | None, outcome: str | None
    ) -> None:
        await self.append_outcome(
            record.account_id, record.id, self._ended_report(record, event, outcome)
        )

    @staticmethod
    def _ended_report(
        record: InteractionRecord, event: dict[str, Any] | None, outcome: str | None
    ) -> dict[str, Any]:
        """The ``interaction.ended`` outcome event of ``record``."""
        return {
            "interactionId": record.id,
            "eventType": "interaction.ended",
            "result": event,
            "responded": event is not None and outcome != "no_answer",
            "metadata": _metadata(record),
        }

    async def append_outcome(
        self,
        account_id: str,
        interaction_id: str,
        body: dict[str, Any],
        *,
        idempotency: IdempotencyRecord | None = None,
        release: bool = False,
    ) -> int:
        """Stores an outcome event (with ``idempotency``, the result of the send it
        reports; with ``release``, this replica's hold on the interaction let go) and
        wakes the account's ``GET /events`` readers, here and on the other replicas
        (whose notice the write itself publishes)."""
        now = time.time()
        if self.shared is not None and self.replicas is not None:
            seq, after = await self.shared.append_published_outcome(
                account_id,
                interaction_id,
                body,
                now,
                self.replicas.id,
                idempotency=idempotency,
                release=release,
            )
        else:
            seq, after = await self.store.append_outcome(
                account_id, interaction_id, body, now, idempotency=idempotency
            )
        await self._outcome_stored(account_id, OutcomeHandoff(after, seq, body), now)
        return seq

    async def _outcome_stored(self, account_id: str, handoff: OutcomeHandoff, now: float) -> None:
        self._outcome_heard(account_id, handoff)
        self._outcomes_appended += 1
        if self._outcomes_appended % OUTCOME_PRUNE_EVERY == 0:
            await self.store.delete_outcomes_before(now - OUTCOME_TTL)

    def _outcome_heard(self, account_id: str, handoff: OutcomeHandoff | None) -> None:
        """An outcome of the account was stored (here or by another replica): handed to
        its stream readers, and its long-polls woken."""
        for collector in self._outcome_collectors.get(account_id, ()):
            collector.add(handoff)
        for waiter in self._outcome_waiters.pop(account_id, set()):
            _settle(waiter, None)

    async def append_wait_ended(
        self,
        hold: Hold,
        status: int,
        body: dict[str, Any],
        *,
        idempotency: IdempotencyRecord | None = None,
    ) -> None:
        """The ``wait.ended`` event of a send answered 202: ``status`` and ``body``, what
        its held request would have answered (and the hold let go, if it is left)."""
        release = hold.release is Release.UNRELEASED
        if release:
            hold.let_go()  # in the same transaction as the event
        interaction_id = hold.interaction_id
        await self.append_outcome(
            hold.record.account_id,
            interaction_id,
            {
                "interactionId": interaction_id,
                "eventType": "wait.ended",
                "response": body,
                "responded": body.get("responded") is True,
                "metadata": body.get("metadata"),
                "status": status,
            },
            idempotency=idempotency,
            release=release,
        )

    def _register(self, record: InteractionRecord, context: SendContext) -> Hold:
        # Registered before the delivery goes out, so even an instant reply finds it.
        loop = asyncio.get_running_loop()
        hold = Hold(record, loop.create_future(), context)
        self._holds.add(hold)
        if record.kind != "call" and record.wait_deadline is not None:
            # Its waitTime: a timer here, the request's own (a call's is ``limit``).
            when = loop.time() + (record.wait_deadline - time.time())
            self._wait_timers[hold] = loop.call_at(
                when, self._wait_passed, hold, context=contextvars.Context()
            )
        return hold

    def _unregister(self, hold: Hold) -> None:
        timer = self._wait_timers.pop(hold, None)
        if timer is not None:
            timer.cancel()
        self._holds.remove(hold)

    async def _hold(self, hold: Hold, limit: float | None = None) -> InteractionRecord | None:
        """Awaits the response (the ended record) or None when the window closed first.
        ``limit`` (seconds) is for calls, which have no window timer of their own."""
        accept = hold.context.accept
        if accept is not None and not accept.done():
            accept.set_result(hold)  # Prefer: respond-async: 202 now, hold on
            run = hold.context.run
            if run is not None:
                run.holding_async = hold  # a retry under its key gets 202 too
        handle: asyncio.TimerHandle | None = None
        if limit is not None:
            handle = asyncio.get_running_loop().call_later(limit, hold.expire)
        if self._draining:
            hold.drain()  # registered after drain() woke the others
        answered: InteractionRecord | None = None
        try:
            answered = await hold.wait()
        finally:
            if handle is not None:
                handle.cancel()
            handed = await self._let_go(hold)
            self._unregister(hold)
        left = hold.state is HoldState.LEFT
        if answered is None and handed is not None:
            if not left:
                answered = handed
            elif handed.kind != "call":  # a call's end always goes to the webhooks
                await self.outbox.emit(handed.account_id, handed.result or {}, handed.id)
        if left:
            # Nobody to answer: unregistered (above), a reply inside waitTime goes to
            # the webhooks; the window and the idempotency link stay.
            raise ServiceUnavailable(
                "the held request was closed by the client; retry",
                retry_after=self.config.unavailable_retry_after,
            )
        if answered is None and self._draining:
            # Stopping: 503, the interaction stays open for the retry to re-attach to.
            raise self._unavailable()
        return answered

    async def _let_go(self, hold: Hold) -> InteractionRecord | None:
        """With replicas: ends this replica's hold on the send (from now on an answer
        goes to the webhooks). Returns the interaction when it ended while held here
        with an answer nobody else sent on (its ender left it to this hold)."""
        if self.shared is None or self.replicas is None or self._closed:
            return None
        if hold.release is Release.LET_GO:
            return None  # let go when it ended with the answer this hold took
        if hold.release is Release.UNRELEASED and hold.followed:
            return None  # let go as its wait.ended is written (append_wait_ended)
        hold.let_go()
        interaction_id = hold.interaction_id
        try:
            released = await self.shared.release_hold(interaction_id, self.replicas.id)
        except Exception:  # the sweep of a dead holder covers it; never hide the answer
            logger.warning("could not let go of the hold on %s", interaction_id, exc_info=True)
            return None
        if released is None or released.status == "pending" or released.result is None:
            return None
        return released

    async def _release_unreleased(self, hold: Hold) -> None:
        """A hold answered from a notice (``Release.UNRELEASED``) whose ``wait.ended``
        will not be written: let go now, so a sweep never sends its answer again."""
        if hold.release is not Release.UNRELEASED:
            return
        hold.let_go()
        if self.shared is None or self.replicas is None or self._closed:
            return
        try:
            await self.shared.release_hold(hold.interaction_id, self.replicas.id)
        except Exception:
            logger.warning("could not let go of the hold on %s", hold.interaction_id, exc_info=True)

    def _changed(self, record: InteractionRecord, *, published: bool = False) -> None:
        """Wakes what waits for a change of ``record``; ``published``: the other
        replicas were told already (by the write itself)."""
        for watcher in self._watchers.pop(record.id, []):
            if not watcher.done():
                watcher.set_result(None)
        self._notify(record.account_id, "interaction", record.id, publish=not published)

    async def _create_interaction(
        self,
        account: Account,
        *,
        kind: InteractionKind,
        channel: InteractionChannel,
        to: str,
        from_addr: str,
        request: dict[str, Any],
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        form_token: str | None = None,
        reply_token: str | None = None,
        card_id: str | None = None,
        run: IdempotentRun | None = None,
    ) -> InteractionRecord:
        now = time.time()
        wait_deadline = now + float(wait_time) if wait_time is not None else None
        follow_up_deadline = (
            (wait_deadline or now) + float(follow_up_time) if follow_up_time is not None else None
        )
        listening = kind == "call" or wait_deadline is not None or follow_up_deadline is not None
        if channel == "email" and reply_token is None:
            # Its reply address reply+<token>@…: replies and bounces find it by the token.
            reply_token = secrets.token_urlsafe(18)
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
        if self.replicas is not None:
            # Made here, and the request a wait holds is held here.
            held = wait_deadline is not None or kind == "call"
            me = self.replicas.id
            record = dataclasses.replace(record, owner=me, held_by=me if held else None)
        # Its last window, a step of the schedule written with it (a call has none: it
        # ends when the callee hangs up).
        close = follow_up_deadline or wait_deadline
        step = None
        claimed_by = claimed_until = None
        if listening and kind != "call" and close is not None:
            step = StepRecord(WINDOW_STEP, record.id, close, account.id)
            claimed_by, claimed_until = self.schedule.claim(step)
        link = None
        if run is not None:
            link = IdempotencyLinkRecord(
                account_id=account.id,
                key=run.key,
                fingerprint=run.fingerprint,
                interaction_id=record.id,
                created_at=now,
            )
        await self.store.insert_interaction(
            record,
            link,
            link_stale_before=now - self.config.idempotency_ttl,
            step=step,
            claimed_by=claimed_by,
            claimed_until=claimed_until,
        )
        if step is not None:
            self.schedule.armed(step, claimed_by)
        note_interaction(record.id)
        self.metrics.opened(kind, channel)
        log_event(
            logger,
            "interaction.opened",
            interaction_id=record.id,
            account_id=account.id,
            kind=kind,
            channel=channel,
            to=mask_address(to),
            wait_s=wait_time,
            follow_up_s=follow_up_time,
        )
        return record

    async def _open_interaction(
        self,
        account: Account,
        *,
        kind: InteractionKind,
        channel: InteractionChannel,
        to: str,
        from_addr: str,
        request: dict[str, Any],
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        form_token: str | None = None,
        reply_token: str | None = None,
        card_id: str | None = None,
        context: SendContext = HELD_TO_THE_END,
    ) -> tuple[InteractionRecord, bool]:
        """The interaction of a send: a new one (linked to the ``Idempotency-Key`` the
        send runs under, if any), or, for a retry whose first run created one and never
        finished, that one as it is now. True when re-attached: deliver nothing then.
        ``context.run`` is that key's run (None: the send runs under no key).

        A new one is returned once committed: nothing goes out for a write the database
        may yet roll back (its disk full). If it is rolled back, ``StoreUnavailable``
        (503) and nothing of it is left here (its window's step in memory). On the sandbox, the
        delivery's row joins the same batch and is shown once it commits (``deliver``);
        a rollback fails the delivery, which ends the interaction as for a refusal."""
        if self._draining:
            raise self._unavailable()  # before anything is stored or delivered
        run = context.run
        if run is not None and (run.used or run.account_id != account.id):
            run = None
        if run is not None:
            run.used = True  # one interaction per send; anything after it is not linked
            first = run.resume
            if first is not None and first.kind == kind:
                note_interaction(first.id)
                return await self.store.get_interaction(first.id) or first, True
        try:
            record = await self._create_interaction(
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
            commit = self.store.committed()  # the batch the insert joined
            # The sandbox's message is a row of that same batch: it awaits the commit
            # itself before showing it, so the two stand or fall together.
            if not commit.settled and not isinstance(self.providers.get(channel), SandboxProvider):
                try:
                    await commit
                except StoreUnavailable:
                    self._disarm(record.id)
                    log_event(
                        logger,
                        "interaction.not_stored",
                        interaction_id=record.id,
                        account_id=account.id,
                        level=logging.WARNING,
                    )
                    raise
        except Duplicate:
            if run is None:
                raise
            # The same key on another replica created its interaction first: this
            # request re-attaches to it (one text to the human), as a retry would.
            first = await self._linked(account, run)
            if first is None or first.kind != kind:
                raise Conflict(
                    "a request with this Idempotency-Key is running on another replica",
                    field="Idempotency-Key",
                ) from None
            note_interaction(first.id)
            return first, True
        return record, False

    async def _linked(self, account: Account, run: IdempotentRun) -> InteractionRecord | None:
        link = await self.store.get_idempotency_link(account.id, run.key)
        if link is None:
            return None
        if link.fingerprint != run.fingerprint:
            raise Conflict(
                "this Idempotency-Key was already used with a different request",
                field="Idempotency-Key",
            )
        return await self.store.get_interaction(link.interaction_id)

    async def _send_out(
        self,
        record: InteractionRecord,
        resumed: bool,
        hold: Hold | None,
        deliver: Callable[[], Awaitable[None]],
    ) -> None:
        """Re-attaches a retry to ``record`` (``resumed``), or delivers it. If that fails
        (a refusal, the database unable to store what the provider answered), the held
        request is let go here: no wait stays registered for a request that left."""
        try:
            if resumed:
                await self._rejoin(record, hold)
            else:
                await deliver()
        except BaseException:
            if hold is not None:
                self._unregister(hold)
                await self._abandon(hold)
            raise

    async def _abandon(self, hold: Hold) -> None:
        """A held send left before it held (its client gone mid-delivery, a refusal):
        with replicas, this replica lets go of it in the store too, so an answer goes to
        the webhooks instead of to a hold nobody waits on; one it took already goes
        there now."""
        handed = await self._let_go(hold)
        if handed is not None and handed.kind != "call":
            await self.outbox.emit(handed.account_id, handed.result or {}, handed.id)

    async def _rejoin(self, record: InteractionRecord, hold: Hold | None) -> None:
        """A retry re-attached to ``record``: its held request gets what the interaction
        became, or "no response" when the ``waitTime`` window has passed; else it waits
        on its own wait timer (``_register``), like the first."""
        # Re-attached on this replica (its first may have died): the held request is
        # this replica's from now on.
        if (
            self.shared is not None
            and self.replicas is not None
            and record.status == "pending"
            and not await self.shared.take_interaction(
                record.id, self.replicas.id, hold=hold is not None
            )
        ):
            record = await self._current(record.id)
        if record.status == "pending" and record.kind != "call":
            close = record.close_deadline
            if close is None or close <= time.time():
                # Its last window passed and its step has not run yet (its replica may
                # have died holding it): it ends now.
                await self._end(record)
                record = await self._current(record.id)
        if hold is None:
            return
        if record.status != "pending":
            hold.settle(record)
        elif record.kind != "call" and (
            record.wait_deadline is None or record.wait_deadline <= time.time()
        ):
            hold.expire()

    def _remaining(self, record: InteractionRecord, limit: float, resumed: bool) -> float:
        """A call's hold limit, counted from its creation for a re-attached retry."""
        if not resumed:
            return limit
        return max(0.0, record.created_at + limit - time.time())

    def use_numbers(self, source: NumberSource) -> None:
        """Reserved numbers come from ``source`` (a real provider's) from now on."""
        self.number_source = source

    def use_provider(self, provider: Provider, channels: Iterable[str]) -> None:
        """``provider`` carries ``channels`` from now on (the others keep theirs)."""
        for channel in channels:
            self.providers[channel] = provider

    async def _deliver(
        self,
        record: InteractionRecord,
        text: str,
        *,
        form_url: str | None = None,
        hold: Hold | None = None,
        template: WhatsAppTemplate | None = None,
    ) -> None:
        """``_deliver_now``, whose notices (the delivery, the interaction's status) go to
        the other replicas together: one NOTIFY, though the store calls between them
        span several turns of the loop."""
        together = (
            self.replicas.together() if self.replicas is not None else contextlib.nullcontext()
        )
        with together:
            await self._deliver_now(record, text, form_url=form_url, hold=hold, template=template)

    async def _deliver_now(
        self,
        record: InteractionRecord,
        text: str,
        *,
        form_url: str | None = None,
        hold: Hold | None = None,
        template: WhatsAppTemplate | None = None,
    ) -> None:
        """Hands the item to its channel's provider and stores what it answered (the
        delivery status and the provider's id, which later callbacks are matched by).
        A refusal ends the interaction (nothing reached the human) and raises
        ``InvalidToNumber`` (an unreachable recipient) or ``ProviderError`` (502)."""
        call = None
        if record.kind == "call":
            transfer_to = record.request.get("transferTo")
            call = CallSpec(
                prompt=text,
                language=str(record.request.get("language") or "en-US"),
                voice=str(record.request.get("voice") or "female"),
                transfer_to=str(transfer_to) if transfer_to else None,
            )
        item = Outbound(
            account_id=record.account_id,
            interaction_id=record.id,
            channel=DELIVERY_CHANNEL(record.channel),  # an approval is not delivered (its asks are)
            kind=DELIVERY_KIND(record.kind),
            from_addr=record.from_addr,
            to_addr=record.to_addr,
            text=text,
            form_url=form_url,
            template=template,
            call=call,
            listening=record.status == "pending",
            wait_deadline=record.wait_deadline,
            subject=_email_subject(record, text) if record.channel == "email" else None,
            reply_token=record.reply_token,
        )
        provider = self.providers.get(record.channel, self.provider)
        try:
            sent = await provider.deliver(item)
        except BaseException as exc:
            # Nothing reached the human: the interaction must not stay open for a reply.
            if hold is not None:
                self._unregister(hold)
            result = (
                "unreachable"
                if isinstance(exc, RecipientUnreachable)
                else "provider_error"
                if isinstance(exc, ProviderFailure)
                else "error"
            )
            self.metrics.sent(record.kind, record.channel, result)
            log_event(
                logger,
                "interaction.delivery_failed",
                interaction_id=record.id,
                account_id=record.account_id,
                channel=record.channel,
                result=result,
                level=logging.WARNING if result != "unreachable" else logging.INFO,
            )
            await self._end(record, outcome="failed")
            if isinstance(exc, RecipientUnreachable):
                raise InvalidToNumber(exc.message, field=exc.field) from None
            if isinstance(exc, ProviderFailure):
                raise ProviderError(exc.message, retry_after=exc.retry_after) from None
            raise
        await self.store.set_delivery(record.id, sent.status, provider_ref=sent.ref)
        self.metrics.sent(record.kind, record.channel, "ok")
        log_event(
            logger,
            "interaction.delivered",
            interaction_id=record.id,
            account_id=record.account_id,
            kind=record.kind,
            channel=record.channel,
            delivery_status=sent.status,
        )
        if provider is not self.provider:  # a real provider's callbacks can overtake it
            early = await self.store.get_provider_state(_EARLY_STATUS, sent.ref)
            if early is not None:
                await self.store.delete_provider_state(_EARLY_STATUS, sent.ref)
                await self.delivery_status(sent.ref, str(early["status"]))
        self._notify(record.account_id, "interaction", record.id)

    async def delivery_status(self, ref: str, status: str) -> InteractionRecord | None:
        """A provider reports how far what it sent as ``ref`` got (a neutral entry
        point: Twilio's status callbacks, Slack's answer). Statuses only move forward
        (``queued`` < ``sent`` < ``delivered`` < ``read``); ``failed`` / ``undelivered``
        end the interaction at once: a held request returns the "could not be
        delivered" text, no reply is waited for any more. A status for a ref not yet
        stored (it overtook the provider's answer) is kept and applied when it is.
        Returns the interaction, None when unknown."""
        if not DELIVERY_STATUS.holds(status):
            return None
        record = await self.store.interaction_by_provider_ref(ref)
        if record is None:
            kept = await self.store.get_provider_state(_EARLY_STATUS, ref)
            if kept is None or _STATUS_RANK.get(str(kept["status"]), 0) < _STATUS_RANK[status]:
                await self.store.put_provider_state(
                    _EARLY_STATUS, ref, {"status": status}, time.time()
                )
            return None
        current = record.delivery_status
        if current is not None and _STATUS_RANK.get(current, 0) >= _STATUS_RANK[status]:
            return record
        await self.store.set_delivery(record.id, status)
        record = dataclasses.replace(record, delivery_status=status)
        log_event(
            logger,
            "interaction.delivery_status",
            interaction_id=record.id,
            account_id=record.account_id,
            channel=record.channel,
            delivery_status=status,
        )
        if status in ("failed", "undelivered") and record.status == "pending":
            await self._end(record, outcome=UNDELIVERED)
        else:
            self._changed(record)
        return record

    async def _current(self, interaction_id: str) -> InteractionRecord:
        record = await self.store.get_interaction(interaction_id)
        if record is None:
            # Interactions go only with their account (``humanwire accounts delete``).
            raise Unauthorized(DELETED_MESSAGE)
        return record

    async def _interaction_of(self, account: Account, interaction_id: str) -> InteractionRecord:
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

    # -- links and delivery followers, shared by several parts ------------------
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
        for future in self._delivery_waiters.pop(record.account_id, []):
            if not future.done():
                future.set_result(None)
        self._notify(record.account_id, "delivery", record.id)

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

    def _notify(self, account_id: str, kind: Any, item_id: str, *, publish: bool = True) -> None:
        """A change for the inbox's live streams, here and (``publish``) on the other
        replicas."""
        self._notify_here(account_id, kind, item_id)
        if publish and self.replicas is not None:
            self.replicas.publish(str(kind), account_id, item_id)

    def _notify_here(self, account_id: str, kind: Any, item_id: str) -> None:
        queues = self._subscribers.get(account_id)
        if not queues:
            return
        change = InboxChange(account_id=account_id, kind=kind, id=item_id)
        for queue in queues:
            if queue.full():
                with contextlib.suppress(asyncio.QueueEmpty):
                    queue.get_nowait()
            queue.put_nowait(change)

    # -- other replicas' changes ----------------------------------------------------
    def _on_notice(self, kind: str, account_id: str, item_id: str, detail: Any = None) -> None:
        """Another replica announced a change: wake what waits for it here, as the
        change would have had it happened here."""
        if kind == "outcome":
            self._outcome_heard(account_id, _outcome_handoff(item_id, detail))
            return
        if kind == "interaction":
            # A request held here may need the row (a task: the listener reads on).
            self._spawn(self._interaction_changed(account_id, item_id, detail))
            return
        if kind == "delivery":
            for future in self._delivery_waiters.pop(account_id, []):
                _settle(future, None)
        self._notify_here(account_id, kind, item_id)

    async def _interaction_changed(self, account_id: str, item_id: str, detail: Any) -> None:
        await self._settle_held(item_id, detail)
        for watcher in self._watchers.pop(item_id, []):
            _settle(watcher, None)
        self._notify_here(account_id, "interaction", item_id)

    async def _settle_held(self, interaction_id: str, detail: Any = None) -> None:
        """A request held here for an interaction that ended elsewhere gets what it
        became (its answer, or "no response"): from the notice's ``detail`` when it
        carries the ending, else read (and the hold let go) in one statement."""
        hold = self._holds.waiting(interaction_id)
        if hold is None:
            return
        record = _ended_from_notice(hold.record, detail)
        if record is not None:
            hold.unreleased()  # let go with its wait.ended, or as its wait ends
        elif self.shared is not None and self.replicas is not None:
            # Ended with the hold still here: let go and read it in one statement.
            record = await self.shared.release_hold(
                interaction_id, self.replicas.id, ended_only=True
            )
            if record is not None:
                hold.let_go()
        if record is None:
            record = await self.store.get_interaction(interaction_id)
        if record is None or record.status == "pending":
            return  # another change (a delivery status): keep holding
        self._disarm(interaction_id)
        hold.settle(record)

    async def _swept(self, records: list[InteractionRecord]) -> None:
        """Holds of a replica that died: answers handed to it go to the webhooks."""
        for record in records:
            if record.status == "ended" and record.result is not None and record.kind != "call":
                await self.outbox.emit(record.account_id, record.result, record.id)

    def _on_tick(self) -> None:
        """Every heartbeat: rows other replicas left in the outbox, old counts."""
        self.outbox.wake()
        self._ticks += 1
        if self.shared is not None and self._ticks % 30 == 1 and self._loop is not None:
            # Deletes of old counts: a task beside the requests.
            shared, config, now = self.shared, self.config, time.time()

            async def prune() -> None:
                try:
                    await shared.prune_limits(
                        now - config.rate_limit_window, now - config.spam_window
                    )
                    await shared.forget_replicas_before(now - 24 * 3600.0)
                except Exception:
                    logger.warning("pruning the shared counts failed", exc_info=True)

            self._spawn(prune())

    async def _resync(self) -> None:
        """The notice connection was down: what it missed is re-read. Held requests
        check their interaction; long-polls wake and look again, stream readers read."""
        for hold in self._holds:
            await self._settle_held(hold.interaction_id)
        for collectors in self._outcome_collectors.values():
            for collector in collectors:
                collector.add(None)
        futures: list[Iterable[asyncio.Future[Any]]] = [
            *self._watchers.values(),
            *self._delivery_waiters.values(),
            *self._outcome_waiters.values(),
        ]
        for group in futures:
            for future in group:
                _settle(future, None)


def _email_subject(record: InteractionRecord, text: str) -> str:
    """An email's subject: the one asked for, else a form's title, else the message's
    first line (cut at a word, at most 78 characters)."""
    request = record.request
    given = request.get("subject") or request.get("title")
    if given:
        return str(given)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(first) <= 78:
        return first or "A message for you"
    cut = first[:77].rsplit(" ", 1)[0] or first[:77]
    return cut + "…"


def _ended_from_notice(held: InteractionRecord, detail: Any) -> InteractionRecord | None:
    """The held interaction as another replica's notice says it ended (``end_and_report``
    carries ``{"ended": {"endedAt", "outcome", "result"}, "deliveryStatus"}``; None: not
    carried, read it)."""
    if not isinstance(detail, dict):
        return None
    ended = detail.get("ended")
    if not isinstance(ended, dict):
        return None
    ended_at, result = ended.get("endedAt"), ended.get("result")
    outcome, delivery = ended.get("outcome"), detail.get("deliveryStatus")
    if (
        not isinstance(ended_at, (int, float))
        or not (result is None or isinstance(result, dict))
        or not (outcome is None or INTERACTION_OUTCOME.holds(outcome))
        or not (delivery is None or DELIVERY_STATUS.holds(delivery))
    ):
        return None
    return dataclasses.replace(
        held,
        status="ended",
        ended_at=float(ended_at),
        result=result,
        outcome=outcome,
        delivery_status=delivery,
    )


def _outcome_handoff(item_id: str, detail: Any) -> OutcomeHandoff | None:
    """The event an ``outcome`` notice carries (None: the readers read it)."""
    if not isinstance(detail, dict):
        return None
    after, body = detail.get("after"), detail.get("body")
    if type(after) is not int or not isinstance(body, dict) or not item_id.isdigit():
        return None
    return OutcomeHandoff(after, int(item_id), body)
