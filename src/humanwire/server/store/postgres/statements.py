"""``Statements`` in PostgreSQL's words: ``%s`` placeholders, ``ord`` for insertion order,
the replicas' two interaction columns, and the few statements it writes its own way."""

from __future__ import annotations

from ..sql.statements import INTERACTION_COLUMNS, Statements

__all__ = ["INTERACTION_COLUMNS_SHARED", "PostgresStatements"]

INTERACTION_COLUMNS_SHARED = INTERACTION_COLUMNS + ", owner, held_by"
"""The interaction columns with the replicas' window owner and send holder."""
_TIMES = ("created_at", "wait_deadline", "follow_up_deadline", "ended_at")


class PostgresStatements(Statements):
    """``Statements`` in PostgreSQL's words: where it differs, and what only it runs."""

    placeholder = "%s"
    order = "ord"
    interaction_columns = INTERACTION_COLUMNS_SHARED
    interaction_values = ", ".join(
        "?::double precision" if column in _TIMES else "?"
        for column in INTERACTION_COLUMNS_SHARED.split(", ")
    )
    """Typed where a NULL in an ``INSERT ... SELECT`` would otherwise be taken for text."""
    list_accounts = "SELECT {account_columns} FROM accounts ORDER BY created_at, id"
    # Locks the row: a concurrent rotate or suspend waits, then finds nothing.
    account_to_delete = "SELECT 1 FROM accounts WHERE id = ? FOR UPDATE"
    delete_provider_state_of_account = (
        "DELETE FROM provider_state WHERE "
        "key IN (SELECT id FROM interactions WHERE account_id = ?) "
        "OR key IN (SELECT phone_number FROM numbers WHERE account_id = ?) "
        "OR (CASE WHEN jsonb_typeof(value::jsonb) = 'object' THEN "
        "value::jsonb ->> 'account' = ? OR value::jsonb ->> 'interactionId' "
        "IN (SELECT id FROM interactions WHERE account_id = ?) END)"
    )
    # The guard first: a request whose JSON holds an escaped NUL cannot be read as jsonb
    # (an error); it is never matched (as on SQLite).
    list_approvals_metadata = (
        " AND CASE WHEN strpos(i.request, '\\u0000') = 0 THEN "
        "(i.request::jsonb -> 'metadata' ->> ?::text) = ?::text ELSE false END"
    )
    insert_delivery = Statements.insert_delivery + " RETURNING seq"
    # One statement (one round trip, atomic): the link is written first and the
    # interaction only if it was.
    insert_linked_interaction = (
        "WITH link AS ({upsert_idempotency_link} RETURNING 1) "
        "INSERT INTO interactions ({interaction_columns}) "
        "SELECT {interaction_values} WHERE EXISTS (SELECT 1 FROM link)"
    )
    # The interaction and its window step in one statement (one round trip).
    insert_scheduled_interaction = "WITH step AS ({put_step}) {insert_interaction}"
    # The link, then the interaction only if the link was written, then its window step
    # only if the interaction was: one statement, whose row count says if it was.
    insert_linked_scheduled_interaction = (
        "WITH link AS ({upsert_idempotency_link} RETURNING 1), "
        "added AS (INSERT INTO interactions ({interaction_columns}) "
        "SELECT {interaction_values} WHERE EXISTS (SELECT 1 FROM link) RETURNING id) "
        "INSERT INTO schedule (kind, key, due_at, account_id, payload, attempts, claimed_by, "
        "claimed_until) SELECT ?::text, added.id, ?::double precision, ?::text, ?::text, 0, "
        "?::text, ?::double precision FROM added ON CONFLICT (kind, key) DO UPDATE SET "
        "due_at = excluded.due_at, account_id = excluded.account_id, "
        "payload = excluded.payload, attempts = 0, claimed_by = excluded.claimed_by, "
        "claimed_until = excluded.claimed_until"
    )
    # The end and the window step's removal in one statement (the step goes whether or
    # not this ended it: an ended interaction has no window left).
    end_interaction = "WITH unarmed AS ({unarm_window}) " + Statements.end_interaction
    claim_outbox = (
        "UPDATE outbox SET next_attempt_at = ? WHERE id IN (SELECT id FROM outbox "
        "WHERE status = 'pending' AND next_attempt_at <= ? "
        "ORDER BY next_attempt_at, ord LIMIT ? FOR UPDATE SKIP LOCKED) "
        "RETURNING {outbox_columns}"
    )
    insert_person = "INSERT INTO people ({person_columns}) VALUES (?, ?, ?, ?, ?, ?)"
    insert_approval = "INSERT INTO approvals ({approval_columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    lock_account_approvals = (
        "SELECT pg_advisory_xact_lock(hashtextextended('humanwire.approvals:' || ?, 0))"
    )
    listed_interaction_columns = ", ".join(f"i.{c}" for c in INTERACTION_COLUMNS_SHARED.split(", "))
    greatest = "GREATEST"
    skip_locked = "FOR UPDATE SKIP LOCKED"
    for_update = "FOR UPDATE"
