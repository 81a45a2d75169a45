"""Schemas as SQL files: a database written by an older humanwire is brought to the same
schema as a fresh one, and keeps its data.

Both stores run one migration series (``store/migrations``), each version once, recorded in
``schema_migrations``; a SQLite file of the series before it (its version in ``meta``, no
``schema_migrations``) is taken up where it was. Each test makes an old database, opens it
with the store, and compares every table's columns and every index with those of a fresh
database.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from humanwire.server.store import Store
from humanwire.server.store.migrations import LATEST, SERIES, load_series
from humanwire.server.store.records import WINDOW_STEP, AccountRecord, StepRecord
from humanwire.server.store.sqlite import LEGACY_SCHEMA_VERSION, SQLiteStore, script_statements

ACCOUNT = AccountRecord(id="acct_1", name="old", key_hash="hash_1", suspended=False, created_at=1.0)

SCHEMA_1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE accounts (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, key_hash TEXT NOT NULL UNIQUE,
    suspended INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL
);
CREATE TABLE interactions (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL, kind TEXT NOT NULL,
    channel TEXT NOT NULL, to_addr TEXT NOT NULL, from_addr TEXT NOT NULL,
    request TEXT NOT NULL, created_at REAL NOT NULL, status TEXT NOT NULL,
    wait_deadline REAL, follow_up_deadline REAL, result TEXT, outcome TEXT,
    form_token TEXT UNIQUE, reply_token TEXT UNIQUE, card_id TEXT, ended_at REAL
);
CREATE INDEX interactions_match ON interactions (account_id, channel, to_addr, status);
CREATE INDEX interactions_account ON interactions (account_id, created_at);
CREATE INDEX interactions_open ON interactions (status);
CREATE TABLE deliveries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL, interaction_id TEXT, channel TEXT NOT NULL,
    kind TEXT NOT NULL, from_addr TEXT, to_addr TEXT NOT NULL, text TEXT NOT NULL,
    form_url TEXT, created_at REAL NOT NULL
);
CREATE INDEX deliveries_account ON deliveries (account_id, seq);
CREATE TABLE inbound (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL, channel TEXT NOT NULL,
    from_addr TEXT NOT NULL, to_addr TEXT NOT NULL, body TEXT NOT NULL,
    media_urls TEXT NOT NULL, interaction_id TEXT, created_at REAL NOT NULL
);
CREATE INDEX inbound_account ON inbound (account_id, created_at);
CREATE TABLE numbers (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL, phone_number TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL, updated_at REAL NOT NULL
);
CREATE INDEX numbers_account ON numbers (account_id);
CREATE TABLE webhooks (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL, url TEXT NOT NULL,
    event_types TEXT NOT NULL, headers TEXT NOT NULL, secret TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX webhooks_account ON webhooks (account_id);
CREATE TABLE channels (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL, type TEXT NOT NULL,
    to_addr TEXT NOT NULL, wait_time TEXT, follow_up_time TEXT, message_template TEXT,
    response_template TEXT NOT NULL, no_response_template TEXT NOT NULL,
    reply_link INTEGER NOT NULL, created_at REAL NOT NULL
);
CREATE INDEX channels_account ON channels (account_id);
CREATE TABLE events (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL, event_type TEXT NOT NULL,
    interaction_id TEXT, body TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE INDEX events_account ON events (account_id, created_at);
CREATE TABLE outbox (
    id TEXT PRIMARY KEY, event_id TEXT NOT NULL, webhook_id TEXT NOT NULL,
    account_id TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL,
    next_attempt_at REAL NOT NULL, last_error TEXT, last_status_code INTEGER,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, delivered_at REAL
);
CREATE INDEX outbox_due ON outbox (status, next_attempt_at);
CREATE INDEX outbox_account ON outbox (account_id, created_at);
CREATE TABLE idempotency (
    account_id TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL,
    status_code INTEGER NOT NULL, body BLOB NOT NULL, created_at REAL NOT NULL,
    PRIMARY KEY (account_id, key)
);
INSERT INTO meta (key, value) VALUES ('schema_version', '1');
INSERT INTO accounts (id, name, key_hash, suspended, created_at)
    VALUES ('acct_1', 'old', 'hash_1', 0, 1.0);
"""
"""A file as the first release wrote it (schema 1, its tables as they were then), with
one account."""


def schema_statements(upto: int | None = None) -> list[str]:
    """Every statement of the series on SQLite, in order (up to version ``upto``)."""
    return [
        s
        for m in SERIES
        if upto is None or m.version <= upto
        for s in script_statements(m.script("sqlite"))
    ]


def recorded(path: Path) -> list[int]:
    with sqlite3.connect(path) as db:
        return [int(row[0]) for row in db.execute("SELECT version FROM schema_migrations")]


def postgres_scripts(upto: int) -> list[tuple[int, str]]:
    return [(m.version, m.script("postgres")) for m in SERIES if m.version <= upto]


def sqlite_schema(path: Path) -> dict[str, Any]:
    """Every table's columns (name, type, not null, default, key) and every index
    (table, unique, columns) of the file, by name."""
    with sqlite3.connect(path) as db:
        tables = [
            str(row[0])
            for row in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        schema: dict[str, Any] = {}
        for table in tables:
            schema[table] = [tuple(row[1:]) for row in db.execute(f"PRAGMA table_info({table})")]
            for index in db.execute(f"PRAGMA index_list({table})").fetchall():
                name, unique = index[1], index[2]
                columns = [row[2] for row in db.execute(f"PRAGMA index_info({name})")]
                schema[f"index {name}"] = (table, unique, columns)
    return schema


def fresh_sqlite(tmp_path: Path) -> dict[str, Any]:
    SQLiteStore(str(tmp_path / "fresh.db")).close_now()
    return sqlite_schema(tmp_path / "fresh.db")


async def open_upgraded(path: Path) -> SQLiteStore:
    store = SQLiteStore(str(path))
    assert await store.pending_migrations() == []
    assert await store.get_account("acct_1") == ACCOUNT  # nothing lost
    return store


async def test_a_sqlite_file_of_the_first_release_upgrades_to_the_fresh_schema(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v1.db"
    with sqlite3.connect(path) as db:
        db.executescript(SCHEMA_1)
    fresh = fresh_sqlite(tmp_path)
    assert sqlite_schema(path) != fresh
    await (await open_upgraded(path)).close()
    assert sqlite_schema(path) == fresh
    with sqlite3.connect(path) as db:
        version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == (str(LEGACY_SCHEMA_VERSION),)  # what an older humanwire reads
    assert recorded(path) == list(range(1, LATEST + 1))


async def test_a_sqlite_file_of_schema_5_upgrades_to_the_fresh_schema(tmp_path: Path) -> None:
    """Schema 5: every table but the inbox's sessions (schema 6); its columns as made
    (the columns added after the first release are in its tables already). The tables of
    the migrations up to 9 (10 on add columns to them with ALTER TABLE)."""
    path = tmp_path / "v5.db"
    with sqlite3.connect(path) as db:
        for statement in schema_statements(upto=9):
            if "inbox_sessions" not in statement and not statement.startswith("ALTER"):
                db.execute(statement)
        db.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '5')")
        db.execute(
            "INSERT INTO accounts (id, name, key_hash, suspended, created_at) "
            "VALUES ('acct_1', 'old', 'hash_1', 0, 1.0)"
        )
    fresh = fresh_sqlite(tmp_path)
    assert "inbox_sessions" in fresh and "inbox_sessions" not in sqlite_schema(path)
    await (await open_upgraded(path)).close()
    assert sqlite_schema(path) == fresh


# -- PostgreSQL ----------------------------------------------------------------------------
def postgres_schema(schema: str) -> dict[str, Any]:
    """Every column (type, nullable, default), index and function of ``schema``, by name
    (the schema's own name left out, so two schemas compare)."""
    import psycopg

    from pg_support import DATABASE_URL

    with psycopg.connect(DATABASE_URL, autocommit=True) as conn:
        columns = conn.execute(
            "SELECT table_name, column_name, data_type, is_nullable, column_default "
            "FROM information_schema.columns WHERE table_schema = %s "
            "ORDER BY table_name, ordinal_position",
            (schema,),
        ).fetchall()
        indexes = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s", (schema,)
        ).fetchall()
        functions = conn.execute(
            "SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc p "
            "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = %s",
            (schema,),
        ).fetchall()
    found: dict[str, Any] = {}
    for table, column, kind, nullable, default in columns:
        default = default.replace(f"{schema}.", "") if default else default
        found.setdefault(table, []).append((column, kind, nullable, default))
    for kind, rows in (("index", indexes), ("function", functions)):
        for name, definition in rows:
            found[f"{kind} {name}"] = str(definition).replace(f"{schema}.", "")
    return found


async def test_a_postgres_schema_at_migration_3_upgrades_to_the_fresh_schema() -> None:
    import psycopg
    from psycopg import sql

    from humanwire.server.store.postgres import PostgresStore
    from pg_support import DATABASE_URL, drop_schema, new_schema

    old, url = new_schema("hw_migrate_old")
    fresh, _ = new_schema("hw_migrate_new")
    try:
        with psycopg.connect(url) as conn:  # as the code of migration 3 left it
            conn.execute(
                "CREATE TABLE schema_migrations ("
                "version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
            )
            for version, script in postgres_scripts(3):
                conn.execute(script.encode())
                conn.execute("INSERT INTO schema_migrations VALUES (%s, 0)", (version,))
            conn.execute(
                "INSERT INTO accounts (id, name, key_hash, suspended, created_at) "
                "VALUES ('acct_1', 'old', 'hash_1', FALSE, 1.0)"
            )
        with psycopg.connect(DATABASE_URL, autocommit=True) as conn:
            found = conn.execute(
                sql.SQL("SELECT version FROM {}.schema_migrations").format(sql.Identifier(old))
            ).fetchall()
        assert sorted(found) == [(1,), (2,), (3,)]
        await PostgresStore(DATABASE_URL, schema=fresh).close()
        assert postgres_schema(old) != postgres_schema(fresh)
        upgraded = PostgresStore(DATABASE_URL, schema=old)
        try:
            assert await upgraded.pending_migrations() == []
            assert await upgraded.schema_version() == LATEST
            assert await upgraded.get_account("acct_1") == ACCOUNT  # nothing lost
        finally:
            await upgraded.close()
        assert postgres_schema(old) == postgres_schema(fresh)
    finally:
        drop_schema(old)
        drop_schema(fresh)


RELEASED = {
    (1, "postgres"): "f4c64eb0ea6d9bfb6538ae9c3ea7cb6d34e190d26b0d1da9c897bdd58a93a4c1",
    (1, "sqlite"): "c8b1ce8bda06b5fbe08e0ecf8356e65cb0916ebbb72b457cf242577a2686ca9f",
    (2, "postgres"): "4f152fd99fb78218342643cc8f570824022411a70fa9c824b7612fe4c5c2b571",
    (3, "postgres"): "78ca7e836d2f186f1797a7b205f4b6a39d2a1a4178b21e376777ad4583f3f7be",
    (4, "postgres"): "b7eb5f78a4d8ccd1f1e60bb52a14a7e3eba65489a1e60c70994a7dd1a5eb1389",
    (4, "sqlite"): "91817b4d8e74d98b840f454b54975e1f6e54bf2e50a15fc15daa14534408d27f",
    (5, "postgres"): "7a9ff8b8c74378110c1d460980cb1f7c46018b71572a1013de17ff76ff088c93",
    (5, "sqlite"): "a4a4880a47104ae6abfb53b1b8c45afa5147afb2e8e0217166a54627acb6c15f",
    (6, "postgres"): "164093709784c05ae6d8ef507ece240bba1904f70cbc9e7d20857161110907a4",
    (6, "sqlite"): "8440d11ae698686ac6aa056edf0286fd944456ab97c471f80b6735d5c1e62ef6",
    (7, "postgres"): "a700b945d53cdfc6472f4fadea539370ba04add02f572343127b6bb6102622fe",
    (7, "sqlite"): "2342dc428b7c43477a57ef95212b977ee8b72e59d18c800b1504f9ceb67ab942",
    (8, "postgres"): "921aeaeb1c9528c8ca75a35138264c311b7277b31daa92a36c49cb69bdb1b2a7",
    (8, "sqlite"): "8cdcba4fad660b17d7099a8ea4399d3b4f4303d581599d537637d409cf13f677",
    (9, "postgres"): "073ca6e2379fe365ad3bb7e1380129917989a5dc8c5531d6b8b709fc19da9b86",
    (9, "sqlite"): "389d3e4842d5213615698674ea2a1f5c2ed54e9cab9e7b41a2b61a3099882824",
}
"""The SHA-256 of each released migration's SQL per dialect (its comments left out). A
database that ran one never runs it again, so an edit would reach new databases only: a
change is a new migration."""


def _digest(script: str) -> str:
    lines = [line for line in script.splitlines() if not line.startswith("--")]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def test_released_migrations_are_never_edited() -> None:
    found = {
        (m.version, dialect): _digest(script)
        for m in SERIES
        for dialect, script in m.scripts.items()
        if (m.version, dialect) in RELEASED
    }
    assert found == RELEASED


def test_the_series_is_one_file_per_version_or_one_per_dialect(tmp_path: Path) -> None:
    (tmp_path / "0001_first.sql").write_text("CREATE TABLE a (x TEXT);")
    (tmp_path / "0002_second.sqlite.sql").write_text("CREATE TABLE b (x REAL);")
    (tmp_path / "0002_second.postgres.sql").write_text("CREATE TABLE b (x DOUBLE PRECISION);")
    (tmp_path / "0003_only_postgres.postgres.sql").write_text("CREATE TABLE c (x TEXT);")
    series = load_series(tmp_path)
    assert [(m.version, m.name) for m in series] == [
        (1, "first"),
        (2, "second"),
        (3, "only_postgres"),
    ]
    assert series[0].script("sqlite") == series[0].script("postgres")  # one file, both
    assert "REAL" in series[1].script("sqlite") and "DOUBLE" in series[1].script("postgres")
    assert series[2].script("sqlite") == ""  # recorded on SQLite, nothing run
    (tmp_path / "0003_only_postgres.sql").write_text("CREATE TABLE c (x TEXT);")
    with pytest.raises(RuntimeError, match="a shared file beside a dialect's"):
        load_series(tmp_path)
    (tmp_path / "0003_only_postgres.sql").unlink()
    (tmp_path / "0005_gap.sql").write_text("SELECT 1;")
    with pytest.raises(RuntimeError, match="not 1, 2, 3"):
        load_series(tmp_path)


# -- window steps for open interactions written before (SQLite 9, PostgreSQL 7) ------------
_OPEN = (
    "INSERT INTO interactions (id, account_id, kind, channel, to_addr, from_addr, request, "
    "created_at, status, wait_deadline, follow_up_deadline) VALUES "
    "('int_wait', 'acct_1', 'message', 'sms', 'to', 'from', '{}', 1.0, 'pending', 50.0, NULL), "
    "('int_follow', 'acct_1', 'form', 'sms', 'to', 'from', '{}', 1.0, 'pending', 50.0, 90.0), "
    "('int_call', 'acct_1', 'call', 'call', 'to', 'from', '{}', 1.0, 'pending', NULL, NULL), "
    "('int_ended', 'acct_1', 'message', 'sms', 'to', 'from', '{}', 1.0, 'ended', 50.0, NULL)"
)
_STEPS = {
    ("int_follow", StepRecord(WINDOW_STEP, "int_follow", 90.0, "acct_1")),
    ("int_wait", StepRecord(WINDOW_STEP, "int_wait", 50.0, "acct_1")),
}
"""What the migration arms: the open windows' ends (a call has none, an ended one none)."""


async def _window_steps(store: Store) -> set[tuple[str, StepRecord | None]]:
    ids = ("int_wait", "int_follow", "int_call", "int_ended")
    steps = {(i, await store.get_step(WINDOW_STEP, i)) for i in ids}
    return {(i, step) for i, step in steps if step is not None}


async def test_a_sqlite_file_of_schema_8_arms_a_window_step_per_open_interaction(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v8.db"
    with sqlite3.connect(path) as db:
        for statement in schema_statements(upto=9):
            # Every script of 1 to 9 but 08_window_steps.sql (the columns added later are in the
            # tables already).
            if "'window'" not in statement and not statement.startswith("ALTER"):
                db.execute(statement)
        db.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '8')")
        db.execute(
            "INSERT INTO accounts (id, name, key_hash, suspended, created_at) "
            "VALUES ('acct_1', 'old', 'hash_1', 0, 1.0)"
        )
        db.execute(_OPEN)
    store = await open_upgraded(path)
    try:
        assert await _window_steps(store) == _STEPS
    finally:
        await store.close()
    store = await open_upgraded(path)  # opened again: nothing armed twice
    try:
        assert await store.count_steps() == 2
    finally:
        await store.close()


async def test_a_postgres_schema_at_migration_6_arms_a_window_step_per_open_interaction() -> None:
    import psycopg

    from humanwire.server.store.postgres import PostgresStore
    from pg_support import DATABASE_URL, drop_schema, new_schema

    old, url = new_schema("hw_migrate_steps")
    try:
        with psycopg.connect(url) as conn:  # as the code of migration 6 left it
            conn.execute(
                "CREATE TABLE schema_migrations ("
                "version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
            )
            for version, script in postgres_scripts(6):
                conn.execute(script.encode())
                conn.execute("INSERT INTO schema_migrations VALUES (%s, 0)", (version,))
            conn.execute(
                "INSERT INTO accounts (id, name, key_hash, suspended, created_at) "
                "VALUES ('acct_1', 'old', 'hash_1', FALSE, 1.0)"
            )
            conn.execute(_OPEN)
        upgraded = PostgresStore(DATABASE_URL, schema=old)
        try:
            assert await upgraded.pending_migrations() == []
            assert await _window_steps(upgraded) == _STEPS
        finally:
            await upgraded.close()
    finally:
        drop_schema(old)


async def test_a_sqlite_file_of_the_old_series_last_version_runs_nothing_again(
    tmp_path: Path,
) -> None:
    """A file the code before the one series wrote at its last version (11): it holds
    every migration of 1 to 9, which are recorded, none run (an open interaction without
    a window step stays without: 0008 did not run again)."""
    path = tmp_path / "v11.db"
    with sqlite3.connect(path) as db:
        for statement in schema_statements(upto=9):
            # Its tables had the columns added later already; its open interactions had
            # their window steps (none here: the upgrade must not arm them).
            if "'window'" not in statement and not statement.startswith("ALTER"):
                db.execute(statement)
        db.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '11')")
        db.execute(
            "INSERT INTO accounts (id, name, key_hash, suspended, created_at) "
            "VALUES ('acct_1', 'old', 'hash_1', 0, 1.0)"
        )
        db.execute(_OPEN)
    store = await open_upgraded(path)
    try:
        assert await _window_steps(store) == set()
        assert await store.schema_version() == LATEST
    finally:
        await store.close()
    assert recorded(path) == list(range(1, LATEST + 1))
    assert sqlite_schema(path) == fresh_sqlite(tmp_path)


# -- approvals listed (10): the requests made before get their places and action names -----
_REQUESTS = (
    "INSERT INTO interactions (id, account_id, kind, channel, to_addr, from_addr, request, "
    "created_at, status) VALUES "
    "('int_a', 'acct_1', 'approval', 'approval', 'Ada', '', "
    """'{"title": "A", "action": {"name": "wire", "arguments": {}}}', 1.0, 'pending'), """
    "('int_b', 'acct_1', 'approval', 'approval', 'Ada', '', "
    """'{"title": "B"}', 2.0, 'pending')"""
)
_APPROVALS = (
    "INSERT INTO approvals (interaction_id, account_id) VALUES "
    "('int_a', 'acct_1'), ('int_b', 'acct_1')"
)


async def _listed(store: Store) -> list[tuple[str, str | None]]:
    from humanwire.server.store.records import ApprovalQuery

    found = await store.list_approvals(ApprovalQuery("acct_1"))
    names = [await store.get_approval(listed.interaction.id) for listed in found]
    return [
        (listed.interaction.id, n.action_name if n else None)
        for listed, n in zip(found, names, strict=True)
    ]


async def test_a_sqlite_file_of_migration_9_lists_its_approvals(tmp_path: Path) -> None:
    path = tmp_path / "v9.db"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)"
        )
        for statement in schema_statements(upto=9):
            if not statement.startswith("ALTER"):  # 0001's tables have those columns
                db.execute(statement)
        db.executemany("INSERT INTO schema_migrations VALUES (?, 0)", [(v,) for v in range(1, 10)])
        db.execute(
            "INSERT INTO accounts (id, name, key_hash, suspended, created_at) "
            "VALUES ('acct_1', 'old', 'hash_1', 0, 1.0)"
        )
        db.execute(_REQUESTS)
        db.execute(_APPROVALS)
    store = await open_upgraded(path)
    try:
        assert await _listed(store) == [("int_a", "wire"), ("int_b", None)]
    finally:
        await store.close()
    assert sqlite_schema(path) == fresh_sqlite(tmp_path)


async def test_a_postgres_schema_at_migration_9_lists_its_approvals() -> None:
    import psycopg

    from humanwire.server.store.postgres import PostgresStore
    from pg_support import DATABASE_URL, drop_schema, new_schema

    old, url = new_schema("hw_migrate_listed")
    try:
        with psycopg.connect(url) as conn:  # as the code of migration 9 left it
            conn.execute(
                "CREATE TABLE schema_migrations ("
                "version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
            )
            for version, script in postgres_scripts(9):
                if script:
                    conn.execute(script.encode())
                conn.execute("INSERT INTO schema_migrations VALUES (%s, 0)", (version,))
            conn.execute(
                "INSERT INTO accounts (id, name, key_hash, suspended, created_at) "
                "VALUES ('acct_1', 'old', 'hash_1', FALSE, 1.0)"
            )
            conn.execute(_REQUESTS)
            conn.execute(_APPROVALS)
        upgraded = PostgresStore(DATABASE_URL, schema=old)
        try:
            assert await upgraded.pending_migrations() == []
            assert await _listed(upgraded) == [("int_a", "wire"), ("int_b", None)]
        finally:
            await upgraded.close()
    finally:
        drop_schema(old)
