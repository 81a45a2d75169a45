"""The inbound port: everything a provider may read from or tell the service.

A provider is built with an ``InboundPort``, never the engine (``.importlinter`` forbids
``delivery`` to import ``humanwire.server.engine``, under ``TYPE_CHECKING`` too). The
port carries:

- **what came back**: a text (matched by its number pair or thread), a reply naming
  its interaction, an unsolicited message, a delivery status, a call's start and end, a
  form submitted by a button, an approval decided by a button or an email reply;
- **reads**: an interaction by id, by the provider's ref or by its reply token, a
  reserved number, the form an interaction sent, the account of an API key, who sold a
  bought number;
- **its own state**: ``state`` (the store's ``provider_state`` rows, ``ProviderState``)
  and ``schedule`` (status work a provider must not lose, ``delivery.jobs``);
- **settings it needs**: ``metrics``, ``phone_call_limit``.

The engine side is ``humanwire.server.engine.human.EngineProviderPort``, built
by the wiring (``server/http/app.py``), which also registers the providers
``delivery.real.real_providers`` builds on the channels they declare.

A chat channel (Telegram, Discord, Teams) reaches the service through the same calls:
its texts are ``InboundText(channel=...)`` with ``thread`` the interaction its message
belongs to, its buttons ``decide_by_button(channel=...)`` and ``submit_form``; a person
binding their chat by the bot's start link is ``bind_chat``, and the provider gives the
link (``StartLinks``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from humanwire.types import CallOutcome, DeliveryStatus, Speaker
from humanwire.types.approvals import DecisionVia

if TYPE_CHECKING:
    from humanwire.types import Form

    from ..background.schedule import Schedule
    from ..store.commits import PendingCommit
    from ..store.records import ApproverRecord, InboundRecord, InteractionRecord, NumberRecord
    from ..telemetry import Metrics
    from .base import NumberSource, Provider

__all__ = [
    "ChatBinding",
    "ConfirmButtons",
    "InboundPort",
    "InboundText",
    "ProviderRegistration",
    "ProviderState",
    "StartLinks",
]


@dataclass(frozen=True)
class InboundText:
    """A text from a human, as any carrier reports it."""

    channel: str
    """The channel that carried it (``sms``, ``whatsapp``, ``slack``, ``email``, a chat
    channel's name)."""
    from_addr: str
    """The human."""
    to_addr: str
    """The number or workspace that received it."""
    body: str
    media_urls: tuple[str, ...] = ()
    thread: str | None = None
    """The interaction whose message the reply is in (a Slack thread; None: outside
    any)."""
    ref: str | None = None
    """The carrier's id of the message (Twilio's ``MessageSid``, Slack's event id, an
    email's ``Message-ID``): the same message delivered twice is taken once."""
    subject: str | None = None
    """email: the subject line."""
    via: DecisionVia | None = None
    """Who played the human when no carrier did (``sandbox``, ``inbox``), or the carrier's
    way of answering when it is not a typed text (``whatsapp_button``: a reply button)."""


@dataclass(frozen=True)
class ChatBinding:
    """What became of a start link opened in a chat, or a Confirm button pressed
    (``InboundPort.bind_chat``)."""

    bound: bool
    """The person's address is that chat now, confirmed."""
    text: str
    """What to tell the person in the chat (whether it worked or not)."""


@runtime_checkable
class StartLinks(Protocol):
    """A provider whose bot people start by a link carrying a token (Telegram's
    ``t.me/<bot>?start=<token>``)."""

    def start_link(self, token: str) -> str | None:
        """The link (None: the bot's name is not known yet, Telegram unreachable)."""
        ...


@runtime_checkable
class ConfirmButtons(Protocol):
    """A provider whose bot may write first, confirming an address by a button carrying
    a token (Discord's Confirm in a DM); the press goes to ``InboundPort.bind_chat``
    with the presser's id."""

    async def send_confirm(self, to: str, text: str, token: str) -> None:
        """Sends ``text`` with the button to ``to``; raises as a send does."""
        ...


class ProviderState(Protocol):
    """What a provider keeps in the store: ``provider_state`` rows under its own scopes
    (every replica sees one set). The store is one; a provider sees only this."""

    async def get_provider_state(self, scope: str, key: str) -> dict[str, Any] | None: ...
    async def put_provider_state(
        self, scope: str, key: str, value: dict[str, Any], updated_at: float
    ) -> None: ...
    async def claim_provider_state(
        self, scope: str, key: str, value: dict[str, Any], updated_at: float
    ) -> bool:
        """Stores ``value`` unless ``key`` already has one: True for the one caller that
        stored it."""
        ...

    async def provider_states(self, scope: str) -> list[tuple[str, dict[str, Any]]]: ...
    async def delete_provider_state(self, scope: str, key: str) -> None: ...
    async def delete_provider_state_before(self, scope: str, cutoff: float) -> None: ...
    def committed(self) -> PendingCommit:
        """The commit of every write so far (await it before acting outside the
        database)."""
        ...


class InboundPort(Protocol):
    """All a provider is given of the service (the module says what it carries)."""

    # -- what the provider keeps and needs ------------------------------------------------
    @property
    def state(self) -> ProviderState: ...
    @property
    def schedule(self) -> Schedule: ...
    @property
    def metrics(self) -> Metrics: ...
    @property
    def phone_call_limit(self) -> float:
        """Seconds a ``/phone/call`` may last."""
        ...

    # -- reads -------------------------------------------------------------------------
    async def interaction(self, interaction_id: str) -> InteractionRecord | None: ...
    async def interaction_by_ref(self, ref: str) -> InteractionRecord | None:
        """The interaction the provider sent as ``ref`` (``Sent.ref``)."""
        ...

    async def interaction_by_reply_token(self, token: str) -> InteractionRecord | None: ...
    async def number_by_phone(self, phone_number: str) -> NumberRecord | None:
        """An account's reserved number."""
        ...

    async def number_seller(self, phone_number: str) -> str | None:
        """The provider that sold a bought number (None: none recorded)."""
        ...

    def form_of(self, record: InteractionRecord) -> Form:
        """The form ``record`` sent (providers render it their own way)."""
        ...

    async def account_of_key(self, api_key: str) -> str | None:
        """The account id of an API key (None: no such key)."""
        ...

    # -- what came back ------------------------------------------------------------------
    async def receive_text(
        self, text: InboundText, account_id: str | None = None
    ) -> InboundRecord | None:
        """A text: answers the matching open interaction (its number pair, or
        ``thread``) or becomes the account's unsolicited ``message.received``. None: a
        duplicate (``ref`` seen) or no account's. ``account_id``: the account the
        carrier already knows (an account's own workspace)."""
        ...

    async def receive_reply(
        self, text: InboundText, thread: InteractionRecord
    ) -> InboundRecord | None:
        """A reply naming its interaction (an email to its reply address)."""
        ...

    async def receive_unsolicited(self, text: InboundText, account_id: str) -> InboundRecord | None:
        """A message kept as unsolicited whatever is open."""
        ...

    async def delivery_status(self, ref: str, status: DeliveryStatus) -> None:
        """How far what the provider sent as ``ref`` got."""
        ...

    async def open_inbound_call(
        self, account_id: str, *, from_addr: str, to_addr: str
    ) -> InteractionRecord:
        """Someone calls a reserved number of ``account_id``: the call's interaction."""
        ...

    async def end_call(
        self,
        record: InteractionRecord,
        *,
        outcome: CallOutcome,
        summary: str,
        transcript: Sequence[tuple[Speaker, str]] | None = None,
    ) -> None:
        """A call the provider ran ended."""
        ...

    async def submit_form(self, token: str, values: Mapping[str, str]) -> None:
        """A form answered from the provider's own controls (a button); raises
        ``Conflict`` (answered already), ``Gone`` (expired), ``InvalidRequest``."""
        ...

    # -- approvals -----------------------------------------------------------------------
    async def button_approver(self, channel: str, interaction_id: str, to_addr: str) -> int | None:
        """The position of approver ``to_addr`` on ``channel`` of an approval request
        (None: no approval, or not one of its approvers): its buttons carry it."""
        ...

    async def decide_by_button(
        self, channel: str, interaction_id: str, position: int, user: str, decision: str
    ) -> tuple[str, str]:
        """A click by ``user`` on an approval's button: ``(result, text)``, result
        ``refused`` / ``recorded`` / ``already`` / ``closed``, text what to show."""
        ...

    async def email_approver(self, token: str) -> ApproverRecord | None:
        """The email approver whose reply address ``reply+<token>@…`` is."""
        ...

    async def decide_by_email_reply(
        self, approver: ApproverRecord, body: str, *, signed: bool
    ) -> str:
        """An email approver's reply (``signed``: DKIM verified for their domain)."""
        ...

    # -- people ------------------------------------------------------------------------
    async def bind_chat(self, channel: str, token: str, chat: str) -> ChatBinding:
        """A person opened a start link in ``chat`` (Telegram's ``/start <token>``): when
        ``token`` is one the people directory gave out and it is live, the person's
        address on ``channel`` becomes ``chat``, confirmed, and the token is spent. On
        discord ``chat`` is the user who pressed Confirm: only the address's own user
        binds it (anyone else is refused, the token kept)."""
        ...


class ProviderRegistration(Protocol):
    """What the wiring registers with the engine (``delivery.real.ProviderWiring``):
    which provider carries each channel, and where reserved numbers come from."""

    @property
    def channels(self) -> Mapping[str, Provider]:
        """Channel → its provider (the channels not named stay on the sandbox)."""
        ...

    @property
    def numbers(self) -> NumberSource | None:
        """The reserved numbers' source (None: the sandbox's pool)."""
        ...
