"""Restarts: open windows are re-armed from the store, windows that passed while the
service was down are ended, and everything stored stays (accounts, idempotency) — on
each store (the ``database`` fixture). The upgrade of a first-schema SQLite file is
SQLite's own (PostgreSQL's migrations are tested in test_postgres_service)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from engine_support import HUMAN, account, engine, fast_config, reply, sms, sms_form

from humanwire.server.config import SHARED_SMS_NUMBER
from humanwire.server.engine import Account, Engine, SendContext
from humanwire.server.errors import ServiceUnavailable
from humanwire.server.store import SQLiteStore, open_store
from humanwire.server.store.records import AccountRecord

__all__ = ["account", "engine"]


async def test_open_follow_up_window_survives_a_restart(tmp_path: Path, database: str) -> None:
    config = fast_config(tmp_path, db_path=database)
    first = Engine(config)
    await first.start()
    account, key = await first.accounts.create()
    listening = await first.send_message(account, sms(wait_time=0.05, follow_up_time=30))
    closing = await first.send_message(account, sms("b", to="+14155550123", follow_up_time=0.4))
    await first.close()

    second = Engine(config)
    await second.start()
    try:
        restored = await second.accounts.authenticate(key)
        assert restored is not None
        assert (await second.interaction_status(restored, listening.interaction_id)).status == (
            "pending"
        )
        # The re-armed timer still closes the short window.
        status = await second.interaction_status(restored, closing.interaction_id, wait=3)
        assert status.status == "ended"
        # And the late reply still finds the open interaction, as a webhook event.
        await second.sandbox_reply(restored, reply("sms", HUMAN, SHARED_SMS_NUMBER, "back"))
        events = await second.webhooks.events(restored)
        assert events[0]["interactionId"] == listening.interaction_id
    finally:
        await second.close()


async def test_windows_that_passed_while_down_are_ended_at_start(
    tmp_path: Path, database: str
) -> None:
    config = fast_config(tmp_path, db_path=database)
    first = Engine(config)
    await first.start()
    account, key = await first.accounts.create()
    message = await first.send_message(account, sms(follow_up_time=0.1))
    form = await first.send_form(account, sms_form(follow_up_time=0.1))
    await first.close()
    await asyncio.sleep(0.2)

    second = Engine(config)
    await second.start()
    try:
        restored = await second.accounts.authenticate(key)
        assert restored is not None
        # Their steps are overdue: the schedule's first tick, as the engine starts,
        # runs them (a status long-poll returns as they end).
        for interaction_id in (message.interaction_id, form.interaction_id):
            status = await second.interaction_status(restored, interaction_id, wait=3)
            assert (status.status, status.result) == ("ended", None)
        assert form.form_url is not None
        assert (await second.get_form(form.form_url.rsplit("/", 1)[1])).state == "expired"
    finally:
        await second.close()


async def test_idempotent_results_survive_a_restart(tmp_path: Path, database: str) -> None:
    config = fast_config(tmp_path, db_path=database)
    first = Engine(config)
    await first.start()
    account, key = await first.accounts.create()
    runs = 0

    async def run(context: SendContext) -> tuple[int, bytes]:
        nonlocal runs
        runs += 1
        return 200, b'{"first": true}'

    assert await first.idempotency.run(account, "k1", "POST /messages/sms abc", run) == (
        200,
        b'{"first": true}',
    )
    await first.close()
    second = Engine(config)
    await second.start()
    try:
        restored = await second.accounts.authenticate(key)
        assert restored is not None
        again = await second.idempotency.run(restored, "k1", "POST /messages/sms abc", run)
        assert again == (200, b'{"first": true}')
        assert runs == 1
    finally:
        await second.close()


async def test_a_send_is_a_held_wait_once_its_delivery_went_out(
    tmp_path: Path, database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its hold is registered before its interaction is stored (an instant reply finds
    # it), but counted held only once the send waits: a test or an operator waiting for
    # "held" must not act on a send still being stored and delivered.
    engine = Engine(fast_config(tmp_path, db_path=database))
    await engine.start()
    try:
        account, _ = await engine.accounts.create()
        store = engine.store
        set_delivery = store.set_delivery
        delivering = asyncio.Event()

        async def slow_set_delivery(*args: Any, **kwargs: Any) -> None:
            delivering.set()
            await asyncio.sleep(0.3)
            await set_delivery(*args, **kwargs)

        monkeypatch.setattr(store, "set_delivery", slow_set_delivery)
        held = asyncio.create_task(engine.send_message(account, sms(wait_time=30)))
        await asyncio.wait_for(delivering.wait(), 5)
        assert engine.held_waits == 0
        while engine.held_waits < 1:
            await asyncio.sleep(0.01)
        assert not held.done()
        held.cancel()
    finally:
        await engine.close()


async def test_close_answers_long_polls_and_held_requests_unavailable(
    tmp_path: Path, database: str
) -> None:
    engine = Engine(fast_config(tmp_path, db_path=database))
    await engine.start()
    account, _ = await engine.accounts.create()
    listening = await engine.send_message(account, sms(follow_up_time=30))
    poll = asyncio.create_task(
        engine.interaction_status(account, listening.interaction_id, wait=30)
    )
    held = asyncio.create_task(engine.send_message(account, sms("held", wait_time=30)))
    while engine.held_waits < 1:
        await asyncio.sleep(0.005)
    await engine.close()
    # Answered 503 (the client retries), not cancelled; both stay open in the store and
    # re-arm at the next start.
    for task in (poll, held):
        with pytest.raises(ServiceUnavailable):
            await asyncio.wait_for(task, 1)
    reopened = open_store(database)
    try:
        assert len(await reopened.open_interactions()) == 2
    finally:
        await reopened.close()


async def test_a_database_of_the_first_schema_gains_the_idempotency_links(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "old.db")
    old = SQLiteStore(path)
    await old.insert_account(AccountRecord("acc", "old", "hash", False, 1.0))
    async with old._tx() as db:  # what a file written by schema version 1 looks like
        await db.execute("DROP TABLE idempotency_links")
        await db.execute("DROP TABLE schema_migrations")
        await db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    await old.close()

    engine = Engine(fast_config(tmp_path, db_path=path))
    await engine.start()
    try:
        assert await engine.store.get_account("acc") is not None  # nothing lost
        account = Account(id="acc", name="old")
        sent = await engine.idempotency.run(
            account, "k", "fp", lambda context: _send(engine, account, context)
        )
        link = await engine.store.get_idempotency_link("acc", "k")
        assert link is not None and link.fingerprint == "fp"
        assert link.interaction_id == json.loads(sent[1])["interactionId"]
    finally:
        await engine.close()


async def _send(engine: Engine, account: Account, context: SendContext) -> tuple[int, bytes]:
    response = await engine.send_message(account, sms(follow_up_time=5), context)
    return 200, response.model_dump_json(by_alias=True, exclude_none=True).encode()


async def test_a_send_cancelled_while_its_interaction_commits_leaves_no_hold(
    engine: Engine, account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hold is registered before the row; a send whose request goes away while it
    # waits for the commit (a real provider's send waits for it) must not leave it behind.
    class Pending:
        settled = False

        def __await__(self) -> Any:
            return asyncio.get_running_loop().create_future().__await__()  # never settles

    class NotTheSandbox:  # a real provider's send waits for the commit
        def __init__(self, sandbox: object) -> None:
            self.sandbox = sandbox

        def __getattr__(self, name: str) -> Any:
            return getattr(self.sandbox, name)

    monkeypatch.setattr(engine.store, "committed", Pending)
    monkeypatch.setitem(engine.providers, "sms", NotTheSandbox(engine.providers["sms"]))
    send = asyncio.create_task(engine.send_message(account, sms(wait_time=30)))
    await asyncio.sleep(0.2)
    assert len(list(engine.holding.held)) == 1
    send.cancel()
    with pytest.raises(asyncio.CancelledError):
        await send
    assert list(engine.holding.held) == []
