"""The engine's state: the runtime (``runtime``) and the roles built on it, its start,
drain and stop; the interaction's status and form views.

The parts still mixed in read the runtime's objects under their old attribute names, and
reach the roles through the delegations below, each until that part is a role object.
The parts built on this one are listed on ``core.EngineCore``.
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

from ..background.outbox import RESOLVE_TIMEOUT, Resolver
from ..config import ServiceConfig
from ..delivery import NumberSource, Provider
from ..errors import NotFound, ServiceUnavailable, Unauthorized
from ..forms.address import AddressValidator
from ..literals import CALL_OUTCOME
from ..store import Store
from ..store.records import WINDOW_STEP, IdempotencyRecord, InteractionOutcome, InteractionRecord
from ..telemetry import Metrics, new_metrics
from ._common import (
    _FORM_KEYS,
    CALL_NOT_ANSWERED,
    DELETED_MESSAGE,
    Account,
    InboxChange,
    OutcomeHandoff,
    _metadata,
    _timestamp,
)
from .accounts import Accounts
from .audit_checkpoints import AuditCheckpoints
from .channels import ChannelCards
from .coordination import Coordinator
from .events import OUTCOME_TTL, OutcomeEvents
from .holds import Hold, Holds
from .idempotency import Idempotency
from .live import InboxStreams, KeyedLocks, Wakeups
from .numbers import Numbers
from .runtime import CHANNELS, Runtime
from .sessions import InboxSessions
from .webhooks import Webhooks
from .windows import Windows

__all__ = ["CHANNELS", "EARLY_STATUS", "STATUS_RANK", "UNDELIVERED", "EngineState", "logger"]

logger = logging.getLogger("humanwire.engine")

UNDELIVERED: InteractionOutcome = "undelivered"
"""The outcome of an interaction the provider could not deliver."""
EARLY_STATUS = "early-delivery-status"
EARLY_STATUS_TTL = 24 * 3600.0
STATUS_RANK = {"queued": 1, "sent": 2, "delivered": 3, "read": 4, "undelivered": 5, "failed": 5}

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
        """Opens the runtime (``Runtime.open``: the store at ``config.db_path``, the
        built-in sandbox provider, ...) and builds the roles on it.

        ``provider`` replaces the sandbox provider; ``webhook_transport`` and ``resolve``
        (a blocking host lookup, run in a worker thread; default: the loop's
        ``getaddrinfo``) let tests drive webhook deliveries and the SSRF guard without a
        network. A lookup longer than ``resolve_timeout`` seconds refuses the URL."""
        # This service's own metrics (a registry per engine: several share a process).
        self.metrics: Metrics = new_metrics(self)
        runtime = Runtime.open(
            config,
            metrics=self.metrics,
            provider=provider,
            webhook_transport=webhook_transport,
            resolve=resolve,
            resolve_timeout=resolve_timeout,
        )
        self.runtime = runtime
        # The roles, each reached by its name (docs/explanation/architecture.md, "Roles").
        self.events = OutcomeEvents(runtime)
        self.accounts = Accounts(runtime)
        self.sessions = InboxSessions(runtime)
        self.idempotency = Idempotency(runtime, self.events)
        self.numbers = Numbers(runtime)
        self.webhooks = Webhooks(runtime)
        self.channel_cards = ChannelCards(runtime)
        # What the parts not yet role objects read through ``self``: the runtime's own
        # objects, under their old names, until those parts are role objects too.
        self.config = runtime.config
        self.store: Store = runtime.store
        self.provider: Provider = runtime.carriers.default
        self.providers: dict[str, Provider] = runtime.carriers.by_channel
        self.addresses: AddressValidator = runtime.addresses
        self.outbox = runtime.outbox
        self.coordinator: Coordinator = runtime.coordinator
        self.schedule = runtime.schedule
        self._status_wakeups: Wakeups[str] = runtime.notices.status
        self._delivery_wakeups: Wakeups[str] = runtime.notices.delivery
        self._inbox_streams: InboxStreams = runtime.notices.inbox
        # Signed checkpoints of the accounts' audit heads, with ``[audit] signing_key``.
        self.audit_checkpoints = AuditCheckpoints.configured(
            config, self.store, self.schedule, self.outbox
        )
        self.outbox_depth_read = 0
        """``outbox_depth`` as ``read_outbox_depth`` last found it."""
        # No account or key is cached here: every request reads its account from the
        # store, so a suspension, reinstatement, key rotation or deletion (``humanwire
        # accounts``, from any process) holds from the next request on every replica.
        # The requests held here, each with its waitTime timer (``holds``).
        self._holds = Holds()
        # Texts matched by their number pair, taken one at a time per pair (``_receive``).
        self._number_pairs: KeyedLocks[tuple[str, str, str]] = KeyedLocks()
        # The tasks of requests answered 202 whose hold goes on (kept from the collector).
        self._async_holds: set[asyncio.Task[Any]] = set()

    @property
    def _draining(self) -> bool:
        return self.runtime.lifecycle.draining

    @property
    def _closed(self) -> bool:
        return self.runtime.lifecycle.closed

    async def start(self) -> None:
        """Prunes what expired, joins the replicas, starts the webhook outbox worker and
        the schedule (which runs the windows falling due). Must be called from the event
        loop that serves requests."""
        loop = asyncio.get_running_loop()
        self.runtime.background.start(loop)
        self._windows.start(loop)
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
        return self.runtime.lifecycle.draining

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
        self.runtime.lifecycle.draining = True
        # Each woken coroutine sees ``draining`` and raises (see ``_hold`` and the polls).
        for hold in self._holds:
            hold.drain()
        self._wake_long_polls()
        self.runtime.notices.inbox.end_all()

    def _wake_long_polls(self) -> None:
        """Every status, delivery and outcome long-poll looks again."""
        self.runtime.notices.wake_all()
        self.events.wake_all()

    def _unavailable(self) -> ServiceUnavailable:
        return ServiceUnavailable(retry_after=self.config.unavailable_retry_after)

    async def close(self) -> None:
        if self._closed:
            return
        # A host that did not drain first: what is still held is answered, not cancelled.
        self.drain()
        held = self.idempotency.tasks()
        if held:  # the woken requests answer 503 before what is left is cancelled
            await asyncio.wait(held, timeout=1.0)
        else:
            await asyncio.sleep(0)
        self.runtime.lifecycle.closed = True
        self._windows.close()
        self._holds.stop_timers()
        # Deadlines and notices under way finish their writes.
        await self.runtime.background.finish(timeout=5.0)
        self._holds.clear()
        runs = self.idempotency.tasks()
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

    # -- until sends, calls, approvals and human are role objects: what they reach
    # through ``self`` of the roles and the runtime ------------------------------------
    async def _account(self, account_id: str) -> Account:
        """Until human and approvals are role objects: ``accounts.by_id``."""
        return await self.accounts.by_id(account_id)

    async def _require_active(self, account: Account) -> None:
        """Until approvals is a role object: ``accounts.require_active``."""
        await self.accounts.require_active(account)

    async def _check_send(self, account: Account, text: str, to: str) -> None:
        """Until sends, calls and approvals are role objects: ``accounts.check_send``."""
        await self.accounts.check_send(account, text, to)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Runs ``work`` beside the requests (``runtime.background``)."""
        self.runtime.background.spawn(work)

    async def append_outcome(
        self,
        account_id: str,
        interaction_id: str,
        body: dict[str, Any],
        *,
        idempotency: IdempotencyRecord | None = None,
        release: bool = False,
    ) -> int:
        """Until holding is a role object: ``events.append``."""
        return await self.events.append(
            account_id, interaction_id, body, idempotency=idempotency, release=release
        )

    async def _ended_outcome(
        self, record: InteractionRecord, event: dict[str, Any] | None, outcome: str | None
    ) -> None:
        """Until deadlines is a role object: ``events.ended``."""
        await self.events.ended(record, event, outcome)

    _ended_report = staticmethod(OutcomeEvents.ended_report)
    """Until holding is a role object: ``events.ended_report``."""

    async def _outcome_stored(self, account_id: str, handoff: OutcomeHandoff, now: float) -> None:
        """Until holding is a role object: ``events.stored``."""
        await self.events.stored(account_id, handoff, now)

    async def append_wait_ended(
        self,
        hold: Hold,
        status: int,
        body: dict[str, Any],
        *,
        idempotency: IdempotencyRecord | None = None,
    ) -> None:
        """Until respond-async (``Outcomes``) is a role object: ``events.wait_ended``."""
        await self.events.wait_ended(hold, status, body, idempotency=idempotency)

    # -- the engine's public surface of the runtime -------------------------------------
    def use_numbers(self, source: NumberSource) -> None:
        """Reserved numbers come from ``source`` (a real provider's) from now on."""
        self.runtime.carriers.use_numbers(source)

    def use_provider(self, provider: Provider, channels: Iterable[str]) -> None:
        """``provider`` carries ``channels`` from now on (the others keep theirs)."""
        self.runtime.carriers.use(provider, channels)

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

    def subscribe(self, account: Account) -> AsyncIterator[InboxChange]:
        """Live change notices for the inbox (server-sent events). Registered at once, so
        nothing between this call and the first iteration is lost; a slow reader loses
        the oldest notices, never blocks the engine. Close the iterator when done."""
        return self.runtime.notices.subscribe(account.id)

    def _notify(self, account_id: str, kind: Any, item_id: str, *, publish: bool = True) -> None:
        """A change for the inbox's live streams, here and (``publish``) on the other
        replicas (``runtime.notices``)."""
        self.runtime.notices.notify(account_id, kind, item_id, publish=publish)

    def _changed(self, record: InteractionRecord, *, published: bool = False) -> None:
        """Wakes what waits for a change of ``record``; ``published``: the other
        replicas were told already (by the write itself)."""
        self.runtime.notices.changed(record, published=published)
