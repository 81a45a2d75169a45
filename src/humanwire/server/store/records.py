"""The records of the service's storage: frozen dataclasses the engine and the stores
exchange, and the Literals that type their fields where the wire has them.

Times are unix seconds (float), windows are absolute deadlines, JSON-ish values are plain
dicts. The operations on them are the protocol in ``store/protocol.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from ...types import DeliveryStatus
from ...types.approvals import (
    ApprovalDecision,
    ApprovalOutcome,
    ApproverChannel,
    AuditEntryType,
)
from ...types.calls import CallOutcome
from ...types.channels import ChannelType
from ...types.events import Medium
from ...types.interactions import InteractionChannel, InteractionKind, InteractionState
from ...types.people import PersonChannel
from ...types.sandbox import DeliveryChannel, DeliveryKind
from ...types.webhooks import EventType
from ..literals import OneOf

__all__ = [
    "ACCOUNT_TABLES",
    "INTERACTION_OUTCOME",
    "OUTBOX_STATUS",
    "WINDOW_STEP",
    "AccountRecord",
    "AccountUsage",
    "ApprovalQuery",
    "ApprovalRecord",
    "ApproverRecord",
    "AuditDraft",
    "AuditQuery",
    "AuditRecord",
    "ChannelRecord",
    "ClaimRecord",
    "ConsoleCodeRecord",
    "ConsoleSessionRecord",
    "DelegationRecord",
    "DeliveryRecord",
    "EndReport",
    "EventRecord",
    "GrantRecord",
    "IdempotencyLinkRecord",
    "IdempotencyRecord",
    "InboundRecord",
    "InboxSessionRecord",
    "InteractionOutcome",
    "InteractionRecord",
    "InteractionState",
    "KeyCheck",
    "ListedApproval",
    "NumberRecord",
    "OutboxRecord",
    "OutboxStatus",
    "PeopleQuery",
    "PersonAddressRecord",
    "PersonCodeRecord",
    "PersonRecord",
    "Reassignment",
    "StepRecord",
    "WaitEndedAnswer",
    "WebhookRecord",
]


InteractionOutcome = Literal[CallOutcome, "timeout", "failed", "undelivered", "cancelled"]
"""How an interaction ended: a call's outcome, ``timeout`` (a call the service gave up
on), ``failed`` (the provider refused it) or ``undelivered`` (the provider reported it
could not be delivered) or ``cancelled`` (its requester ended it). None: answered, or its
windows closed."""
OutboxStatus = Literal["pending", "delivered", "failed", "cancelled"]
"""Where one delivery of an event to a webhook is."""
INTERACTION_OUTCOME = OneOf[InteractionOutcome](InteractionOutcome, "interaction outcome")
OUTBOX_STATUS = OneOf[OutboxStatus](OutboxStatus, "outbox status")


@dataclass(frozen=True)
class AccountRecord:
    id: str
    name: str
    key_hash: str
    suspended: bool
    created_at: float


@dataclass(frozen=True)
class AccountUsage:
    """What an account holds, for operators (``humanwire accounts list``)."""

    interactions: int = 0
    open_interactions: int = 0
    """Still ``pending`` (listening for an answer, or a call under way)."""
    numbers: int = 0
    webhooks: int = 0
    channels: int = 0
    last_interaction_at: float | None = None


@dataclass(frozen=True)
class InteractionRecord:
    id: str
    account_id: str
    kind: InteractionKind
    channel: InteractionChannel
    to_addr: str
    from_addr: str
    request: dict[str, Any]
    """The request as the client sent it (wire names), plus engine extras under ``_``."""
    created_at: float
    status: InteractionState
    wait_deadline: float | None = None
    """Unix time the held ``waitTime`` window closes."""
    follow_up_deadline: float | None = None
    """Unix time the follow-up window closes (None: no follow-up window)."""
    result: dict[str, Any] | None = None
    """The event (``{"eventType", "payload"}``) that reported the response."""
    outcome: InteractionOutcome | None = None
    form_token: str | None = None
    reply_token: str | None = None
    card_id: str | None = None
    ended_at: float | None = None
    delivery_status: DeliveryStatus | None = None
    """None until the provider took it."""
    provider_ref: str | None = None
    """The provider's id of what was sent (Twilio's MessageSid or CallSid, Slack's ts)."""
    owner: str | None = None
    """Shared stores (several replicas): the replica that created it (or that a retry
    re-attached it to). Only informative: its windows are steps of the schedule."""
    held_by: str | None = None
    """Shared stores: the replica holding the send's request open; an answer arriving
    while it is set is that replica's to hand over (or to send to the webhooks)."""

    @property
    def close_deadline(self) -> float | None:
        """When the interaction stops listening: the end of the last window."""
        if self.follow_up_deadline is not None:
            return self.follow_up_deadline
        return self.wait_deadline


@dataclass(frozen=True)
class DeliveryRecord:
    """What reached a recipient (the sandbox / inbox view)."""

    seq: int
    id: str
    account_id: str
    interaction_id: str | None
    channel: DeliveryChannel
    kind: DeliveryKind
    from_addr: str | None
    to_addr: str
    text: str
    form_url: str | None
    created_at: float


@dataclass(frozen=True)
class InboundRecord:
    id: str
    account_id: str
    channel: Medium
    from_addr: str
    to_addr: str
    body: str
    media_urls: list[str]
    interaction_id: str | None
    created_at: float
    ref: str | None = None
    """The carrier's id of the message; unique, so a redelivery is taken once."""


@dataclass(frozen=True)
class NumberRecord:
    id: str
    account_id: str
    phone_number: str
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class WebhookRecord:
    id: str
    account_id: str
    url: str
    event_types: list[EventType]
    headers: dict[str, str]
    secret: str
    created_at: float


@dataclass(frozen=True)
class ChannelRecord:
    id: str
    account_id: str
    type: ChannelType
    to_addr: str
    wait_time: float | None
    follow_up_time: float | None
    message_template: str | None
    response_template: str
    no_response_template: str
    reply_link: bool
    created_at: float
    metadata: dict[str, str] | None = None


@dataclass(frozen=True)
class EventRecord:
    """An event the service emitted, kept whether or not a webhook wanted it."""

    id: str
    account_id: str
    event_type: EventType
    interaction_id: str | None
    body: dict[str, Any]
    created_at: float


@dataclass(frozen=True)
class OutboxRecord:
    """One delivery of one event to one webhook."""

    id: str
    event_id: str
    webhook_id: str
    account_id: str
    status: OutboxStatus
    attempts: int
    next_attempt_at: float
    last_error: str | None
    created_at: float
    updated_at: float
    delivered_at: float | None = None
    last_status_code: int | None = None


@dataclass(frozen=True)
class IdempotencyRecord:
    account_id: str
    key: str
    fingerprint: str
    status_code: int
    body: bytes
    created_at: float


@dataclass(frozen=True, slots=True)
class WaitEndedAnswer:
    """The answer of a send held after answering 202 (``Prefer: respond-async``), its
    ``wait.ended`` outcome ``event``, written by ``end_and_report`` with the end while the
    send is held (by any replica), with its key's stored result ``idempotency``."""

    event: dict[str, Any]
    idempotency: IdempotencyRecord | None = None


class KeyCheck(NamedTuple):
    """What ``account_by_key_hash_counted`` read."""

    account: AccountRecord | None
    retry_after: float | None = None
    """The rate limit's wait (None: allowed, or not counted: no account, or suspended)."""
    named: InteractionRecord | None = None
    """The interaction the request named, if asked for and found."""


@dataclass(frozen=True, slots=True)
class EndReport:
    """What ``end_and_report`` did."""

    done: bool
    """It ended the interaction (False: it had ended already; nothing else was written)."""
    holder: str | None = None
    """The replica holding the send once it ended (None: nobody, or the releaser)."""
    reported: tuple[int, int] | None = None
    """The ``interaction.ended`` outcome: ``(id, previous id)``."""
    waited: tuple[int, int] | None = None
    """The ``wait.ended`` written with it (``WaitEndedAnswer``): ``(id, previous id)``;
    None when none was asked for or the send was not held."""


@dataclass(frozen=True)
class IdempotencyLinkRecord:
    """The interaction an idempotent send created, stored with it: a retry with the same
    key whose first run never finished (a restart) re-attaches to it instead of sending
    again."""

    account_id: str
    key: str
    fingerprint: str
    interaction_id: str
    created_at: float


@dataclass(frozen=True)
class ApprovalRecord:
    """An approval request's state beside its interaction: how it was settled (``outcome``
    ``approved`` / ``rejected``, None while pending or timed out with ``onTimeout: none``)
    and whether its action was consumed."""

    interaction_id: str
    account_id: str
    action_digest: str | None = None
    outcome: ApprovalOutcome | None = None
    timed_out: bool = False
    settled_at: float | None = None
    consumed_at: float | None = None
    action_name: str | None = None
    """The name of the action the request is about (what ``actionName`` lists by)."""


@dataclass(frozen=True)
class ApprovalQuery:
    """What ``GET /approvals`` lists of one account's requests: those past the cursor
    ``after`` (their ``seq``), at most ``limit``, each filter left out when None. The
    values are the store's query parameters, never its SQL."""

    account_id: str
    after: int = 0
    limit: int = 100
    status: InteractionState | None = None
    decision: ApprovalOutcome | None = None
    action_name: str | None = None
    person_id: str | None = None
    """Requests one of whose approvers is this person."""
    metadata: tuple[tuple[str, str], ...] = ()
    """Requests whose ``metadata`` holds each of these keys with exactly this value."""


@dataclass(frozen=True)
class ListedApproval:
    """One request as ``list_approvals`` finds it: where it is listed (``seq``, the
    cursor past it) and its interaction."""

    seq: int
    interaction: InteractionRecord


@dataclass(frozen=True)
class ApproverRecord:
    """One approver of a request: how they are reached, their page's token, the short
    code an sms reply names when their number has several open requests, what they
    decided (None until they do)."""

    interaction_id: str
    position: int
    account_id: str
    tier: int
    """0: asked at the start; 1, 2…: the escalation tier that asks them."""
    channel: ApproverChannel
    to_addr: str
    token: str
    code: str | None = None
    asked_at: float | None = None
    reminders: int = 0
    decision: ApprovalDecision | None = None
    comment: str | None = None
    via: str | None = None
    """A ``DecisionVia`` (left open, as the wire's ``ApproverDecision.via`` is)."""
    decided_at: float | None = None
    person_id: str | None = None
    """The person of the people directory this approver is (``GET /approvals?personId``)."""
    on_behalf_of: str | None = None
    """The person this approver was asked for, away with a delegation to them."""


@dataclass(frozen=True)
class AuditDraft:
    """An audit entry to append: the store gives it its sequence, ``prev`` and ``hash``."""

    at: float
    type: AuditEntryType
    interaction_id: str
    actor: dict[str, Any] | None = None
    """The approver the entry is about (``{"channel", "to"}``), if one is."""
    data: dict[str, Any] | None = None


@dataclass(frozen=True)
class AuditRecord:
    """An entry of an account's audit log as stored."""

    account_id: str
    sequence: int
    interaction_id: str
    created_at: float
    entry: dict[str, Any]
    """Its wire form without ``prev`` and ``hash`` (what the hash covers)."""
    prev: str
    hash: str

    def wire(self) -> dict[str, Any]:
        """The entry as ``GET /audit`` and ``humanwire audit export`` give it."""
        return {**self.entry, "prev": self.prev, "hash": self.hash}


@dataclass(frozen=True)
class AuditQuery:
    """The entries of one account's log a person of it may read (``audit_seen_by``):
    those of the approval requests they have been asked, and those of the account's
    standing approvals (the caller keeps to the grants the person granted or revoked),
    newest first, below the sequence ``before``, at most ``limit``; each filter left out
    when None. The values are the store's query parameters, never its SQL."""

    account_id: str
    person_id: str
    before: int | None = None
    limit: int = 100
    interaction_id: str | None = None
    action_name: str | None = None
    """The request's action name (a grant's entries: the grant's)."""
    since: float | None = None
    """Entries at or after this time (unix seconds)."""
    until: float | None = None
    """Entries before this time."""


@dataclass(frozen=True)
class StepRecord:
    """A step of the schedule: ``kind`` and ``key`` name it (arming it again replaces
    it), ``due_at`` is when it runs (unix seconds)."""

    kind: str
    key: str
    due_at: float
    account_id: str = ""
    payload: dict[str, Any] | None = None
    """A little JSON the step's handler needs (most need only the key)."""
    attempts: int = 0
    """Runs that failed so far (``retry_step``)."""


WINDOW_STEP = "window"
"""The kind of an interaction's window step (keyed by its id, due when its last window
closes): armed with the interaction (``insert_interaction``), dropped as it ends."""


@dataclass(frozen=True)
class ConsoleCodeRecord:
    """An address's sign-in code for the approvers' console: whose it is (None for an
    address nobody has confirmed: only counted), the code's hash while one is pending
    (bound to the address), its expiry and wrong answers, and the codes asked for in the
    current rate-limit window."""

    address_key: str
    account_id: str | None
    person_id: str | None
    code_hash: str | None
    expires_at: float | None
    misses: int
    window_start: float
    sent: int


@dataclass(frozen=True)
class ConsoleSessionRecord:
    """A person signed in to the console (only the SHA-256 of its token is stored). It
    opens nothing once expired, idle, revoked, or its person deleted."""

    id_hash: str
    account_id: str
    person_id: str
    created_at: float
    expires_at: float
    seen_at: float


@dataclass(frozen=True)
class InboxSessionRecord:
    """A browser logged in to the inbox. Only the SHA-256 of its token is stored (the
    cookie holds the token), with the hash of the API key it was opened with: a new key
    for the account (``set_account_key_hash``) ends every session the old one opened."""

    id_hash: str
    account_id: str
    key_hash: str
    created_at: float
    expires_at: float
    """The absolute end, however active the session is."""
    seen_at: float
    """Its last use (kept to the minute or so): the idle expiry counts from it."""


@dataclass(frozen=True)
class PersonAddressRecord:
    """One address of a person, at its place in the order they are tried on."""

    channel: PersonChannel
    to_addr: str
    confirmed_at: float | None = None
    """When the person confirmed it; None: never used for the person."""


@dataclass(frozen=True)
class PersonRecord:
    """A person of the people directory (``per_…``) with their addresses in order."""

    id: str
    account_id: str
    name: str
    addresses: tuple[PersonAddressRecord, ...]
    created_at: float
    updated_at: float
    metadata: dict[str, str] | None = None
    seq: int = 0
    """Where ``GET /people`` lists it (the page cursor); given by the store on insert."""


@dataclass(frozen=True)
class PersonCodeRecord:
    """A confirmation code pending on one address: its hash (never the code), when it
    expires, and the wrong answers given to it so far."""

    person_id: str
    position: int
    code_hash: str
    expires_at: float
    misses: int = 0


@dataclass(frozen=True)
class PeopleQuery:
    """What ``GET /people`` lists of one account's people: those past the cursor
    ``after``, at most ``limit``; with ``channel``, only those with an address on it;
    with ``to_addr``, only those with that address (on ``channel`` when given)."""

    account_id: str
    after: int = 0
    limit: int = 100
    channel: str | None = None
    to_addr: str | None = None


@dataclass(frozen=True)
class GrantRecord:
    """A standing approval: the account's requests about ``action_name`` whose arguments
    ``match`` covers are approved at once, as ``granted_by`` (a person), until
    ``expires_at`` or ``revoked_at``."""

    id: str
    account_id: str
    action_name: str
    match: dict[str, Any]
    granted_by: str
    created_at: float
    expires_at: float
    revoked_at: float | None = None


@dataclass(frozen=True)
class ClaimRecord:
    """A claim of a pending approval request: ``person_id`` (a person of the account's
    directory asked the request) said "I'm on it" at ``claimed_at``. One per request."""

    interaction_id: str
    account_id: str
    person_id: str
    claimed_at: float


@dataclass(frozen=True)
class Reassignment:
    """An approver's row handed to another person: the row keeps its position and tier,
    and is reached from now on at ``channel`` / ``to_addr`` with a fresh ``token`` (the
    giver's page link no longer opens it) and sms ``code``; asked again, no reminder."""

    interaction_id: str
    position: int
    from_person: str
    person_id: str
    channel: ApproverChannel
    to_addr: str
    token: str
    code: str | None
    on_behalf_of: str | None = None
    """Whom the new approver decides for (the giver's row's, kept)."""


@dataclass(frozen=True)
class DelegationRecord:
    """An out-of-office delegation: from ``starts_at`` until ``ends_at`` (unless revoked
    before), requests asking ``person_id`` ask ``delegate_id`` in their place."""

    id: str
    account_id: str
    person_id: str
    delegate_id: str
    starts_at: float
    ends_at: float
    created_at: float
    revoked_at: float | None = None


ACCOUNT_TABLES = (
    "approval_delegations",
    "approval_claims",
    "approval_grants",
    "person_addresses",
    "people",
    "approval_approvers",
    "approvals",
    "audit",
    "audit_heads",
    "audit_checkpoints",
    "schedule",
    "inbox_sessions",
    "console_sessions",
    "console_codes",
    "outbox",
    "events",
    "outcomes",
    "webhooks",
    "idempotency_links",
    "idempotency",
    "deliveries",
    "inbound",
    "interactions",
    "numbers",
    "channels",
)
"""Every table of both stores with an ``account_id`` column (besides ``accounts``)."""
