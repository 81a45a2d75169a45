"""Accounts: keys, isolation, idempotency, the rate limit and the spam guard."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from engine_support import HUMAN, SLACK_HUMAN, account, engine, fast_config, sms, sms_form

from humanwire.server.engine import Account, Engine, SendContext
from humanwire.server.errors import AccountSuspended, Conflict, NotFound, RateLimited
from humanwire.types import SandboxCallOutcomeRequest, WebhookCreateRequest

__all__ = ["account", "engine"]


async def test_api_key_is_stored_only_as_a_hash(engine: Engine, tmp_path: Path) -> None:
    created, key = await engine.accounts.create("me")
    assert key.startswith("hw_") and len(key) == 35
    assert await engine.accounts.authenticate(key) == created
    assert await engine.accounts.authenticate(key + "x") is None
    assert await engine.accounts.authenticate("") is None
    stored = [row[0] for row in _query(engine, "SELECT key_hash FROM accounts")]
    assert key not in stored
    assert hashlib.sha256(key.encode()).hexdigest() in stored
    given, same = await engine.accounts.create("given", api_key="my-own-key")
    assert same == "my-own-key"
    assert await engine.accounts.authenticate("my-own-key") == given
    with pytest.raises(Conflict):
        await engine.accounts.create("dup", api_key="my-own-key")


async def test_accounts_never_see_each_other(engine: Engine, account: Account) -> None:
    other, _ = await engine.accounts.create("other")
    message = await engine.send_message(account, sms(follow_up_time=30))
    form = await engine.send_form(account, sms_form(follow_up_time=30))
    with pytest.raises(NotFound):
        await engine.interaction_status(other, message.interaction_id)
    with pytest.raises(NotFound):
        await engine.sandbox_end_call(
            other, message.interaction_id, SandboxCallOutcomeRequest(outcome="completed")
        )
    assert await engine.list_interactions(other) == []
    assert await engine.list_sandbox_deliveries(other) == []
    assert await engine.list_sandbox_deliveries(account, to=HUMAN)
    assert await engine.list_sandbox_deliveries(account, to=SLACK_HUMAN) == []
    assert {d.interaction_id for d in await engine.list_sandbox_deliveries(account)} == {
        message.interaction_id,
        form.interaction_id,
    }
    await engine.webhooks.create(
        account, WebhookCreateRequest(url="http://127.0.0.1:9/x", event_types=["form.received"])
    )
    assert await engine.webhooks.of(other) == []
    assert await engine.webhooks.events(other) == []


async def test_idempotent_replays_and_refuses_another_body(
    engine: Engine, account: Account
) -> None:
    runs = 0

    async def run(context: SendContext) -> tuple[int, bytes]:
        nonlocal runs
        runs += 1
        return 200, f'{{"run": {runs}}}'.encode()

    first = await engine.idempotency.run(account, "key-1", "fp-a", run)
    again = await engine.idempotency.run(account, "key-1", "fp-a", run)
    assert first == again == (200, b'{"run": 1}')
    with pytest.raises(Conflict) as caught:
        await engine.idempotency.run(account, "key-1", "fp-b", run)
    assert caught.value.status == 409
    other, _ = await engine.accounts.create("other")
    assert await engine.idempotency.run(other, "key-1", "fp-b", run) == (200, b'{"run": 2}')
    assert runs == 2


async def test_concurrent_duplicate_waits_for_the_first_and_survives_its_cancel(
    engine: Engine, account: Account
) -> None:
    release = asyncio.Event()
    runs = 0

    async def run(context: SendContext) -> tuple[int, bytes]:
        nonlocal runs
        runs += 1
        await release.wait()
        return 200, b"held result"

    first = asyncio.create_task(engine.idempotency.run(account, "k", "fp", run))
    await asyncio.sleep(0.01)
    first.cancel()  # the client gave up; its retry arrives while the run is still held
    retry = asyncio.create_task(engine.idempotency.run(account, "k", "fp", run))
    await asyncio.sleep(0.01)
    with pytest.raises(Conflict):
        await engine.idempotency.run(account, "k", "other-fp", run)
    assert not retry.done()
    release.set()
    assert await retry == (200, b"held result")
    assert runs == 1
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_failures_are_not_stored(engine: Engine, account: Account) -> None:
    results = iter([(500, b"boom"), (200, b"fine")])

    async def run(context: SendContext) -> tuple[int, bytes]:
        return next(results)

    assert await engine.idempotency.run(account, "k", "fp", run) == (500, b"boom")
    assert await engine.idempotency.run(account, "k", "fp", run) == (200, b"fine")
    assert await engine.idempotency.run(account, "k", "fp", run) == (200, b"fine")


async def test_rate_limit_refuses_with_retry_after(tmp_path: Path, database: str) -> None:
    config = fast_config(tmp_path, db_path=database, rate_limit_requests=3, rate_limit_window=30)
    engine = Engine(config)
    account, _ = await engine.accounts.create()
    other, _ = await engine.accounts.create()
    for _ in range(3):
        await engine.accounts.check_limits(account)
    with pytest.raises(RateLimited) as caught:
        await engine.accounts.check_limits(account)
    assert 0 < caught.value.retry_after <= 30
    await engine.accounts.check_limits(other)  # per account
    await engine.store.close()


async def test_spam_guard_suspends_and_it_is_persisted(tmp_path: Path, database: str) -> None:
    config = fast_config(tmp_path, db_path=database, spam_recipients=3, spam_window=60)
    engine = Engine(config)
    await engine.start()
    account, key = await engine.accounts.create()
    await engine.send_message(account, sms("BUY NOW", to="+14155550101"))
    await engine.send_message(account, sms("buy   now", to="+14155550102"))
    # Another text, or the same text to the same people, is conversation, not bulk.
    await engine.send_message(account, sms("something else", to="+14155550103"))
    await engine.send_message(account, sms("BUY NOW", to="+14155550101"))
    await engine.accounts.check_limits(account)
    with pytest.raises(AccountSuspended):
        await engine.send_message(account, sms("BUY NOW", to="+14155550103"))
    assert len(await engine.list_sandbox_deliveries(account)) == 4  # the third bulk text never left
    current = await engine.accounts.authenticate(key)  # every request reads its account again
    assert current is not None and current.suspended
    with pytest.raises(AccountSuspended):
        await engine.accounts.check_limits(current)
    # A send whose account was read before the suspension sends nothing either.
    with pytest.raises(AccountSuspended):
        await engine.send_message(account, sms("hello", to="+14155550104"))
    assert len(await engine.list_sandbox_deliveries(account)) == 4
    await engine.close()

    reopened = Engine(config)
    try:
        restored = await reopened.accounts.authenticate(key)
        assert restored is not None and restored.suspended
        with pytest.raises(AccountSuspended) as caught:
            await reopened.accounts.check_limits(restored)
        assert caught.value.status == 403
    finally:
        await reopened.store.close()


async def test_accounts_created_by_another_connection_while_running(
    engine: Engine, account: Account
) -> None:
    """``humanwire accounts create`` opens the same file while the service runs."""
    await engine.send_message(account, sms())  # the service is writing (a batch is open)

    def other_process() -> tuple[Account, str]:
        async def create() -> tuple[Account, str]:
            cli = Engine(replace(engine.config))  # its own connection to the same file
            try:
                return await cli.accounts.create("from the cli")
            finally:
                await cli.store.close()

        return asyncio.run(create())  # a loop of its own, as the CLI runs

    created, key = await asyncio.to_thread(other_process)
    found = await engine.accounts.authenticate(key)
    assert found is not None and found.id == created.id
    # And the service's own writes are visible to the other connection.
    await asyncio.sleep(0)  # the service's batch commits on the loop's next turn
    [(count,)] = _query(engine, "SELECT COUNT(*) FROM deliveries")
    assert count == 1


def _query(engine: Engine, query: str) -> list[tuple[Any, ...]]:
    """``query`` on the engine's database through a connection of its own (either store),
    once the writes of this loop turn are committed (SQLite's batch)."""
    engine.store.commit()
    db = str(engine.config.db_path)
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as conn:
            return list(conn.execute(query).fetchall())
    reader = sqlite3.connect(db)
    try:
        return list(reader.execute(query).fetchall())
    finally:
        reader.close()
