"""The engine: accounts, interactions and their windows, reply matching, forms, calls,
numbers, webhooks and channel cards. It knows nothing of HTTP: the routes in ``app.py``
validate bodies into wire models, call one method here, and serialize what comes back.
Errors are raised as ``humanwire.server.errors.ServiceError`` subclasses.

CONTRACT (skeleton written first so the HTTP layer, the pages, the runner and the
testing kit can be built against it in parallel). Keep these signatures; if one must
change, change it here and say so in the commit message.

Waiting is event-driven: a held request awaits an ``asyncio.Future`` (or Event) that the
reply, submission or call end resolves, with ``asyncio.wait_for``-style deadlines; no
polling loops. Window expiry is a scheduled ``loop.call_at`` timer, re-armed from the
store on ``start()`` so open windows survive a restart.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from humanwire.types import (
    AvailableNumber,
    CallRequest,
    CallResponse,
    ChannelCard,
    ChannelCardCreateRequest,
    ChannelMessageRequest,
    Form,
    FormResponse,
    InteractionStatus,
    MessageResponse,
    PhoneCallRequest,
    PhoneSMSRequest,
    ReservedNumber,
    SandboxCallOutcomeRequest,
    SandboxDelivery,
    SandboxInboundCallRequest,
    SandboxReplyRequest,
    SlackFormRequest,
    SlackMessageRequest,
    SMSFormRequest,
    SMSMessageRequest,
    Webhook,
    WebhookCreateRequest,
    WhatsAppMessageRequest,
    WhatsAppOwnNumberFormRequest,
    WhatsAppSharedFormRequest,
)

from .config import ServiceConfig

MessageRequest = SMSMessageRequest | WhatsAppMessageRequest | SlackMessageRequest
FormRequest = (
    SMSFormRequest | SlackFormRequest | WhatsAppSharedFormRequest | WhatsAppOwnNumberFormRequest
)
FormState = Literal["open", "submitted", "expired"]


@dataclass(frozen=True)
class Account:
    id: str
    name: str
    suspended: bool = False


@dataclass(frozen=True)
class FormView:
    """What the form page needs to render a form reached by its token."""

    token: str
    interaction_id: str
    account_id: str
    form: Form
    state: FormState
    wait_deadline: float | None
    """Unix time the ``waitTime`` window closes (countdown target); None without one."""
    follow_up_deadline: float
    """Unix time after which the form is expired."""
    values: dict[str, str] | None
    """The submitted values, once submitted."""


@dataclass(frozen=True)
class InboxChange:
    """A notice for live inbox pages: something of this account changed."""

    account_id: str
    kind: Literal["delivery", "interaction", "webhook", "number", "channel", "inbound"]
    id: str


class Engine:
    def __init__(self, config: ServiceConfig) -> None:
        """Opens the store at ``config.db_path`` and the built-in sandbox provider."""
        raise NotImplementedError

    async def start(self) -> None:
        """Re-arm open windows from the store, start the webhook outbox worker. Must be
        called from the event loop that serves requests."""
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    # -- accounts -------------------------------------------------------------
    def create_account(
        self, name: str | None = None, api_key: str | None = None
    ) -> tuple[Account, str]:
        """Creates an account and returns it with its API key (the given one, or a new
        ``hw_`` + 32 url-safe characters). Only a hash of the key is stored."""
        raise NotImplementedError

    def authenticate(self, api_key: str) -> Account | None:
        raise NotImplementedError

    def check_limits(self, account: Account) -> None:
        """Raises ``AccountSuspended`` or ``RateLimited`` (with ``retry_after``). The
        HTTP layer calls it once per authenticated request."""
        raise NotImplementedError

    async def idempotent(
        self,
        account: Account,
        key: str,
        fingerprint: str,
        run: Callable[[], Awaitable[tuple[int, bytes]]],
    ) -> tuple[int, bytes]:
        """Runs ``run`` (which produces the HTTP status and body) at most once per
        ``(account, key)`` within ``config.idempotency_ttl``: a later call with the same
        key and ``fingerprint`` (method, path and a hash of the body) returns the stored
        result; one arriving while the first is still held waits for it; a different
        fingerprint raises ``Conflict``. Results are stored, so a restart keeps them."""
        raise NotImplementedError

    # -- sends: each delivers through the provider, then holds for waitTime -----
    async def send_message(self, account: Account, request: MessageRequest) -> MessageResponse:
        raise NotImplementedError

    async def send_channel_message(
        self, account: Account, channel_id: str, request: ChannelMessageRequest
    ) -> MessageResponse:
        """Applies the card. A call card places a call with the rendered message as the
        prompt and, with a waitTime, holds for its end (response template on the summary)."""
        raise NotImplementedError

    async def send_form(self, account: Account, request: FormRequest) -> FormResponse:
        raise NotImplementedError

    async def place_call(self, account: Account, request: CallRequest) -> CallResponse:
        raise NotImplementedError

    async def phone_sms(self, account: Account, request: PhoneSMSRequest) -> MessageResponse:
        raise NotImplementedError

    async def phone_call(self, account: Account, request: PhoneCallRequest) -> CallResponse:
        """Holds up to ``config.phone_call_limit``; past it raises ``CallTimeout``
        (the call is not retried). A transferTo comes from the skill setting
        ``SERVICE_TRANSFER_NUMBER`` in the environment, when set."""
        raise NotImplementedError

    async def interaction_status(
        self, account: Account, interaction_id: str, wait: float | None = None
    ) -> InteractionStatus:
        """With ``wait``: holds until the status changes or ``wait`` seconds pass;
        returns at once for an ended interaction."""
        raise NotImplementedError

    # -- numbers --------------------------------------------------------------
    def available_numbers(
        self, country: str | None = None, area_code: str | None = None
    ) -> list[AvailableNumber]:
        raise NotImplementedError

    def reserve_number(self, account: Account, phone_number: str) -> ReservedNumber:
        raise NotImplementedError

    def list_numbers(self, account: Account) -> list[ReservedNumber]:
        raise NotImplementedError

    def delete_number(self, account: Account, number_id: str) -> None:
        raise NotImplementedError

    # -- webhooks ---------------------------------------------------------------
    def create_webhook(self, account: Account, request: WebhookCreateRequest) -> Webhook:
        """Refuses private and loopback targets unless ``config.local_mode``."""
        raise NotImplementedError

    def list_webhooks(self, account: Account) -> list[Webhook]:
        raise NotImplementedError

    def delete_webhook(self, account: Account, webhook_id: str) -> None:
        raise NotImplementedError

    def list_deliveries_log(self, account: Account) -> list[dict[str, object]]:
        """Webhook deliveries with status and attempts, newest first, for the inbox."""
        raise NotImplementedError

    # -- channel cards ----------------------------------------------------------
    def create_channel(self, account: Account, request: ChannelCardCreateRequest) -> ChannelCard:
        raise NotImplementedError

    def list_channels(self, account: Account) -> list[ChannelCard]:
        raise NotImplementedError

    def get_channel(self, account: Account, channel_id: str) -> ChannelCard:
        raise NotImplementedError

    def delete_channel(self, account: Account, channel_id: str) -> None:
        raise NotImplementedError

    # -- forms reached by link (no key: the token is the credential) -------------
    def get_form(self, token: str) -> FormView:
        """Raises ``NotFound`` for an unknown token."""
        raise NotImplementedError

    async def submit_form(self, token: str, values: dict[str, str]) -> FormView:
        """Validates with ``humanwire.server.forms.validate.validate_submission``; raises
        ``InvalidRequest`` (field = the field id) on a failed rule, ``Conflict`` when
        already submitted, ``Gone`` once the follow-up window has closed. Inside waitTime
        the held request gets the values; after it, a ``form.received`` event goes to
        the webhooks."""
        raise NotImplementedError

    # -- the human's side (sandbox API and inbox) --------------------------------
    def list_interactions(self, account: Account, limit: int = 200) -> list[InteractionStatus]:
        raise NotImplementedError

    def list_sandbox_deliveries(
        self,
        account: Account,
        to: str | None = None,
        channel: str | None = None,
        interaction_id: str | None = None,
    ) -> list[SandboxDelivery]:
        """Newest first."""
        raise NotImplementedError

    async def wait_for_delivery(
        self, account: Account, after_id: str | None, timeout: float
    ) -> None:
        """Returns when a delivery newer than ``after_id`` exists, or after ``timeout``
        (lets the scripted human and the inbox follow without busy polling)."""
        raise NotImplementedError

    async def sandbox_reply(self, account: Account, request: SandboxReplyRequest) -> None:
        """An inbound text: answers the matching open interaction (number pair for sms and
        whatsapp; the thread for slack) or becomes an unsolicited message.received."""
        raise NotImplementedError

    async def sandbox_end_call(
        self, account: Account, interaction_id: str, request: SandboxCallOutcomeRequest
    ) -> CallResponse:
        raise NotImplementedError

    async def sandbox_inbound_call(
        self, account: Account, request: SandboxInboundCallRequest
    ) -> None:
        """``to`` must be the account's reserved number (else ``NotFound``)."""
        raise NotImplementedError

    def subscribe(self, account: Account) -> AsyncIterator[InboxChange]:
        """Live change notices for the inbox (server-sent events)."""
        raise NotImplementedError
