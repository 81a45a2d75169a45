"""The engine's facade: ``Engine`` builds the runtime and the roles on it, each an
attribute named for its role (docs/explanation/architecture.md, "Roles"), starts and
stops them, and keeps the engine's public surface as one-line calls of the role that owns
each method. Nothing here is a rule of its own: the rules are the roles'."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Literal

import httpx

from humanwire.types import (
    CallRequest,
    CallResponse,
    ChannelMessageRequest,
    FormResponse,
    InteractionStatus,
    MessageResponse,
    PhoneCallRequest,
    SandboxCallOutcomeRequest,
    SandboxDelivery,
    SandboxInboundCallRequest,
    SandboxReplyRequest,
    Speaker,
)
from humanwire.types.approvals import (
    DecisionVia,
)

from ..background.outbox import RESOLVE_TIMEOUT, Resolver
from ..background.schedule import Schedule
from ..config import ServiceConfig
from ..delivery import NumberSource, Provider
from ..delivery.port import ProviderRegistration
from ..forms.address import AddressValidator
from ..store import Store
from ..store.records import WINDOW_STEP, InboundRecord, InteractionRecord
from ..telemetry import Metrics, new_metrics
from ._common import Account, FormRequest, FormView, InboxChange, MessageRequest, ReplyLinkView
from .accounts import Accounts, Idempotency, InboxSessions
from .approval_access import ApprovalAccess
from .audit_checkpoints import AuditCheckpoints
from .calls import Calls
from .channels import ChannelCards
from .console import ConsoleSignIn
from .events import OUTCOME_TTL, OutcomeEvents
from .fallback import Fallbacks
from .holding import Deadlines, Holding
from .holds import HELD_TO_THE_END, Holds, SendContext
from .human import EngineProviderPort, Inbound, InboundText
from .interactions import EARLY_STATUS, EARLY_STATUS_TTL, Delivery, Interactions
from .links import LinkPages
from .numbers import Numbers
from .outcomes import RespondAsync
from .people import PeopleDirectory
from .recipients import Recipients
from .replicas import ReplicaCoordinator, ReplicaNotices
from .runtime import Coordinator, Runtime
from .sandbox import Sandbox
from .sends import Senders, Sends
from .webhooks import Webhooks

__all__ = ["Engine"]


class Engine:
    """The service's rules, one instance per service: the roles built on one runtime
    (see the module docstring), started and stopped here."""

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
            replicas=ReplicaCoordinator,
        )
        self.runtime = runtime
        # The account's resources and settings.
        self.events = OutcomeEvents(runtime)
        self.accounts = Accounts(runtime)
        self.sessions = InboxSessions(runtime)
        self.idempotency = Idempotency(runtime, self.events)
        self.numbers = Numbers(runtime)
        self.webhooks = Webhooks(runtime)
        self.channel_cards = ChannelCards(runtime)
        # An interaction's life: opened, delivered, held, answered or closed by a window.
        held = Holds()
        self.deadlines = Deadlines(runtime, held, self.events)
        self.holding = Holding(runtime, held, self.deadlines, self.events)
        self.interactions = Interactions(runtime, self.holding, self.deadlines)
        self.delivery = Delivery(runtime, self.holding, self.deadlines)
        self.senders = Senders(runtime)
        self.recipients = Recipients(runtime)
        self.sends = Sends(
            runtime,
            accounts=self.accounts,
            senders=self.senders,
            interactions=self.interactions,
            delivery=self.delivery,
            holding=self.holding,
            recipients=self.recipients,
        )
        self.calls = Calls(
            runtime,
            accounts=self.accounts,
            senders=self.senders,
            interactions=self.interactions,
            delivery=self.delivery,
            holding=self.holding,
            deadlines=self.deadlines,
            sends=self.sends,
        )
        self.respond_async = RespondAsync(
            runtime, holding=self.holding, events=self.events, interactions=self.interactions
        )
        # What comes back from people.
        self.inbound = Inbound(
            runtime, accounts=self.accounts, interactions=self.interactions, holding=self.holding
        )
        self.links = LinkPages(
            runtime, interactions=self.interactions, holding=self.holding, inbound=self.inbound
        )
        self.sandbox = Sandbox(runtime, interactions=self.interactions, inbound=self.inbound)
        # The people directory checks confirmation codes in replies (its matcher, before
        # approvals': a code is no decision).
        self.people = PeopleDirectory(
            runtime, sends=self.sends, senders=self.senders, inbound=self.inbound
        )
        # The approvers' console: signing people in by a code sent to their addresses.
        self.console = ConsoleSignIn(runtime, sends=self.sends, senders=self.senders)
        # A message or form to a person moves to their next address (``fallbackAfter``):
        # its step, its onward messages' replies and windows, onward forms' tokens, by
        # registration.
        self.fallbacks = Fallbacks(
            runtime,
            sends=self.sends,
            inbound=self.inbound,
            deadlines=self.deadlines,
            links=self.links,
        )
        # Approvals register where they plug in (``ApprovalAccess.__init__``).
        self.approvals = ApprovalAccess(self)
        self.replica_notices = ReplicaNotices(runtime, self.holding, self.deadlines, self.events)
        # Signed checkpoints of the accounts' audit heads, with ``[audit] signing_key``.
        self.audit_checkpoints = AuditCheckpoints.configured(
            config, runtime.store, runtime.schedule, runtime.outbox
        )
        self.outbox_depth_read = 0
        """``outbox_depth`` as ``read_outbox_depth`` last found it."""
        # No account or key is cached here: every request reads its account from the
        # store, so a suspension, reinstatement, key rotation or deletion (``humanwire
        # accounts``, from any process) holds from the next request on every replica.

    # -- the runtime's objects, by the names callers use --------------------------------
    @property
    def config(self) -> ServiceConfig:
        return self.runtime.config

    @property
    def store(self) -> Store:
        return self.runtime.store

    @property
    def schedule(self) -> Schedule:
        return self.runtime.schedule

    @property
    def coordinator(self) -> Coordinator:
        return self.runtime.coordinator

    @property
    def addresses(self) -> AddressValidator:
        return self.runtime.addresses

    @property
    def provider(self) -> Provider:
        """The built-in provider (the sandbox, unless one replaced it)."""
        return self.runtime.carriers.default

    @property
    def providers(self) -> dict[str, Provider]:
        """Which provider carries each channel."""
        return self.runtime.carriers.by_channel

    # -- start and stop -------------------------------------------------------------------
    async def start(self) -> None:
        """Prunes what expired, joins the replicas, starts the webhook outbox worker and
        the schedule (which runs the windows falling due). Must be called from the event
        loop that serves requests."""
        loop = asyncio.get_running_loop()
        store = self.store
        self.runtime.background.start(loop)
        self.deadlines.start(loop)
        now = time.time()
        await store.delete_idempotency_before(now - self.config.idempotency_ttl)
        # Statuses of refs never stored (another app's messages on the same account).
        await store.delete_provider_state_before(EARLY_STATUS, now - EARLY_STATUS_TTL)
        await store.delete_outcomes_before(now - OUTCOME_TTL)
        await store.prune_inbox_sessions(now, now - self.config.inbox_session_idle)
        # Replicas: sweeps the holds of replicas that died (the windows are the schedule's).
        await self.coordinator.start()
        await self.runtime.outbox.start()
        if self.audit_checkpoints is not None:
            await self.audit_checkpoints.start()
        # Windows that passed while the service (or the replica holding them) was down
        # are claimed by the first tick and end.
        self.runtime.schedule.start()

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
        # Each woken coroutine sees ``draining`` and raises (see ``hold`` and the polls).
        for hold in self.holding.held:
            hold.drain()
        self.runtime.notices.wake_all()
        self.events.wake_all()
        self.runtime.notices.inbox.end_all()

    async def close(self) -> None:
        if self.runtime.lifecycle.closed:
            return
        # A host that did not drain first: what is still held is answered, not cancelled.
        self.drain()
        held = self.idempotency.tasks()
        if held:  # the woken requests answer 503 before what is left is cancelled
            await asyncio.wait(held, timeout=1.0)
        else:
            await asyncio.sleep(0)
        self.runtime.lifecycle.closed = True
        self.deadlines.close()
        self.holding.held.stop_timers()
        # Deadlines and notices under way finish their writes.
        await self.runtime.background.finish(timeout=5.0)
        self.holding.held.clear()
        runs = self.idempotency.tasks()
        for task in runs:
            task.cancel()
        for task in runs:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.runtime.schedule.close()
        await self.runtime.outbox.close()
        await self.addresses.aclose()
        await self.coordinator.close()
        await self.store.close()

    # -- what ``/metrics`` reads ----------------------------------------------------------
    @property
    def held_waits(self) -> int:
        """Requests held open right now (waiting for a reply, a submission, a call end),
        counted once their delivery went out."""
        return self.holding.held.started

    @property
    def open_windows(self) -> int:
        """Window timers in this process's memory: held requests' waits, window steps
        due within the schedule's horizon, deadlines to run again. An open window no
        request holds is a row of the schedule, not counted here until it falls due."""
        held = self.holding.held.timed()
        return held + len(self.deadlines) + self.runtime.schedule.held(WINDOW_STEP)

    async def outbox_depth(self) -> int:
        """Webhook deliveries waiting in the outbox (0 once the store is closed)."""
        return 0 if self.runtime.lifecycle.closed else await self.store.outbox_depth()

    async def read_outbox_depth(self) -> None:
        """Reads ``outbox_depth`` into ``outbox_depth_read``, for ``/metrics`` (whose
        collector cannot await)."""
        self.outbox_depth_read = await self.outbox_depth()

    # -- carriers and the inbox's live notices ------------------------------------------
    def provider_port(self) -> EngineProviderPort:
        """What providers are given in place of the engine: the inbound port over the
        roles (``delivery.port.InboundPort``)."""
        return EngineProviderPort(
            self.runtime,
            inbound=self.inbound,
            accounts=self.accounts,
            interactions=self.interactions,
            delivery=self.delivery,
            links=self.links,
            approvals=self.approvals,
            people=self.people,
        )

    def use_providers(self, wiring: ProviderRegistration) -> None:
        """Each channel of ``wiring`` (what ``delivery.real.real_providers`` built) goes
        through its provider from now on (the others keep the sandbox); reserved numbers
        come from ``wiring.numbers`` when it has a source."""
        for channel, provider in wiring.channels.items():
            self.use_provider(provider, [channel])
        if wiring.numbers is not None:
            self.use_numbers(wiring.numbers)

    def use_numbers(self, source: NumberSource) -> None:
        """Reserved numbers come from ``source`` (a real provider's) from now on."""
        self.runtime.carriers.use_numbers(source)

    def use_provider(self, provider: Provider, channels: Iterable[str]) -> None:
        """``provider`` carries ``channels`` from now on (the others keep theirs)."""
        self.runtime.carriers.use(provider, channels)

    def subscribe(self, account: Account) -> AsyncIterator[InboxChange]:
        """Live change notices for the inbox (server-sent events). Registered at once, so
        nothing between this call and the first iteration is lost; a slow reader loses
        the oldest notices, never blocks the engine. Close the iterator when done."""
        return self.runtime.notices.subscribe(account.id)

    # -- sends (``self.sends``, ``self.calls``, ``self.respond_async``) --------------------
    async def send_message(
        self, account: Account, request: MessageRequest, context: SendContext = HELD_TO_THE_END
    ) -> MessageResponse:
        return await self.sends.send_message(account, request, context)

    async def send_channel_message(
        self,
        account: Account,
        channel_id: str,
        request: ChannelMessageRequest,
        context: SendContext = HELD_TO_THE_END,
    ) -> MessageResponse:
        return await self.sends.send_channel_message(account, channel_id, request, context)

    async def send_form(
        self, account: Account, request: FormRequest, context: SendContext = HELD_TO_THE_END
    ) -> FormResponse:
        return await self.sends.send_form(account, request, context)

    async def interaction_status(
        self,
        account: Account,
        interaction_id: str,
        wait: float | None = None,
        named: InteractionRecord | None = None,
    ) -> InteractionStatus:
        return await self.sends.interaction_status(account, interaction_id, wait, named)

    async def place_call(
        self, account: Account, request: CallRequest, context: SendContext = HELD_TO_THE_END
    ) -> CallResponse:
        return await self.calls.place_call(account, request, context)

    async def phone_call(
        self, account: Account, request: PhoneCallRequest, context: SendContext = HELD_TO_THE_END
    ) -> CallResponse:
        return await self.calls.phone_call(account, request, context)

    # -- what comes back from people (``self.inbound``, ``self.links``) -------------------
    async def receive_text(
        self, text: InboundText, account_id: str | None = None
    ) -> InboundRecord | None:
        return await self.inbound.receive_text(text, account_id)

    async def end_call(
        self,
        record: InteractionRecord,
        *,
        outcome: Literal["completed", "no_answer", "transferred"],
        summary: str,
        transcript: Sequence[tuple[Speaker, str]] | None = None,
        via: DecisionVia | None = None,
    ) -> InteractionRecord | None:
        return await self.inbound.end_call(
            record, outcome=outcome, summary=summary, transcript=transcript, via=via
        )

    async def open_inbound_call(
        self, account_id: str, *, from_addr: str, to_addr: str
    ) -> InteractionRecord:
        return await self.inbound.open_inbound_call(
            account_id, from_addr=from_addr, to_addr=to_addr
        )

    async def delivery_status(self, ref: str, status: str) -> InteractionRecord | None:
        return await self.delivery.delivery_status(ref, status)

    async def get_form(self, token: str) -> FormView:
        return await self.links.get_form(token)

    async def submit_form(self, token: str, values: dict[str, str]) -> FormView:
        return await self.links.submit_form(token, values)

    async def get_reply_link(self, token: str) -> ReplyLinkView:
        return await self.links.get_reply_link(token)

    async def reply_by_link(self, token: str, body: str) -> None:
        await self.links.reply_by_link(token, body)

    # -- the sandbox (``self.sandbox``) ----------------------------------------------------
    async def list_interactions(
        self, account: Account, limit: int = 200
    ) -> list[InteractionStatus]:
        return await self.sandbox.list_interactions(account, limit)

    async def list_sandbox_deliveries(
        self,
        account: Account,
        to: str | None = None,
        channel: str | None = None,
        interaction_id: str | None = None,
    ) -> list[SandboxDelivery]:
        return await self.sandbox.deliveries(account, to, channel, interaction_id)

    async def wait_for_delivery(
        self, account: Account, after_id: str | None, timeout: float
    ) -> None:
        await self.sandbox.wait_for_delivery(account, after_id, timeout)

    async def sandbox_reply(
        self,
        account: Account,
        request: SandboxReplyRequest,
        named: InteractionRecord | None = None,
        *,
        via: DecisionVia = "sandbox",
    ) -> None:
        await self.sandbox.reply(account, request, named, via=via)

    async def sandbox_end_call(
        self,
        account: Account,
        interaction_id: str,
        request: SandboxCallOutcomeRequest,
        *,
        via: DecisionVia = "sandbox",
    ) -> CallResponse:
        return await self.sandbox.end_call(account, interaction_id, request, via=via)

    async def sandbox_inbound_call(
        self, account: Account, request: SandboxInboundCallRequest
    ) -> None:
        await self.sandbox.inbound_call(account, request)
