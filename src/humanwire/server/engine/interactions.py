"""The interactions role (``engine.interactions``): an interaction opened for a send —
created (its window's step written with it, linked to the send's ``Idempotency-Key``), or
re-attached to for a retry whose first run created it, returned only once committed, so
nothing goes out for a write the database may yet roll back — and the interaction read
back: the account's own, its status, its form, its links.

The delivery role (``engine.delivery``): an interaction handed to its channel's
provider, and how far it got: the provider's answer stored (its id, which callbacks are
matched by), a refusal ending it, delivery statuses moving forward only (``failed`` /
``undelivered`` end it).
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from humanwire.types import CallResponse, Form, InteractionStatus, event_adapter
from humanwire.types.forms import STORED_FORM

from ..delivery import (
    CallSpec,
    Outbound,
    ProviderFailure,
    RecipientUnreachable,
    SandboxProvider,
    WhatsAppTemplate,
)
from ..errors import Conflict, InvalidToNumber, NotFound, ProviderError, Unauthorized
from ..literals import CALL_OUTCOME, DELIVERY_CHANNEL, DELIVERY_KIND, DELIVERY_STATUS
from ..store.commits import StoreUnavailable
from ..store.protocol import Duplicate
from ..store.records import (
    WINDOW_STEP,
    IdempotencyLinkRecord,
    InteractionOutcome,
    InteractionRecord,
    StepRecord,
)
from ..telemetry import log_event, mask_address, note_interaction
from ._common import _FORM_KEYS, CALL_NOT_ANSWERED, DELETED_MESSAGE, Account
from .holding import Deadlines, Holding, call_window
from .holds import HELD_TO_THE_END, Hold, IdempotentRun, NewInteraction, SendContext
from .runtime import Runtime, _metadata, _timestamp

logger = logging.getLogger("humanwire.engine")


UNDELIVERED: InteractionOutcome = "undelivered"
"""The outcome of an interaction the provider could not deliver."""
EARLY_STATUS = "early-delivery-status"
"""The provider state kind of a delivery status that came before its ref was stored."""
EARLY_STATUS_TTL = 24 * 3600.0
STATUS_RANK = {"queued": 1, "sent": 2, "delivered": 3, "read": 4, "undelivered": 5, "failed": 5}


class Delivery:
    """The delivery role (see the module docstring). A refusal ends the interaction
    (``deadlines``) and lets its held request go (``holding``)."""

    def __init__(self, runtime: Runtime, holding: Holding, deadlines: Deadlines) -> None:
        self._runtime = runtime
        self._store = runtime.store
        self._carriers = runtime.carriers
        self._holding = holding
        self._deadlines = deadlines

    async def deliver(
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
        with self._runtime.coordinator.together():
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
        provider = self._carriers.by_channel.get(record.channel, self._carriers.default)
        try:
            sent = await provider.deliver(item)
        except BaseException as exc:
            # Nothing reached the human: the interaction must not stay open for a reply.
            if hold is not None:
                self._holding.unregister(hold)
            result = (
                "unreachable"
                if isinstance(exc, RecipientUnreachable)
                else "provider_error"
                if isinstance(exc, ProviderFailure)
                else "error"
            )
            self._runtime.metrics.sent(record.kind, record.channel, result)
            log_event(
                logger,
                "interaction.delivery_failed",
                interaction_id=record.id,
                account_id=record.account_id,
                channel=record.channel,
                result=result,
                level=logging.WARNING if result != "unreachable" else logging.INFO,
            )
            await self._deadlines.end(record, outcome="failed")
            if isinstance(exc, RecipientUnreachable):
                raise InvalidToNumber(exc.message, field=exc.field) from None
            if isinstance(exc, ProviderFailure):
                raise ProviderError(exc.message, retry_after=exc.retry_after) from None
            raise
        await self._store.set_delivery(record.id, sent.status, provider_ref=sent.ref)
        if hold is not None:  # as delivered: its 202 (``accepted_body``) is built from it
            hold.record = dataclasses.replace(
                hold.record, delivery_status=sent.status, provider_ref=sent.ref
            )
        self._runtime.metrics.sent(record.kind, record.channel, "ok")
        log_event(
            logger,
            "interaction.delivered",
            interaction_id=record.id,
            account_id=record.account_id,
            kind=record.kind,
            channel=record.channel,
            delivery_status=sent.status,
        )
        if provider is not self._carriers.default:  # a real provider's callbacks can overtake it
            early = await self._store.get_provider_state(EARLY_STATUS, sent.ref)
            if early is not None:
                await self._store.delete_provider_state(EARLY_STATUS, sent.ref)
                await self.delivery_status(sent.ref, str(early["status"]))
        self._runtime.notices.notify(record.account_id, "interaction", record.id)

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
        record = await self._store.interaction_by_provider_ref(ref)
        if record is None:
            kept = await self._store.get_provider_state(EARLY_STATUS, ref)
            if kept is None or STATUS_RANK.get(str(kept["status"]), 0) < STATUS_RANK[status]:
                await self._store.put_provider_state(
                    EARLY_STATUS, ref, {"status": status}, time.time()
                )
            return None
        current = record.delivery_status
        if current is not None and STATUS_RANK.get(current, 0) >= STATUS_RANK[status]:
            return record
        await self._store.set_delivery(record.id, status)
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
            await self._deadlines.end(record, outcome=UNDELIVERED)
        else:
            self._runtime.notices.changed(record)
        return record


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


class Interactions:
    """The interactions role (see the module docstring): it opens an interaction with the
    hold of its request (``holding``) and its window (``deadlines``)."""

    def __init__(self, runtime: Runtime, holding: Holding, deadlines: Deadlines) -> None:
        self._runtime = runtime
        self._store = runtime.store
        self._config = runtime.config
        self._coordinator = runtime.coordinator
        self._holding = holding
        self._deadlines = deadlines

    # -- read back ------------------------------------------------------------------
    async def current(self, interaction_id: str) -> InteractionRecord:
        """The interaction as stored now (401 once its account was deleted)."""
        record = await self._store.get_interaction(interaction_id)
        if record is None:
            # Interactions go only with their account (``humanwire accounts delete``).
            raise Unauthorized(DELETED_MESSAGE)
        return record

    async def of(
        self, account: Account, interaction_id: str, named: InteractionRecord | None = None
    ) -> InteractionRecord:
        """The account's interaction (``NotFound`` for none or another's). ``named``: the
        interaction as read with the key (``authenticate_request``); read here when None."""
        record = named if named is not None and named.id == interaction_id else None
        # No id holds a NUL, and PostgreSQL cannot even compare one (an error, not a miss):
        # the console's paths reach here with whatever was typed.
        if record is None and "\x00" not in interaction_id:
            record = await self._store.get_interaction(interaction_id)
        if record is None or record.account_id != account.id:
            raise NotFound(f"no interaction {interaction_id!r}", field="interactionId")
        return record

    async def cancel(self, account: Account, interaction_id: str) -> InteractionStatus:
        """Ends the account's pending interaction now, without a response (outcome
        ``cancelled``: an approval's ``onTimeout`` does not apply). An ended one is
        returned as it is; a call under way is 409 (it ends when the call does)."""
        record = await self.of(account, interaction_id)
        if record.status == "pending":
            if record.kind == "call":
                raise Conflict("a call under way ends when the call does")
            await self._deadlines.end(record, outcome="cancelled")
            record = await self.of(account, interaction_id)
        return self.status(record)

    @staticmethod
    def status(record: InteractionRecord) -> InteractionStatus:
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
    def call_response(record: InteractionRecord) -> CallResponse:
        """An ended call as ``POST /calls`` answers it."""
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

    @staticmethod
    def form_of(record: InteractionRecord) -> Form:
        """The stored form, parsed again. Its windows and patterns were checked when it
        was sent; the windows are put back as stored (the engine itself accepts
        sub-second windows), the patterns not checked again (``STORED_FORM``)."""
        data = {k: v for k, v in record.request.items() if k in _FORM_KEYS}
        windows = {"wait_time": data.pop("waitTime", None)}
        windows["follow_up_time"] = data.pop("followUpTime", None)
        form = Form.model_validate({**data, "followUpTime": 1}, context={STORED_FORM: True})
        return form.model_copy(update=windows)

    async def fields_now(self, interaction_id: str) -> dict[str, Any]:
        """``fields`` of the interaction as it is now: what a send answers when it holds
        for nothing."""
        return self.fields(await self.current(interaction_id))

    @staticmethod
    def fields(record: InteractionRecord) -> dict[str, Any]:
        """``interactionId``, ``status``, ``deliveryStatus`` and ``metadata``."""
        return {
            "interaction_id": record.id,
            "status": record.status,
            "delivery_status": record.delivery_status,
            "metadata": _metadata(record),
        }

    def reply_link_url(self, token: str) -> str:
        return f"{self._config.public_url.rstrip('/')}/r/{token}"

    def form_url(self, token: str) -> str:
        return f"{self._config.public_url.rstrip('/')}/f/{token}"

    # -- opened -----------------------------------------------------------------------
    async def create(
        self,
        account: Account,
        new: NewInteraction,
        *,
        run: IdempotentRun | None = None,
        hold_for: SendContext | None = None,
    ) -> tuple[InteractionRecord, Hold | None]:
        """``new``, stored; with ``hold_for`` (the context of a send that waits), its
        hold too, registered before the row is stored: a text matched by its number pair
        may answer it the moment it is, and must find the hold."""
        now = time.time()
        kind, channel = new.kind, new.channel
        wait_deadline = now + float(new.wait_time) if new.wait_time is not None else None
        follow_up_deadline = (
            (wait_deadline or now) + float(new.follow_up_time)
            if new.follow_up_time is not None
            else None
        )
        listening = kind == "call" or wait_deadline is not None or follow_up_deadline is not None
        reply_token = new.reply_token
        if channel == "email" and reply_token is None:
            # Its reply address reply+<token>@…: replies and bounces find it by the token.
            reply_token = secrets.token_urlsafe(18)
        record = InteractionRecord(
            id=str(uuid.uuid4()),
            account_id=account.id,
            kind=kind,
            channel=channel,
            to_addr=new.to,
            from_addr=new.from_addr,
            request=new.request,
            created_at=now,
            status="pending" if listening else "ended",
            wait_deadline=wait_deadline,
            follow_up_deadline=follow_up_deadline,
            form_token=new.form_token,
            reply_token=reply_token,
            card_id=new.card_id,
            ended_at=None if listening else now,
        )
        # With replicas: made here, and the request a wait holds is held here.
        record = self._coordinator.stamp(record, held=wait_deadline is not None or kind == "call")
        # Its last window, a step of the schedule written with it (a call's is its limit:
        # it ends when the callee hangs up, and the step only if that end was lost).
        close = follow_up_deadline or wait_deadline
        if kind == "call":
            close = now + call_window(self._config, new.request)
        step = None
        claimed_by = claimed_until = None
        if listening and close is not None:
            step = StepRecord(WINDOW_STEP, record.id, close, account.id)
            claimed_by, claimed_until = self._runtime.schedule.claim(step)
        link = None
        if run is not None:
            link = IdempotencyLinkRecord(
                account_id=account.id,
                key=run.key,
                fingerprint=run.fingerprint,
                interaction_id=record.id,
                created_at=now,
            )
        hold = self._holding.register(record, hold_for) if hold_for is not None else None
        try:
            await self._store.insert_interaction(
                record,
                link,
                link_stale_before=now - self._config.idempotency_ttl,
                step=step,
                claimed_by=claimed_by,
                claimed_until=claimed_until,
            )
        except BaseException:
            if hold is not None:
                self._holding.unregister(hold)
            raise
        if step is not None:
            self._runtime.schedule.armed(step, claimed_by)
        note_interaction(record.id)
        self._runtime.metrics.opened(kind, channel)
        log_event(
            logger,
            "interaction.opened",
            interaction_id=record.id,
            account_id=account.id,
            kind=kind,
            channel=channel,
            to=mask_address(new.to),
            wait_s=new.wait_time,
            follow_up_s=new.follow_up_time,
        )
        return record, hold

    async def open(
        self,
        account: Account,
        new: NewInteraction,
        *,
        holding: bool = False,
        context: SendContext = HELD_TO_THE_END,
    ) -> tuple[InteractionRecord, bool, Hold | None]:
        """The interaction of a send: ``new`` (linked to the ``Idempotency-Key`` the
        send runs under, if any), or, for a retry whose first run created one and never
        finished, that one as it is now. True when re-attached: deliver nothing then.
        ``context.run`` is that key's run (None: the send runs under no key). With
        ``holding`` (the send waits), the hold of its request, registered before a new
        interaction is stored.

        A new one is returned once committed: nothing goes out for a write the database
        may yet roll back (its disk full). If it is rolled back, ``StoreUnavailable``
        (503) and nothing of it is left here (its window's step in memory). On the sandbox, the
        delivery's row joins the same batch and is shown once it commits (``deliver``);
        a rollback fails the delivery, which ends the interaction as for a refusal."""
        if self._runtime.lifecycle.draining:
            raise self._runtime.unavailable()  # before anything is stored or delivered
        run = context.run
        if run is not None and (run.used or run.account_id != account.id):
            run = None
        if run is not None:
            run.used = True  # one interaction per send; anything after it is not linked
            first = run.resume
            if first is not None and first.kind == new.kind:
                note_interaction(first.id)
                resumed = await self._store.get_interaction(first.id) or first
                return resumed, True, self._holding.register(resumed, context) if holding else None
        try:
            record, hold = await self.create(
                account, new, run=run, hold_for=context if holding else None
            )
            commit = self._store.committed()  # the batch the insert joined
            # The sandbox's message is a row of that same batch: it awaits the commit
            # itself before showing it, so the two stand or fall together.
            provider = self._runtime.carriers.by_channel.get(new.channel)
            if not commit.settled and not isinstance(provider, SandboxProvider):
                try:
                    await commit
                except BaseException as exc:
                    # Not stored, or its request gone while it waited (cancelled): no
                    # hold stays registered for a send that goes no further.
                    if hold is not None:
                        self._holding.unregister(hold)
                    if isinstance(exc, StoreUnavailable):
                        self._deadlines.disarm(record.id)
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
            if first is None or first.kind != new.kind:
                raise Conflict(
                    "a request with this Idempotency-Key is running on another replica",
                    field="Idempotency-Key",
                ) from None
            note_interaction(first.id)
            return first, True, self._holding.register(first, context) if holding else None
        return record, False, hold

    async def _linked(self, account: Account, run: IdempotentRun) -> InteractionRecord | None:
        link = await self._store.get_idempotency_link(account.id, run.key)
        if link is None:
            return None
        if link.fingerprint != run.fingerprint:
            raise Conflict(
                "this Idempotency-Key was already used with a different request",
                field="Idempotency-Key",
            )
        return await self._store.get_interaction(link.interaction_id)

    async def send_out(
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
                self._holding.unregister(hold)
                await self._abandon(hold)
            raise

    async def _abandon(self, hold: Hold) -> None:
        """A held send left before it held (its client gone mid-delivery, a refusal):
        with replicas, this replica lets go of it in the store too, so an answer goes to
        the webhooks instead of to a hold nobody waits on; one it took already goes
        there now."""
        handed = await self._holding.let_go(hold)
        if handed is not None and handed.kind != "call":
            await self._runtime.outbox.emit(handed.account_id, handed.result or {}, handed.id)

    async def _rejoin(self, record: InteractionRecord, hold: Hold | None) -> None:
        """A retry re-attached to ``record``: its held request gets what the interaction
        became, or "no response" when the ``waitTime`` window has passed; else it waits
        on its own wait timer (``holding.register``), like the first."""
        # Re-attached on this replica (its first may have died): the held request is
        # this replica's from now on.
        if record.status == "pending" and not await self._coordinator.take(
            record.id, hold=hold is not None
        ):
            record = await self.current(record.id)
        if record.status == "pending" and record.kind != "call":
            close = record.close_deadline
            if close is None or close <= time.time():
                # Its last window passed and its step has not run yet (its replica may
                # have died holding it): it ends now.
                await self._deadlines.end(record)
                record = await self.current(record.id)
        if hold is None:
            return
        if record.status != "pending":
            hold.settle(record)
        elif record.kind != "call" and (
            record.wait_deadline is None or record.wait_deadline <= time.time()
        ):
            hold.expire()

    def remaining(self, record: InteractionRecord, limit: float, resumed: bool) -> float:
        """A call's hold limit, counted from its creation for a re-attached retry."""
        if not resumed:
            return limit
        return max(0.0, record.created_at + limit - time.time())
