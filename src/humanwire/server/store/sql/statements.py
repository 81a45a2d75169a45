"""The statements both stores run, each written once.

A ``Statements`` class holds SQL text as class attributes, written with SQLite's ``?``
placeholders. A dialect is a subclass that sets ``placeholder`` and overrides only the
statements (or fragments) it writes differently; an instance of it holds every statement
rendered for that database, once, when the store class is made:

* ``{name}`` is replaced by the class attribute ``name`` (a fragment: a column list, the
  column that orders rows as inserted, another statement);
* every ``?`` becomes ``placeholder`` (``%s`` for psycopg, which also needs a literal
  ``%`` doubled).

The stores read them as ``self.q.get_account`` and so on: no text is built per call.
"""

from __future__ import annotations

import re
from typing import ClassVar

__all__ = ["INBOUND_COLUMNS", "INTERACTION_COLUMNS", "Statements"]

INTERACTION_COLUMNS = (
    "id, account_id, kind, channel, to_addr, from_addr, request, created_at, status, "
    "wait_deadline, follow_up_deadline, result, outcome, form_token, reply_token, card_id, "
    "ended_at, delivery_status, provider_ref"
)
"""The interaction columns both stores have (PostgreSQL adds the replicas' two)."""

INBOUND_COLUMNS = (
    "id, account_id, channel, from_addr, to_addr, body, media_urls, interaction_id, created_at, ref"
)
"""The inbound columns of both stores."""

_FRAGMENT = re.compile(r"\{([a-z_]+)\}")


def _delivery_rank(value: str) -> str:
    """SQL ranking a delivery status (0: none yet), as the engine's ``STATUS_RANK``."""
    return (
        f"(CASE {value} WHEN 'queued' THEN 1 WHEN 'sent' THEN 2 WHEN 'delivered' THEN 3 "
        "WHEN 'read' THEN 4 WHEN 'undelivered' THEN 5 WHEN 'failed' THEN 5 ELSE 0 END)"
    )


class Statements:
    """The statements of ``SQLStore``, in SQLite's words where the two agree."""

    placeholder: ClassVar[str] = "?"

    # -- fragments (not statements: ``{name}`` in a statement names one) --------------------
    order = "rowid"
    """A column that orders a table's rows as inserted: ties of ``created_at`` are broken
    by it (SQLite's ``rowid``; PostgreSQL's tables have an ``ord BIGSERIAL`` for it)."""
    interaction_columns = INTERACTION_COLUMNS
    interaction_values = ", ".join("?" for _ in INTERACTION_COLUMNS.split(", "))
    """The placeholders of ``interaction_columns``."""
    account_columns = "id, name, key_hash, suspended, created_at"
    delivery_columns = (
        "seq, id, account_id, interaction_id, channel, kind, from_addr, to_addr, text, "
        "form_url, created_at"
    )
    inbound_columns = INBOUND_COLUMNS
    number_columns = "id, account_id, phone_number, created_at, updated_at"
    webhook_columns = "id, account_id, url, event_types, headers, secret, created_at"
    channel_columns = (
        "id, account_id, type, to_addr, wait_time, follow_up_time, message_template, "
        "response_template, no_response_template, reply_link, created_at, metadata"
    )
    event_columns = "id, account_id, event_type, interaction_id, body, created_at"
    outbox_columns = (
        "id, event_id, webhook_id, account_id, status, attempts, next_attempt_at, last_error, "
        "created_at, updated_at, delivered_at, last_status_code"
    )
    idempotency_columns = "account_id, key, fingerprint, status_code, body, created_at"
    link_columns = "account_id, key, fingerprint, interaction_id, created_at"
    session_columns = "id_hash, account_id, key_hash, created_at, expires_at, seen_at"
    console_session_columns = "id_hash, account_id, person_id, created_at, expires_at, seen_at"
    console_code_columns = (
        "address_key, account_id, person_id, code_hash, expires_at, misses, window_start, sent"
    )

    # -- accounts -----------------------------------------------------------------------
    insert_account = "INSERT INTO accounts ({account_columns}) VALUES (?, ?, ?, ?, ?)"
    account_by_key_hash = "SELECT {account_columns} FROM accounts WHERE key_hash = ?"
    get_account = "SELECT {account_columns} FROM accounts WHERE id = ?"
    set_account_suspended = "UPDATE accounts SET suspended = ? WHERE id = ?"
    set_account_key_hash = "UPDATE accounts SET key_hash = ? WHERE id = ?"
    count_accounts = "SELECT COUNT(*) FROM accounts"
    list_accounts = "SELECT {account_columns} FROM accounts ORDER BY created_at, {order}"
    interactions_per_account = (
        "SELECT account_id, COUNT(*), COUNT(CASE WHEN status = 'pending' THEN 1 END), "
        "MAX(created_at) FROM interactions GROUP BY account_id"
    )
    numbers_per_account = "SELECT account_id, COUNT(*) FROM numbers GROUP BY account_id"
    webhooks_per_account = "SELECT account_id, COUNT(*) FROM webhooks GROUP BY account_id"
    channels_per_account = "SELECT account_id, COUNT(*) FROM channels GROUP BY account_id"
    account_to_delete = "SELECT 1 FROM accounts WHERE id = ?"
    delete_provider_state_of_account: str
    """The provider state naming the account (its four ``?`` are the account's id): each
    dialect reads JSON its own way."""
    delete_account = "DELETE FROM accounts WHERE id = ?"

    # -- the inbox's sessions -------------------------------------------------------------
    insert_inbox_session = (
        "INSERT INTO inbox_sessions ({session_columns}) VALUES (?, ?, ?, ?, ?, ?)"
    )
    # The join on the key's hash is what makes a rotated key end the sessions: no store
    # method has to remember to delete them, and a login racing a rotation (the session
    # written with the old key's hash just after) opens nothing.
    inbox_session = (
        "SELECT s.id_hash, s.account_id, s.key_hash, s.created_at, s.expires_at, s.seen_at, "
        "a.name, a.suspended, a.created_at FROM inbox_sessions s "
        "JOIN accounts a ON a.id = s.account_id AND a.key_hash = s.key_hash "
        "WHERE s.id_hash = ? AND s.expires_at > ? AND s.seen_at > ?"
    )
    touch_inbox_session = "UPDATE inbox_sessions SET seen_at = ? WHERE id_hash = ? AND seen_at < ?"
    delete_inbox_session = "DELETE FROM inbox_sessions WHERE id_hash = ?"
    prune_inbox_sessions = (
        "DELETE FROM inbox_sessions WHERE expires_at <= ? OR seen_at <= ? OR NOT EXISTS "
        "(SELECT 1 FROM accounts a WHERE a.id = inbox_sessions.account_id "
        "AND a.key_hash = inbox_sessions.key_hash)"
    )

    # -- the console's sign-in codes and sessions -----------------------------------------
    # Confirmed addresses of every account (the console signs a person in by address
    # alone); the oldest person first.
    confirmed_people_at = (
        "SELECT a.account_id, a.person_id FROM person_addresses a "
        "JOIN people p ON p.id = a.person_id AND p.account_id = a.account_id "
        "WHERE a.channel = ? AND lower(a.to_addr) = lower(?) AND a.confirmed_at IS NOT NULL "
        "ORDER BY p.created_at, p.id"
    )
    console_code = "SELECT {console_code_columns} FROM console_codes WHERE address_key = ?"
    put_console_code = (
        "INSERT INTO console_codes ({console_code_columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (address_key) DO UPDATE SET account_id = excluded.account_id, "
        "person_id = excluded.person_id, code_hash = excluded.code_hash, "
        "expires_at = excluded.expires_at, misses = excluded.misses, "
        "window_start = excluded.window_start, sent = excluded.sent"
    )
    # Single use: only the code as read, while live; the rate count stays.
    spend_console_code = (
        "UPDATE console_codes SET code_hash = NULL, expires_at = NULL, misses = 0 "
        "WHERE address_key = ? AND code_hash = ? AND expires_at > ?"
    )
    miss_console_code = (
        "UPDATE console_codes SET misses = misses + 1, "
        "code_hash = CASE WHEN misses + 1 >= ? THEN NULL ELSE code_hash END "
        "WHERE address_key = ? AND code_hash = ?"
    )
    prune_console_codes = (
        "DELETE FROM console_codes WHERE window_start <= ? "
        "AND (expires_at IS NULL OR expires_at <= ?)"
    )
    insert_console_session = (
        "INSERT INTO console_sessions ({console_session_columns}) VALUES (?, ?, ?, ?, ?, ?)"
    )
    # The join on the person: a person deleted from the directory is signed out.
    console_session = (
        "SELECT s.id_hash, s.account_id, s.person_id, s.created_at, s.expires_at, s.seen_at "
        "FROM console_sessions s JOIN people p ON p.id = s.person_id "
        "AND p.account_id = s.account_id "
        "WHERE s.id_hash = ? AND s.expires_at > ? AND s.seen_at > ?"
    )
    touch_console_session = (
        "UPDATE console_sessions SET seen_at = ? WHERE id_hash = ? AND seen_at < ?"
    )
    delete_console_session = "DELETE FROM console_sessions WHERE id_hash = ?"
    delete_console_sessions_of = (
        "DELETE FROM console_sessions WHERE account_id = ? AND person_id = ?"
    )
    prune_console_sessions = "DELETE FROM console_sessions WHERE expires_at <= ? OR seen_at <= ?"

    # -- interactions ---------------------------------------------------------------------
    insert_interaction = (
        "INSERT INTO interactions ({interaction_columns}) VALUES ({interaction_values})"
    )
    upsert_idempotency_link = (
        "INSERT INTO idempotency_links ({link_columns}) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (account_id, key) DO UPDATE SET fingerprint = excluded.fingerprint, "
        "interaction_id = excluded.interaction_id, created_at = excluded.created_at "
        "WHERE idempotency_links.created_at < ? OR EXISTS (SELECT 1 FROM "
        "interactions i WHERE i.id = idempotency_links.interaction_id "
        "AND i.outcome = 'failed')"
    )
    """An idempotent send's link: replaces a link whose interaction failed to deliver, or
    one created before the last ``?``; any other stays (no row changed)."""
    get_interaction = "SELECT {interaction_columns} FROM interactions WHERE id = ?"
    interaction_by_form_token = (
        "SELECT {interaction_columns} FROM interactions WHERE form_token = ?"
    )
    interaction_by_reply_token = (
        "SELECT {interaction_columns} FROM interactions WHERE reply_token = ?"
    )
    # LIMIT 1: the first of several rows with one ref.
    interaction_by_provider_ref = (
        "SELECT {interaction_columns} FROM interactions WHERE provider_ref = ? "
        "ORDER BY {order} LIMIT 1"
    )
    latest_open_message = (
        "SELECT {interaction_columns} FROM interactions WHERE account_id = ? AND channel = ? "
        "AND to_addr = ? AND from_addr = ? AND kind = 'message' AND status = 'pending' "
        "ORDER BY created_at DESC, {order} DESC LIMIT 1"
    )
    latest_open_message_of_anyone = (
        "SELECT {interaction_columns} FROM interactions WHERE channel = ? "
        "AND to_addr = ? AND from_addr = ? AND kind = 'message' AND status = 'pending' "
        "ORDER BY created_at DESC, {order} DESC LIMIT 1"
    )
    open_messages = (
        "SELECT {interaction_columns} FROM interactions WHERE channel = ? "
        "AND to_addr = ? AND from_addr = ? AND kind = 'message' AND status = 'pending' "
        "ORDER BY created_at, {order}"
    )
    open_interactions = (
        "SELECT {interaction_columns} FROM interactions WHERE status = 'pending' ORDER BY {order}"
    )
    list_interactions = (
        "SELECT {interaction_columns} FROM interactions WHERE account_id = ? "
        "ORDER BY created_at DESC, {order} DESC LIMIT ?"
    )
    end_interaction = (
        "UPDATE interactions SET status = 'ended', ended_at = ?, result = ?, outcome = ? "
        "WHERE id = ? AND status = 'pending'"
    )
    # An ended interaction's window step (``WINDOW_STEP``): nothing left to close.
    unarm_window = "DELETE FROM schedule WHERE kind = 'window' AND key = ?"
    # A delivery status only moves forward (queued < sent < delivered < read < failed /
    # undelivered), decided in the statement: two callbacks at once cannot land a lower
    # one last. Parameters: the status twice (ranked, then written).
    _forward = (
        "delivery_status = CASE WHEN "
        + _delivery_rank("delivery_status")
        + " < "
        + _delivery_rank("?")
        + " THEN ? ELSE delivery_status END"
    )
    set_delivery = "UPDATE interactions SET " + _forward + " WHERE id = ?"
    set_delivery_and_ref = "UPDATE interactions SET " + _forward + ", provider_ref = ? WHERE id = ?"

    # -- what real providers keep between callbacks -----------------------------------------
    get_provider_state = "SELECT value FROM provider_state WHERE scope = ? AND key = ?"
    put_provider_state = (
        "INSERT INTO provider_state (scope, key, value, updated_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value, "
        "updated_at = excluded.updated_at"
    )
    claim_provider_state = (
        "INSERT INTO provider_state (scope, key, value, updated_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (scope, key) DO NOTHING"
    )
    provider_states = (
        "SELECT key, value FROM provider_state WHERE scope = ? ORDER BY updated_at, key"
    )
    delete_provider_state = "DELETE FROM provider_state WHERE scope = ? AND key = ?"
    delete_provider_state_before = "DELETE FROM provider_state WHERE scope = ? AND updated_at < ?"

    # -- the outcome stream ---------------------------------------------------------------
    outcomes_after = (
        "SELECT id, body FROM outcomes WHERE account_id = ? AND id > ? ORDER BY id LIMIT ?"
    )
    last_outcome_id = "SELECT MAX(id) FROM outcomes"
    delete_outcomes_before = "DELETE FROM outcomes WHERE created_at < ?"

    # -- deliveries and inbound messages ------------------------------------------------------
    insert_delivery = (
        "INSERT INTO deliveries (id, account_id, interaction_id, channel, kind, from_addr, "
        "to_addr, text, form_url, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    """Run by ``_insert_id``: the new row's ``seq``."""
    list_deliveries = "SELECT {delivery_columns} FROM deliveries WHERE account_id = ?"
    """Followed by ``AND column = ?`` per filter and ``list_deliveries_end``."""
    list_deliveries_end = " ORDER BY seq DESC LIMIT ?"
    delivery_seq = "SELECT seq FROM deliveries WHERE account_id = ? AND id = ?"
    max_delivery_seq = "SELECT MAX(seq) FROM deliveries WHERE account_id = ?"
    insert_inbound = "INSERT INTO inbound ({inbound_columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    inbound_by_ref = "SELECT {inbound_columns} FROM inbound WHERE ref = ? LIMIT 1"
    list_inbound = (
        "SELECT {inbound_columns} FROM inbound WHERE account_id = ? "
        "ORDER BY created_at DESC, {order} DESC LIMIT ?"
    )

    # -- numbers --------------------------------------------------------------------------
    insert_number = "INSERT INTO numbers ({number_columns}) VALUES (?, ?, ?, ?, ?)"
    number_by_phone = "SELECT {number_columns} FROM numbers WHERE phone_number = ?"
    numbers_of = (
        "SELECT {number_columns} FROM numbers WHERE account_id = ? ORDER BY created_at, {order}"
    )
    reserved_phone_numbers = "SELECT phone_number FROM numbers"
    delete_number = "DELETE FROM numbers WHERE id = ? AND account_id = ?"

    # -- webhooks -------------------------------------------------------------------------
    insert_webhook = "INSERT INTO webhooks ({webhook_columns}) VALUES (?, ?, ?, ?, ?, ?, ?)"
    webhooks_of = (
        "SELECT {webhook_columns} FROM webhooks WHERE account_id = ? ORDER BY created_at, {order}"
    )
    get_webhook = "SELECT {webhook_columns} FROM webhooks WHERE id = ?"
    delete_webhook = "DELETE FROM webhooks WHERE id = ? AND account_id = ?"

    # -- channel cards --------------------------------------------------------------------
    insert_channel = (
        "INSERT INTO channels ({channel_columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    get_channel = "SELECT {channel_columns} FROM channels WHERE id = ? AND account_id = ?"
    channels_of = (
        "SELECT {channel_columns} FROM channels WHERE account_id = ? ORDER BY created_at, {order}"
    )
    delete_channel = "DELETE FROM channels WHERE id = ? AND account_id = ?"

    # -- out-of-office delegations ------------------------------------------------------------
    delegation_columns = (
        "id, account_id, person_id, delegate_id, starts_at, ends_at, created_at, revoked_at"
    )
    insert_delegation = (
        "INSERT INTO approval_delegations ({delegation_columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    )
    live_delegations = (
        "SELECT {delegation_columns} FROM approval_delegations WHERE account_id = ? "
        "AND revoked_at IS NULL AND ends_at > ? ORDER BY starts_at, id"
    )
    revoke_delegation = (
        "UPDATE approval_delegations SET revoked_at = ? WHERE id = ? AND account_id = ? "
        "AND person_id = ? AND revoked_at IS NULL AND ends_at > ?"
    )

    # -- standing approvals ------------------------------------------------------------------
    grant_columns = (
        "id, account_id, action_name, match_json, granted_by, created_at, expires_at, revoked_at"
    )
    insert_grant = "INSERT INTO approval_grants ({grant_columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    live_grants = (
        "SELECT {grant_columns} FROM approval_grants WHERE account_id = ? "
        "AND revoked_at IS NULL AND expires_at > ? ORDER BY created_at, id"
    )
    live_grants_of_action = (
        "SELECT {grant_columns} FROM approval_grants WHERE account_id = ? AND action_name = ? "
        "AND revoked_at IS NULL AND expires_at > ? ORDER BY created_at, id"
    )
    get_grant = "SELECT {grant_columns} FROM approval_grants WHERE id = ? AND account_id = ?"
    revoke_grant = (
        "UPDATE approval_grants SET revoked_at = ? WHERE id = ? AND account_id = ? "
        "AND revoked_at IS NULL AND expires_at > ?"
    )

    # -- the people directory ------------------------------------------------------------------
    person_columns = "id, account_id, name, metadata, created_at, updated_at"
    person_address_columns = "person_id, position, account_id, channel, to_addr, confirmed_at"
    # seq: the next place in the list (one writer on SQLite; PostgreSQL's column draws
    # from its sequence).
    insert_person = (
        "INSERT INTO people ({person_columns}, seq) VALUES (?, ?, ?, ?, ?, ?, "
        "(SELECT COALESCE(MAX(seq), 0) + 1 FROM people))"
    )
    insert_person_address = (
        "INSERT INTO person_addresses ({person_address_columns}) VALUES (?, ?, ?, ?, ?, ?)"
    )
    get_person = "SELECT seq, {person_columns} FROM people WHERE id = ? AND account_id = ?"
    person_addresses = (
        "SELECT person_id, channel, to_addr, confirmed_at FROM person_addresses "
        "WHERE person_id = ? ORDER BY position"
    )
    list_people = "SELECT seq, {person_columns} FROM people WHERE account_id = ? AND seq > ?"
    """``GET /people``: then, filtered by address, ``list_people_at`` with a condition
    per part given and ``list_people_at_end``; then ``list_people_end``."""
    list_people_at = " AND id IN (SELECT person_id FROM person_addresses WHERE account_id = ?"
    list_people_channel = " AND channel = ?"
    list_people_to = " AND to_addr = ?"
    list_people_at_end = ")"
    list_people_end = " ORDER BY seq LIMIT ?"
    # The addresses of a page of people: those of the account listed in (after, last].
    listed_person_addresses = (
        "SELECT a.person_id, a.channel, a.to_addr, a.confirmed_at FROM person_addresses a "
        "JOIN people p ON p.id = a.person_id WHERE p.account_id = ? AND p.seq > ? "
        "AND p.seq <= ? ORDER BY a.person_id, a.position"
    )
    update_person = (
        "UPDATE people SET name = ?, metadata = ?, updated_at = ? WHERE id = ? AND account_id = ?"
    )
    delete_person_addresses = "DELETE FROM person_addresses WHERE person_id = ? AND account_id = ?"
    delete_person = "DELETE FROM people WHERE id = ? AND account_id = ?"
    set_person_code = (
        "UPDATE person_addresses SET code_hash = ?, code_expires_at = ?, code_misses = 0 "
        "WHERE person_id = ? AND account_id = ? AND channel = ? AND to_addr = ?"
    )
    person_code = (
        "SELECT person_id, position, code_hash, code_expires_at, code_misses "
        "FROM person_addresses WHERE person_id = ? AND channel = ? AND to_addr = ? "
        "AND code_hash IS NOT NULL"
    )
    # Only the code as read: a code sent again meanwhile (another hash) stays.
    confirm_person_address = (
        "UPDATE person_addresses SET confirmed_at = ?, code_hash = NULL, "
        "code_expires_at = NULL, code_misses = 0 "
        "WHERE person_id = ? AND position = ? AND code_hash = ?"
    )
    # A chat bound by its start link: the address becomes the chat, confirmed, the token
    # spent (only the token as read, as for a code).
    bind_person_address = (
        "UPDATE person_addresses SET to_addr = ?, confirmed_at = ?, code_hash = NULL, "
        "code_expires_at = NULL, code_misses = 0 "
        "WHERE person_id = ? AND position = ? AND code_hash = ?"
    )
    # A wrong answer: counted; the code is void at ``?`` misses.
    miss_person_code = (
        "UPDATE person_addresses SET code_misses = code_misses + 1, "
        "code_hash = CASE WHEN code_misses + 1 >= ? THEN NULL ELSE code_hash END "
        "WHERE person_id = ? AND position = ? AND code_hash = ?"
    )

    # -- events and the outbox ----------------------------------------------------------------
    insert_event = "INSERT INTO events ({event_columns}) VALUES (?, ?, ?, ?, ?, ?)"
    insert_outbox = (
        "INSERT INTO outbox ({outbox_columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    get_event = "SELECT {event_columns} FROM events WHERE id = ?"
    list_events = (
        "SELECT {event_columns} FROM events WHERE account_id = ? "
        "ORDER BY created_at DESC, {order} DESC LIMIT ?"
    )
    next_outbox_due = "SELECT MIN(next_attempt_at) FROM outbox WHERE status = 'pending'"
    outbox_depth = "SELECT COUNT(*) FROM outbox WHERE status = 'pending'"
    # A row cancelled meanwhile (its webhook deleted) stays cancelled.
    update_outbox = (
        "UPDATE outbox SET status = ?, attempts = ?, next_attempt_at = ?, last_error = ?, "
        "last_status_code = ?, delivered_at = ?, updated_at = ? "
        "WHERE id = ? AND status != 'cancelled'"
    )
    cancel_outbox_for_webhook = (
        "UPDATE outbox SET status = 'cancelled', updated_at = ? "
        "WHERE webhook_id = ? AND status = 'pending'"
    )
    list_outbox = (
        "SELECT {outbox_columns} FROM outbox WHERE account_id = ? "
        "ORDER BY created_at DESC, {order} DESC LIMIT ?"
    )

    # -- idempotency ----------------------------------------------------------------------
    # The stored result and the link of one key, either or both missing: one row always.
    get_idempotency_state = (
        "SELECT i.fingerprint, i.status_code, i.body, i.created_at, "
        "l.fingerprint, l.interaction_id, l.created_at FROM (SELECT 1) AS one "
        "LEFT JOIN idempotency i ON i.account_id = ? AND i.key = ? "
        "LEFT JOIN idempotency_links l ON l.account_id = ? AND l.key = ?"
    )
    get_idempotency = (
        "SELECT {idempotency_columns} FROM idempotency WHERE account_id = ? AND key = ?"
    )
    put_idempotency = (
        "INSERT INTO idempotency ({idempotency_columns}) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (account_id, key) DO UPDATE SET fingerprint = excluded.fingerprint, "
        "status_code = excluded.status_code, body = excluded.body, "
        "created_at = excluded.created_at"
    )
    get_idempotency_link = (
        "SELECT {link_columns} FROM idempotency_links WHERE account_id = ? AND key = ?"
    )
    delete_idempotency_before = "DELETE FROM idempotency WHERE created_at < ?"
    delete_idempotency_links_before = "DELETE FROM idempotency_links WHERE created_at < ?"

    # -- the audit log ----------------------------------------------------------------------
    for_update = ""
    """Locks the rows read until the transaction ends (PostgreSQL; SQLite has one writer)."""
    audit_columns = "account_id, sequence, interaction_id, created_at, entry, prev, hash"
    start_audit_head = (
        "INSERT INTO audit_heads (account_id, sequence, hash) VALUES (?, 0, ?) "
        "ON CONFLICT (account_id) DO NOTHING"
    )
    lock_audit_head = "SELECT sequence, hash FROM audit_heads WHERE account_id = ? {for_update}"
    insert_audit = "INSERT INTO audit ({audit_columns}) VALUES (?, ?, ?, ?, ?, ?, ?)"
    set_audit_head = "UPDATE audit_heads SET sequence = ?, hash = ? WHERE account_id = ?"
    audit_after = (
        "SELECT {audit_columns} FROM audit WHERE account_id = ? AND sequence > ? "
        "ORDER BY sequence LIMIT ?"
    )
    audit_of = (
        "SELECT {audit_columns} FROM audit WHERE interaction_id = ? ORDER BY account_id, sequence"
    )
    audit_seen_by = (
        "SELECT {audit_columns} FROM audit WHERE account_id = ? AND sequence < ? AND ("
        "interaction_id IN (SELECT p.interaction_id FROM approval_approvers p "
        "WHERE p.account_id = ? AND p.person_id = ? AND p.asked_at IS NOT NULL) "
        "OR interaction_id IN (SELECT g.id FROM approval_grants g WHERE g.account_id = ?))"
    )
    """The console's audit page: followed by one ``audit_seen_by_*`` condition per
    filter given, then ``audit_seen_by_end``."""
    audit_seen_by_interaction = " AND interaction_id = ?"
    audit_seen_by_action_name = (
        " AND (interaction_id IN (SELECT x.interaction_id FROM approvals x "
        "WHERE x.account_id = ? AND x.action_name = ?) OR interaction_id IN "
        "(SELECT g.id FROM approval_grants g WHERE g.account_id = ? AND g.action_name = ?))"
    )
    audit_seen_by_since = " AND created_at >= ?"
    audit_seen_by_until = " AND created_at < ?"
    audit_seen_by_end = " ORDER BY sequence DESC LIMIT ?"
    audit_head = "SELECT sequence, hash FROM audit_heads WHERE account_id = ?"
    audit_heads = "SELECT account_id, sequence, hash FROM audit_heads ORDER BY account_id"
    audit_accounts = (
        "SELECT account_id FROM audit_heads UNION SELECT account_id FROM audit "
        "UNION SELECT account_id FROM audit_checkpoints ORDER BY account_id"
    )
    checkpoint_columns = "account_id, sequence, hash, at, public_key, signature"
    insert_audit_checkpoint = (
        "INSERT INTO audit_checkpoints ({checkpoint_columns}) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (account_id, sequence) DO NOTHING"
    )
    audit_checkpoints = (
        "SELECT {checkpoint_columns} FROM audit_checkpoints WHERE account_id = ? ORDER BY sequence"
    )
    # The heads past their account's latest checkpoint, with that checkpoint's position.
    unsigned_audit_heads = (
        "SELECT h.account_id, h.sequence, h.hash, c.sequence, c.hash FROM audit_heads h "
        "LEFT JOIN audit_checkpoints c ON c.account_id = h.account_id AND c.sequence = "
        "(SELECT MAX(sequence) FROM audit_checkpoints WHERE account_id = h.account_id) "
        "WHERE h.sequence > COALESCE(c.sequence, 0) ORDER BY h.account_id"
    )

    # -- approval requests -------------------------------------------------------------------
    approval_columns = (
        "interaction_id, account_id, action_digest, outcome, timed_out, settled_at, "
        "consumed_at, action_name"
    )
    approver_columns = (
        "interaction_id, position, account_id, tier, channel, to_addr, token, code, asked_at, "
        "reminders, decision, comment, via, decided_at, person_id, on_behalf_of"
    )
    # seq: the next position in the list (SQLite has one writer: MAX + 1 is never taken
    # twice; PostgreSQL's column draws from its sequence).
    insert_approval = (
        "INSERT INTO approvals ({approval_columns}, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
        "(SELECT COALESCE(MAX(seq), 0) + 1 FROM approvals))"
    )
    insert_approver = (
        "INSERT INTO approval_approvers ({approver_columns}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    get_approval = "SELECT {approval_columns} FROM approvals WHERE interaction_id = ?"
    approvers_of = (
        "SELECT {approver_columns} FROM approval_approvers WHERE interaction_id = ? "
        "ORDER BY position"
    )
    list_approvals = (
        "SELECT a.seq, {listed_interaction_columns} FROM approvals a "
        "JOIN interactions i ON i.id = a.interaction_id WHERE a.account_id = ? AND a.seq > ?"
    )
    """``GET /approvals``: followed by one ``list_approvals_*`` condition per filter given,
    then ``list_approvals_end``."""
    listed_interaction_columns = ", ".join(f"i.{c}" for c in INTERACTION_COLUMNS.split(", "))
    list_approvals_status = " AND i.status = ?"
    list_approvals_decision = " AND a.outcome = ?"
    list_approvals_action_name = " AND a.action_name = ?"
    list_approvals_person_id = (
        " AND EXISTS (SELECT 1 FROM approval_approvers p "
        "WHERE p.interaction_id = a.interaction_id AND p.person_id = ?)"
    )
    # One per metadata filter: the key and the value are parameters (json_each, not a
    # JSON path built from the key). A request whose JSON holds an escaped NUL is never
    # matched, as on PostgreSQL, whose JSON cannot read one.
    list_approvals_metadata = (
        " AND instr(i.request, '\\u0000') = 0 AND EXISTS (SELECT 1 FROM "
        "json_each(i.request, '$.metadata') m WHERE m.key = ? AND m.type = 'text' "
        "AND m.value = ?)"
    )
    list_approvals_end = " ORDER BY a.seq LIMIT ?"
    approver_by_token = "SELECT {approver_columns} FROM approval_approvers WHERE token = ?"
    open_approvers_at = (
        "SELECT {approver_columns} FROM approval_approvers WHERE to_addr = ? AND channel = ? "
        "AND asked_at IS NOT NULL AND decision IS NULL AND interaction_id IN "
        "(SELECT interaction_id FROM approvals WHERE settled_at IS NULL) "
        "ORDER BY asked_at, position"
    )
    mark_approver_asked = (
        "UPDATE approval_approvers SET asked_at = ? WHERE interaction_id = ? AND position = ? "
        "AND asked_at IS NULL"
    )
    add_approver_reminder = (
        "UPDATE approval_approvers SET reminders = reminders + 1 "
        "WHERE interaction_id = ? AND position = ?"
    )
    record_approver_decision = (
        "UPDATE approval_approvers SET decision = ?, comment = ?, via = ?, decided_at = ? "
        "WHERE interaction_id = ? AND position = ? AND decision IS NULL"
    )
    settle_approval = (
        "UPDATE approvals SET outcome = ?, timed_out = ?, settled_at = ? "
        "WHERE interaction_id = ? AND settled_at IS NULL"
    )
    consume_approval = (
        "UPDATE approvals SET consumed_at = ? WHERE interaction_id = ? "
        "AND outcome = 'approved' AND consumed_at IS NULL"
    )
    # Claims and reassignment (the console): one claim per request, the first wins.
    claim_columns = "interaction_id, account_id, person_id, claimed_at"
    insert_claim = (
        "INSERT INTO approval_claims ({claim_columns}) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (interaction_id) DO NOTHING"
    )
    get_claim = "SELECT {claim_columns} FROM approval_claims WHERE interaction_id = ?"
    release_claim = "DELETE FROM approval_claims WHERE interaction_id = ? AND person_id = ?"
    reassign_approver = (
        "UPDATE approval_approvers SET person_id = ?, channel = ?, to_addr = ?, token = ?, "
        "code = ?, on_behalf_of = ?, asked_at = NULL, reminders = 0 "
        "WHERE interaction_id = ? AND position = ? "
        "AND person_id = ? AND decision IS NULL"
    )

    # -- the schedule ----------------------------------------------------------------------
    greatest = "MAX"
    """The larger of its arguments (PostgreSQL's ``GREATEST``)."""
    skip_locked = ""
    """What keeps two replicas from claiming one row (PostgreSQL's ``FOR UPDATE SKIP
    LOCKED``; SQLite has one writer)."""
    schedule_columns = "kind, key, due_at, account_id, payload, attempts"
    # Armed again: the new due time, and a fresh start (attempts, claim).
    put_step = (
        "INSERT INTO schedule (kind, key, due_at, account_id, payload, attempts, claimed_by, "
        "claimed_until) VALUES (?, ?, ?, ?, ?, 0, ?, ?) ON CONFLICT (kind, key) DO UPDATE SET "
        "due_at = excluded.due_at, account_id = excluded.account_id, "
        "payload = excluded.payload, attempts = 0, claimed_by = excluded.claimed_by, "
        "claimed_until = excluded.claimed_until"
    )
    cancel_step = "DELETE FROM schedule WHERE kind = ? AND key = ?"
    # Only the step as claimed: one armed again meanwhile (another due time) stays.
    finish_step = "DELETE FROM schedule WHERE kind = ? AND key = ? AND due_at = ?"
    retry_step = (
        "UPDATE schedule SET due_at = ?, attempts = attempts + 1, claimed_by = NULL, "
        "claimed_until = NULL WHERE kind = ? AND key = ? AND due_at = ?"
    )
    # Walks the due-time index from the earliest: what is claimed and due soon is
    # passed over; nothing later than ``due_before`` is read.
    claim_steps = (
        "UPDATE schedule SET claimed_by = ?, claimed_until = {greatest}(due_at, ?) + ? "
        "WHERE (kind, key) IN (SELECT kind, key FROM schedule WHERE due_at <= ? "
        "AND (claimed_until IS NULL OR claimed_until < ?) ORDER BY due_at LIMIT ? "
        "{skip_locked}) RETURNING {schedule_columns}"
    )
    release_steps = (
        "UPDATE schedule SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by = ?"
    )
    get_step = "SELECT {schedule_columns} FROM schedule WHERE kind = ? AND key = ?"
    count_steps = "SELECT COUNT(*) FROM schedule"

    def __init__(self) -> None:
        cls = type(self)
        for name in dir(cls):
            value = getattr(cls, name)
            if name.startswith("_") or name == "placeholder" or not isinstance(value, str):
                continue
            setattr(self, name, self.render(value))

    def render(self, text: str) -> str:
        """``text`` in this dialect: fragments filled in, placeholders swapped."""
        cls = type(self)
        for _ in range(4):  # fragments may name fragments
            filled = _FRAGMENT.sub(lambda match: str(getattr(cls, match.group(1))), text)
            if filled == text:
                break
            text = filled
        if self.placeholder == "?":
            return text
        if self.placeholder == "%s":
            text = text.replace("%", "%%")
        return text.replace("?", self.placeholder)
