"""The service on PostgreSQL, from the outside: ``--db postgresql://…`` (or
``HUMANWIRE_DATABASE_URL``) selects the PostgreSQL store everywhere a database is named —
the settings, ``humanwire db migrate``, ``accounts create``, ``slack``, and a running
service that sends and gets a reply over HTTP. Each test gets a fresh schema (through the
URL's ``search_path`` option), dropped afterwards."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from humanwire import HumanWire
from humanwire.cli import main as cli_main
from humanwire.server.config import SHARED_SLACK_WORKSPACE
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.server.runtime.settings import load_settings
from humanwire.server.store import is_database_url, open_store, redact, schema_version
from humanwire.server.store.migrations import LATEST
from humanwire.testing.service import fast_config
from pg_support import drop_schema, new_schema


@pytest.fixture
def database_url() -> Iterator[str]:
    """A database URL on a fresh schema of its own (dropped afterwards)."""
    schema, url = new_schema("hw_service")
    yield url
    drop_schema(schema)


def test_urls_are_told_from_files_and_passwords_never_printed() -> None:
    assert is_database_url("postgresql://h/db") and is_database_url("postgres://h/db")
    assert not is_database_url("/var/lib/humanwire.db") and not is_database_url(":memory:")
    assert redact("postgresql://hw:s3cret@db.internal:5432/hw") == (
        "postgresql://hw:***@db.internal:5432/hw"
    )
    assert redact("postgresql://db.internal/hw") == "postgresql://db.internal/hw"


def test_settings_take_the_url_as_is(tmp_path: Path, database_url: str) -> None:
    from_env = load_settings(None, {"HUMANWIRE_DATABASE_URL": database_url}, {})
    assert from_env.to_service_config().db_path == database_url
    assert from_env.source("db") == "from environment variable HUMANWIRE_DATABASE_URL"
    # HUMANWIRE_DB wins when both are set.
    both = load_settings(
        None, {"HUMANWIRE_DATABASE_URL": database_url, "HUMANWIRE_DB": "/x/hw.db"}, {}
    )
    assert both.to_service_config().db_path == "/x/hw.db"
    # In a file, a URL is not taken for a path relative to the file.
    path = tmp_path / "humanwire.toml"
    path.write_text(f'db = "{database_url}"\n', encoding="utf-8")
    assert load_settings(path, {}, {}).to_service_config().db_path == database_url


def test_db_migrate_accounts_and_slack_commands(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    latest = LATEST
    assert cli_main(["db", "migrate", "--db", database_url]) == 0
    assert f"schema version {latest}" in capsys.readouterr().out
    assert cli_main(["db", "migrate", "--db", database_url]) == 0  # already there: fine
    assert f"schema version {latest}" in capsys.readouterr().out
    assert cli_main(["accounts", "create", "--db", database_url, "--name", "pg"]) == 0
    key = capsys.readouterr().out.strip()
    assert key.startswith("hw_")

    async def check() -> None:  # the CLI runs loops of its own: this test has none
        store = open_store(database_url)
        try:
            assert await schema_version(store) == latest
            assert await store.count_accounts() == 1
        finally:
            await store.close()

    asyncio.run(check())
    assert cli_main(["slack", "workspaces", "--db", database_url]) == 0
    assert capsys.readouterr().out == ""  # none installed


def test_a_service_on_postgresql_sends_and_gets_the_reply(database_url: str) -> None:
    config = replace(fast_config(Path("unused.db")), db_path=database_url)
    with ServiceRunner(config, "127.0.0.1", 0) as runner:
        key = runner.create_account("pg-service")
        with HumanWire(api_key=key, base_url=runner.base_url) as client:
            sent = client.messages.slack(
                to="U0HUMAN0001", message="On Postgres?", follow_up_time=60
            )
            client.sandbox.reply(
                channel="slack",
                from_="U0HUMAN0001",
                to=SHARED_SLACK_WORKSPACE,
                body="yes",
                interaction_id=sent.interaction_id,
            )
            status = client.interactions.wait(sent.interaction_id, timeout=10)
            assert status.status == "ended" and status.result is not None
            assert status.result.payload.body == "yes"  # type: ignore[union-attr]
    # The data is in PostgreSQL: a second service on the same URL sees the account.
    with ServiceRunner(config, "127.0.0.1", 0) as again:
        assert again.authenticate(key)
