"""Sends: messages, channel-card messages, forms, calls and the agent-skill ``/phone/*``
endpoints, and the status long-poll. Each send opens an interaction, delivers through the
provider, then holds for ``waitTime``.

The senders role (``engine.senders``): the number, account or workspace a send goes
out from: the account's reserved number, a shared sender (its provider's), or a ``from``
the provider accepts for the account.

Whose a reply to a number is, when no carrier says so (an sms or whatsapp text a
provider reported). A reply to an account's reserved number is that account's. A reply
to a shared sender is the one account's that has something open for the person there (an
ask sent from that sender, an approval asked of them on that channel). When several
accounts have, only a reply naming one request's code goes anywhere, to that request;
anything else goes to no account and the person gets one text back listing the open
requests and their codes. So no account ever takes, or decides on, a reply meant for
another: the one rule for every kind of request on every shared sender.

An approver's code is theirs (``ApproverRecord.code``, shown in the text that asked them
when the number had others open). An ask's code is derived from its interaction id, so it
needs no storage: four digits, six for one whose four collide with another open request's
(a reply naming either is read), shown in the clarifying text.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from humanwire.types import (
    DEFAULT_NO_RESPONSE_TEMPLATE,
    METADATA_MAX_KEYS,
    UNDELIVERED_TEXT,
    ChannelMessageRequest,
    EmailFormRequest,
    EmailMessageRequest,
    FormResponse,
    InteractionStatus,
    MessageResponse,
    PersonMessageRequest,
    SlackFormRequest,
    SlackMessageRequest,
    SMSFormRequest,
    SMSMessageRequest,
    WhatsAppFormRequest,
    WhatsAppMessageRequest,
    WhatsAppOwnNumberFormRequest,
    WhatsAppSharedFormRequest,
    format_seconds,
)
from humanwire.types.errors import detail_from_validation_error
from humanwire.types.forms import STORED_FORM

from .. import templates
from ..approvals import texts
from ..delivery import AccountSenders, WhatsAppTemplate
from ..delivery.chat import CHAT_CHANNELS, chat_channel_of, chat_form_of
from ..errors import InvalidRequest, NotFound
from ..literals import DELIVERY_CHANNEL
from ..store.records import ChannelRecord, InteractionRecord
from ._common import Account, Channel, FormRequest, MessageRequest
from .accounts import Accounts
from .events import answered_message, held_answer
from .holding import Holding
from .holds import HELD_TO_THE_END, NewInteraction, SendContext
from .interactions import UNDELIVERED, Delivery, Interactions
from .recipients import Recipients
from .runtime import Runtime, _metadata

__all__ = [
    "ANY_CHANNEL",
    "NUMBER_PAIR_CHANNELS",
    "Addressee",
    "MessageSend",
    "Senders",
    "Sends",
    "Waiting",
    "ask_codes",
    "ask_label",
    "clarify_several_text",
    "form_request",
    "named",
    "shared_template",
    "without_code",
]


class Senders:
    """Whom a send goes out from (see the module docstring)."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._store = runtime.store
        self._providers = runtime.carriers.by_channel

    def shared(self, channel: Channel) -> str:
        """The shared number (or workspace) ``channel`` goes out from: its provider's."""
        return self._providers[channel].senders[channel]

    async def chat(self, account: Account, channel: Channel) -> str:
        """The sender ``channel`` goes out from for the account: its own (an own
        Telegram bot, ``AccountSenders``) when it has one, else the shared one."""
        provider = self._providers[channel]
        if isinstance(provider, AccountSenders):
            own = await provider.account_sender(account.id, channel)
            if own:
                return own
        return self.shared(channel)

    async def reserved_number(self, account: Account) -> str | None:
        numbers = await self._store.numbers_of(account.id)
        return numbers[0].phone_number if numbers else None

    async def phone(self, account: Account, requested: str | None) -> str:
        """The number a text or call goes out from. A requested ``from`` must be the
        account's reserved number or a shared number (400 ``from`` otherwise): with two
        carriers, either one's (it goes out through its owner)."""
        reserved = await self.reserved_number(account)
        shared = self.shared("sms")
        if requested is None:
            return reserved or shared
        if requested in (reserved, shared) or await self._providers["sms"].accepts_sender(
            account.id, "sms", requested
        ):
            return requested
        raise InvalidRequest(
            "from must be the account's reserved number (GET /numbers); "
            "reserve one with POST /numbers/reserve",
            field="from",
        )

    async def slack(self, account: Account, requested: str | None) -> str:
        """The workspace a Slack send goes out from: the shared one, or a requested
        ``from`` the provider accepts for the account (a workspace it installed the bot
        in); 400 ``from`` otherwise."""
        shared = self.shared("slack")
        if requested is None or requested == shared:
            return shared
        if not await self._providers["slack"].accepts_sender(account.id, "slack", requested):
            raise InvalidRequest(
                "from must be the shared workspace or a workspace this account installed "
                "the bot in (the inbox's Slack page)",
                field="from",
            )
        return requested


ANY_CHANNEL = "_anyChannel"
"""Marks a stored message request sent by ``POST /messages/person``: on any channel."""

NUMBER_PAIR_CHANNELS = ("sms", "whatsapp", *(c.name for c in CHAT_CHANNELS.values() if c.by_pair))
"""The channels a reply reaches by its sender pair (where one number, or one shared bot,
serves many accounts): the chat channels by their registration."""

_SEPARATORS = " \t\r\n,.:;!-"
_DIGITS = re.compile(r"[0-9]{4,6}")
_LABEL = 60
"""An ask is named in the clarifying text by its message, cut to this many characters."""


@dataclass(frozen=True)
class Addressee:
    """Whose a text is: the account, and the request its code named when only the code
    could tell (None: matched within the account as every text is)."""

    account_id: str
    request: InteractionRecord | None = None
    body: str = ""
    """The text as ``request`` takes it: an ask's answer without its code."""


@dataclass(frozen=True)
class Waiting:
    """Something open for a reply from one person on one number: an ask (a message
    interaction) or their part in an approval request."""

    account_id: str
    interaction_id: str
    label: str
    """What the clarifying text calls it: the ask's message, the request's title."""
    codes: tuple[str, ...]
    """The codes a reply names it by; the first is the one shown."""
    decision: bool
    """An approval: its reply is YES / NO and the code. An ask: the code, then the answer."""
    comments: bool = True
    """An approval that takes a reason (``allowComment``)."""


def ask_codes(interaction_id: str) -> tuple[str, str]:
    """An ask's four-digit code and its six-digit one (for when the four collide)."""
    number = int.from_bytes(hashlib.sha256(interaction_id.encode()).digest()[:8], "big")
    return f"{number % 10_000:04d}", f"{number % 1_000_000:06d}"


def ask_label(message: str) -> str:
    line = " ".join(message.split())
    return line if len(line) <= _LABEL else line[: _LABEL - 1].rstrip() + "…"


def _codes_in(body: str) -> tuple[str | None, str | None]:
    """The code a reply names as its first word, and the one it names after a YES / NO."""
    words = [word.strip(_SEPARATORS) for word in body.split(maxsplit=2)[:2]]
    first = words[0] if words and _DIGITS.fullmatch(words[0]) else None
    decided = texts.parse_reply(body) is not None
    second = words[1] if decided and len(words) > 1 and _DIGITS.fullmatch(words[1]) else None
    return first, second


def named(waiting: Sequence[Waiting], body: str) -> list[Waiting]:
    """What of ``waiting`` the reply names by its code (an approval after its YES / NO; an
    ask first, or after a YES / NO), one entry per request."""
    first, after_decision = _codes_in(body)
    found: dict[str, Waiting] = {}
    for item in waiting:
        if after_decision in item.codes or (not item.decision and first in item.codes):
            found.setdefault(item.interaction_id, item)
    return list(found.values())


def without_code(body: str, codes: Sequence[str]) -> str:
    """An ask's answer: the reply without the code that named the ask."""
    words = body.split(maxsplit=2)
    if words and words[0].strip(_SEPARATORS) in codes:
        return " ".join(words[1:]).lstrip(_SEPARATORS).strip()
    if len(words) > 1 and words[1].strip(_SEPARATORS) in codes:
        return " ".join([words[0], *words[2:]]).strip()
    return body.strip()


def shown(waiting: Sequence[Waiting]) -> list[Waiting]:
    """``waiting`` once per request, each ask with the code it is shown with: six digits
    when its four are another open request's."""
    unique: dict[str, Waiting] = {}
    for item in waiting:
        unique.setdefault(item.interaction_id, item)
    items = list(unique.values())
    result = []
    for item in items:
        others = {c for other in items if other is not item for c in other.codes[:1]}
        if not item.decision and item.codes[0] in others:
            item = dataclasses.replace(item, codes=item.codes[1:] + item.codes[:1])
        result.append(item)
    return result


def clarify_several_text(waiting: Sequence[Waiting]) -> str:
    """The text back for a reply to a shared sender that names none of the requests
    several accounts have open for the person there."""
    items = shown(waiting)
    listed = []
    for item in items:
        code = item.codes[0]
        if item.decision:
            listed.append(f'"{item.label}": YES {code} or NO {code}')
        else:
            listed.append(f'"{item.label}": reply {code} and your answer')
    approvals = [item for item in items if item.decision]
    reason = " (a reason may follow)" if approvals and all(i.comments for i in approvals) else ""
    return (
        "Sorry, several requests are waiting for your reply on this number and that reply "
        f"named none of them. Reply with the code of the one you answer: {'; '.join(listed)}"
        f"{reason}."
    )


@dataclass(frozen=True, slots=True)
class MessageSend:
    """A message as every kind of message send comes to hand it over (a message
    request, a channel card's message): ``Sends.message_flow`` opens, delivers and
    holds it."""

    channel: Channel
    to: str
    sender: str
    text: str
    """What goes out (a reply link's text is added to it)."""
    request: dict[str, Any]
    """The wire body, stored as the interaction's request."""
    wait_time: float | None
    follow_up_time: float | None
    response_template: str | None = None
    no_response_template: str | None = None
    card_id: str | None = None
    reply_link: bool = False
    """A card's: the text carries a link the recipient may answer through."""
    template: WhatsAppTemplate | None = None
    """What goes out instead outside WhatsApp's 24-hour window."""
    kept_text: str | None = None
    """What the interaction keeps of ``text`` when it must not keep it all (a one-time
    code's text, the code masked); None: ``text``."""


class Sends:
    """The sends role (``engine.sends``): each send is written as the same steps, by
    name: its sender (``senders``), the account's checks (``accounts``), its interaction
    opened (``interactions``), delivered (``delivery``), then held (``holding``)."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        accounts: Accounts,
        senders: Senders,
        interactions: Interactions,
        delivery: Delivery,
        holding: Holding,
        recipients: Recipients,
    ) -> None:
        self._runtime = runtime
        self._store = runtime.store
        self._accounts = accounts
        self._senders = senders
        self._recipients = recipients
        self._interactions = interactions
        self._delivery = delivery
        self._holding = holding
        self.opened: list[Callable[[InteractionRecord], Awaitable[None]]] = []
        """Told of each message and form interaction opened (a retry's re-attached one
        too), before it is delivered: registrations that arm a step of their own
        (``fallbackAfter``: engine/fallback.py)."""

    async def _unanswered(self, interaction_id: str, text: str) -> dict[str, Any]:
        """What a held send answers when no response came: the no-response ``text``, or,
        when the provider reported the delivery failed, the "could not be delivered"
        text with ``deliveryStatus`` ``failed`` (the human never saw it)."""
        now = await self._interactions.current(interaction_id)
        answer = {**self._interactions.fields(now), "responded": False, "response": text}
        if now.outcome == UNDELIVERED:
            answer.update(response=UNDELIVERED_TEXT, delivery_status="failed")
        return answer

    async def _to(
        self, account: Account, request: MessageRequest | FormRequest, channel: Channel
    ) -> str:
        """Where the send goes: its ``to``, or its ``person``'s address on ``channel``
        (the stored request keeps ``person``; the interaction's ``to`` is the address)."""
        if request.to is not None:
            return request.to
        assert request.person is not None  # one of the two, by the request's validation
        return (await self._recipients.address(account, request.person, (channel,)))[1]

    # -- sends: each delivers through the provider, then holds for waitTime -----
    async def _prepared(
        self, account: Account, request: MessageRequest
    ) -> tuple[Channel, str, str, WhatsAppTemplate | None]:
        """A message request's channel, sender, text as it goes out, and WhatsApp
        template."""
        if isinstance(request, SMSMessageRequest):
            return "sms", await self._senders.phone(account, request.from_), request.message, None
        if isinstance(request, WhatsAppMessageRequest):
            return (
                "whatsapp",
                self._senders.shared("whatsapp"),
                templates.whatsapp_message(request.message, request.wait_time),
                shared_template(request.message, request.wait_time),
            )
        if isinstance(request, EmailMessageRequest):
            return "email", self._senders.shared("email"), request.message, None
        if isinstance(request, SlackMessageRequest):
            return "slack", await self._senders.slack(account, request.from_), request.message, None
        # A registered chat channel (delivery/chat.py): from the account's own sender on
        # it (its own bot), else its provider's shared one.
        chat = chat_channel_of(request)
        if chat is None:
            raise TypeError(f"no channel sends {type(request).__name__}")
        channel = DELIVERY_CHANNEL(chat.name)
        return channel, await self._senders.chat(account, channel), request.message, None

    async def send_message(
        self,
        account: Account,
        request: MessageRequest,
        context: SendContext = HELD_TO_THE_END,
        *,
        marks: Mapping[str, Any] | None = None,
    ) -> MessageResponse:
        """``marks``: private keys stored with the request (``_name``), for the
        registrations that read it back (``opened``)."""
        channel, sender, text, template = await self._prepared(account, request)
        to = await self._to(account, request, channel)
        await self._accounts.check_send(account, request.message, to)
        # Handed over, not kept in this frame (which lives as long as a held send).
        return await self.message_flow(
            account,
            MessageSend(
                channel=channel,
                to=to,
                sender=sender,
                text=text,
                request={**request.to_wire(), **(marks or {})},
                wait_time=request.wait_time,
                follow_up_time=request.follow_up_time,
                template=template,
            ),
            context,
        )

    async def send_onward(
        self,
        account: Account,
        request: MessageRequest,
        *,
        marks: Mapping[str, Any],
        listening: float,
    ) -> str:
        """A message that carries on another interaction (its ``to`` given): sent without
        a wait, listening ``listening`` seconds, its stored request with ``marks``. The
        new interaction's id."""
        channel, sender, text, template = await self._prepared(account, request)
        assert request.to is not None
        send = MessageSend(
            channel=channel,
            to=request.to,
            sender=sender,
            text=text,
            request={**request.to_wire(), **marks},
            wait_time=None,
            follow_up_time=listening,
            template=template,
        )
        return (await self.message_flow(account, send)).interaction_id

    async def send_to_person(
        self,
        account: Account,
        request: PersonMessageRequest,
        context: SendContext = HELD_TO_THE_END,
    ) -> MessageResponse:
        """``POST /messages/person``: sent as the message request of the channel of the
        person's first confirmed address (with ``person``, so that address is the one)."""
        requests = message_requests()
        channel, _ = await self._recipients.address(account, request.person, requests)
        try:
            as_sent = requests[channel].model_validate(request.to_wire())
        except ValidationError as exc:  # that channel's rules (a message too long for it)
            detail = detail_from_validation_error(exc)
            raise InvalidRequest(f"{channel}: {detail.message}", field=detail.field) from None
        # Marked: a move (``fallbackAfter``) may go to the person's next address on any channel.
        return await self.send_message(account, as_sent, context, marks={ANY_CHANNEL: True})

    async def message_flow(
        self, account: Account, send: MessageSend, context: SendContext = HELD_TO_THE_END
    ) -> MessageResponse:
        waits = send.wait_time is not None
        new = NewInteraction(
            kind="message",
            channel=send.channel,
            to=send.to,
            from_addr=send.sender,
            request={
                **send.request,
                "_text": send.text if send.kept_text is None else send.kept_text,
                **({"_replyLink": True} if send.reply_link else {}),
                **(held_answer(context, send.response_template) if waits else {}),
            },
            wait_time=send.wait_time,
            follow_up_time=send.follow_up_time,
            reply_token=secrets.token_urlsafe(32) if send.reply_link else None,
            card_id=send.card_id,
        )
        record, resumed, hold = await self._interactions.open(
            account, new, holding=waits, context=context
        )
        for listener in self.opened:
            await listener(record)
        delivered = send.text
        if send.reply_link and record.reply_token is not None:
            link = self._interactions.reply_link_url(record.reply_token)
            delivered = templates.reply_link_text(send.text, link)
        await self._interactions.send_out(
            record,
            resumed,
            hold,
            functools.partial(
                self._delivery.deliver, record, delivered, hold=hold, template=send.template
            ),
        )
        if hold is None:
            return MessageResponse(**await self._interactions.fields_now(record.id))
        # Held: this frame keeps only what the answer needs for as long as the wait lasts
        # (the hold has the interaction; the send, its stored request and the record as
        # opened are let go).
        interaction_id = record.id
        response_template = send.response_template
        no_response_template = send.no_response_template
        del send, new, record, resumed, delivered
        answered = await self._holding.hold(hold)
        if answered is not None and answered.result is not None:
            return answered_message(interaction_id, response_template, answered)
        no_response = templates.no_response_text(no_response_template)
        return MessageResponse(**await self._unanswered(interaction_id, no_response))

    async def send_channel_message(
        self,
        account: Account,
        channel_id: str,
        request: ChannelMessageRequest,
        context: SendContext = HELD_TO_THE_END,
    ) -> MessageResponse:
        """Applies the card. A call card places a call with the rendered message as the
        prompt and, with a waitTime, holds for its end (response template on the summary)."""
        card = await self._store.get_channel(account.id, channel_id)
        if card is None:
            raise NotFound(f"no channel {channel_id!r}", field="channelId")
        text = templates.card_message(card.message_template, request.message, card.wait_time)
        await self._accounts.check_send(account, request.message, card.to_addr)
        wire = {**request.to_wire(), "_channelId": card.id}
        metadata = {**(card.metadata or {}), **(request.metadata or {})}
        if len(metadata) > METADATA_MAX_KEYS:
            raise InvalidRequest(
                f"metadata: the card's and this send's keys are {len(metadata)} together; "
                f"at most {METADATA_MAX_KEYS}",
                field="metadata",
            )
        wire.pop("metadata", None)
        if metadata:
            wire["metadata"] = metadata
        if card.type == "call":
            return await self._call_card(account, card, text, wire, context)
        template = None
        if card.type == "sms":
            sender = await self._senders.phone(account, None)
        elif card.type == "whatsapp":
            sender = self._senders.shared("whatsapp")
            template = shared_template(text, card.wait_time)
            text = templates.whatsapp_message(text, card.wait_time)
        else:
            # email, slack, or a registered chat channel's card (telegram, discord, teams): from
            # the account's own sender there or its provider's shared one, as that
            # channel's own sends go.
            sender = await self._senders.chat(account, card.type)
        send = MessageSend(
            channel=card.type,
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
            template=template,
        )
        return await self.message_flow(account, send, context)

    async def _call_card(
        self,
        account: Account,
        card: ChannelRecord,
        prompt: str,
        wire: dict[str, Any],
        context: SendContext,
    ) -> MessageResponse:
        new = NewInteraction(
            kind="call",
            channel="call",
            to=card.to_addr,
            from_addr=await self._senders.phone(account, None),
            request={**wire, "prompt": prompt, "to": card.to_addr},
            card_id=card.id,
        )
        record, resumed, hold = await self._interactions.open(
            account, new, holding=card.wait_time is not None, context=context
        )
        await self._interactions.send_out(
            record,
            resumed,
            hold,
            functools.partial(self._delivery.deliver, record, prompt, hold=hold),
        )
        if hold is None:
            return MessageResponse(**await self._interactions.fields_now(record.id))
        limit = self._interactions.remaining(record, float(card.wait_time or 0), resumed)
        ended = await self._holding.hold(hold, limit=limit)
        if ended is not None and ended.result is not None and ended.outcome != "no_answer":
            summary = str(ended.result["payload"]["summary"])
            return MessageResponse(
                interaction_id=record.id,
                status="ended",
                responded=True,
                response=templates.response_text(card.response_template, summary),
                reply=summary,
                delivery_status=ended.delivery_status,
                metadata=_metadata(ended),
            )
        return MessageResponse(
            **await self._unanswered(
                record.id, templates.no_response_text(card.no_response_template)
            ),
        )

    async def _form_prepared(
        self, account: Account, request: FormRequest
    ) -> tuple[Channel, str, Callable[[str], str], Callable[[str], WhatsAppTemplate | None]]:
        """A form request's channel, sender, and its text and WhatsApp template for the
        form's link."""
        text_for: Callable[[str], str]
        template_for: Callable[[str], WhatsAppTemplate | None] = _no_template
        if isinstance(request, SMSFormRequest):
            channel: Channel = "sms"
            sender = await self._senders.phone(account, None)
            text_for = functools.partial(templates.form_message, request.message)
        elif isinstance(request, SlackFormRequest):
            channel = "slack"
            sender = await self._senders.slack(account, request.from_)
            text_for = functools.partial(templates.form_message, request.message)
        elif isinstance(request, EmailFormRequest):
            channel = "email"
            sender = self._senders.shared("email")
            text_for = functools.partial(templates.form_message, request.message)
        elif (chat := chat_form_of(request)) is not None:
            # A registered chat channel's form (delivery/chat.py): the link from its bot.
            channel = DELIVERY_CHANNEL(chat.name)
            sender = await self._senders.chat(account, channel)
            text_for = functools.partial(templates.form_message, getattr(request, "message", None))
        elif isinstance(request, WhatsAppOwnNumberFormRequest):
            channel = "whatsapp"
            if request.from_ != await self._senders.reserved_number(account):
                raise InvalidRequest(
                    "from must be the account's own (reserved) whatsapp number", field="from"
                )
            sender = request.from_
            own = request.template

            def template_for(url: str) -> WhatsAppTemplate:
                return WhatsAppTemplate(content_sid=own.id, variables=dict(own.variables))

            variables = ", ".join(f"{k}={v}" for k, v in request.template.variables.items())
            header = f"[template {request.template.id}{': ' + variables if variables else ''}]"

            def text_for(url: str) -> str:
                return f"{header}\n{templates.whatsapp_form_message(url)}"

        else:
            channel = "whatsapp"
            sender = self._senders.shared("whatsapp")
            text_for = templates.whatsapp_form_message

            def template_for(url: str) -> WhatsAppTemplate:
                return WhatsAppTemplate(name="form", variables={"1": url})

        return channel, sender, text_for, template_for

    async def send_form(
        self, account: Account, request: FormRequest, context: SendContext = HELD_TO_THE_END
    ) -> FormResponse:
        channel, sender, text_for, template_for = await self._form_prepared(account, request)
        message = getattr(request, "message", None)
        to = await self._to(account, request, channel)
        await self._accounts.check_send(account, f"{request.title}\n{message or ''}", to)
        new = NewInteraction(
            kind="form",
            channel=channel,
            to=to,
            from_addr=sender,
            request=request.to_wire(),
            wait_time=request.wait_time,
            follow_up_time=request.effective_follow_up_time,
            form_token=secrets.token_urlsafe(32),
        )
        record, resumed, hold = await self._interactions.open(
            account, new, holding=request.wait_time is not None, context=context
        )
        for listener in self.opened:
            await listener(record)
        assert record.form_token is not None
        url = self._interactions.form_url(record.form_token)
        deliver = functools.partial(
            self._delivery.deliver,
            record,
            text_for(url),
            form_url=url,
            hold=hold,
            template=template_for(url),
        )
        await self._interactions.send_out(record, resumed, hold, deliver)
        if hold is None:
            return FormResponse(**await self._interactions.fields_now(record.id), form_url=url)
        answered = await self._holding.hold(hold)
        if answered is not None and answered.result is not None:
            from ..forms.validate import format_content

            values = dict(answered.result["payload"]["values"])
            return FormResponse(
                interaction_id=record.id,
                status="ended",
                form_url=url,
                responded=True,
                values=values,
                content=format_content(self._interactions.form_of(answered), values),
                delivery_status=answered.delivery_status,
                metadata=_metadata(answered),
            )
        return FormResponse(
            form_url=url,
            **await self._unanswered(record.id, DEFAULT_NO_RESPONSE_TEMPLATE),
        )

    async def send_form_onward(
        self,
        account: Account,
        request: FormRequest,
        *,
        form_token: str,
        marks: Mapping[str, Any],
        listening: float,
    ) -> str:
        """A form that carries on another interaction's (its ``to`` given): its message
        with the other's link (``form_token``'s: one form wherever it goes) sent without a
        wait, listening ``listening`` seconds, its stored request with ``marks`` and
        without windows (they are the other's). It has a token of its own, for what a
        channel renders natively (a Discord modal, a Teams card, Slack's buttons) to
        submit by; ``links.form_owners`` turns it into the other's. The new id."""
        channel, sender, text_for, template_for = await self._form_prepared(account, request)
        assert request.to is not None
        form_url = self._interactions.form_url(form_token)
        windows = ("waitTime", "followUpTime")
        wire = {k: v for k, v in request.to_wire().items() if k not in windows}
        new = NewInteraction(
            kind="form",
            channel=channel,
            to=request.to,
            from_addr=sender,
            request={**wire, **marks},
            wait_time=None,
            follow_up_time=listening,
            form_token=secrets.token_urlsafe(32),
        )
        record, resumed, hold = await self._interactions.open(account, new)
        deliver = functools.partial(
            self._delivery.deliver,
            record,
            text_for(form_url),
            form_url=form_url,
            hold=hold,
            template=template_for(form_url),
        )
        await self._interactions.send_out(record, resumed, hold, deliver)
        return record.id

    async def interaction_status(
        self,
        account: Account,
        interaction_id: str,
        wait: float | None = None,
        named: InteractionRecord | None = None,
    ) -> InteractionStatus:
        """With ``wait``: holds until the status changes or ``wait`` seconds pass;
        returns at once for an ended interaction. ``named``: the interaction as read
        with its key (``authenticate_request``)."""
        record = await self._interactions.of(account, interaction_id, named)
        if wait is not None and wait > 0 and record.status == "pending":
            if self._runtime.lifecycle.draining:
                raise self._runtime.unavailable()
            await self._runtime.notices.status.wait(
                record.id, min(wait, self._runtime.config.max_status_wait)
            )
            if self._runtime.lifecycle.draining:
                raise self._runtime.unavailable()
            record = await self._interactions.of(account, interaction_id)
        return self._interactions.status(record)


def message_requests() -> dict[str, Any]:
    """The message request of every channel a person may be asked on by name."""
    return {
        "sms": SMSMessageRequest,
        "whatsapp": WhatsAppMessageRequest,
        "slack": SlackMessageRequest,
        "email": EmailMessageRequest,
        **{name: chat.message_request for name, chat in CHAT_CHANNELS.items()},
    }


def form_request(channel: str, wire: Mapping[str, Any]) -> FormRequest:
    """A form request of ``channel``'s endpoint (``/forms/<channel>``) from its wire body,
    as the service stored it (its patterns not compiled again: checked when it was sent).
    Raises ``ValidationError`` as the endpoint would."""
    context = {STORED_FORM: True}
    if channel == "whatsapp":
        return _WHATSAPP_FORM.validate_python(wire, context=context)
    built_in: dict[str, type[BaseModel]] = {
        "sms": SMSFormRequest,
        "slack": SlackFormRequest,
        "email": EmailFormRequest,
    }
    model = built_in.get(channel) or CHAT_CHANNELS[channel].form_request
    # One of the FormRequest models, by the map above and the chat channels' registration.
    return cast("FormRequest", model.model_validate(wire, context=context))


_WHATSAPP_FORM: TypeAdapter[WhatsAppSharedFormRequest | WhatsAppOwnNumberFormRequest] = TypeAdapter(
    WhatsAppFormRequest, config=ConfigDict(defer_build=True)
)


def shared_template(message: str, wait_time: float | None) -> WhatsAppTemplate:
    """The specification's shared-account template a WhatsApp message goes out as
    outside the 24-hour window: ``notification`` ({{1}} the message) without a wait,
    ``request`` ({{1}} the message, {{2}} the wait in seconds) with one."""
    if wait_time is None:
        return WhatsAppTemplate(name="notification", variables={"1": message})
    return WhatsAppTemplate(
        name="request", variables={"1": message, "2": format_seconds(wait_time)}
    )


def _no_template(url: str) -> None:
    return None
