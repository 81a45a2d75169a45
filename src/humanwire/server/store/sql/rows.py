"""Records to the values of a statement and rows back to records, for both stores.

Pure functions of one row or one record: they do not care how the statement is run
(synchronously, awaited, in a pipeline). JSON columns are ``TEXT`` written by one compact
``json.dumps`` in both stores, so key order and numbers (a window of ``30`` stays ``30``)
come back exactly as stored. A column holding one of the wire's Literal values (a kind, a
channel, a status) is checked as its row becomes a record (``humanwire.server.literals``):
a value none of them raises ``UnknownValue``.
"""

from __future__ import annotations

import json
from typing import Any

from ...approvals.checkpoints import Checkpoint
from ...literals import (
    APPROVAL_DECISION,
    APPROVAL_OUTCOME,
    APPROVER_CHANNEL,
    CHANNEL_TYPE,
    DELIVERY_CHANNEL,
    DELIVERY_KIND,
    DELIVERY_STATUS,
    EVENT_TYPE,
    INTERACTION_CHANNEL,
    INTERACTION_KIND,
    INTERACTION_STATE,
    MEDIUM,
    PERSON_CHANNEL,
)
from ..records import (
    INTERACTION_OUTCOME,
    OUTBOX_STATUS,
    AccountRecord,
    AccountUsage,
    ApprovalRecord,
    ApproverRecord,
    AuditDraft,
    AuditRecord,
    ChannelRecord,
    ClaimRecord,
    ConsoleCodeRecord,
    ConsoleSessionRecord,
    DelegationRecord,
    DeliveryRecord,
    EventRecord,
    GrantRecord,
    IdempotencyLinkRecord,
    IdempotencyRecord,
    InboundRecord,
    InboxSessionRecord,
    InteractionRecord,
    NumberRecord,
    OutboxRecord,
    PersonAddressRecord,
    PersonCodeRecord,
    PersonRecord,
    StepRecord,
    WebhookRecord,
)

__all__ = [
    "account",
    "approval",
    "approval_values",
    "approver",
    "approver_values",
    "audit",
    "audit_values",
    "chained_audit",
    "channel",
    "channel_values",
    "checkpoint",
    "checkpoint_values",
    "claim",
    "console_code",
    "console_code_values",
    "console_session",
    "console_session_values",
    "delegation",
    "delegation_values",
    "delivery",
    "dumps_json",
    "event",
    "event_values",
    "grant",
    "grant_values",
    "idempotency",
    "idempotency_link",
    "idempotency_values",
    "inbound",
    "inbound_values",
    "inbox_session",
    "interaction",
    "interaction_values",
    "link_values",
    "loads_number",
    "number",
    "number_values",
    "outbox",
    "outbox_values",
    "person",
    "person_address",
    "person_address_values",
    "person_code",
    "person_values",
    "step",
    "step_values",
    "usage_from_counts",
    "webhook",
    "webhook_values",
]

Row = tuple[Any, ...]


def dumps_json(value: Any) -> str:
    """How both stores write a JSON column."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _dumps_or_none(value: Any) -> str | None:
    return dumps_json(value) if value is not None else None


def loads_number(text: str | None) -> float | None:
    # Windows are stored as JSON text so 30 stays 30 (not 30.0) when shown back.
    if text is None:
        return None
    value = json.loads(text)
    assert isinstance(value, (int, float))
    return value


# -- accounts ---------------------------------------------------------------------------
def account(row: Row) -> AccountRecord:
    return AccountRecord(
        id=row[0], name=row[1], key_hash=row[2], suspended=bool(row[3]), created_at=row[4]
    )


def account_values(record: AccountRecord) -> Row:
    return (record.id, record.name, record.key_hash, bool(record.suspended), record.created_at)


def usage_from_counts(
    interactions: list[Row], counts: dict[str, list[Row]]
) -> dict[str, AccountUsage]:
    """``account_usage`` from its grouped counts."""
    usage: dict[str, dict[str, Any]] = {}
    for account_id, total, pending, last in interactions:
        usage[account_id] = {
            "interactions": int(total),
            "open_interactions": int(pending or 0),
            "last_interaction_at": last,
        }
    for table, rows in counts.items():
        for account_id, count in rows:
            usage.setdefault(account_id, {})[table] = int(count)
    return {account_id: AccountUsage(**fields) for account_id, fields in usage.items()}


def inbox_session(row: Row) -> tuple[InboxSessionRecord, AccountRecord]:
    """A row of ``Statements.inbox_session``: the session and its account."""
    session = InboxSessionRecord(*row[:6])
    owner = AccountRecord(
        id=session.account_id,
        name=row[6],
        key_hash=session.key_hash,
        suspended=bool(row[7]),
        created_at=row[8],
    )
    return session, owner


def console_code(row: Row) -> ConsoleCodeRecord:
    return ConsoleCodeRecord(
        address_key=row[0],
        account_id=row[1],
        person_id=row[2],
        code_hash=row[3],
        expires_at=row[4],
        misses=int(row[5]),
        window_start=row[6],
        sent=int(row[7]),
    )


def console_code_values(record: ConsoleCodeRecord) -> Row:
    return (
        record.address_key,
        record.account_id,
        record.person_id,
        record.code_hash,
        record.expires_at,
        record.misses,
        record.window_start,
        record.sent,
    )


def console_session(row: Row) -> ConsoleSessionRecord:
    return ConsoleSessionRecord(*row[:6])


def console_session_values(record: ConsoleSessionRecord) -> Row:
    return (
        record.id_hash,
        record.account_id,
        record.person_id,
        record.created_at,
        record.expires_at,
        record.seen_at,
    )


def inbox_session_values(record: InboxSessionRecord) -> Row:
    return (
        record.id_hash,
        record.account_id,
        record.key_hash,
        record.created_at,
        record.expires_at,
        record.seen_at,
    )


# -- interactions -----------------------------------------------------------------------
def interaction(row: Row) -> InteractionRecord:
    """A row of ``interaction_columns``: with the replicas' ``owner`` and ``held_by``
    where the store has them (PostgreSQL)."""
    shared = len(row) > 19
    return InteractionRecord(
        id=row[0],
        account_id=row[1],
        kind=INTERACTION_KIND(row[2]),
        channel=INTERACTION_CHANNEL(row[3]),
        to_addr=row[4],
        from_addr=row[5],
        request=json.loads(row[6]),
        created_at=row[7],
        status=INTERACTION_STATE(row[8]),
        wait_deadline=row[9],
        follow_up_deadline=row[10],
        result=json.loads(row[11]) if row[11] is not None else None,
        outcome=INTERACTION_OUTCOME.optional(row[12]),
        form_token=row[13],
        reply_token=row[14],
        card_id=row[15],
        ended_at=row[16],
        delivery_status=DELIVERY_STATUS.optional(row[17]),
        provider_ref=row[18],
        owner=row[19] if shared else None,
        held_by=row[20] if shared else None,
    )


def interaction_values(record: InteractionRecord) -> Row:
    """``record`` as the values of ``INTERACTION_COLUMNS``, in order."""
    return (
        record.id,
        record.account_id,
        record.kind,
        record.channel,
        record.to_addr,
        record.from_addr,
        dumps_json(record.request),
        record.created_at,
        record.status,
        record.wait_deadline,
        record.follow_up_deadline,
        _dumps_or_none(record.result),
        record.outcome,
        record.form_token,
        record.reply_token,
        record.card_id,
        record.ended_at,
        record.delivery_status,
        record.provider_ref,
    )


def link_values(link: IdempotencyLinkRecord, stale_before: float) -> Row:
    """The values of ``Statements.upsert_idempotency_link``."""
    return (
        link.account_id,
        link.key,
        link.fingerprint,
        link.interaction_id,
        link.created_at,
        stale_before,
    )


# -- deliveries and inbound messages ------------------------------------------------------
def delivery(row: Row) -> DeliveryRecord:
    seq, id_, account_id, interaction_id, channel, kind, from_addr, to_addr = row[:8]
    text, form_url, created_at = row[8:]
    return DeliveryRecord(
        seq=int(seq),
        id=id_,
        account_id=account_id,
        interaction_id=interaction_id,
        channel=DELIVERY_CHANNEL(channel),
        kind=DELIVERY_KIND(kind),
        from_addr=from_addr,
        to_addr=to_addr,
        text=text,
        form_url=form_url,
        created_at=created_at,
    )


def inbound(row: Row) -> InboundRecord:
    return InboundRecord(
        id=row[0],
        account_id=row[1],
        channel=MEDIUM(row[2]),
        from_addr=row[3],
        to_addr=row[4],
        body=row[5],
        media_urls=json.loads(row[6]),
        interaction_id=row[7],
        created_at=row[8],
        ref=row[9],
    )


def inbound_values(record: InboundRecord) -> Row:
    """``record`` as the values of ``INBOUND_COLUMNS``, in order."""
    return (
        record.id,
        record.account_id,
        record.channel,
        record.from_addr,
        record.to_addr,
        record.body,
        dumps_json(record.media_urls),
        record.interaction_id,
        record.created_at,
        record.ref,
    )


# -- numbers, webhooks, channel cards -------------------------------------------------------
def number(row: Row) -> NumberRecord:
    return NumberRecord(*row)


def number_values(record: NumberRecord) -> Row:
    return (
        record.id,
        record.account_id,
        record.phone_number,
        record.created_at,
        record.updated_at,
    )


def webhook(row: Row) -> WebhookRecord:
    return WebhookRecord(
        id=row[0],
        account_id=row[1],
        url=row[2],
        event_types=[EVENT_TYPE(name) for name in json.loads(row[3])],
        headers=json.loads(row[4]),
        secret=row[5],
        created_at=row[6],
    )


def webhook_values(record: WebhookRecord) -> Row:
    return (
        record.id,
        record.account_id,
        record.url,
        dumps_json(record.event_types),
        dumps_json(record.headers),
        record.secret,
        record.created_at,
    )


def channel(row: Row) -> ChannelRecord:
    return ChannelRecord(
        id=row[0],
        account_id=row[1],
        type=CHANNEL_TYPE(row[2]),
        to_addr=row[3],
        wait_time=loads_number(row[4]),
        follow_up_time=loads_number(row[5]),
        message_template=row[6],
        response_template=row[7],
        no_response_template=row[8],
        reply_link=bool(row[9]),
        created_at=row[10],
        metadata=json.loads(row[11]) if row[11] else None,
    )


def channel_values(record: ChannelRecord) -> Row:
    return (
        record.id,
        record.account_id,
        record.type,
        record.to_addr,
        _dumps_or_none(record.wait_time),
        _dumps_or_none(record.follow_up_time),
        record.message_template,
        record.response_template,
        record.no_response_template,
        bool(record.reply_link),
        record.created_at,
        dumps_json(record.metadata) if record.metadata else None,
    )


# -- the people directory ----------------------------------------------------------------------
def person_values(record: PersonRecord) -> Row:
    """A ``person_columns`` row."""
    return (
        record.id,
        record.account_id,
        record.name,
        dumps_json(record.metadata) if record.metadata else None,
        record.created_at,
        record.updated_at,
    )


def person_address_values(record: PersonRecord) -> list[Row]:
    """The ``person_address_columns`` rows of the person's addresses, in order."""
    return [
        (record.id, n, record.account_id, a.channel, a.to_addr, a.confirmed_at)
        for n, a in enumerate(record.addresses)
    ]


def person(row: Row, addresses: list[PersonAddressRecord]) -> PersonRecord:
    """A ``seq, person_columns`` row with its addresses."""
    seq, id, account_id, name, metadata, created_at, updated_at = row
    return PersonRecord(
        id=id,
        account_id=account_id,
        name=name,
        addresses=tuple(addresses),
        created_at=float(created_at),
        updated_at=float(updated_at),
        metadata=json.loads(metadata) if metadata else None,
        seq=int(seq),
    )


def person_address(row: Row) -> PersonAddressRecord:
    """A ``channel, to_addr, confirmed_at`` row."""
    channel, to_addr, confirmed_at = row
    return PersonAddressRecord(
        channel=PERSON_CHANNEL(channel),
        to_addr=to_addr,
        confirmed_at=None if confirmed_at is None else float(confirmed_at),
    )


def person_code(row: Row) -> PersonCodeRecord:
    person_id, position, code_hash, expires_at, misses = row
    return PersonCodeRecord(person_id, int(position), code_hash, float(expires_at), int(misses))


# -- events and the outbox --------------------------------------------------------------------
def event(row: Row) -> EventRecord:
    return EventRecord(
        id=row[0],
        account_id=row[1],
        event_type=EVENT_TYPE(row[2]),
        interaction_id=row[3],
        body=json.loads(row[4]),
        created_at=row[5],
    )


def event_values(record: EventRecord) -> Row:
    return (
        record.id,
        record.account_id,
        record.event_type,
        record.interaction_id,
        dumps_json(record.body),
        record.created_at,
    )


def outbox(row: Row) -> OutboxRecord:
    return OutboxRecord(
        id=row[0],
        event_id=row[1],
        webhook_id=row[2],
        account_id=row[3],
        status=OUTBOX_STATUS(row[4]),
        attempts=row[5],
        next_attempt_at=row[6],
        last_error=row[7],
        created_at=row[8],
        updated_at=row[9],
        delivered_at=row[10],
        last_status_code=row[11],
    )


def outbox_values(record: OutboxRecord) -> Row:
    return (
        record.id,
        record.event_id,
        record.webhook_id,
        record.account_id,
        record.status,
        record.attempts,
        record.next_attempt_at,
        record.last_error,
        record.created_at,
        record.updated_at,
        record.delivered_at,
        record.last_status_code,
    )


# -- idempotency ----------------------------------------------------------------------------
def idempotency(row: Row) -> IdempotencyRecord:
    return IdempotencyRecord(
        account_id=row[0],
        key=row[1],
        fingerprint=row[2],
        status_code=row[3],
        body=bytes(row[4]),
        created_at=row[5],
    )


def idempotency_values(record: IdempotencyRecord) -> Row:
    return (
        record.account_id,
        record.key,
        record.fingerprint,
        record.status_code,
        bytes(record.body),
        record.created_at,
    )


def idempotency_link(row: Row) -> IdempotencyLinkRecord:
    return IdempotencyLinkRecord(
        account_id=row[0],
        key=row[1],
        fingerprint=row[2],
        interaction_id=row[3],
        created_at=row[4],
    )


def step_values(
    record: StepRecord, claimed_by: str | None, claimed_until: float | None
) -> tuple[Any, ...]:
    """``put_step``'s parameters."""
    payload = dumps_json(record.payload) if record.payload is not None else None
    return (
        record.kind,
        record.key,
        float(record.due_at),
        record.account_id,
        payload,
        claimed_by,
        claimed_until,
    )


def step(row: tuple[Any, ...]) -> StepRecord:
    """A ``schedule_columns`` row."""
    kind, key, due_at, account_id, payload, attempts = row
    return StepRecord(
        kind=kind,
        key=key,
        due_at=float(due_at),
        account_id=account_id,
        payload=json.loads(payload) if payload is not None else None,
        attempts=int(attempts),
    )


def chained_audit(account_id: str, sequence: int, prev: str, draft: AuditDraft) -> AuditRecord:
    """``draft`` as the entry ``sequence`` of its log, after the entry hashed ``prev``."""
    from ...approvals.audit import audit_time, entry_hash

    entry = {
        "sequence": sequence,
        "at": audit_time(draft.at),
        "type": draft.type,
        "interactionId": draft.interaction_id,
        "actor": draft.actor,
        "data": draft.data or {},
    }
    return AuditRecord(
        account_id=account_id,
        sequence=sequence,
        interaction_id=draft.interaction_id,
        created_at=draft.at,
        entry=entry,
        prev=prev,
        hash=entry_hash(prev, entry),
    )


def audit_values(record: AuditRecord) -> tuple[Any, ...]:
    """``insert_audit``'s parameters: the entry as the canonical JSON its hash covers."""
    import rfc8785

    return (
        record.account_id,
        record.sequence,
        record.interaction_id,
        record.created_at,
        rfc8785.dumps(record.entry).decode("utf-8"),
        record.prev,
        record.hash,
    )


def audit(row: tuple[Any, ...]) -> AuditRecord:
    """An ``audit_columns`` row."""
    account_id, sequence, interaction_id, created_at, entry, prev, hash_ = row
    return AuditRecord(
        account_id=account_id,
        sequence=int(sequence),
        interaction_id=interaction_id,
        created_at=float(created_at),
        entry=json.loads(entry),
        prev=prev,
        hash=hash_,
    )


def checkpoint_values(checkpoint: Checkpoint) -> tuple[Any, ...]:
    """``insert_audit_checkpoint``'s parameters."""
    return (
        checkpoint.account_id,
        checkpoint.sequence,
        checkpoint.hash,
        checkpoint.at,
        checkpoint.public_key,
        checkpoint.signature,
    )


def checkpoint(row: tuple[Any, ...]) -> Checkpoint:
    """A ``checkpoint_columns`` row."""
    account_id, sequence, hash_, at, public_key, signature = row
    return Checkpoint(account_id, int(sequence), hash_, at, public_key, signature)


def approval_values(record: ApprovalRecord) -> tuple[Any, ...]:
    return (
        record.interaction_id,
        record.account_id,
        record.action_digest,
        record.outcome,
        1 if record.timed_out else 0,
        record.settled_at,
        record.consumed_at,
        record.action_name,
    )


def approval(row: tuple[Any, ...]) -> ApprovalRecord:
    """An ``approval_columns`` row."""
    interaction_id, account_id, digest, outcome, timed_out, settled_at, consumed_at, name = row
    return ApprovalRecord(
        interaction_id=interaction_id,
        account_id=account_id,
        action_digest=digest,
        outcome=APPROVAL_OUTCOME.optional(outcome),
        timed_out=bool(timed_out),
        settled_at=None if settled_at is None else float(settled_at),
        consumed_at=None if consumed_at is None else float(consumed_at),
        action_name=name,
    )


def approver_values(record: ApproverRecord) -> tuple[Any, ...]:
    return (
        record.interaction_id,
        record.position,
        record.account_id,
        record.tier,
        record.channel,
        record.to_addr,
        record.token,
        record.code,
        record.asked_at,
        record.reminders,
        record.decision,
        record.comment,
        record.via,
        record.decided_at,
        record.person_id,
        record.on_behalf_of,
    )


def approver(row: tuple[Any, ...]) -> ApproverRecord:
    """An ``approver_columns`` row."""
    (interaction_id, position, account_id, tier, channel, to_addr, token, code, asked_at) = row[:9]
    reminders, decision, comment, via, decided_at, person_id, on_behalf_of = row[9:]
    return ApproverRecord(
        interaction_id=interaction_id,
        position=int(position),
        account_id=account_id,
        tier=int(tier),
        channel=APPROVER_CHANNEL(channel),
        to_addr=to_addr,
        token=token,
        code=code,
        asked_at=None if asked_at is None else float(asked_at),
        reminders=int(reminders),
        decision=APPROVAL_DECISION.optional(decision),
        comment=comment,
        via=via,
        decided_at=None if decided_at is None else float(decided_at),
        person_id=person_id,
        on_behalf_of=on_behalf_of,
    )


def grant(row: Row) -> GrantRecord:
    """A ``grant_columns`` row."""
    return GrantRecord(
        id=row[0],
        account_id=row[1],
        action_name=row[2],
        match=json.loads(row[3]),
        granted_by=row[4],
        created_at=row[5],
        expires_at=row[6],
        revoked_at=row[7],
    )


def grant_values(record: GrantRecord) -> Row:
    return (
        record.id,
        record.account_id,
        record.action_name,
        json.dumps(record.match, separators=(",", ":")),
        record.granted_by,
        record.created_at,
        record.expires_at,
        record.revoked_at,
    )


def claim(row: Row) -> ClaimRecord:
    """A ``claim_columns`` row."""
    return ClaimRecord(
        interaction_id=row[0], account_id=row[1], person_id=row[2], claimed_at=float(row[3])
    )


def delegation(row: Row) -> DelegationRecord:
    """A ``delegation_columns`` row."""
    return DelegationRecord(
        id=row[0],
        account_id=row[1],
        person_id=row[2],
        delegate_id=row[3],
        starts_at=float(row[4]),
        ends_at=float(row[5]),
        created_at=float(row[6]),
        revoked_at=None if row[7] is None else float(row[7]),
    )


def delegation_values(record: DelegationRecord) -> Row:
    return (
        record.id,
        record.account_id,
        record.person_id,
        record.delegate_id,
        record.starts_at,
        record.ends_at,
        record.created_at,
        record.revoked_at,
    )
