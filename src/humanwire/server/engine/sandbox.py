"""The sandbox role (``engine.sandbox``): the human played through the API and the
inbox — replies, calls ended and inbound calls as a carrier would report them (through
``inbound``), allowed only on channels no real carrier owns unless the operator says so —
and what the sandbox shows of deliveries, followed without busy polling."""

from __future__ import annotations

from humanwire.types import (
    CallResponse,
    InteractionStatus,
    SandboxCallOutcomeRequest,
    SandboxDelivery,
    SandboxInboundCallRequest,
    SandboxReplyRequest,
)
from humanwire.types.approvals import DecisionVia

from ..delivery.chat import CHAT_CHANNELS
from ..delivery.sandbox import SandboxProvider
from ..errors import Conflict, InvalidToNumber, LiveChannel, NotFound
from ..store.records import InteractionRecord
from ._common import Account
from .human import Inbound, InboundText
from .interactions import Interactions
from .runtime import Runtime, _timestamp

_CARRIER_NAMES = {
    "twilio": "Twilio",
    "telnyx": "Telnyx",
    "meta": "Meta's WhatsApp Cloud API",
    "slack": "Slack",
    "email": "the email relay",
    **{channel.name: channel.title for channel in CHAT_CHANNELS.values()},
}
_THREADED = ("slack", "email", *CHAT_CHANNELS)
"""The channels whose sandbox replies may name the message they answer
(``interactionId``: in its thread, or a reply to it)."""


class Sandbox:
    """The sandbox role (see the module docstring)."""

    def __init__(self, runtime: Runtime, *, interactions: Interactions, inbound: Inbound) -> None:
        self._runtime = runtime
        self._store = runtime.store
        self._interactions = interactions
        self._inbound = inbound

    # -- what the sandbox shows of deliveries -----------------------------------------
    async def list_interactions(
        self, account: Account, limit: int = 200
    ) -> list[InteractionStatus]:
        return [
            self._interactions.status(record)
            for record in await self._store.list_interactions(account.id, limit)
        ]

    async def deliveries(
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
                channel=record.channel,
                kind=record.kind,
                from_=record.from_addr,
                to=record.to_addr,
                text=record.text,
                form_url=record.form_url,
                created_at=_timestamp(record.created_at),
            )
            for record in await self._store.list_deliveries(
                account.id, to_addr=to, channel=channel, interaction_id=interaction_id
            )
        ]

    async def wait_for_delivery(
        self, account: Account, after_id: str | None, timeout: float
    ) -> None:
        """Returns when a delivery newer than ``after_id`` exists, or after ``timeout``
        (lets the scripted human and the inbox follow without busy polling). With
        ``after_id`` None (or unknown) any delivery of the account counts."""
        if self._runtime.lifecycle.draining:
            raise self._runtime.unavailable()
        after = await self._store.delivery_seq(account.id, after_id) if after_id else None
        if await self._store.max_delivery_seq(account.id) > (after or 0):
            return
        if (
            self._runtime.lifecycle.draining
        ):  # a drain while the store answered woke no waiter of ours
            raise self._runtime.unavailable()
        await self._runtime.notices.delivery.wait(account.id, timeout)
        if self._runtime.lifecycle.draining:
            raise self._runtime.unavailable()

    def live_carrier(self, channel: str) -> str | None:
        """The real provider carrying ``channel`` (``twilio``, ``slack``…), None when the
        sandbox does (or nothing carries it: a ``link`` approver)."""
        provider = self._runtime.carriers.by_channel.get(channel)
        if provider is None or isinstance(provider, SandboxProvider):
            return None
        return provider.name

    def answers(self, channel: str) -> bool:
        """Whether the sandbox and the inbox's human side may answer on ``channel``: on
        the sandbox's own channels, and on live ones only when the operator says so
        (``sandbox_live_channels``): else anyone with the account's key could answer as
        the real person (an agent approving its own request)."""
        return self._runtime.config.sandbox_live_channels or self.live_carrier(channel) is None

    def check_answers(self, channel: str, field: str | None = None) -> None:
        """``LiveChannel`` (403) naming ``channel`` unless ``answers`` it."""
        if self.answers(channel):
            return
        carrier = _CARRIER_NAMES.get(str(self.live_carrier(channel)), "a real provider")
        raise LiveChannel(
            f"{channel} is carried by {carrier}: only a real answer over it counts, not one "
            "through the sandbox or the inbox",
            field=field,
        )

    async def reply(
        self,
        account: Account,
        request: SandboxReplyRequest,
        named: InteractionRecord | None = None,
        *,
        via: DecisionVia = "sandbox",
    ) -> None:
        """An inbound text through the sandbox (``inbound.receive_text`` with the caller's
        account). For slack, ``interactionId`` names the thread and must be one of the
        account's (``NotFound`` otherwise); for sms and whatsapp it is ignored, as on a
        phone. ``named``: that thread as read with the key (``authenticate_request``).
        ``LiveChannel`` on a channel a real provider carries (``check_answers``);
        ``via``: who plays the human (``sandbox``, or ``inbox`` for its forms)."""
        self.check_answers(request.channel, field="channel")
        thread = None
        if request.channel in _THREADED and request.interaction_id is not None:
            thread = await self._interactions.of(account, request.interaction_id, named)
        await self._inbound.receive(
            InboundText(
                channel=request.channel,
                from_addr=request.from_,
                to_addr=request.to,
                body=request.body,
                media_urls=tuple(request.media_urls or ()),
                thread=request.interaction_id if request.channel in _THREADED else None,
                via=via,
            ),
            account.id,
            thread,
        )

    async def end_call(
        self,
        account: Account,
        interaction_id: str,
        request: SandboxCallOutcomeRequest,
        *,
        via: DecisionVia = "sandbox",
    ) -> CallResponse:
        """The callee ends an outbound call. ``Conflict`` if it has ended already;
        ``NotFound`` for an interaction that is not one of the account's calls;
        ``LiveChannel`` when a real carrier places calls."""
        record = await self._interactions.of(account, interaction_id)
        if record.kind != "call":
            raise NotFound(f"no call {interaction_id!r}", field="interactionId")
        self.check_answers("call")
        if record.status != "pending":
            raise Conflict("this call has already ended")
        ended = await self._inbound.end_call(
            record,
            outcome=request.outcome,
            summary=self._call_summary(record, request),
            via=via,
        )
        if ended is None:
            raise Conflict("this call has already ended")
        return self._interactions.call_response(ended)

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

    async def inbound_call(self, account: Account, request: SandboxInboundCallRequest) -> None:
        """``to`` must be the account's reserved number (else ``NotFound``). The
        voicemail-style agent takes the message at once: the call's interaction is
        opened and ended, and ``call.conversation.ended`` carries the summary.
        ``LiveChannel`` when a real carrier takes calls."""
        self.check_answers("call")
        number = await self._store.number_by_phone(request.to)
        if number is None or number.account_id != account.id:
            raise NotFound(f"{request.to} is not a reserved number of this account", field="to")
        if not request.from_.strip():
            raise InvalidToNumber(field="from")
        record = await self._inbound.open_inbound_call(
            account.id, from_addr=request.from_, to_addr=request.to
        )
        await self._inbound.end_call(record, outcome="completed", summary=request.summary)
