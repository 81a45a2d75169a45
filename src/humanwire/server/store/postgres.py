"""The PostgreSQL store (psycopg 3 with ``psycopg_pool``): ``Store`` on a PostgreSQL server.

``PostgresStore(url)`` opens a small connection pool on ``url`` (a libpq URL or
``key=value`` string) and brings the schema up to date before it returns. ``schema``
puts every table in that PostgreSQL schema (created if missing; every connection of the
pool runs with it as ``search_path``): the contract tests give each test a fresh one.

How it maps to ``SQLiteStore`` (``store/sqlite.py``), whose semantics it keeps:

* Every method is one statement in its own transaction, committed before it returns;
  where SQLite groups statements with ``_tx`` (an interaction with its idempotency link,
  an event with its outbox rows, dropping old idempotency results and links) they run in
  one transaction here too. There is no group commit per event-loop turn: a write is
  durable when the method returns.
* Unique violations raise ``Duplicate`` (SQLite raises it for accounts and numbers and
  lets ``sqlite3.IntegrityError`` through elsewhere; here every insert raises
  ``Duplicate``).
* Types: ``DOUBLE PRECISION`` for SQLite's ``REAL`` times, ``BOOLEAN`` for its 0/1 flags,
  ``BYTEA`` for the idempotent response bodies, ``BIGSERIAL`` for ``deliveries.seq`` and
  ``outcomes.id`` (never reused, like ``AUTOINCREMENT``). JSON values are stored as
  ``TEXT`` written by the same compact ``json.dumps`` as SQLite, not ``JSONB``: key order
  and numbers (a window of ``30`` stays ``30``, not ``30.0``) come back exactly as stored.
  PostgreSQL's text cannot hold a NUL character, SQLite's can.
* Orderings that SQLite breaks by ``rowid`` are broken here by an ``ord BIGSERIAL``
  column (insertion order) on the same tables.
* Migrations are versioned: ``schema_migrations (version, applied_at)``; migration 1 is
  the whole schema of SQLite's version 5. They run at construction in one transaction
  under a transaction-level advisory lock, so two processes starting together neither
  race nor apply a migration twice.

  Migration 2 adds what replicas share (``SharedStore``): window owners and holders on
  ``interactions``, the ``replicas`` heartbeats, and the rate limit's and spam guard's
  counts (two PL/pgSQL functions, each one round trip under an advisory lock).
  Migration 3 keeps the rate count per account (``rate_counts``), so a request costs
  the same however many came in the window. Migration 4 adds the inbox's sessions
  (``inbox_sessions``, SQLite's version 6).
* Several service processes share one database (``server/replicas.py``): claims use
  ``FOR UPDATE SKIP LOCKED``; ``outcomes.id`` comes from a sequence, taken and committed
  under the account's advisory lock so one account's ids commit in order and paging with
  ``outcomes_after`` never skips one.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import errors, sql
from psycopg_pool import ConnectionPool

from .base import (
    ACCOUNT_TABLES,
    INTERACTION_COLUMNS,
    OUTCOME_NOTICE_BODY,
    AccountRecord,
    Duplicate,
    IdempotencyLinkRecord,
    IdempotencyRecord,
    InboundRecord,
    InteractionRecord,
    OutboxRecord,
    dumps_json,
)
from .commits import COMMITTED, PendingCommit, StoreUnavailable
from .sql import INBOUND_COLUMNS, SQLStore, Statements, rows

__all__ = ["MIGRATIONS", "PostgresStore"]

_MIGRATION_1 = """
CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    suspended BOOLEAN NOT NULL DEFAULT FALSE,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE interactions (
    id TEXT PRIMARY KEY,
    ord BIGSERIAL NOT NULL,
    account_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    channel TEXT NOT NULL,
    to_addr TEXT NOT NULL,
    from_addr TEXT NOT NULL,
    request TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    status TEXT NOT NULL,
    wait_deadline DOUBLE PRECISION,
    follow_up_deadline DOUBLE PRECISION,
    result TEXT,
    outcome TEXT,
    form_token TEXT UNIQUE,
    reply_token TEXT UNIQUE,
    card_id TEXT,
    ended_at DOUBLE PRECISION,
    delivery_status TEXT,
    provider_ref TEXT
);
CREATE INDEX interactions_match ON interactions (account_id, channel, to_addr, status);
CREATE INDEX interactions_account ON interactions (account_id, created_at);
CREATE INDEX interactions_open ON interactions (status);
CREATE INDEX interactions_provider_ref ON interactions (provider_ref);
CREATE TABLE deliveries (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL,
    interaction_id TEXT,
    channel TEXT NOT NULL,
    kind TEXT NOT NULL,
    from_addr TEXT,
    to_addr TEXT NOT NULL,
    text TEXT NOT NULL,
    form_url TEXT,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX deliveries_account ON deliveries (account_id, seq);
CREATE TABLE inbound (
    id TEXT PRIMARY KEY,
    ord BIGSERIAL NOT NULL,
    account_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    from_addr TEXT NOT NULL,
    to_addr TEXT NOT NULL,
    body TEXT NOT NULL,
    media_urls TEXT NOT NULL,
    interaction_id TEXT,
    created_at DOUBLE PRECISION NOT NULL,
    ref TEXT
);
CREATE INDEX inbound_account ON inbound (account_id, created_at);
CREATE UNIQUE INDEX inbound_ref ON inbound (ref);
CREATE TABLE numbers (
    id TEXT PRIMARY KEY,
    ord BIGSERIAL NOT NULL,
    account_id TEXT NOT NULL,
    phone_number TEXT NOT NULL UNIQUE,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX numbers_account ON numbers (account_id);
CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    ord BIGSERIAL NOT NULL,
    account_id TEXT NOT NULL,
    url TEXT NOT NULL,
    event_types TEXT NOT NULL,
    headers TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX webhooks_account ON webhooks (account_id);
CREATE TABLE channels (
    id TEXT PRIMARY KEY,
    ord BIGSERIAL NOT NULL,
    account_id TEXT NOT NULL,
    type TEXT NOT NULL,
    to_addr TEXT NOT NULL,
    wait_time TEXT,
    follow_up_time TEXT,
    message_template TEXT,
    response_template TEXT NOT NULL,
    no_response_template TEXT NOT NULL,
    reply_link BOOLEAN NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    metadata TEXT
);
CREATE INDEX channels_account ON channels (account_id);
CREATE TABLE events (
    id TEXT PRIMARY KEY,
    ord BIGSERIAL NOT NULL,
    account_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    interaction_id TEXT,
    body TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX events_account ON events (account_id, created_at);
CREATE TABLE outbox (
    id TEXT PRIMARY KEY,
    ord BIGSERIAL NOT NULL,
    event_id TEXT NOT NULL,
    webhook_id TEXT NOT NULL,
    account_id TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt_at DOUBLE PRECISION NOT NULL,
    last_error TEXT,
    last_status_code INTEGER,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    delivered_at DOUBLE PRECISION
);
CREATE INDEX outbox_due ON outbox (status, next_attempt_at);
CREATE INDEX outbox_account ON outbox (account_id, created_at);
CREATE INDEX outbox_webhook ON outbox (webhook_id, status);
CREATE TABLE idempotency (
    account_id TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status_code INTEGER NOT NULL,
    body BYTEA NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_created ON idempotency (created_at);
CREATE TABLE idempotency_links (
    account_id TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    interaction_id TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_links_created ON idempotency_links (created_at);
CREATE TABLE provider_state (
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE TABLE outcomes (
    id BIGSERIAL PRIMARY KEY,
    account_id TEXT NOT NULL,
    interaction_id TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX outcomes_account ON outcomes (account_id, id);
CREATE INDEX outcomes_created ON outcomes (created_at);
"""

_MIGRATION_2 = """
ALTER TABLE interactions ADD COLUMN owner TEXT;
ALTER TABLE interactions ADD COLUMN held_by TEXT;
CREATE INDEX interactions_held ON interactions (held_by) WHERE held_by IS NOT NULL;
CREATE TABLE replicas (
    id TEXT PRIMARY KEY,
    started_at DOUBLE PRECISION NOT NULL,
    seen_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE rate_hits (
    account_id TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL
);
CREATE INDEX rate_hits_account ON rate_hits (account_id, at);
CREATE TABLE spam_marks (
    account_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    recipient TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (account_id, fingerprint, recipient)
);
CREATE UNIQUE INDEX numbers_one_per_account ON numbers (account_id);
CREATE FUNCTION humanwire_rate_hit(
    p_account TEXT, p_now DOUBLE PRECISION, p_window DOUBLE PRECISION, p_limit INTEGER
) RETURNS DOUBLE PRECISION LANGUAGE plpgsql AS $$
DECLARE
    hits INTEGER;
    oldest DOUBLE PRECISION;
BEGIN
    PERFORM pg_advisory_xact_lock(
        hashtextextended('humanwire.rate:' || current_schema() || ':' || p_account, 0));
    DELETE FROM rate_hits WHERE account_id = p_account AND at <= p_now - p_window;
    SELECT COUNT(*), MIN(at) INTO hits, oldest FROM rate_hits WHERE account_id = p_account;
    IF hits >= p_limit THEN
        RETURN GREATEST(oldest + p_window - p_now, 0.001);
    END IF;
    INSERT INTO rate_hits (account_id, at) VALUES (p_account, p_now);
    RETURN NULL;
END $$;
CREATE FUNCTION humanwire_spam_hit(
    p_account TEXT, p_fingerprint TEXT, p_to TEXT, p_now DOUBLE PRECISION,
    p_window DOUBLE PRECISION
) RETURNS INTEGER LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(
        'humanwire.spam:' || current_schema() || ':' || p_account || ':' || p_fingerprint, 0));
    DELETE FROM spam_marks
        WHERE account_id = p_account AND fingerprint = p_fingerprint AND at <= p_now - p_window;
    INSERT INTO spam_marks (account_id, fingerprint, recipient, at)
        VALUES (p_account, p_fingerprint, p_to, p_now)
        ON CONFLICT (account_id, fingerprint, recipient) DO UPDATE SET at = excluded.at;
    RETURN (SELECT COUNT(*) FROM spam_marks
        WHERE account_id = p_account AND fingerprint = p_fingerprint);
END $$;
"""
"""Replicas (issue 13): who owns each open window and who holds each send, the replicas'
heartbeats, and the rate limit's and spam guard's counts shared by every replica."""

_MIGRATION_3 = """
CREATE TABLE rate_counts (
    account_id TEXT PRIMARY KEY,
    hits INTEGER NOT NULL,
    counted_to DOUBLE PRECISION NOT NULL
);
CREATE OR REPLACE FUNCTION humanwire_rate_hit(
    p_account TEXT, p_now DOUBLE PRECISION, p_window DOUBLE PRECISION, p_limit INTEGER
) RETURNS DOUBLE PRECISION LANGUAGE plpgsql AS $$
DECLARE
    cutoff DOUBLE PRECISION := p_now - p_window;
    counted INTEGER;
    since DOUBLE PRECISION;
    oldest DOUBLE PRECISION;
BEGIN
    PERFORM pg_advisory_xact_lock(
        hashtextextended('humanwire.rate:' || current_schema() || ':' || p_account, 0));
    SELECT hits, counted_to INTO counted, since FROM rate_counts WHERE account_id = p_account;
    IF NOT FOUND THEN
        SELECT COUNT(*) INTO counted FROM rate_hits
            WHERE account_id = p_account AND at > cutoff;
        since := cutoff;
        INSERT INTO rate_counts (account_id, hits, counted_to)
            VALUES (p_account, counted, since);
    ELSIF since < cutoff THEN
        counted := counted - (SELECT COUNT(*) FROM rate_hits
            WHERE account_id = p_account AND at > since AND at <= cutoff);
        since := cutoff;
    END IF;
    IF counted >= p_limit THEN
        SELECT MIN(at) INTO oldest FROM rate_hits WHERE account_id = p_account AND at > since;
        UPDATE rate_counts SET hits = counted, counted_to = since WHERE account_id = p_account;
        RETURN GREATEST(oldest + p_window - p_now, 0.001);
    END IF;
    INSERT INTO rate_hits (account_id, at) VALUES (p_account, p_now);
    IF p_now > since THEN
        counted := counted + 1;
    END IF;
    UPDATE rate_counts SET hits = counted, counted_to = since WHERE account_id = p_account;
    RETURN NULL;
END $$;
"""
"""The rate limit in constant time per request (issue 13: at 30,000 waits every request
counted, under the account's lock, every hit of the last window plus the rows its
predecessors had deleted and no vacuum had cleared yet). ``rate_counts`` keeps, per
account, how many hits are inside the window as of ``counted_to`` (the last cutoff); a
hit subtracts only the rows that left the window since then (a range of the index just
past ``counted_to``, never the deleted rows before it). Rows are deleted in bulk by
``prune_limits``, only once counted out. Same answers as migration 2's function (a
sliding log); a hit from a clock behind the counted cutoff is let through uncounted."""

_MIGRATION_4 = """
CREATE TABLE inbox_sessions (
    id_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    key_hash TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    seen_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX inbox_sessions_account ON inbox_sessions (account_id);
"""
"""The inbox's sessions (issue 34): an opaque token in the browser's cookie, its hash
here, instead of the API key in the cookie."""

MIGRATIONS: tuple[tuple[int, str], ...] = (
    (1, _MIGRATION_1),
    (2, _MIGRATION_2),
    (3, _MIGRATION_3),
    (4, _MIGRATION_4),
)
"""``(version, SQL)`` in order; a database records the ones it ran in
``schema_migrations``. Add a new version for every change; never edit a released one."""

_MIGRATION_LOCK = "humanwire.store.migrate"
"""Hashed (with the schema) into the key of the advisory lock the migrations run under."""

_INTERACTION_COLUMNS = INTERACTION_COLUMNS + ", owner, held_by"




_dumps = dumps_json

_PLACED = (
    "placed AS (SELECT added.id, COALESCE((SELECT MAX(o.id) FROM outcomes o "
    "WHERE o.account_id = %s AND o.id < added.id), 0) AS after FROM added) "
)
"""The new outcome (CTE ``added``) with the id of its account's outcome before it."""
_OUTCOME_NOTICE = (
    "json_build_array('outcome', %s::text, placed.id::text, "
    "json_build_object('after', placed.after, 'body', %s::json))"
)
"""An outcome's entry in a notice as ``Replicas`` reads it ([kind, account, item,
detail]): the event and the id before it."""


ENDING_NOTICE_BYTES = 7200
"""An ended interaction's notice entry carries its ending while it and the outcome body
carried beside it stay under this (the whole payload under NOTIFY's 8,000 bytes)."""


def _notice_body(text: str) -> str | None:
    """An outcome body a notice can carry (None: too large, its readers read it)."""
    return text if len(text.encode()) <= OUTCOME_NOTICE_BODY else None


def _first_line(exc: BaseException) -> str:
    """What failed, in a line (drivers do not echo passwords)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


_TIMES = ("created_at", "wait_deadline", "follow_up_deadline", "ended_at")


class PostgresStatements(Statements):
    """``Statements`` in PostgreSQL's words: where it differs, and what only it runs."""

    placeholder = "%s"
    order = "ord"
    interaction_columns = _INTERACTION_COLUMNS
    interaction_values = ", ".join(
        "?::double precision" if column in _TIMES else "?"
        for column in _INTERACTION_COLUMNS.split(", ")
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
    insert_delivery = Statements.insert_delivery + " RETURNING seq"
    # One statement (one round trip, atomic): the link is written first and the
    # interaction only if it was.
    insert_linked_interaction = (
        "WITH link AS ({upsert_idempotency_link} RETURNING 1) "
        "INSERT INTO interactions ({interaction_columns}) "
        "SELECT {interaction_values} WHERE EXISTS (SELECT 1 FROM link)"
    )
    claim_outbox = (
        "UPDATE outbox SET next_attempt_at = ? WHERE id IN (SELECT id FROM outbox "
        "WHERE status = 'pending' AND next_attempt_at <= ? "
        "ORDER BY next_attempt_at, ord LIMIT ? FOR UPDATE SKIP LOCKED) "
        "RETURNING {outbox_columns}"
    )


class _Transaction:
    """``Transaction`` on a pooled connection: in a pipeline (``_tx``) or a transaction
    (``_transaction``)."""

    __slots__ = ("_conn",)

    def __init__(self, conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        self._conn = conn

    def execute(self, query: str, params: Sequence[Any] = (), /) -> None:
        self._conn.execute(query.encode(), params)

    def executemany(self, query: str, params: Iterable[Sequence[Any]], /) -> None:
        with self._conn.cursor() as cursor:
            cursor.executemany(query.encode(), params)

    def one(self, query: str, params: Sequence[Any] = (), /) -> tuple[Any, ...] | None:
        return self._conn.execute(query.encode(), params).fetchone()

    def run(self, query: str, params: Sequence[Any] = (), /) -> int:
        return self._conn.execute(query.encode(), params).rowcount


class PostgresStore(SQLStore):
    """``Store`` on PostgreSQL. ``url``: where the server is (``postgresql://...``);
    ``schema``: the PostgreSQL schema to keep the tables in (default: the server's
    ``search_path``, usually ``public``)."""

    q = PostgresStatements()
    account_tables = (*ACCOUNT_TABLES, "rate_hits", "rate_counts", "spam_marks")
    """Every table with an ``account_id`` column (besides ``accounts``): replicas' counts too."""

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 4,
        connect_timeout: float = 10.0,
    ) -> None:
        self.url = url
        self.schema = schema
        self._closed = False
        self._write_failure: str | None = None
        self._notice_channel: str | None = None
        # What this store asked of the server (the migrations left out): tests pin the
        # round trips of a send, the benchmark reports them.
        self.transactions = 0
        self.round_trips = 0
        self.statements = 0
        self._migrate(connect_timeout)
        self._pool: ConnectionPool[psycopg.Connection[tuple[Any, ...]]] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            # Autocommit: a lone statement is its own transaction, one round trip (not
            # three, with BEGIN and COMMIT); ``_tx`` groups statements explicitly.
            kwargs={"connect_timeout": max(1, int(connect_timeout)), "autocommit": True},
            configure=self._configure,
            open=True,
            timeout=connect_timeout,
            name="humanwire-store",
        )

    # -- connections and migrations -------------------------------------------------------
    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        """Every pooled connection plans each statement for its own parameters and runs
        with ``schema`` (if given) as its ``search_path``.

        Custom plans: psycopg prepares a statement after a few runs, and PostgreSQL then
        keeps one generic plan for it, made for the table as it was. One made while
        ``interactions`` held a few rows (the first sends of a fresh database, no ANALYZE
        yet) answered ``WHERE id = $1 AND status = 'pending'`` through the ``status``
        index: 9 ms at 30,000 open waits, reading every one of them, instead of 0.5 ms
        by the primary key. Planning a statement afresh costs tens of microseconds."""
        conn.execute(b"SET plan_cache_mode = force_custom_plan")
        if self.schema is not None:
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema)))

    def _migrate(self, connect_timeout: float) -> None:
        """Applies the migrations the database lacks, in one transaction under an advisory
        lock (released at its end), so concurrent starts apply each once."""
        with (
            psycopg.connect(self.url, connect_timeout=max(1, int(connect_timeout))) as conn,
            conn.transaction(),
        ):
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtext(%s))",
                (f"{_MIGRATION_LOCK}:{self.schema or ''}",),
            )
            if self.schema is not None:
                name = sql.Identifier(self.schema)
                conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(name))
                conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(name))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
            )
            applied = {int(row[0]) for row in conn.execute("SELECT version FROM schema_migrations")}
            for version, script in MIGRATIONS:
                if version in applied:
                    continue
                # One script per call (no parameters: the simple protocol takes several
                # statements, and function bodies keep their own semicolons).
                conn.execute(script.encode())
                conn.execute(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (%s, %s)",
                    (version, time.time()),
                )

    def pending_migrations(self) -> list[int]:
        """The versions of ``MIGRATIONS`` missing from ``schema_migrations``."""
        try:
            rows = self._all("SELECT version FROM schema_migrations")
        except errors.UndefinedTable:
            rows = []
        applied = {int(row[0]) for row in rows}
        return [version for version, _script in MIGRATIONS if version not in applied]

    def schema_version(self) -> int:
        """The newest migration applied."""
        row = self._one("SELECT MAX(version) FROM schema_migrations")
        return int(row[0]) if row and row[0] is not None else 0

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """A pooled connection (autocommit: each statement outside ``_tx`` commits on
        its own); a unique violation becomes ``Duplicate``."""
        if self._closed:
            raise RuntimeError("the store is closed")
        try:
            with self._pool.connection() as conn:
                yield conn
        except errors.UniqueViolation as exc:
            raise Duplicate(str(exc)) from None
        except psycopg.OperationalError as exc:
            # The server gone (or the connection lost mid-commit: it may have failed),
            # its disk full, no connection to be had: not done, retry later.
            reason = _first_line(exc)
            self._write_failure = reason
            raise StoreUnavailable(reason) from exc

    @contextmanager
    def _tx(self, statements: int) -> Iterator[_Transaction]:
        """``statements`` statements in one transaction and one round trip: sent as one
        pipeline ending in a single Sync, which the server runs as one implicit
        transaction (committed at the Sync; an error rolls back all of it and raises
        here). Nothing in the block may read a result: psycopg fetches it with a Flush
        and a round trip of its own before the Sync's. A statement's cursor is read
        after the block (its results arrived with the Sync)."""
        with self._connection() as conn, conn.pipeline():
            self.transactions += 1
            self.round_trips += 1
            self.statements += statements
            yield _Transaction(conn)

    @contextmanager
    def _transaction(self) -> Iterator[_Transaction]:
        """A transaction whose statements may read results on the way (BEGIN … COMMIT:
        a round trip each); for rare work such as deleting an account, where ``_tx``'s
        single pipeline cannot serve."""
        with self._connection() as conn, conn.transaction():
            self.transactions += 1
            yield _Transaction(conn)

    def _one(self, query: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        with self._connection() as conn:
            self._count()
            return conn.execute(query.encode(), params).fetchone()

    def _all(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._connection() as conn:
            self._count()
            return conn.execute(query.encode(), params).fetchall()

    def _run(self, query: str, params: Sequence[Any] = ()) -> int:
        with self._connection() as conn:
            self._count()
            return conn.execute(query.encode(), params).rowcount

    def _insert_id(self, query: str, params: Sequence[Any]) -> int:
        row = self._one(query, params)  # INSERT ... RETURNING the key
        assert row is not None
        return int(row[0])

    def _count(self) -> None:
        """One statement in its own transaction: one round trip."""
        self.transactions += 1
        self.round_trips += 1
        self.statements += 1

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._pool.close()

    def commit(self) -> None:
        """Nothing to do: every method commits before it returns."""

    def committed(self) -> PendingCommit:
        return COMMITTED

    @property
    def write_failure(self) -> str | None:
        return self._write_failure

    async def check_writable(self) -> None:
        """A one-row update in a worker thread (it waits on the network)."""
        if self._write_failure is not None:
            await asyncio.to_thread(self._probe_write)

    def _probe_write(self) -> None:
        # A new row version of the newest migration's: a real write, a tiny table.
        self._run(
            "UPDATE schema_migrations SET applied_at = applied_at "
            "WHERE version = (SELECT MAX(version) FROM schema_migrations)"
        )
        self._write_failure = None

    # -- interactions -----------------------------------------------------------------
    def insert_interaction(
        self,
        record: InteractionRecord,
        link: IdempotencyLinkRecord | None = None,
        *,
        link_stale_before: float = 0.0,
    ) -> None:
        values = (*rows.interaction_values(record), record.owner, record.held_by)
        if link is None:
            self._run(self.q.insert_interaction, values)
            return
        # One statement (one round trip, atomic): the link is written first and the
        # interaction only if it was. The link replaces one whose interaction failed to
        # deliver, or one older than ``link_stale_before``; any other link means another
        # request with this key (on another replica) got there first: ``Duplicate``,
        # nothing stored.
        linked = (*rows.link_values(link, link_stale_before), *values)
        if not self._run(self.q.insert_linked_interaction, linked):
            raise Duplicate(f"idempotency key {link.key!r} is linked already")

    # -- the outcome stream -------------------------------------------------------------
    def append_outcome(
        self,
        account_id: str,
        interaction_id: str,
        body: dict[str, Any],
        created_at: float,
        *,
        idempotency: IdempotencyRecord | None = None,
    ) -> tuple[int, int]:
        return self._append_outcome(account_id, interaction_id, body, created_at, idempotency)

    def append_published_outcome(
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
        return self._append_outcome(
            account_id, interaction_id, body, created_at, idempotency, replica_id, release
        )

    def _append_outcome(
        self,
        account_id: str,
        interaction_id: str,
        body: dict[str, Any],
        created_at: float,
        idempotency: IdempotencyRecord | None,
        replica_id: str | None = None,
        release: bool = False,
    ) -> tuple[int, int]:
        # One transaction, one round trip (a pipeline ending in one Sync). Ids come from
        # a sequence, taken and committed under the account's lock, so one account's ids
        # commit in order and a reader paging with ``outcomes_after`` never passes one
        # that commits later. The lock is its own statement: the insert's snapshot,
        # taken after it, sees every earlier outcome of the account, so the previous id
        # it returns is exact.
        text = _dumps(body)
        insert = (
            "WITH added AS (INSERT INTO outcomes (account_id, interaction_id, body, "
            "created_at) VALUES (%s, %s, %s, %s) RETURNING id), " + _PLACED
        )
        params: tuple[Any, ...] = (account_id, interaction_id, text, created_at, account_id)
        if replica_id is None:
            query = insert + "SELECT id, after FROM placed"
        else:
            # The notice ({"r": replica, "n": [entry]}), delivered when this commits.
            query = insert + (
                "SELECT id, after, pg_notify(%s, json_build_object('r', %s::text, 'n', "
                f"json_build_array({_OUTCOME_NOTICE}))::text) FROM placed"
            )
            params = (*params, self.channel, replica_id, account_id, _notice_body(text))
        with self._connection() as conn:
            with conn.pipeline():
                self.transactions += 1
                self.round_trips += 1
                self.statements += 2 + (idempotency is not None) + release
                self._lock_outcomes(conn, account_id)
                if idempotency is not None:
                    conn.execute(
                        self.q.put_idempotency.encode(), rows.idempotency_values(idempotency)
                    )
                if release:
                    conn.execute(
                        b"UPDATE interactions SET held_by = NULL WHERE id = %s AND held_by = %s",
                        (interaction_id, replica_id),
                    )
                cursor = conn.execute(query.encode(), params)
            row = cursor.fetchone()  # after the pipeline's Sync: see ``_tx``
        assert row is not None
        return int(row[0]), int(row[1])

    @staticmethod
    def _lock_outcomes(conn: psycopg.Connection[Any], account_id: str) -> None:
        """The account's outcome lock, until the transaction ends: in a statement of its
        own, so the next statement's snapshot sees every earlier outcome of the account
        (the previous id ``_PLACED`` reads is exact)."""
        conn.execute(
            b"SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            (f"humanwire.outcomes:{account_id}",),
        )

    # -- the outbox -------------------------------------------------------------------
    def claim_outbox(self, now: float, limit: int, until: float) -> list[OutboxRecord]:
        found = self._all(self.q.claim_outbox, (until, now, limit))
        return [rows.outbox(row) for row in found]

    # -- replicas: several service processes on one database ------------------------------
    shared = True
    """Other processes may serve from this database (see ``SharedStore``)."""

    @property
    def channel(self) -> str:
        """The LISTEN/NOTIFY channel of this database's schema (channels are
        database-wide; the schema's hash keeps services on other schemas apart)."""
        if self._notice_channel is None:
            row = self._one("SELECT current_schema()")
            schema = str(row[0]) if row and row[0] is not None else ""
            digest = hashlib.sha256(schema.encode()).hexdigest()[:16]
            self._notice_channel = "humanwire_" + digest
        return self._notice_channel

    def heartbeat(self, replica_id: str, now: float) -> None:
        self._run(
            "INSERT INTO replicas (id, started_at, seen_at) VALUES (%s, %s, %s) "
            "ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at",
            (replica_id, now, now),
        )

    def retire_replica(self, replica_id: str) -> None:
        with self._tx(2) as conn:
            conn.execute(
                "UPDATE interactions SET owner = NULL WHERE owner = %s AND status = 'pending'",
                (replica_id,),
            )
            conn.execute("DELETE FROM replicas WHERE id = %s", (replica_id,))

    def forget_replicas_before(self, cutoff: float) -> None:
        self._run("DELETE FROM replicas WHERE seen_at < %s", (cutoff,))

    def claim_windows(
        self, replica_id: str, alive_after: float, limit: int
    ) -> list[InteractionRecord]:
        found = self._all(
            "UPDATE interactions SET owner = %s WHERE id IN (SELECT i.id FROM interactions i "
            "WHERE i.status = 'pending' AND i.kind <> 'call' AND (i.owner IS NULL OR NOT "
            "EXISTS (SELECT 1 FROM replicas r WHERE r.id = i.owner AND r.seen_at > %s)) "
            "ORDER BY i.ord LIMIT %s FOR UPDATE SKIP LOCKED) "
            f"RETURNING {_INTERACTION_COLUMNS}",
            (replica_id, alive_after, limit),
        )
        return [rows.interaction(row) for row in found]

    def take_interaction(self, interaction_id: str, replica_id: str, *, hold: bool) -> bool:
        return (
            self._run(
                "UPDATE interactions SET owner = %s, held_by = CASE WHEN %s THEN %s "
                "ELSE held_by END WHERE id = %s AND status = 'pending'",
                (replica_id, hold, replica_id, interaction_id),
            )
            > 0
        )

    def end_held_interaction(
        self,
        interaction_id: str,
        ended_at: float,
        result: dict[str, Any] | None = None,
        outcome: str | None = None,
        *,
        release: str | None = None,
    ) -> tuple[bool, str | None]:
        row = self._one(
            "UPDATE interactions SET status = 'ended', ended_at = %s, result = %s, outcome = %s, "
            "held_by = CASE WHEN held_by = %s THEN NULL ELSE held_by END "
            "WHERE id = %s AND status = 'pending' RETURNING held_by",
            (
                ended_at,
                _dumps(result) if result is not None else None,
                outcome,
                release,
                interaction_id,
            ),
        )
        return (row is not None, str(row[0]) if row and row[0] is not None else None)

    def end_and_report(
        self,
        interaction_id: str,
        account_id: str,
        ended_at: float,
        result: dict[str, Any] | None,
        outcome: str | None,
        report: dict[str, Any],
        replica_id: str,
        *,
        release: str | None = None,
        inbound: InboundRecord | None = None,
    ) -> tuple[bool, str | None, tuple[int, int] | None]:
        # The account's outcome lock first (``_lock_outcomes``), then the end, its
        # outcome, the inbound text that ended it and one notice naming them, in one
        # transaction.
        text = _dumps(report)
        carried = _notice_body(text)
        # The interaction's entry carries how it ended (a holder elsewhere answers from
        # it without reading the row) when both fit in one notice.
        ending = _dumps({"endedAt": ended_at, "outcome": outcome, "result": result})
        fits = len(ending.encode()) + len((carried or "").encode()) <= ENDING_NOTICE_BYTES
        params: list[Any] = [
            ended_at,
            _dumps(result) if result is not None else None,
            outcome,
            release,
            interaction_id,
        ]
        received = inbound_notice = ""
        if inbound is not None:
            # Stored whether or not this ended the interaction (a data-modifying WITH
            # always runs), linked to it only if it did.
            received = (
                f"received AS (INSERT INTO inbound ({INBOUND_COLUMNS}) SELECT %s, %s, %s, "
                "%s, %s, %s, %s, (SELECT %s::text FROM ended), %s, %s), "
            )
            params += rows.inbound_values(inbound)
            inbound_notice = ", json_build_array('inbound', %s::text, %s::text)"
        params += [account_id, interaction_id, text, ended_at, account_id]
        params += [self.channel, replica_id, account_id, interaction_id]
        params += [ending if fits else None, account_id, carried]
        if inbound is not None:
            params += [inbound.account_id, inbound.id]
        query = (
            "WITH ended AS (UPDATE interactions SET status = 'ended', ended_at = %s, "
            "result = %s, outcome = %s, held_by = CASE WHEN held_by = %s THEN NULL "
            "ELSE held_by END WHERE id = %s AND status = 'pending' "
            "RETURNING held_by, delivery_status), "
            + received
            + "added AS (INSERT INTO outcomes (account_id, interaction_id, body, created_at) "
            "SELECT %s, %s, %s, %s FROM ended RETURNING id), " + _PLACED + "SELECT "
            "ended.held_by, placed.id, placed.after, pg_notify(%s, json_build_object('r', "
            "%s::text, 'n', json_build_array(json_build_array('interaction', %s::text, "
            "%s::text, json_build_object('ended', %s::json, 'deliveryStatus', "
            f"ended.delivery_status)), {_OUTCOME_NOTICE}{inbound_notice}))::text) "
            "FROM ended, placed"
        )
        with self._connection() as conn:
            with conn.pipeline():
                self.transactions += 1
                self.round_trips += 1
                self.statements += 2
                self._lock_outcomes(conn, account_id)
                cursor = conn.execute(query.encode(), params)
            row = cursor.fetchone()  # after the pipeline's Sync: see ``_tx``
        if row is None:
            return False, None, None
        holder = str(row[0]) if row[0] is not None else None
        return True, holder, (int(row[1]), int(row[2]))

    def release_hold(
        self, interaction_id: str, replica_id: str, *, ended_only: bool = False
    ) -> InteractionRecord | None:
        row = self._one(
            "UPDATE interactions SET held_by = NULL WHERE id = %s AND held_by = %s "
            + ("AND status <> 'pending' " if ended_only else "")
            + f"RETURNING {_INTERACTION_COLUMNS}",
            (interaction_id, replica_id),
        )
        return rows.interaction(row) if row else None

    def sweep_holds(self, alive_after: float, limit: int) -> list[InteractionRecord]:
        found = self._all(
            "UPDATE interactions SET held_by = NULL WHERE id IN (SELECT i.id FROM "
            "interactions i WHERE i.held_by IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "
            "replicas r WHERE r.id = i.held_by AND r.seen_at > %s) "
            "LIMIT %s FOR UPDATE SKIP LOCKED) "
            f"RETURNING {_INTERACTION_COLUMNS}",
            (alive_after, limit),
        )
        return [rows.interaction(row) for row in found]

    def notify(self, payloads: list[str]) -> None:
        if not payloads:
            return
        # One statement: delivered together, in order, when it commits.
        self._run(
            "SELECT pg_notify(%s, payload) FROM unnest(%s::text[]) AS payload",
            (self.channel, payloads),
        )

    def rate_hit(self, account_id: str, now: float, limit: int, window: float) -> float | None:
        row = self._counted(
            "SELECT humanwire_rate_hit(%s, %s, %s, %s)", (account_id, now, window, limit)
        )
        return float(row[0]) if row and row[0] is not None else None

    def spam_hit(
        self, account_id: str, fingerprint: str, to: str, now: float, window: float
    ) -> int:
        row = self._counted(
            "SELECT humanwire_spam_hit(%s, %s, %s, %s, %s)",
            (account_id, fingerprint, to, now, window),
        )
        return int(row[0]) if row else 0

    def account_by_key_hash_counted(
        self, key_hash: str, now: float, limit: int, window: float
    ) -> tuple[AccountRecord | None, float | None]:
        row = self._counted(
            "SELECT id, name, key_hash, suspended, created_at, CASE WHEN suspended THEN NULL "
            "ELSE humanwire_rate_hit(id, %s, %s, %s) END FROM accounts WHERE key_hash = %s",
            (now, window, limit, key_hash),
        )
        if row is None:
            return None, None
        return rows.account(row), float(row[5]) if row[5] is not None else None

    def _counted(self, query: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """A rate or spam count: committed without waiting for the disk (a count lost
        to a crash of the database server only forgets a few requests, as a restart of
        one SQLite service forgets all of them), so a send does not wait on two more
        WAL flushes. One transaction, one round trip."""
        with self._connection() as conn:
            with conn.pipeline():
                self.transactions += 1
                self.round_trips += 1
                self.statements += 2
                conn.execute(b"SELECT set_config('synchronous_commit', 'off', true)")
                cursor = conn.execute(query.encode(), params)
            return cursor.fetchone()  # after the pipeline's Sync: see ``_tx``

    def forget_spam(self, account_id: str) -> None:
        self._run("DELETE FROM spam_marks WHERE account_id = %s", (account_id,))

    def prune_limits(self, rate_before: float, spam_before: float) -> None:
        with self._tx(2) as conn:
            # Only hits counted out of their account's window (``rate_counts``): the
            # next hit subtracts the rest itself.
            conn.execute(
                "DELETE FROM rate_hits h WHERE h.at <= %s AND h.at <= COALESCE((SELECT "
                "c.counted_to FROM rate_counts c WHERE c.account_id = h.account_id), %s)",
                (rate_before, rate_before),
            )
            conn.execute("DELETE FROM spam_marks WHERE at <= %s", (spam_before,))
