"""Channel providers: how a text, a form link or a call reaches a recipient.

The engine renders everything (templates applied) and hands the provider of the item's
channel one ``Outbound``; the provider answers with what it sent (``Sent``) or raises
``RecipientUnreachable`` / ``ProviderFailure``, which the engine maps to
``400 invalid_to_number`` / ``502 provider_error`` with nothing recorded as sent. What
comes back later (replies, delivery status, a call's end) enters through the inbound
port a provider is given (``delivery.port.InboundPort``: ``receive_text``,
``delivery_status``, ``end_call``, ``open_inbound_call``, ...), never the engine itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from humanwire.types import DeliveryChannel, DeliveryKind, DeliveryStatus

__all__ = [
    "AccountSenders",
    "BotRegistry",
    "CallSpec",
    "Credentials",
    "NumberSource",
    "Outbound",
    "OwnBot",
    "Provider",
    "ProviderFailure",
    "RecipientUnreachable",
    "Sent",
    "WhatsAppTemplate",
    "Workspace",
    "WorkspaceInstaller",
]


@dataclass(frozen=True)
class WhatsAppTemplate:
    """The approved template a WhatsApp message needs outside the 24-hour window.

    ``name`` is one of the specification's shared-account templates (``notification``,
    ``request``, ``form``), resolved by the provider through its configuration;
    ``content_sid`` an explicit one (a form sent from the account's own number)."""

    variables: Mapping[str, str]
    name: Literal["notification", "request", "form"] | None = None
    content_sid: str | None = None


@dataclass(frozen=True)
class CallSpec:
    """What the voice agent of a call works from."""

    prompt: str
    language: str = "en-US"
    voice: str = "female"
    transfer_to: str | None = None


@dataclass(frozen=True)
class Outbound:
    """One thing to deliver, exactly as the recipient should see it."""

    account_id: str
    interaction_id: str | None
    channel: DeliveryChannel
    kind: DeliveryKind
    from_addr: str | None
    to_addr: str
    text: str
    """The text (templates applied); for a call, the prompt the voice agent speaks from."""
    form_url: str | None = None
    queue_url: str | None = None
    """An approval request's ask on a channel with buttons: the console's queue (the text
    carries it too), for an "Open your queue" button beside the page's."""
    template: WhatsAppTemplate | None = None
    call: CallSpec | None = None
    listening: bool = field(default=True)
    """Whether a reply is awaited (some providers ask for delivery receipts only then)."""
    wait_deadline: float | None = None
    """When the wait window ends (unix time): a provider retrying a rate-limited send
    stops trying past it."""
    subject: str | None = None
    """email: the subject line."""
    reply_token: str | None = None
    """email: the interaction's token, which its reply address and Message-ID carry."""


@dataclass(frozen=True)
class Sent:
    """What a provider did with an ``Outbound``."""

    ref: str
    """The provider's id of it (Twilio's MessageSid / CallSid, the sandbox delivery id)."""
    status: DeliveryStatus


@dataclass
class Credentials:
    """What a real provider made of its credentials at start (``/readyz``): ``accepted``
    (the provider answered a request made with them), ``refused`` (it answered that
    they are wrong: not ready), ``unverified`` (it could not be reached: ready, since
    the sandbox, forms and the other provider still work, and sends say what fails) or
    ``unchecked`` (the start has not got that far)."""

    state: Literal["unchecked", "accepted", "refused", "unverified"] = "unchecked"
    detail: str = "not checked yet"

    @property
    def ready(self) -> bool:
        return self.state in ("accepted", "unverified")


class RecipientUnreachable(Exception):
    """The provider refused the recipient (a number it cannot reach): 400
    ``invalid_to_number``; nothing was sent."""

    def __init__(self, message: str = "invalid to number", *, field: str = "to") -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class ProviderFailure(Exception):
    """The provider failed or refused for another reason (down, slow, rate limited, a
    configuration it rejects): 502 ``provider_error`` with ``Retry-After``; nothing was
    sent, so a retry with the same ``Idempotency-Key`` sends once."""

    def __init__(self, message: str, *, retry_after: float = 5.0) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


class NumberSource(Protocol):
    """Where reserved numbers come from when a real provider supplies them (the
    sandbox's fictional pool otherwise). Offers are ``(phone number, country, area
    code)``."""

    def pool(self) -> list[tuple[str, str, str]]: ...
    def in_pool(self, phone_number: str) -> bool: ...
    def buyable(self, phone_number: str) -> bool: ...
    async def search(
        self, country: str | None, area_code: str | None
    ) -> list[tuple[str, str, str]]: ...
    async def attach(self, phone_number: str) -> dict[str, Any]:
        """Makes the number reach this service (or buys it); raises ``ProviderFailure``.
        Returns what to keep about it for ``detach``."""
        ...

    async def detach(self, data: dict[str, Any]) -> None:
        """Lets go of a number an account deleted (in the background)."""
        ...


class Provider(Protocol):
    name: str
    """``sandbox``, ``twilio``, ``slack``: shown in the start-up lines and the inbox."""

    @property
    def senders(self) -> Mapping[str, str]:
        """The shared sender of each channel it carries (a number, a workspace id): what
        a send goes out from when the account has none of its own, and what replies
        reach."""
        ...

    async def deliver(self, item: Outbound) -> Sent: ...

    async def accepts_sender(self, account_id: str, channel: str, sender: str) -> bool:
        """Whether the account may send from ``sender`` (a requested ``from`` that is not
        the shared one nor the account's reserved number): Slack checks the account
        installed the bot in that workspace; a telephony provider says whether it is one
        of its own shared numbers (with two carriers, the second's goes out through it)."""
        ...

    async def hang_up(self, ref: str) -> None:
        """Ends the call ``ref`` if it still runs (the engine gave up on it); must not
        block: a provider that talks to an API does it in the background."""
        ...


@dataclass(frozen=True)
class Workspace:
    """An account's own workspace (never its token)."""

    team_id: str
    team_name: str
    installed_at: float


@runtime_checkable
class WorkspaceInstaller(Protocol):
    """A provider accounts install into their own workspaces (Slack's OAuth): what the
    inbox's Slack page shows and does."""

    shared_team: str
    oauth_enabled: bool

    async def workspaces(self, account_id: str) -> list[Workspace]: ...
    async def install_url(self, account_id: str) -> str:
        """Where the browser goes to install (a one-time state inside)."""
        ...

    async def disconnect(self, account_id: str, team_id: str) -> bool: ...


@runtime_checkable
class AccountSenders(Protocol):
    """A provider on which an account may have a sender of its own that its sends go out
    from by default (an account's own Telegram bot), instead of the shared one."""

    async def account_sender(self, account_id: str, channel: str) -> str | None:
        """The account's own sender on ``channel`` (None: it has none: the shared one)."""
        ...


@dataclass(frozen=True)
class OwnBot:
    """An account's own bot (never its token)."""

    bot_id: str
    username: str
    account_id: str
    token_hint: str
    """The bot id and the token's last four characters (``123456789:…wxyz``)."""
    registered_at: float
    webhook_url: str = ""


@runtime_checkable
class BotRegistry(Protocol):
    """A provider accounts register their own bots with (a Telegram bot's token): what
    ``/telegram/bots`` does. Refusals raise the service's errors (``InvalidRequest``
    naming ``token``, ``Conflict``, ``ProviderError``)."""

    async def register_bot(self, account_id: str, token: str) -> OwnBot: ...
    async def bots_of(self, account_id: str) -> list[OwnBot]: ...
    async def remove_bot(self, account_id: str, bot_id: str) -> bool:
        """Forgets the account's bot and removes its webhook; False: no such bot of the
        account's."""
        ...
