"""The PostgreSQL store (psycopg 3 with ``psycopg_pool``): ``Store`` on a PostgreSQL server.

``PostgresStore(url)`` opens a small connection pool on ``url`` (a libpq URL or
``key=value`` string) and brings the schema up to date before it returns. ``schema``
puts every table in that PostgreSQL schema (created if missing; every connection of the
pool runs with it as ``search_path``): the contract tests give each test a fresh one.

Its parts: ``statements`` (``Statements`` in PostgreSQL's words), ``connection`` (the
executor: pool, pipelines, counted round trips), ``migrations`` (the one series of
``store/migrations`` run here), ``outcomes`` (the outcome stream under advisory locks,
with its notices), ``replicas`` (heartbeats, claims, holds, notices, shared rate and spam
counts) and ``store`` (``PostgresStore``, the few methods it runs its own way).

How it maps to ``SQLiteStore`` (``store/sqlite.py``), whose semantics it keeps:

* Every method is one statement in its own transaction, committed before it returns;
  where SQLite groups statements (an interaction with its idempotency link, an event
  with its outbox rows, dropping old idempotency results and links) they run in one
  transaction here too. There is no group commit per event-loop turn.
* Unique violations raise ``Duplicate``, as in SQLite.
* Types: ``DOUBLE PRECISION`` for SQLite's ``REAL`` times, ``BOOLEAN`` for its 0/1 flags,
  ``BYTEA`` for the idempotent response bodies, ``BIGSERIAL`` for ``deliveries.seq`` and
  ``outcomes.id`` (never reused, like ``AUTOINCREMENT``). JSON values are stored as
  ``TEXT`` written by the same compact ``json.dumps`` as SQLite, not ``JSONB``: key order
  and numbers (a window of ``30`` stays ``30``, not ``30.0``) come back exactly as stored.
  PostgreSQL's text cannot hold a NUL character, SQLite's can.
* Orderings that SQLite breaks by ``rowid`` are broken here by an ``ord BIGSERIAL``
  column (insertion order) on the same tables.
* Migrations are the one series both stores run (``store/migrations``): 1 is the whole
  schema of SQLite's old version 5; 2 adds what replicas share (window owners and holders
  on ``interactions``, the ``replicas`` heartbeats, the rate limit's and spam guard's
  counts as two PL/pgSQL functions, each one round trip under an advisory lock); 3 keeps
  the rate count per account (``rate_counts``), so a request costs the same however many
  came in the window (2 and 3 run nothing on SQLite); 4 adds the inbox's sessions; 5 the
  schedule; 6 the audit log; 7 the approvals; 8 arms a window step for each open
  interaction written before; 9 the audit log's signed checkpoints;
  10 the approvals' places in their list (``GET /approvals``).
* Several service processes share one database (``server/background/replicas.py``): claims use
  ``FOR UPDATE SKIP LOCKED``; ``outcomes.id`` comes from a sequence, taken and committed
  under the account's advisory lock so one account's ids commit in order and paging with
  ``outcomes_after`` never skips one.
"""

from __future__ import annotations

from .outcomes import ENDING_NOTICE_BYTES
from .store import PostgresStore

__all__ = ["ENDING_NOTICE_BYTES", "PostgresStore"]
