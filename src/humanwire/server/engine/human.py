"""The inbound role (``engine.inbound``): what reaches the engine from people, whatever
carried it. The provider-neutral entry points (an inbound text, a reply to a known
interaction, a call's end, an inbound call) are used by the sandbox API (``sandbox``), the
inbox and the real providers alike; a provider reaches them through the inbound port
(``EngineProviderPort``, at the end: ``delivery.port.InboundPort`` over the roles). A text
is matched to what it answers (the number pair, or its thread), offered to the registered
matchers (people's confirmation codes, approvals: each says what it can claim), and
taken: by the taker registered for its kind, else as a message's reply or the account's
unsolicited ``message.received``. Whose a text to a shared sender is: the shared sender's
codes and labels (``sends``)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

from humanwire.types import (
    CallConversationEndedEvent,
    CallConversationEndedPayload,
    CallOutcome,
    DeliveryStatus,
    Form,
    MessageReceivedEvent,
    MessageReceivedPayload,
    Speaker,
    TranscriptTurn,
)
from humanwire.types.approvals import DecisionVia

from ..background.schedule import Schedule
from ..delivery import Outbound, ProviderFailure, RecipientUnreachable
from ..delivery.chat import CHAT_CHANNELS
from ..delivery.port import ChatBinding, ProviderState
from ..delivery.port import InboundText as InboundText
from ..literals import DELIVERY_CHANNEL, MEDIUM
from ..store.records import ApproverRecord, InboundRecord, InteractionRecord, NumberRecord
from ..telemetry import Metrics, log_event, mask_address
from .accounts import Accounts
from .holding import Holding
from .holds import NewInteraction
from .interactions import Delivery, Interactions
from .numbers import NUMBER_SCOPE
from .runtime import KeyedLocks, Runtime, _event_dict, _metadata
from .sends import (
    NUMBER_PAIR_CHANNELS,
    Addressee,
    Waiting,
    ask_codes,
    ask_label,
    clarify_several_text,
    named,
    without_code,
)

logger = logging.getLogger("humanwire.engine")

_THREAD_ONLY = ("slack", *(c.name for c in CHAT_CHANNELS.values() if not c.by_pair))
"""The channels whose texts answer only in a message's thread (a Slack DM outside one is
no answer); the others' texts outside a thread answer by their sender pair."""


def _without_nul(text: InboundText) -> InboundText:
    """``text`` with any NUL character dropped: no carrier delivers one, PostgreSQL's text
    cannot store it, and refusing a provider's callback would only have it retried."""
    fields = {
        "from_addr": text.from_addr,
        "to_addr": text.to_addr,
        "body": text.body,
        "thread": text.thread,
        "ref": text.ref,
        "subject": text.subject,
    }
    changed: dict[str, Any] = {
        name: value.replace("\x00", "")
        for name, value in fields.items()
        if value is not None and "\x00" in value
    }
    media = tuple(url.replace("\x00", "") for url in text.media_urls)
    if media != text.media_urls:
        changed["media_urls"] = media
    return dataclasses.replace(text, **changed) if changed else text


@dataclass(frozen=True, slots=True)
class CallEnd:
    """How a call ended, as whoever ran it reports it (``Inbound.end_call``)."""

    outcome: Literal["completed", "no_answer", "transferred"]
    summary: str
    transcript: Sequence[tuple[Speaker, str]] | None = None
    """``(speaker, text)`` pairs when a voice agent ran the call."""
    via: DecisionVia | None = None
    """Who played the callee when no carrier ran the call (``InboundText.via``)."""


MatchText = Callable[
    [InboundText, str | None, InteractionRecord | None], Awaitable[InteractionRecord | None]
]
"""Offered a text (with the account it is known to be of, if any) and what was matched
before it: returns what the text is about (that, or another interaction)."""


@dataclass(frozen=True, slots=True)
class TextMatcher:
    """A matcher registered on ``Inbound.matchers`` with what it can claim, as data the
    inbound role reads: a text it cannot claim passes unchanged without entering its
    code (a plain reply to a message runs no approval or people code)."""

    match: MatchText
    channels: Collection[str] | None = None
    """The channels of the texts it reads (None: every channel's)."""
    unmatched: bool = True
    """Whether it is offered a text nothing matched so far."""
    matched_key: str | None = None
    """A text matched to an interaction is offered when the interaction's stored request
    carries this key..."""
    matched_body: re.Pattern[str] | None = None
    """... or when the text's body has this pattern (searched anywhere in it)."""

    def offered(self, text: InboundText, record: InteractionRecord | None) -> bool:
        if self.channels is not None and text.channel not in self.channels:
            return False
        if record is None:
            return self.unmatched
        if self.matched_key is not None and self.matched_key in record.request:
            return True
        return self.matched_body is not None and self.matched_body.search(text.body) is not None


R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class WaitingSource(Generic[R]):
    """Registered on ``Inbound.waiting``: who else waits at a shared sender for the
    person. ``open_at(channel, person)`` lists what is open for them there (a store
    read); ``read`` turns what it found into who waits. A text of another channel, or
    nothing found, never enters ``read``."""

    open_at: Callable[[str, str], Awaitable[Sequence[R]]]
    read: Callable[[InboundText, Sequence[R]], Awaitable[list[Waiting]]]
    channels: Collection[str] | None = None
    """The channels it reads (None: every channel)."""

    async def waiting(self, text: InboundText) -> list[Waiting]:
        if self.channels is not None and text.channel not in self.channels:
            return []
        found = await self.open_at(text.channel, text.from_addr)
        return await self.read(text, found) if found else []


TextTaker = Callable[[str, InboundText, InteractionRecord], Awaitable[InboundRecord]]
"""Takes a text matched to an interaction of its kind, for the account: what is stored."""
CallEndListener = Callable[[InteractionRecord, CallEnd], Awaitable[None]]
"""Told that a call ended, before its end is stored."""


class Inbound:
    """The inbound role (``engine.inbound``): what comes back from people, matched to
    what it answers and taken (see the module docstring). Parts that read replies of
    their own register on its lists at the engine's construction (approvals:
    ``ApprovalAccess.__init__``); each list runs in the order registered."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        accounts: Accounts,
        interactions: Interactions,
        holding: Holding,
    ) -> None:
        self._runtime = runtime
        self._store = runtime.store
        self._carriers = runtime.carriers
        self._accounts = accounts
        self._interactions = interactions
        self._holding = holding
        # Texts matched by their number pair, taken one at a time per pair (``receive``).
        self._number_pairs: KeyedLocks[tuple[str, str, str]] = KeyedLocks()
        self.matchers: list[TextMatcher] = []
        """Offered a text in turn after the message matcher (the number pair, or the
        thread: ``_match_message``), each with what was matched so far."""
        self.takers: dict[str, TextTaker] = {}
        """By the kind of the interaction a text matched: what takes it (a kind not here:
        the text answers that message, ``_take_reply``)."""
        self.waiting: list[WaitingSource[Any]] = []
        """Read beside the asks sent from a shared sender (``_asks_waiting``): who else
        waits there for the person."""
        self.call_ended: list[CallEndListener] = []
        """Told of a call's end in turn, before it is stored and answered."""

    # -- provider-neutral entry points -------------------------------------------
    async def receive_text(
        self, text: InboundText, account_id: str | None = None
    ) -> InboundRecord | None:
        """A text from a human, whatever carried it: answers the matching open
        interaction or becomes an unsolicited ``message.received``. Returns what was
        stored, or None when it was a duplicate (its ``ref`` seen before) or belongs to
        no account.

        Matching: sms / whatsapp answer the most recent open message interaction of the
        account sent to ``from_addr`` from ``to_addr`` on that channel (the number pair,
        as on a phone); slack only the interaction whose thread the reply is in.
        ``account_id`` is the account the carrier already knows (the sandbox's caller);
        without it the account is settled first (the shared sender's rules): the owner of the
        reserved number ``to_addr``, else the one account waiting on ``from_addr`` there.
        A text to a shared sender that nobody waits on belongs to nobody; one that
        several accounts wait on goes to the request its code names, or to nobody (the
        person is told the codes)."""
        return await self.receive(text, account_id)

    async def receive_reply(
        self, text: InboundText, thread: InteractionRecord
    ) -> InboundRecord | None:
        """A reply that names its interaction ``thread`` (an email to its reply
        address): answers it while it is an open message, else becomes the account's
        unsolicited ``message.received``. None for a duplicate (its ``ref`` seen)."""
        text = dataclasses.replace(text, thread=thread.id)
        return await self.receive(text, thread.account_id, thread)

    async def receive_unsolicited(self, text: InboundText, account_id: str) -> InboundRecord | None:
        """A message kept as the account's unsolicited ``message.received`` whatever is
        open (an email reply that is no answer: from an address not asked, or with no
        text to read). None for a duplicate (its ``ref`` seen)."""
        text = _without_nul(dataclasses.replace(text, thread=None))
        if text.ref is not None and await self._store.inbound_by_ref(text.ref) is not None:
            return None
        return await self.take_text(account_id=account_id, text=text, record=None)

    async def receive(
        self,
        text: InboundText,
        account_id: str | None,
        thread: InteractionRecord | None = None,
    ) -> InboundRecord | None:
        """``receive_text``; ``thread``: the Slack thread (or email reply address)
        interaction, read already (the sandbox's, ``receive_reply``'s)."""
        text = _without_nul(text)
        if text.channel in NUMBER_PAIR_CHANNELS:
            # Matched by the number pair: two texts from one phone taken at once would both
            # find the same latest open message, and the second lose it to the first
            # (unsolicited) while an older one waits on. One at a time per pair here.
            async with self._number_pairs.hold((text.channel, text.from_addr, text.to_addr)):
                return await self._receive_matched(text, account_id, thread)
        return await self._receive_matched(text, account_id, thread)

    async def _receive_matched(
        self, text: InboundText, account_id: str | None, thread: InteractionRecord | None
    ) -> InboundRecord | None:
        if account_id is None and text.channel in NUMBER_PAIR_CHANNELS:
            return await self._receive_unaddressed(text)
        if text.ref is None:
            record = await self._match(text, account_id, thread)
        else:
            # Whether the carrier sent it before, read beside what it answers: one round
            # trip's time for the two.
            seen, record = await asyncio.gather(
                self._store.inbound_by_ref(text.ref), self._match(text, account_id, thread)
            )
            if seen is not None:
                return None  # a carrier's retry of a message already taken
        if account_id is None:
            if record is not None:
                account_id = record.account_id
            else:
                number = await self._store.number_by_phone(text.to_addr)
                account_id = number.account_id if number is not None else None
        if account_id is None:
            return None
        return await self.take_text(account_id=account_id, text=text, record=record)

    async def _receive_unaddressed(self, text: InboundText) -> InboundRecord | None:
        """A text to a number that no carrier said the account of: whose it is first
        (the shared sender's rules), then matched within that account only."""

        async def addressed() -> tuple[Addressee | list[Waiting] | None, InteractionRecord | None]:
            whose = await self._whose(text)
            if isinstance(whose, Addressee) and whose.request is None:
                return whose, await self._match(text, whose.account_id)
            return whose, None

        if text.ref is None:
            whose, record = await addressed()
        else:
            # Whether the carrier sent it before, read beside whose it is and what it
            # answers, as for any text.
            seen, (whose, record) = await asyncio.gather(
                self._store.inbound_by_ref(text.ref), addressed()
            )
            if seen is not None:
                return None  # a carrier's retry of a message already taken
        if isinstance(whose, list):
            await self._clarify_several(text, whose)
            return None
        if whose is None:
            return None  # a text to a shared sender that nobody waits on: nobody's
        if whose.request is not None:  # the request its code named, as it takes the text
            text = dataclasses.replace(text, body=whose.body)
            record = whose.request
        return await self.take_text(account_id=whose.account_id, text=text, record=record)

    async def _whose(self, text: InboundText) -> Addressee | list[Waiting] | None:
        """The account a text to ``text.to_addr`` belongs to (with the request its code
        named when it took the code to tell); the open requests of several accounts when
        it named none of them; None when it is nobody's."""
        number = await self._store.number_by_phone(text.to_addr)
        if number is not None:
            return Addressee(number.account_id)
        waiting = await self._waiting_for(text)
        accounts = {item.account_id for item in waiting}
        if len(accounts) <= 1:
            return Addressee(accounts.pop()) if accounts else None
        chosen = named(waiting, text.body)
        if len(chosen) != 1:
            return waiting
        record = await self._store.get_interaction(chosen[0].interaction_id)
        if record is None:
            return waiting
        body = text.body if chosen[0].decision else without_code(text.body, chosen[0].codes)
        return Addressee(record.account_id, record, body)

    async def _waiting_for(self, text: InboundText) -> list[Waiting]:
        """What every account has open for a reply from ``text.from_addr`` to the shared
        sender ``text.to_addr``: the asks sent from it, then what each registered source
        (``waiting``) says waits there, read together."""
        found = await asyncio.gather(
            self._asks_waiting(text), *(source.waiting(text) for source in self.waiting)
        )
        return [item for waiting in found for item in waiting]

    async def _asks_waiting(self, text: InboundText) -> list[Waiting]:
        """The asks sent from the shared sender to the person, still open."""
        found = await self._store.open_messages(
            text.channel, to_addr=text.from_addr, from_addr=text.to_addr
        )
        return [
            Waiting(
                account_id=record.account_id,
                interaction_id=record.id,
                label=ask_label(str(record.request.get("message", ""))),
                codes=ask_codes(record.id),
                decision=False,
            )
            for record in found
        ]

    async def _clarify_several(self, text: InboundText, waiting: Sequence[Waiting]) -> None:
        """Tells the person a text went to none of several accounts' requests, and how to
        name the one it answers. The text is no account's (none is charged for it)."""
        log_event(
            logger,
            "reply.unaddressed",
            channel=text.channel,
            sender=mask_address(text.from_addr),
            waiting=len({item.interaction_id for item in waiting}),
        )
        await self.text_back(text, clarify_several_text(waiting))

    async def text_back(
        self,
        text: InboundText,
        body: str,
        *,
        account_id: str = "",
        interaction_id: str | None = None,
    ) -> None:
        """A clarifying text to the person, from the number they wrote to, awaiting no
        reply of its own; ``account_id`` "" when it is on behalf of no account."""
        item = Outbound(
            account_id=account_id,
            interaction_id=interaction_id,
            channel=DELIVERY_CHANNEL(text.channel),
            kind="message",
            from_addr=text.to_addr,
            to_addr=text.from_addr,
            text=body,
            listening=False,
        )
        try:
            await self._carriers.by_channel.get(text.channel, self._carriers.default).deliver(item)
        except (RecipientUnreachable, ProviderFailure):
            logger.warning("could not send the clarifying text", exc_info=True)

    async def _match(
        self, text: InboundText, account_id: str | None, thread: InteractionRecord | None = None
    ) -> InteractionRecord | None:
        """What ``text`` answers: the message the matcher of messages finds, then offered
        to each registered matcher in turn (``matchers``), which may name
        another interaction the text is about (an approval it decides); each is offered
        only what its registration says it can claim (``TextMatcher.offered``)."""
        record = await self._match_message(text, account_id, thread)
        for matcher in self.matchers:
            if matcher.offered(text, record):
                record = await matcher.match(text, account_id, record)
        return record

    async def _match_message(
        self, text: InboundText, account_id: str | None, thread: InteractionRecord | None
    ) -> InteractionRecord | None:
        """The open message ``text`` answers: the one whose thread it is in (slack, an
        email's reply address), else the latest sent to its sender from its number."""
        threaded = text.thread is not None or text.channel in _THREAD_ONLY
        if threaded:
            if text.thread is None:
                return None
            if thread is None or thread.id != text.thread:
                thread = await self._store.get_interaction(text.thread)
            if (
                thread is None
                or (account_id is not None and thread.account_id != account_id)
                or thread.channel != text.channel
                or thread.kind != "message"
                or thread.status != "pending"
            ):
                return None
            return thread
        return await self._store.latest_open_message(
            account_id, text.channel, to_addr=text.from_addr, from_addr=text.to_addr
        )

    async def take_text(
        self, *, account_id: str, text: InboundText, record: InteractionRecord | None
    ) -> InboundRecord:
        """Takes ``text`` for the account: by the taker registered for the kind of the
        interaction it matched (``takers``), else as the answer of that message
        (or, matched to nothing, as an unsolicited ``message.received``)."""
        taker = self.takers.get(record.kind) if record is not None else None
        if taker is not None and record is not None:
            return await taker(account_id, text, record)
        return await self._take_reply(account_id, text, record)

    async def _take_reply(
        self, account_id: str, text: InboundText, record: InteractionRecord | None
    ) -> InboundRecord:
        """The text answers ``record`` (a message), or is the account's unsolicited
        ``message.received`` (None, or a message that ended meanwhile)."""

        def event_for(interaction_id: str | None) -> dict[str, Any]:
            return _event_dict(
                MessageReceivedEvent(
                    payload=MessageReceivedPayload(
                        interaction_id=interaction_id,
                        medium=MEDIUM(text.channel),
                        from_=text.from_addr,
                        to=text.to_addr,
                        body=text.body,
                        media_urls=list(text.media_urls),
                        subject=text.subject,
                        metadata=_metadata(record),
                    )
                )
            )

        inbound = InboundRecord(
            id=str(uuid.uuid4()),
            account_id=account_id,
            channel=MEDIUM(text.channel),
            from_addr=text.from_addr,
            to_addr=text.to_addr,
            body=text.body,
            media_urls=list(text.media_urls),
            interaction_id=record.id if record is not None else None,
            created_at=time.time(),
            ref=text.ref,
        )
        answered = None
        if record is not None:
            # Stored and announced with the end (one transaction with replicas).
            answered = await self._holding.answer(record, event_for(record.id), inbound=inbound)
        else:
            await self._store.insert_inbound(inbound)
            self._runtime.notices.notify(account_id, "inbound", inbound.id)
        if answered is None:
            await self._runtime.outbox.emit(account_id, event_for(None), None)
        self._runtime.metrics.reply(text.channel, answered is not None)
        log_event(
            logger,
            "reply.received",
            interaction_id=answered.id if answered is not None else None,
            account_id=account_id,
            channel=text.channel,
            sender=mask_address(text.from_addr),
            matched=answered is not None,
        )
        if answered is None and inbound.interaction_id is not None:
            inbound = dataclasses.replace(inbound, interaction_id=None)  # as stored
        return inbound

    async def end_call(
        self,
        record: InteractionRecord,
        *,
        outcome: Literal["completed", "no_answer", "transferred"],
        summary: str,
        transcript: Sequence[tuple[Speaker, str]] | None = None,
        via: DecisionVia | None = None,
    ) -> InteractionRecord | None:
        """A call ended, whoever ran it: the held request (if any) gets the outcome and
        ``call.conversation.ended`` always goes to the webhooks, with the ``transcript``
        (``(speaker, text)`` pairs, speaker ``agent`` or ``human``) when a voice agent ran
        the call. None when the call had ended already. ``via``: who played the callee
        when no carrier ran the call (``InboundText.via``). Each registered listener
        (``call_ended``: an approver's call is their decision) hears of it
        first."""
        end = CallEnd(outcome, summary, transcript, via)
        for listener in self.call_ended:
            await listener(record, end)
        payload = CallConversationEndedPayload(
            interaction_id=record.id,
            summary=summary,
            from_=record.from_addr,
            to=record.to_addr,
            metadata=_metadata(record),
            transcript=(
                None
                if transcript is None
                else [
                    TranscriptTurn(speaker=speaker, text=spoken) for speaker, spoken in transcript
                ]
            ),
        )
        event = _event_dict(CallConversationEndedEvent(payload=payload))
        return await self._holding.answer(record, event, outcome=outcome, always_emit=True)

    async def open_inbound_call(
        self, account_id: str, *, from_addr: str, to_addr: str
    ) -> InteractionRecord:
        """Someone calls ``to_addr``, a reserved number of ``account_id``: the call's
        interaction, pending until ``end_call`` reports what the voicemail-style agent
        took down."""
        account = await self._accounts.by_id(account_id)
        new = NewInteraction(
            kind="call",
            channel="call",
            to=to_addr,
            from_addr=from_addr,
            request={"inbound": True, "from": from_addr, "to": to_addr},
        )
        record, _ = await self._interactions.create(account, new)
        self._runtime.notices.notify(account_id, "inbound", record.id)
        return record


class FormSubmissions(Protocol):
    """What the port reaches of the links role (``engine.links``)."""

    async def submit_form(self, token: str, values: dict[str, str]) -> object: ...


class ChatBindings(Protocol):
    """What the port reaches of the people role (``engine.people``): a start link opened."""

    async def bind_chat(
        self, channel: str, token: str, chat: str, *, sender: str | None = None
    ) -> ChatBinding: ...


class ApprovalDecisions(Protocol):
    """What the port reaches of the approvals role (``engine.approvals``)."""

    async def button_approver(
        self, channel: str, interaction_id: str, to_addr: str
    ) -> int | None: ...

    async def decide_by_button(
        self, channel: str, interaction_id: str, position: int, user: str, decision: str
    ) -> tuple[str, str]: ...

    async def email_approver(self, token: str) -> ApproverRecord | None: ...

    async def decide_by_email_reply(
        self, approver: ApproverRecord, body: str, *, signed: bool
    ) -> str: ...


class EngineProviderPort:
    """The engine's side of the providers' inbound port (``delivery.port.InboundPort``):
    what a provider is given in place of the engine (``Engine.provider_port``). Each
    call goes to the role that owns it (this one, ``delivery``, ``links``, ``approvals``,
    ...) or is a store read the engine would make, so a provider reaches nothing else."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        inbound: Inbound,
        accounts: Accounts,
        interactions: Interactions,
        delivery: Delivery,
        links: FormSubmissions,
        approvals: ApprovalDecisions,
        people: ChatBindings,
    ) -> None:
        self._runtime = runtime
        self._people = people
        self._inbound = inbound
        self._accounts = accounts
        self._interactions = interactions
        self._delivery = delivery
        self._links = links
        self._approvals = approvals

    async def bind_chat(
        self, channel: str, token: str, chat: str, *, sender: str | None = None
    ) -> ChatBinding:
        return await self._people.bind_chat(channel, token, chat, sender=sender)

    # -- what the provider keeps and needs ------------------------------------------------
    @property
    def state(self) -> ProviderState:
        return self._runtime.store

    @property
    def schedule(self) -> Schedule:
        return self._runtime.schedule

    @property
    def metrics(self) -> Metrics:
        return self._runtime.metrics

    @property
    def phone_call_limit(self) -> float:
        return float(self._runtime.config.phone_call_limit)

    # -- reads -------------------------------------------------------------------------
    async def interaction(self, interaction_id: str) -> InteractionRecord | None:
        return await self._runtime.store.get_interaction(interaction_id)

    async def interaction_by_ref(self, ref: str) -> InteractionRecord | None:
        return await self._runtime.store.interaction_by_provider_ref(ref)

    async def interaction_by_reply_token(self, token: str) -> InteractionRecord | None:
        return await self._runtime.store.interaction_by_reply_token(token)

    async def number_by_phone(self, phone_number: str) -> NumberRecord | None:
        return await self._runtime.store.number_by_phone(phone_number)

    async def number_seller(self, phone_number: str) -> str | None:
        kept = await self._runtime.store.get_provider_state(NUMBER_SCOPE, phone_number)
        seller = kept.get("provider") if kept is not None else None
        return str(seller) if seller else None

    def form_of(self, record: InteractionRecord) -> Form:
        return self._interactions.form_of(record)

    async def account_of_key(self, api_key: str) -> str | None:
        account = await self._accounts.authenticate(api_key)
        return account.id if account is not None else None

    # -- what came back ------------------------------------------------------------------
    async def receive_text(
        self, text: InboundText, account_id: str | None = None
    ) -> InboundRecord | None:
        return await self._inbound.receive_text(text, account_id=account_id)

    async def receive_reply(
        self, text: InboundText, thread: InteractionRecord
    ) -> InboundRecord | None:
        return await self._inbound.receive_reply(text, thread)

    async def receive_unsolicited(self, text: InboundText, account_id: str) -> InboundRecord | None:
        return await self._inbound.receive_unsolicited(text, account_id)

    async def delivery_status(self, ref: str, status: DeliveryStatus) -> None:
        await self._delivery.delivery_status(ref, status)

    async def open_inbound_call(
        self, account_id: str, *, from_addr: str, to_addr: str
    ) -> InteractionRecord:
        return await self._inbound.open_inbound_call(
            account_id, from_addr=from_addr, to_addr=to_addr
        )

    async def end_call(
        self,
        record: InteractionRecord,
        *,
        outcome: CallOutcome,
        summary: str,
        transcript: Sequence[tuple[Speaker, str]] | None = None,
    ) -> None:
        await self._inbound.end_call(
            record, outcome=outcome, summary=summary, transcript=transcript
        )

    async def submit_form(self, token: str, values: Mapping[str, str]) -> None:
        await self._links.submit_form(token, dict(values))

    # -- approvals -----------------------------------------------------------------------
    async def button_approver(self, channel: str, interaction_id: str, to_addr: str) -> int | None:
        return await self._approvals.button_approver(channel, interaction_id, to_addr)

    async def decide_by_button(
        self, channel: str, interaction_id: str, position: int, user: str, decision: str
    ) -> tuple[str, str]:
        return await self._approvals.decide_by_button(
            channel, interaction_id, position, user, decision
        )

    async def email_approver(self, token: str) -> ApproverRecord | None:
        return await self._approvals.email_approver(token)

    async def decide_by_email_reply(
        self, approver: ApproverRecord, body: str, *, signed: bool
    ) -> str:
        return await self._approvals.decide_by_email_reply(approver, body, signed=signed)
