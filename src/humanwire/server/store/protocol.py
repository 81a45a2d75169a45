"""The storage interface of the service: the operations the engine needs.

The engine talks only to ``Store`` (and, with several replicas, ``SharedStore``), in terms
of the records in ``store/records.py``: ``store/sqlite.py`` implements it on stdlib
sqlite3, ``store/postgres`` on PostgreSQL, both mostly through the methods written once in
``store/sql``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ...types import DeliveryStatus
from ...types.approvals import ApprovalDecision, ApprovalOutcome
from ...types.sandbox import DeliveryChannel, DeliveryKind
from ..approvals.checkpoints import Checkpoint
from .commits import PendingCommit
from .records import (
    AccountRecord,
    AccountUsage,
    ApprovalQuery,
    ApprovalRecord,
    ApproverRecord,
    AuditDraft,
    AuditQuery,
    AuditRecord,
    ChannelRecord,
    ClaimRecord,
    ConsoleCodeRecord,
    ConsoleSessionRecord,
    DelegationRecord,
    DeliveryRecord,
    EndReport,
    EventRecord,
    GrantRecord,
    IdempotencyLinkRecord,
    IdempotencyRecord,
    InboundRecord,
    InboxSessionRecord,
    InteractionOutcome,
    InteractionRecord,
    KeyCheck,
    ListedApproval,
    NumberRecord,
    OutboxRecord,
    PeopleQuery,
    PersonCodeRecord,
    PersonRecord,
    Reassignment,
    StepRecord,
    WaitEndedAnswer,
    WebhookRecord,
)

__all__ = [
    "OUTCOME_NOTICE_BODY",
    "Duplicate",
    "SharedStore",
    "Store",
    "shared_store",
]


class Duplicate(Exception):
    """A unique value (a phone number, an id) is already stored."""


class Store(Protocol):
    """What the engine needs from storage. Every method is short and a coroutine: the
    engine awaits them on its event loop, which serves other requests while a database
    across the network answers (``docs/explanation/stores.md``)."""

    async def close(self) -> None: ...
    def commit(self) -> None:
        """Makes every write so far visible to other connections and durable. The
        service calls it before a response starts (a store that commits each method
        has nothing left to do). Raises ``StoreUnavailable`` when they could not be
        committed (they were rolled back)."""
        ...

    def committed(self) -> PendingCommit:
        """The commit of every write so far: await it before acting on them outside
        the database (delivering a message). Already settled for a store that commits
        each method. Take it right after the writes, on the event loop."""
        ...

    @property
    def write_failure(self) -> str | None:
        """Why the last write failed (``StoreUnavailable``), until a write is seen to
        succeed again (``check_writable``); None while writes work."""
        ...

    async def check_writable(self) -> None:
        """After a failed write: tries a small write, which clears ``write_failure``
        when it succeeds (raises ``StoreUnavailable`` when it fails). Costs nothing
        while writes work. For ``/readyz``."""
        ...

    async def pending_migrations(self) -> list[int]:
        """The schema versions this code needs that the database lacks (empty: up to
        date). Queries the database, so it raises when the database cannot answer."""
        ...

    async def schema_version(self) -> int:
        """The newest version of the migration series (``store/migrations``) applied."""
        ...

    # accounts
    async def insert_account(self, record: AccountRecord) -> None: ...
    async def account_by_key_hash(self, key_hash: str) -> AccountRecord | None: ...
    async def get_account(self, account_id: str) -> AccountRecord | None: ...
    async def set_account_suspended(self, account_id: str, suspended: bool) -> None: ...
    async def count_accounts(self) -> int: ...
    async def list_accounts(self) -> list[AccountRecord]:
        """Every account, oldest first."""
        ...

    async def account_usage(self) -> dict[str, AccountUsage]:
        """Per account id, what it holds (accounts holding nothing may be missing)."""
        ...

    async def set_account_key_hash(self, account_id: str, key_hash: str) -> bool:
        """A new key for the account (the old one stops opening it with this write).
        False when there is no such account; ``Duplicate`` when another has the key."""
        ...

    async def delete_account(self, account_id: str) -> dict[str, int] | None:
        """Removes the account and every row of its data, in one transaction: its inbox
        sessions, interactions, deliveries, inbound messages, numbers, webhooks and their outbox,
        channel cards, events, outcomes, idempotency results and links, the counts of
        the limits, and the provider state about it (its Slack installs, reserved
        numbers, calls, decisions). Rows removed per table; None when there is no such
        account."""
        ...

    # the inbox's sessions
    async def insert_inbox_session(self, record: InboxSessionRecord) -> None: ...
    async def inbox_session(
        self, id_hash: str, now: float, idle_after: float
    ) -> tuple[InboxSessionRecord, AccountRecord] | None:
        """The session and its account, while the session is valid: before its
        ``expires_at`` (``now``), seen after ``idle_after``, and its account still has the
        key it was opened with (a rotated key ends it)."""
        ...

    async def touch_inbox_session(self, id_hash: str, seen_at: float) -> None:
        """Marks the session used at ``seen_at`` (never moves it back)."""
        ...

    async def delete_inbox_session(self, id_hash: str) -> bool:
        """Ends the session (a logout); False when there was none."""
        ...

    async def prune_inbox_sessions(self, now: float, idle_after: float) -> int:
        """Drops every session no longer valid (``inbox_session``); how many."""
        ...

    # the console's sign-in codes and sessions
    async def confirmed_people_at(self, channel: str, to_addr: str) -> list[tuple[str, str]]:
        """``(account_id, person_id)`` of every person, of any account, with this address
        confirmed (an email compared without case), the oldest person first."""
        ...

    async def console_code(self, address_key: str) -> ConsoleCodeRecord | None: ...
    async def put_console_code(self, record: ConsoleCodeRecord) -> None:
        """Writes the address's row whole (inserted or replaced)."""
        ...

    async def spend_console_code(self, address_key: str, code_hash: str, now: float) -> bool:
        """Spends the pending code ``code_hash`` if it is still the address's and live:
        True for the one caller that spent it."""
        ...

    async def miss_console_code(self, address_key: str, code_hash: str, most: int) -> None:
        """Counts a wrong answer to that code; the code is void at ``most`` misses."""
        ...

    async def prune_console_codes(self, window_before: float, now: float) -> int:
        """Drops the rows whose rate window began by ``window_before`` and whose code
        (if any) expired by ``now``."""
        ...

    async def insert_console_session(self, record: ConsoleSessionRecord) -> None: ...
    async def console_session(
        self, id_hash: str, now: float, idle_after: float
    ) -> ConsoleSessionRecord | None:
        """The session while valid: before ``expires_at``, seen after ``idle_after``, and
        its person still in the directory."""
        ...

    async def touch_console_session(self, id_hash: str, seen_at: float) -> None: ...
    async def delete_console_session(self, id_hash: str) -> bool: ...
    async def delete_console_sessions_of(self, account_id: str, person_id: str) -> int:
        """Revokes every session of the person; how many."""
        ...

    async def prune_console_sessions(self, now: float, idle_after: float) -> int: ...

    # interactions
    async def insert_interaction(
        self,
        record: InteractionRecord,
        link: IdempotencyLinkRecord | None = None,
        *,
        link_stale_before: float = 0.0,
        step: StepRecord | None = None,
        claimed_by: str | None = None,
        claimed_until: float | None = None,
    ) -> None:
        """The interaction and, for an idempotent send, its link, in one transaction. A
        link already stored for the key is replaced when its interaction failed to
        deliver or it is older than ``link_stale_before``; a shared store raises
        ``Duplicate`` (and stores nothing) for any other, which only a concurrent
        request with the same key on another process can have made. ``step`` (its
        window step) is armed in the same statement where the store can (``put_steps``,
        with ``claimed_by`` / ``claimed_until``)."""
        ...

    async def get_interaction(self, interaction_id: str) -> InteractionRecord | None: ...
    async def interaction_by_form_token(self, token: str) -> InteractionRecord | None: ...
    async def interaction_by_reply_token(self, token: str) -> InteractionRecord | None: ...
    async def end_interaction(
        self,
        interaction_id: str,
        ended_at: float,
        result: dict[str, Any] | None = None,
        outcome: InteractionOutcome | None = None,
    ) -> bool:
        """Sets ``ended`` (and the result) only if still pending; True when it changed.
        Its window step (``WINDOW_STEP``) goes with it, as with every end of an
        interaction (``end_held_interaction``, ``end_and_report``)."""
        ...

    async def latest_open_message(
        self, account_id: str | None, channel: str, to_addr: str, from_addr: str
    ) -> InteractionRecord | None:
        """The most recent pending message interaction sent to ``to_addr`` from
        ``from_addr`` on ``channel``: of ``account_id``, or of any account when None
        (a reply to a shared sender)."""
        ...

    async def open_messages(
        self, channel: str, to_addr: str, from_addr: str
    ) -> list[InteractionRecord]:
        """Every account's pending message interactions sent to ``to_addr`` from
        ``from_addr`` on ``channel``, the oldest first: whose a reply to a shared
        sender can be."""
        ...

    async def set_delivery(
        self, interaction_id: str, delivery_status: DeliveryStatus, provider_ref: str | None = None
    ) -> None: ...
    async def interaction_by_provider_ref(self, provider_ref: str) -> InteractionRecord | None: ...
    async def open_interactions(self) -> list[InteractionRecord]: ...
    async def list_interactions(self, account_id: str, limit: int) -> list[InteractionRecord]: ...

    # deliveries and inbound messages
    async def insert_delivery(
        self,
        *,
        id: str,
        account_id: str,
        interaction_id: str | None,
        channel: DeliveryChannel,
        kind: DeliveryKind,
        from_addr: str | None,
        to_addr: str,
        text: str,
        form_url: str | None,
        created_at: float,
    ) -> DeliveryRecord: ...
    async def list_deliveries(
        self,
        account_id: str,
        to_addr: str | None = None,
        channel: str | None = None,
        interaction_id: str | None = None,
        limit: int = 500,
    ) -> list[DeliveryRecord]: ...
    async def delivery_seq(self, account_id: str, delivery_id: str) -> int | None: ...
    async def max_delivery_seq(self, account_id: str) -> int: ...
    async def insert_inbound(self, record: InboundRecord) -> None: ...
    async def inbound_by_ref(self, ref: str) -> InboundRecord | None: ...
    async def list_inbound(self, account_id: str, limit: int) -> list[InboundRecord]: ...

    # numbers
    async def insert_number(self, record: NumberRecord) -> None:
        """Raises ``Duplicate`` when the number is taken or the account has one already
        (one number per account, held by the store so replicas cannot race past it)."""
        ...

    async def number_by_phone(self, phone_number: str) -> NumberRecord | None: ...
    async def numbers_of(self, account_id: str) -> list[NumberRecord]: ...
    async def reserved_phone_numbers(self) -> set[str]: ...
    async def delete_number(self, account_id: str, number_id: str) -> bool: ...

    # webhooks
    async def insert_webhook(self, record: WebhookRecord) -> None: ...
    async def webhooks_of(self, account_id: str) -> list[WebhookRecord]: ...
    async def get_webhook(self, webhook_id: str) -> WebhookRecord | None: ...
    async def delete_webhook(self, account_id: str, webhook_id: str) -> bool: ...

    # channel cards
    # out-of-office delegations
    async def insert_delegation(self, record: DelegationRecord) -> None: ...
    async def live_delegations(self, account_id: str, now: float) -> list[DelegationRecord]:
        """The account's delegations neither revoked nor ended at ``now`` (those to come
        too), by their start."""
        ...

    async def revoke_delegation(
        self, account_id: str, person_id: str, delegation_id: str, now: float
    ) -> bool:
        """Ends ``person_id``'s delegation at once; False: none such of theirs that holds
        or is to come."""
        ...

    # standing approvals
    async def insert_grant(self, record: GrantRecord) -> None: ...
    async def live_grants(
        self, account_id: str, now: float, action_name: str | None = None
    ) -> list[GrantRecord]:
        """The account's grants neither revoked nor expired at ``now`` (of one action name
        when given), the oldest first."""
        ...

    async def get_grant(self, account_id: str, grant_id: str) -> GrantRecord | None: ...
    async def revoke_grant(self, account_id: str, grant_id: str, now: float) -> bool:
        """Revokes a live grant of the account; False: none such (unknown, another
        account's, expired or revoked before)."""
        ...

    async def insert_channel(self, record: ChannelRecord) -> None: ...
    async def get_channel(self, account_id: str, channel_id: str) -> ChannelRecord | None: ...
    async def channels_of(self, account_id: str) -> list[ChannelRecord]: ...
    async def delete_channel(self, account_id: str, channel_id: str) -> bool: ...

    # the people directory
    async def insert_person(self, record: PersonRecord) -> None:
        """The person and their addresses, in one transaction."""
        ...

    async def get_person(self, account_id: str, person_id: str) -> PersonRecord | None:
        """The account's person with their addresses in order (None: none, or another
        account's)."""
        ...

    async def list_people(self, query: PeopleQuery) -> list[PersonRecord]:
        """The account's people past ``query.after`` (their ``seq``), in the order they
        were added, at most ``query.limit``; only those with an address on ``channel``
        and / or at ``to_addr`` when given."""
        ...

    async def update_person(self, record: PersonRecord, *, addresses: bool) -> bool:
        """Its name, metadata and ``updated_at``; with ``addresses``, its addresses
        replaced by ``record.addresses`` (codes pending on them dropped), in one
        transaction. False: no such person of the account."""
        ...

    async def delete_person(self, account_id: str, person_id: str) -> bool: ...
    async def set_person_code(
        self,
        account_id: str,
        person_id: str,
        channel: str,
        to_addr: str,
        code_hash: str,
        expires_at: float,
    ) -> bool:
        """A new confirmation code on the person's address (the one before void, its
        misses counted from 0). False: no such address."""
        ...

    async def person_code(
        self, person_id: str, channel: str, to_addr: str
    ) -> PersonCodeRecord | None:
        """The code pending on the address (expired or not), None when there is none."""
        ...

    async def confirm_person_address(self, code: PersonCodeRecord, now: float) -> bool:
        """Confirms the address ``code`` is pending on and spends the code, if it is
        still that code (True once: a code is used once)."""
        ...

    async def bind_person_address(self, code: PersonCodeRecord, to_addr: str, now: float) -> bool:
        """``confirm_person_address`` for an address learned as it is confirmed (a
        Telegram chat by its start link): the address ``code`` is pending on becomes
        ``to_addr``, confirmed (True once)."""
        ...

    async def miss_person_code(self, code: PersonCodeRecord, most: int) -> None:
        """Counts a wrong answer to ``code``; at ``most`` wrong answers it is void."""
        ...

    # events and the webhook outbox
    async def insert_event(self, record: EventRecord, outbox: list[OutboxRecord]) -> None:
        """The event and its deliveries, in one transaction."""
        ...

    async def get_event(self, event_id: str) -> EventRecord | None: ...
    async def list_events(self, account_id: str, limit: int) -> list[EventRecord]: ...
    async def claim_outbox(self, now: float, limit: int, until: float) -> list[OutboxRecord]:
        """Up to ``limit`` due rows, each leased until ``until`` (its next attempt moved
        there) in the same transaction: rows another process claimed are skipped, and a
        process that dies mid-delivery leaves its rows due again when the lease ends."""
        ...

    async def next_outbox_due(self) -> float | None: ...
    async def outbox_depth(self) -> int:
        """Pending rows of the outbox (every replica's: the database's)."""
        ...

    async def update_outbox(
        self,
        outbox_id: str,
        *,
        status: str,
        attempts: int,
        next_attempt_at: float,
        last_error: str | None,
        last_status_code: int | None,
        delivered_at: float | None,
        updated_at: float,
    ) -> None: ...
    async def cancel_outbox_for_webhook(self, webhook_id: str, now: float) -> None: ...
    async def list_outbox(self, account_id: str, limit: int) -> list[OutboxRecord]: ...

    # what real providers keep between callbacks (a call's transcript, a chat window)
    async def get_provider_state(self, scope: str, key: str) -> dict[str, Any] | None: ...
    async def put_provider_state(
        self, scope: str, key: str, value: dict[str, Any], updated_at: float
    ) -> None: ...
    async def claim_provider_state(
        self, scope: str, key: str, value: dict[str, Any], updated_at: float
    ) -> bool:
        """Stores ``value`` unless ``key`` already has one in ``scope``: True for the one
        caller that stored it (one statement, so two replicas claiming at once cannot both
        win), False when it was already there (nothing changed)."""
        ...

    async def provider_states(self, scope: str) -> list[tuple[str, dict[str, Any]]]:
        """Every ``(key, value)`` of ``scope``, oldest first."""
        ...

    async def delete_provider_state(self, scope: str, key: str) -> None: ...
    async def delete_provider_state_before(self, scope: str, cutoff: float) -> None: ...

    # the account's outcome stream (GET /events): ids increase, across accounts
    async def append_outcome(
        self,
        account_id: str,
        interaction_id: str,
        body: dict[str, Any],
        created_at: float,
        *,
        idempotency: IdempotencyRecord | None = None,
    ) -> tuple[int, int]:
        """Stores an outcome event; returns its id (the cursor) and the id of the
        account's outcome just before it (0: none), so a reader that read up to that one
        can take this event without reading. ``idempotency``: the result of the send it
        reports, stored with it (``put_idempotency``), at once."""
        ...

    async def outcomes_after(
        self, account_id: str, after: int, limit: int
    ) -> list[tuple[int, dict[str, Any]]]:
        """``(id, body)`` of the account's outcomes past ``after``, oldest first."""
        ...

    async def last_outcome_id(self) -> int:
        """The newest outcome id of any account (0: none)."""
        ...

    async def delete_outcomes_before(self, cutoff: float) -> None: ...

    # idempotency
    async def get_idempotency(self, account_id: str, key: str) -> IdempotencyRecord | None: ...
    async def put_idempotency(self, record: IdempotencyRecord) -> None: ...
    async def get_idempotency_link(
        self, account_id: str, key: str
    ) -> IdempotencyLinkRecord | None: ...
    async def get_idempotency_state(
        self, account_id: str, key: str
    ) -> tuple[IdempotencyRecord | None, IdempotencyLinkRecord | None]:
        """``get_idempotency`` and ``get_idempotency_link`` in one statement (what every
        send under a key reads first)."""
        ...

    async def delete_idempotency_before(self, cutoff: float) -> None:
        """Drops stored results and links created before ``cutoff``."""
        ...

    # -- the audit log ---------------------------------------------------------------------
    async def append_audit(
        self, account_id: str, drafts: Sequence[AuditDraft]
    ) -> list[AuditRecord]:
        """Appends the entries to the account's log, chained after its head, in one
        transaction (appends of one account wait for each other)."""
        ...

    async def audit_after(self, account_id: str, after: int, limit: int) -> list[AuditRecord]:
        """Entries with a sequence above ``after``, in order."""
        ...

    async def audit_of(self, interaction_id: str) -> list[AuditRecord]:
        """An interaction's entries, in order (a handful: what one approval logged)."""
        ...

    async def audit_seen_by(self, query: AuditQuery) -> list[AuditRecord]:
        """The entries ``query`` names, newest first (the console's audit page)."""
        ...

    async def audit_head(self, account_id: str) -> tuple[int, str] | None:
        """The ``(sequence, hash)`` the account's log reached, kept apart from it."""
        ...

    async def audit_heads(self) -> dict[str, tuple[int, str]]: ...
    async def audit_accounts(self) -> list[str]:
        """The accounts with a log, a head or a checkpoint (any of them may have been
        removed behind the service's back), in order."""
        ...

    async def insert_audit_checkpoint(self, checkpoint: Checkpoint) -> bool:
        """Stores a signed checkpoint; False when the account has one at that sequence."""
        ...

    async def audit_checkpoints(self, account_id: str) -> list[Checkpoint]:
        """The account's checkpoints, in sequence order."""
        ...

    async def unsigned_audit_heads(
        self,
    ) -> list[tuple[str, tuple[int, str], tuple[int, str] | None]]:
        """``(account_id, head, latest checkpoint's (sequence, hash) or None)`` of each
        account whose head moved past its latest checkpoint."""
        ...

    # -- approval requests -----------------------------------------------------------------
    async def insert_approval(
        self, record: ApprovalRecord, approvers: Sequence[ApproverRecord]
    ) -> None:
        """Stores a request's state and its approvers, together."""
        ...

    async def get_approval(self, interaction_id: str) -> ApprovalRecord | None: ...
    async def list_approvals(self, query: ApprovalQuery) -> list[ListedApproval]:
        """The account's requests past ``query.after`` that its filters keep, in the
        order they were made (``seq``), at most ``query.limit``."""
        ...

    async def approvers_of(self, interaction_id: str) -> list[ApproverRecord]:
        """In ``position`` order."""
        ...

    async def approver_by_token(self, token: str) -> ApproverRecord | None: ...
    async def open_approvers_at(self, channel: str, to_addr: str) -> list[ApproverRecord]:
        """The approvers reached at ``to_addr`` by ``channel`` who were asked, have not
        decided, on requests not yet settled; the earliest asked first."""
        ...

    async def mark_approvers_asked(
        self, interaction_id: str, positions: Sequence[int], at: float
    ) -> None: ...
    async def add_approver_reminder(self, interaction_id: str, position: int) -> None: ...
    async def record_approver_decision(
        self,
        interaction_id: str,
        position: int,
        decision: ApprovalDecision,
        comment: str | None,
        via: str,
        at: float,
    ) -> bool:
        """The approver's decision, unless they decided already (their first stands)."""
        ...

    async def claim_approval(self, record: ClaimRecord) -> ClaimRecord | None:
        """Claims the request for ``record.person_id`` unless someone holds a claim of it;
        returns the claim that holds now (this one, or the earlier one: of concurrent
        claims, one wins)."""
        ...

    async def get_claim(self, interaction_id: str) -> ClaimRecord | None: ...
    async def release_claim(self, interaction_id: str, person_id: str) -> bool:
        """Deletes the request's claim when ``person_id`` holds it; False otherwise."""
        ...

    async def reassign_approver(self, change: Reassignment) -> bool:
        """Hands the approver's row to another person, only while ``change.from_person``
        holds it undecided (one statement: False when they decided or it moved)."""
        ...

    async def settle_approval(
        self, interaction_id: str, outcome: ApprovalOutcome | None, timed_out: bool, at: float
    ) -> bool:
        """Settles the request once; False when it was settled already."""
        ...

    async def consume_approval(self, interaction_id: str, at: float) -> bool:
        """Marks an approved request's action consumed; True only the first time (one
        statement: of many concurrent calls, one wins)."""
        ...

    # -- the schedule (every future step: docs/explanation/schedule.md) --------------------
    async def put_steps(
        self, steps: Sequence[StepRecord], claimed_by: str | None, claimed_until: float | None
    ) -> None:
        """Arms each step (replacing one of the same kind and key: attempts start again),
        claimed by ``claimed_by`` until ``claimed_until`` when given (a step the caller
        runs itself, due soon)."""
        ...

    async def cancel_step(self, kind: str, key: str) -> None: ...
    async def claim_steps(
        self, owner: str, *, due_before: float, now: float, lease: float, limit: int
    ) -> list[StepRecord]:
        """Up to ``limit`` steps due by ``due_before`` that nobody holds (never claimed, or
        a claim that ran out before ``now``), earliest first, now claimed by ``owner``
        until ``lease`` seconds past their due time (or past ``now``, for one overdue).
        Replicas never claim one step together."""
        ...

    async def finish_step(self, step: StepRecord) -> bool:
        """Removes the step as it was claimed; False when it was armed again (another due
        time) or cancelled meanwhile."""
        ...

    async def retry_step(self, step: StepRecord, due_at: float) -> None:
        """The step failed: it runs again at ``due_at`` (unclaimed, one more attempt),
        unless it was armed again or cancelled meanwhile."""
        ...

    async def release_steps(self, owner: str) -> None:
        """Gives up ``owner``'s claims (a graceful stop): others take them at once."""
        ...

    async def get_step(self, kind: str, key: str) -> StepRecord | None: ...
    async def count_steps(self) -> int: ...


class SharedStore(Store, Protocol):
    """A store several service processes (replicas) use at once: PostgreSQL. What the
    engine needs on top of ``Store`` to share the work (``server/background/replicas.py``).

    Liveness is a heartbeat: a replica is alive while its row in ``replicas`` was seen
    after ``alive_after`` (now minus the lease). Sends are held by one replica
    (``held_by``), which an answer ending the interaction is handed to. Windows are
    steps of the schedule, shared by every store (``put_steps``, ``claim_steps``)."""

    shared: bool
    channel: str
    url: str

    async def heartbeat(self, replica_id: str, now: float) -> None: ...
    async def retire_replica(self, replica_id: str) -> None:
        """Forgets the replica (a graceful stop): the holds it left are swept at once."""
        ...

    async def forget_replicas_before(self, cutoff: float) -> None: ...

    async def take_interaction(self, interaction_id: str, replica_id: str, *, hold: bool) -> bool:
        """A retry re-attached here: the pending interaction is this replica's now
        (``owner``; with ``hold``, its held request too). False when it ended."""
        ...

    async def end_held_interaction(
        self,
        interaction_id: str,
        ended_at: float,
        result: dict[str, Any] | None = None,
        outcome: InteractionOutcome | None = None,
        *,
        release: str | None = None,
    ) -> tuple[bool, str | None]:
        """``end_interaction`` that also says who holds the send once it ended (None:
        nobody); in one statement, so a hold let go at the same moment is ordered. With
        ``release`` (a replica's id) that replica's hold is let go in the same statement
        (its held request takes the answer at once)."""
        ...

    async def end_and_report(
        self,
        interaction_id: str,
        account_id: str,
        ended_at: float,
        result: dict[str, Any] | None,
        outcome: InteractionOutcome | None,
        report: dict[str, Any],
        replica_id: str,
        *,
        release: str | None = None,
        inbound: InboundRecord | None = None,
        wait_ended: WaitEndedAnswer | None = None,
    ) -> EndReport:
        """``end_held_interaction`` with the outcome event ``report`` of its end appended
        in the same transaction (``append_published_outcome``), and one notice from
        ``replica_id`` naming both (``EndReport``). ``wait_ended``: if the send is held
        (here or on another replica), its ``wait.ended`` is appended right after the
        report, its key's result stored, its hold let go, and the notice names it too;
        the holder then writes nothing. The notice's
        interaction entry carries ``{"ended": {"endedAt", "outcome", "result"},
        "deliveryStatus"}`` (``ended`` null when it would not fit), so a replica holding
        the request answers without reading the row. ``inbound`` (the text that ended
        it, linked to ``interaction_id``) is stored in the same transaction, linked only
        if this ended it (else with no interaction, and not announced: the caller
        does), and named in the notice."""
        ...

    async def release_hold(
        self, interaction_id: str, replica_id: str, *, ended_only: bool = False
    ) -> InteractionRecord | None:
        """Lets go of the hold if ``replica_id`` still has it: the interaction as it is
        (an ended one carries the answer handed to this replica), None otherwise. With
        ``ended_only``, only once the interaction ended (None while it is pending)."""
        ...

    async def sweep_holds(self, alive_after: float, limit: int) -> list[InteractionRecord]:
        """Lets go of the holds of dead replicas; the interactions, so the answers handed
        to them go to the webhooks."""
        ...

    async def notify(self, payloads: list[str]) -> None: ...
    async def append_published_outcome(
        self,
        account_id: str,
        interaction_id: str,
        body: dict[str, Any],
        created_at: float,
        replica_id: str,
        *,
        idempotency: IdempotencyRecord | None = None,
        release: bool = False,
    ) -> tuple[int, int]:
        """``append_outcome`` whose ``outcome`` notice (from ``replica_id``) is published
        in the same transaction, so the other replicas' readers wake as it commits. The
        notice names the new id and carries ``{"after": previous id, "body": body}``
        (the body left out past ``OUTCOME_NOTICE_BODY`` bytes). With ``release``, the
        interaction's hold by ``replica_id`` is let go in the same transaction (its
        ``wait.ended``: the answer is out, so a later sweep must not send it again)."""
        ...

    async def rate_hit(
        self, account_id: str, now: float, limit: int, window: float
    ) -> float | None:
        """The sliding-window rate limit, counted in the database (``RateLimiter.hit``)."""
        ...

    async def account_by_key_hash_counted(
        self,
        key_hash: str,
        now: float,
        limit: int,
        window: float,
        named: str | None = None,
    ) -> KeyCheck:
        """``account_by_key_hash`` and, for an account not suspended, its ``rate_hit``:
        one round trip for what every API request asks first. ``named``: an interaction
        the request names, read in the same round trip (whatever its account: the
        caller checks)."""
        ...

    async def spam_hit(
        self, account_id: str, fingerprint: str, to: str, now: float, window: float
    ) -> int:
        """Records ``to`` for the text; the distinct recipients of it inside ``window``."""
        ...

    async def forget_spam(self, account_id: str) -> None: ...
    async def prune_limits(self, rate_before: float, spam_before: float) -> None: ...


OUTCOME_NOTICE_BODY = 6000
"""Bytes of an outcome's body a notice carries (PostgreSQL's NOTIFY payload stays below
8,000); a larger one the readers read from the store."""


def shared_store(store: Store) -> SharedStore | None:
    """``store`` when other processes may serve from it too, else None."""
    return store if getattr(store, "shared", False) else None  # type: ignore[return-value]
