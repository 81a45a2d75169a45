"""The people role (``engine.people``): the account's people directory (docs/people.md),
an address confirmed by a one-time code sent through the ordinary send path, and a
person's address found for a send that names the person instead of ``to``.

A confirmation is a message interaction like any other (no ``waitTime``, listening for
``CODE_TTL`` seconds), whose request carries ``_confirm`` (the person and the address).
The person's reply matches it as a reply matches any message (the number pair, an
email's reply address); the matcher this role registers on ``engine.inbound`` checks the
code in it before the reply is taken: the right code confirms the address and answers the
message; a wrong one is counted (the code is void at ``MAX_MISSES``) and the text is the
account's unsolicited ``message.received``, leaving the confirmation open.

On Telegram a bot cannot write first, so nothing is sent: the confirmation is the bot's
start link ``t.me/<bot>?start=<token>`` (the provider's, ``StartLinks``) with a one-time
token, kept only as its hash: on the address as a code is (so a new link voids the one
before, and replacing the address drops it) and in a ``provider_state`` row under
``START_SCOPE`` that finds the person by it. The person opening it sends ``/start
<token>`` from their chat; the provider hands it to ``bind_chat`` (through its inbound
port), which makes that chat the address, confirmed, and spends the token. A token
unknown, spent or expired confirms nothing, and the chat is told so.

On Discord the bot may write first, but a DM reaches whoever the id is, and the only
answer a person gives is a press: the address's user is sent a DM with a Confirm button
whose ``custom_id`` carries a one-time token (kept as the start link's is, its hash
under ``START_SCOPE``, with ``START_TTL``). The provider hands the press to
``bind_chat`` with the presser's id, which confirms the address only when the presser
is its user (anyone else is refused, the token kept), and spends the token.

On Teams the same, with the install's conversation for the DM: the bot posts a card
whose Confirm (``Action.Submit``) carries the token in its data; the press comes back as
a message activity from the presser, handed to ``bind_chat`` with their user id."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Sequence
from typing import Any

from pydantic_core import PydanticCustomError

from humanwire.types import check_telegram_chat_id
from humanwire.types.people import (
    CODE_CHANNELS,
    CONFIRMABLE_CHANNELS,
    Person,
    PersonAddress,
    PersonConfirmation,
    PersonConfirmRequest,
    PersonCreateRequest,
    PersonList,
    PersonUpdateRequest,
)

from .. import templates
from ..delivery import ProviderFailure, RecipientUnreachable
from ..delivery.port import ChatBinding, ConfirmButtons, StartLinks
from ..delivery.telegram.channel import SANDBOX_BOT_USERNAME
from ..errors import InvalidRequest, InvalidToNumber, NotFound, ProviderError
from ..store.records import (
    PeopleQuery,
    PersonAddressRecord,
    PersonCodeRecord,
    PersonRecord,
)
from ._common import Account, Channel
from .human import Inbound, InboundText, TextMatcher
from .runtime import Runtime, _timestamp
from .sends import MessageSend, Senders, Sends, shared_template

__all__ = ["CODE_TTL", "MAX_MISSES", "START_SCOPE", "START_TTL", "PeopleDirectory"]

CODE_TTL = 600.0
"""Seconds a confirmation code can be answered (the confirmation's listening window)."""
MAX_MISSES = 5
"""Wrong answers after which a code is void (a new one must be sent)."""
_CODE = re.compile(r"(?<!\d)\d{6}(?!\d)")
_CONFIRM_KEY = "_confirm"
START_TTL = 24 * 3600.0
"""Seconds a Telegram start link can be opened (it is shown or sent to the person, who
may open it later than a code is typed)."""
START_SCOPE = "person-start"
"""``provider_state`` rows: a start link's token (its hash) → whose address it binds."""
_START_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What Telegram passes of a start link (its deep-link payload's alphabet and length)."""
START_NOT_VALID = (
    "This link is not valid: it was used already, replaced by a newer one, or it expired. "
    "Ask for a new link."
)
START_BOUND = "Done: this chat is confirmed. Messages meant for you will come here."
START_ALREADY = "This chat is confirmed for you already."
CONFIRM_TEXT = (
    "Is this you? Press Confirm to receive messages meant for you here, through this app."
)
CONFIRM_NOT_YOURS = "This confirmation is not yours: nothing was confirmed."
CONFIRM_BOUND = "Done: confirmed. Messages meant for you will come here."
BUTTON_CHANNELS = {"discord": "Discord", "teams": "Teams"}
"""The channels confirmed by a button carrying the token (``ConfirmButtons``)."""


def _start_key(token: str, channel: str = "telegram") -> str:
    """What is stored of a start link's (or Confirm button's) token: its hash, the
    token alone binds, and one channel's token fits no other's."""
    return hashlib.sha256(f"{channel}-start\n{token}".encode()).hexdigest()


def _code_hash(person_id: str, channel: str, to_addr: str, code: str) -> str:
    """What is stored of a code: bound to its address, so a hash fits nowhere else."""
    return hashlib.sha256(f"{person_id}\n{channel}\n{to_addr}\n{code}".encode()).hexdigest()


def _same_address(channel: str, a: str, b: str) -> bool:
    return a.lower() == b.lower() if channel == "email" else a == b


class PeopleDirectory:
    """The people role (see the module docstring). Registers its code check on
    ``inbound.matchers`` when built (before approvals': a code reply is no decision)."""

    def __init__(
        self, runtime: Runtime, *, sends: Sends, senders: Senders, inbound: Inbound
    ) -> None:
        self._runtime = runtime
        self._store = runtime.store
        self._sends = sends
        self._senders = senders
        inbound.matchers.append(
            TextMatcher(self._match_code, unmatched=False, matched_key=_CONFIRM_KEY)
        )

    # -- the directory -------------------------------------------------------------------
    @staticmethod
    def person_wire(record: PersonRecord) -> Person:
        return Person(
            person_id=record.id,
            name=record.name,
            addresses=[
                PersonAddress(
                    channel=a.channel,
                    to=a.to_addr or None,  # "": a telegram chat not bound yet
                    confirmed=a.confirmed_at is not None,
                    confirmed_at=None if a.confirmed_at is None else _timestamp(a.confirmed_at),
                )
                for a in record.addresses
            ],
            metadata=record.metadata,
            created_at=_timestamp(record.created_at),
            updated_at=_timestamp(record.updated_at),
        )

    async def _record(self, account: Account, person_id: str) -> PersonRecord:
        record = await self._store.get_person(account.id, person_id)
        if record is None:
            raise NotFound(f"no person {person_id!r}", field="personId")
        return record

    async def create(self, account: Account, request: PersonCreateRequest) -> Person:
        now = self._runtime.clock()
        record = PersonRecord(
            id="per_" + secrets.token_urlsafe(18),
            account_id=account.id,
            name=request.name,
            addresses=tuple(PersonAddressRecord(a.channel, a.to or "") for a in request.addresses),
            created_at=now,
            updated_at=now,
            metadata=request.metadata or None,  # {} is none, as stored
        )
        await self._store.insert_person(record)
        return self.person_wire(record)

    async def get(self, account: Account, person_id: str) -> Person:
        return self.person_wire(await self._record(account, person_id))

    async def list(self, query: PeopleQuery) -> PersonList:
        found = await self._store.list_people(query)
        cursor = found[-1].seq if found else query.after
        return PersonList(people=[self.person_wire(p) for p in found], cursor=str(cursor))

    async def update(
        self, account: Account, person_id: str, request: PersonUpdateRequest
    ) -> Person:
        record = await self._record(account, person_id)
        given = request.model_fields_set
        addresses = record.addresses
        if request.addresses is not None:
            # An address kept stays confirmed; a new one starts unconfirmed.
            confirmed = {(a.channel, a.to_addr): a.confirmed_at for a in record.addresses}
            addresses = tuple(
                PersonAddressRecord(a.channel, a.to or "", confirmed.get((a.channel, a.to or "")))
                for a in request.addresses
            )
        changed = PersonRecord(
            id=record.id,
            account_id=record.account_id,
            name=request.name if request.name is not None else record.name,
            addresses=addresses,
            created_at=record.created_at,
            updated_at=self._runtime.clock(),
            # metadata given as null or {} clears it; left out keeps it.
            metadata=(request.metadata or None) if "metadata" in given else record.metadata,
            seq=record.seq,
        )
        if not await self._store.update_person(changed, addresses=request.addresses is not None):
            raise NotFound(f"no person {person_id!r}", field="personId")
        return self.person_wire(changed)

    async def delete(self, account: Account, person_id: str) -> None:
        if not await self._store.delete_person(account.id, person_id):
            raise NotFound(f"no person {person_id!r}", field="personId")

    # -- confirmation --------------------------------------------------------------------
    async def confirm(
        self, account: Account, person_id: str, request: PersonConfirmRequest
    ) -> PersonConfirmation:
        """Sends a one-time code to the person's address on ``request.channel`` (on
        Telegram: answers the start link, ``_start_link``)."""
        record = await self._record(account, person_id)
        channel = request.channel
        if channel not in CONFIRMABLE_CHANNELS:
            raise InvalidRequest(
                f"confirming an address is not supported yet on {channel} "
                f"(only {', '.join(CONFIRMABLE_CHANNELS)})",
                field="channel",
            )
        address = next(
            (
                a
                for a in record.addresses
                if a.channel == channel
                and (request.to is None or _same_address(channel, a.to_addr, request.to))
            ),
            None,
        )
        if address is None:
            named = f" {request.to}" if request.to is not None else ""
            raise InvalidRequest(
                f"the person has no {channel} address{named}",
                field="to" if request.to is not None else "channel",
            )
        if channel in BUTTON_CHANNELS:
            return await self._confirm_button(account, record, address)
        if channel not in CODE_CHANNELS:
            return await self._start_link(account, record, address)
        code = f"{secrets.randbelow(1_000_000):06d}"
        expires_at = self._runtime.clock() + CODE_TTL
        code_hash = _code_hash(record.id, channel, address.to_addr, code)
        if not await self._store.set_person_code(
            account.id, record.id, channel, address.to_addr, code_hash, expires_at
        ):
            raise NotFound(f"no person {person_id!r}", field="personId")  # deleted meanwhile
        text = templates.confirmation_code_text(code)
        sent = await self._sends.message_flow(
            account,
            MessageSend(
                channel=channel,
                to=address.to_addr,
                sender=await self._sender(account, channel),
                text=text,
                request={
                    "message": templates.confirmation_code_text("••••••"),
                    "to": address.to_addr,
                    "followUpTime": CODE_TTL,
                    _CONFIRM_KEY: {"personId": record.id, "channel": channel},
                },
                wait_time=None,
                follow_up_time=CODE_TTL,
                template=shared_template(text, None) if channel == "whatsapp" else None,
                kept_text=templates.confirmation_code_text("••••••"),
            ),
        )
        return PersonConfirmation(
            person_id=record.id,
            channel=channel,
            to=address.to_addr,
            interaction_id=sent.interaction_id,
            expires_at=_timestamp(expires_at),
        )

    # -- the Telegram start link ----------------------------------------------------------
    async def _link(self, account: Account, token: str) -> tuple[str, str | None]:
        """The start link of the bot the account's sends go from (its own bot, else the
        shared one: the provider's, with its name from ``getMe``), or the sandbox's
        fictional bot's; and that bot's id (None: the sandbox's, any bot binds it)."""
        provider = self._runtime.carriers.by_channel.get("telegram")
        if isinstance(provider, StartLinks):
            found = await provider.start_link(account.id, token)
            if found is None:
                raise ProviderError(
                    "the Telegram bot's name is not known yet (Telegram was not reached "
                    "at start); retry"
                )
            return found
        return f"https://t.me/{SANDBOX_BOT_USERNAME}?start={token}", None

    async def _give_token(
        self,
        account: Account,
        record: PersonRecord,
        address: PersonAddressRecord,
        token: str,
        sender: str | None = None,
    ) -> float:
        """Keeps ``token`` (its hash) as the address's pending one: the time it expires."""
        key = _start_key(token, address.channel)
        now = self._runtime.clock()
        expires_at = now + START_TTL
        if not await self._store.set_person_code(
            account.id, record.id, address.channel, address.to_addr, key, expires_at
        ):
            raise NotFound(f"no person {record.id!r}", field="personId")  # deleted meanwhile
        await self._store.put_provider_state(
            START_SCOPE,
            key,
            {
                "accountId": account.id,
                "personId": record.id,
                "channel": address.channel,
                "to": address.to_addr,
                **({"sender": sender} if sender else {}),
            },
            now,
        )
        await self._store.delete_provider_state_before(START_SCOPE, now - START_TTL)
        return expires_at

    async def _confirm_button(
        self, account: Account, record: PersonRecord, address: PersonAddressRecord
    ) -> PersonConfirmation:
        """Discord and Teams: the message with its Confirm button (the module docstring)."""
        channel = address.channel
        provider = self._runtime.carriers.by_channel.get(channel)
        if not isinstance(provider, ConfirmButtons):
            raise InvalidRequest(
                f"confirming a {channel} address needs the {BUTTON_CHANNELS[channel]} "
                f"provider configured (docs/going-live/{channel}.md)",
                field="channel",
            )
        token = secrets.token_urlsafe(32)  # 43 characters: custom_id stays under 100
        expires_at = await self._give_token(account, record, address, token)
        try:
            await provider.send_confirm(address.to_addr, CONFIRM_TEXT, token)
        except RecipientUnreachable as exc:
            raise InvalidToNumber(exc.message, field="to") from None
        except ProviderFailure as exc:
            raise ProviderError(exc.message, retry_after=exc.retry_after) from None
        return PersonConfirmation(
            person_id=record.id,
            channel=channel,
            to=address.to_addr,
            expires_at=_timestamp(expires_at),
        )

    async def _start_link(
        self, account: Account, record: PersonRecord, address: PersonAddressRecord
    ) -> PersonConfirmation:
        token = secrets.token_urlsafe(32)  # 43 characters of the payload's alphabet
        link, sender = await self._link(account, token)
        expires_at = await self._give_token(account, record, address, token, sender)
        return PersonConfirmation(
            person_id=record.id,
            channel="telegram",
            to=address.to_addr or None,
            start_link=link,
            expires_at=_timestamp(expires_at),
        )

    async def bind_chat(
        self, channel: str, token: str, chat: str, *, sender: str | None = None
    ) -> ChatBinding:
        """A start link opened in ``chat`` (``InboundPort.bind_chat``): the address its
        token was given for becomes ``chat``, confirmed, once. Whatever ``to`` the
        address had is replaced: the chat the link was opened in is the person's. A link
        given for one bot (an account's own) opened at another (``sender``) binds
        nothing: the person must have started the bot that will write to them."""
        not_valid = ChatBinding(bound=False, text=START_NOT_VALID)
        if channel not in ("telegram", *BUTTON_CHANNELS) or not _START_TOKEN.fullmatch(token):
            return not_valid
        key = _start_key(token, channel)
        entry = await self._store.get_provider_state(START_SCOPE, key)
        if entry is None or str(entry.get("channel", "telegram")) != channel:
            return not_valid
        given_for = entry.get("sender")
        if given_for is not None and sender is not None and str(given_for) != sender:
            return not_valid  # another bot's link: the token is kept for its own bot
        person_id, to_addr = str(entry.get("personId")), str(entry.get("to", ""))
        if channel in BUTTON_CHANNELS and not hmac.compare_digest(to_addr, chat):
            # The message was the address's user's; a press by anyone else binds nothing.
            return ChatBinding(bound=False, text=CONFIRM_NOT_YOURS)
        now = self._runtime.clock()
        code = await self._store.person_code(person_id, channel, to_addr)
        # The address's pending token must still be this one (a newer link, or the
        # address replaced, voids it) and live.
        if code is None or not hmac.compare_digest(code.code_hash, key) or code.expires_at < now:
            await self._store.delete_provider_state(START_SCOPE, key)
            return not_valid
        person = await self._store.get_person(str(entry.get("accountId")), person_id)
        if person is None:
            return not_valid
        if any(
            n != code.position and a.channel == channel and a.to_addr == chat
            for n, a in enumerate(person.addresses)
        ):
            return ChatBinding(bound=False, text=START_ALREADY)  # no two addresses alike
        if not await self._store.bind_person_address(code, chat, now):
            return not_valid  # spent by the same link opened at the same moment
        await self._store.delete_provider_state(START_SCOPE, key)
        bound = CONFIRM_BOUND if channel in BUTTON_CHANNELS else START_BOUND
        return ChatBinding(bound=True, text=bound)

    async def open_start_text(self, channel: str, chat: str, body: str) -> ChatBinding | None:
        """A text played as the person (the sandbox API, the inbox) that opens a start
        link: ``/start <token>`` on telegram, bound as Telegram's would be
        (``bind_chat``); ``InvalidRequest`` naming ``from`` for a chat that is no chat id.
        None: any other text (an ordinary reply)."""
        if channel != "telegram" or not body.startswith("/start "):
            return None
        try:
            check_telegram_chat_id(chat)
        except PydanticCustomError:
            raise InvalidRequest("from must be a Telegram chat id", field="from") from None
        return await self.bind_chat(channel, body.removeprefix("/start ").strip(), chat)

    async def _sender(self, account: Account, channel: Channel) -> str:
        if channel == "sms":
            return await self._senders.phone(account, None)
        return await self._senders.chat(account, channel)

    async def _match_code(self, text: InboundText, account_id: str | None, record: Any) -> Any:
        """The matcher (``Inbound.matchers``): a reply to a confirmation is taken only
        with its code (see the module docstring); anything else passes unchanged."""
        if record is None or record.kind != "message" or record.status != "pending":
            return record
        confirm = record.request.get(_CONFIRM_KEY)
        if not isinstance(confirm, dict):
            return record
        if not _same_address(text.channel, text.from_addr, record.to_addr):
            return None  # another sender on the thread: never theirs to confirm
        code = await self._store.person_code(
            str(confirm["personId"]), str(confirm["channel"]), record.to_addr
        )
        if code is None or code.expires_at < self._runtime.clock():
            return None
        channel = str(confirm["channel"])
        if self._answers(code, channel, record.to_addr, _CODE.findall(text.body)):
            if await self._store.confirm_person_address(code, self._runtime.clock()):
                return record
            return None  # spent by a reply taken at the same moment
        await self._store.miss_person_code(code, MAX_MISSES)
        return None

    @staticmethod
    def _answers(
        code: PersonCodeRecord, channel: str, to_addr: str, candidates: Sequence[str]
    ) -> bool:
        """Whether one of the six-digit runs of a reply is the code, each compared in
        constant time (by its hash: nothing of the code is stored)."""
        found = False
        for candidate in candidates[:3]:  # a reply of many numbers guesses no more
            found |= hmac.compare_digest(
                _code_hash(code.person_id, channel, to_addr, candidate), code.code_hash
            )
        return found
