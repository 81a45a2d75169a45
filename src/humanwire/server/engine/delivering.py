"""The delivery role (``engine.delivery``): an interaction handed to its channel's
provider, and how far it got: the provider's answer stored (its id, which callbacks are
matched by), a refusal ending it, delivery statuses moving forward only (``failed`` /
``undelivered`` end it)."""

from __future__ import annotations

import dataclasses
import logging
import time

from ..delivery import (
    CallSpec,
    Outbound,
    ProviderFailure,
    RecipientUnreachable,
    WhatsAppTemplate,
)
from ..errors import (
    InvalidToNumber,
    ProviderError,
)
from ..literals import DELIVERY_CHANNEL, DELIVERY_KIND, DELIVERY_STATUS
from ..store.records import InteractionOutcome, InteractionRecord
from ..telemetry import log_event
from .deadlines import Deadlines
from .holding import Holding
from .holds import Hold
from .runtime import Runtime

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
