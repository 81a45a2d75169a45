"""The provider-neutral entry points every carrier uses (sandbox, inbox, Twilio, Slack):
an inbound text matched without knowing the account, a carrier's redelivery taken once,
a call ended with its transcript, an inbound call opened then ended."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from engine_support import HUMAN, OTHER_HUMAN, account, engine, fast_config, sms

from humanwire.server.config import SHARED_SMS_NUMBER
from humanwire.server.engine import Account, Engine, InboundText
from humanwire.server.store import SQLiteStore
from humanwire.server.store.records import AccountRecord
from humanwire.types import CallRequest

__all__ = ["account", "engine"]


async def test_a_text_to_the_shared_number_answers_the_right_account(engine: Engine) -> None:
    first, _ = await engine.accounts.create("first")
    second, _ = await engine.accounts.create("second")
    held_first = asyncio.create_task(engine.send_message(first, sms("a?", wait_time=5)))
    held_second = asyncio.create_task(
        engine.send_message(second, sms("b?", to=OTHER_HUMAN, wait_time=5))
    )
    await asyncio.sleep(0.05)
    stored = await engine.receive_text(
        InboundText(channel="sms", from_addr=OTHER_HUMAN, to_addr=SHARED_SMS_NUMBER, body="B!")
    )
    assert stored is not None and stored.account_id == second.id
    answered = await held_second
    assert answered.responded is True and answered.reply == "B!"
    assert not held_first.done()  # the other account's human said nothing
    held_first.cancel()


async def test_a_redelivered_text_is_taken_once(engine: Engine, account: Account) -> None:
    sent = await engine.send_message(account, sms(follow_up_time=5))
    text = InboundText(
        channel="sms", from_addr=HUMAN, to_addr=SHARED_SMS_NUMBER, body="yes", ref="SM1"
    )
    first = await engine.receive_text(text)
    again = await engine.receive_text(text)
    assert first is not None and first.interaction_id == sent.interaction_id
    assert again is None
    assert len(await engine.webhooks.inbound(account)) == 1
    assert [e["eventType"] for e in await engine.webhooks.events(account)] == ["message.received"]


async def test_a_text_nobody_is_waiting_for_on_the_shared_number_belongs_to_nobody(
    engine: Engine, account: Account
) -> None:
    stored = await engine.receive_text(
        InboundText(channel="sms", from_addr=HUMAN, to_addr=SHARED_SMS_NUMBER, body="hi")
    )
    assert stored is None
    assert await engine.webhooks.inbound(account) == []


async def test_an_unsolicited_text_to_a_reserved_number_goes_to_its_account(
    engine: Engine, account: Account
) -> None:
    number = (await engine.numbers.available(country="US"))[0].phone_number
    await engine.numbers.reserve_from_pool(account, number)
    stored = await engine.receive_text(
        InboundText(
            channel="sms",
            from_addr=HUMAN,
            to_addr=number,
            body="photo",
            media_urls=("https://media.example/1.jpg",),
        )
    )
    assert stored is not None and stored.account_id == account.id
    assert stored.interaction_id is None
    events = await engine.webhooks.events(account)
    assert events[0]["payload"] == {
        "medium": "sms",
        "from": HUMAN,
        "to": number,
        "body": "photo",
        "mediaUrls": ["https://media.example/1.jpg"],
    }


async def test_end_call_carries_the_transcript(engine: Engine, account: Account) -> None:
    placed = await engine.place_call(account, CallRequest(prompt="Ask about Friday.", to=HUMAN))
    record = await engine.store.get_interaction(placed.interaction_id)
    assert record is not None
    ended = await engine.end_call(
        record,
        outcome="completed",
        summary="Friday works.",
        transcript=[("agent", "Is Friday OK?"), ("human", "Yes.")],
    )
    assert ended is not None and ended.outcome == "completed"
    assert await engine.end_call(record, outcome="completed", summary="again") is None
    payload = (await engine.webhooks.events(account))[0]["payload"]
    assert payload["summary"] == "Friday works."
    assert payload["transcript"] == [
        {"speaker": "agent", "text": "Is Friday OK?"},
        {"speaker": "human", "text": "Yes."},
    ]


async def test_an_inbound_call_is_pending_until_it_ends(engine: Engine, account: Account) -> None:
    number = (await engine.numbers.available(country="US"))[0].phone_number
    await engine.numbers.reserve_from_pool(account, number)
    record = await engine.open_inbound_call(account.id, from_addr=HUMAN, to_addr=number)
    assert (await engine.interaction_status(account, record.id)).status == "pending"
    await engine.end_call(record, outcome="completed", summary="Left a message about rent.")
    status = await engine.interaction_status(account, record.id)
    assert status.status == "ended" and status.result is not None
    assert status.result.payload.summary == "Left a message about rent."  # type: ignore[union-attr]


async def test_a_file_of_schema_2_gains_the_provider_columns(tmp_path: Path) -> None:
    path = str(tmp_path / "v2.db")
    old = SQLiteStore(path)
    await old.insert_account(AccountRecord("acc", "old", "hash", False, 1.0))
    async with old._tx() as db:  # what a file written by schema version 2 looks like
        await db.execute("DROP INDEX inbound_ref")
        await db.execute("DROP INDEX interactions_provider_ref")
        await db.execute("DROP TABLE provider_state")
        await db.execute("ALTER TABLE inbound DROP COLUMN ref")
        await db.execute("ALTER TABLE interactions DROP COLUMN delivery_status")
        await db.execute("ALTER TABLE interactions DROP COLUMN provider_ref")
        await db.execute("DROP TABLE schema_migrations")
        await db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", ("2",))
    await old.close()

    upgraded = Engine(fast_config(tmp_path, db_path=path))
    await upgraded.start()
    try:
        account = Account(id="acc", name="old")
        sent = await upgraded.send_message(account, sms(follow_up_time=5))
        # "delivered": the sandbox may already have marked it so, and a status only moves on
        await upgraded.store.set_delivery(sent.interaction_id, "delivered", provider_ref="SMabc")
        found = await upgraded.store.interaction_by_provider_ref("SMabc")
        assert found is not None and found.delivery_status == "delivered"
        await upgraded.store.put_provider_state("call", "CA1", {"turns": 2}, 1.0)
        assert await upgraded.store.get_provider_state("call", "CA1") == {"turns": 2}
        text = InboundText(
            channel="sms", from_addr=HUMAN, to_addr=SHARED_SMS_NUMBER, body="y", ref="SM9"
        )
        assert await upgraded.receive_text(text) is not None
        assert await upgraded.receive_text(text) is None
    finally:
        await upgraded.close()


async def test_a_text_carrying_a_nul_is_taken_without_it(engine: Engine, account: Account) -> None:
    """No carrier delivers a NUL, but a provider callback is not refused for one (it would
    only be retried): the character is dropped on both stores (PostgreSQL cannot store
    it), and the text still answers the held send."""
    held = asyncio.create_task(engine.send_message(account, sms("ok?", wait_time=5)))
    await asyncio.sleep(0.05)
    stored = await engine.receive_text(
        InboundText(
            channel="sms", from_addr=HUMAN, to_addr=SHARED_SMS_NUMBER, body="ye\x00s", ref="S\x001"
        )
    )
    assert stored is not None and stored.body == "yes"
    answered = await held
    assert answered.reply == "yes"
    assert [inbound.body for inbound in await engine.webhooks.inbound(account)] == ["yes"]


async def test_two_texts_from_one_phone_at_once_answer_two_open_messages(
    engine: Engine, account: Account
) -> None:
    # Both texts find the latest open message; taken together, the second lost it to the
    # first and became unsolicited while the older message waited on. One at a time per
    # number pair, each answers one.
    first = asyncio.create_task(engine.send_message(account, sms("First?", wait_time=30)))
    await asyncio.sleep(0.05)
    second = asyncio.create_task(engine.send_message(account, sms("Second?", wait_time=30)))
    await asyncio.sleep(0.05)
    texts = [
        InboundText(channel="sms", from_addr=HUMAN, to_addr=SHARED_SMS_NUMBER, body=body)
        for body in ("a", "b")
    ]
    stored = await asyncio.gather(*(engine.receive_text(text) for text in texts))
    assert all(text is not None and text.interaction_id is not None for text in stored)
    answers = await asyncio.wait_for(asyncio.gather(first, second), 5)
    assert sorted(str(answer.reply) for answer in answers) == ["a", "b"]


async def test_a_text_taken_as_its_message_is_stored_answers_the_send_holding_it(
    engine: Engine, account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A text matched by its number pair can answer a message the moment its row is
    # stored, before its send goes on: the send held for it takes that answer (it waited
    # to the end of its waitTime, and then past it, when its hold came after the row).
    store = engine.store
    insert = store.insert_interaction
    taken: list[object] = []

    async def insert_then_reply(*args: Any, **kwargs: Any) -> None:
        await insert(*args, **kwargs)
        text = InboundText(channel="sms", from_addr=HUMAN, to_addr=SHARED_SMS_NUMBER, body="yes")
        taken.append(await engine.receive_text(text))

    monkeypatch.setattr(store, "insert_interaction", insert_then_reply)
    answered = await asyncio.wait_for(engine.send_message(account, sms(wait_time=30)), 5)
    assert answered.responded is True and answered.reply == "yes"
    assert len(taken) == 1 and getattr(taken[0], "interaction_id", None) == answered.interaction_id


async def test_a_carriers_text_is_checked_for_a_retry_beside_its_match(
    engine: Engine, account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seen before (its ref) and what it answers are two reads: made at once, they take
    # one round trip's time, not two in turn.
    held = asyncio.create_task(engine.send_message(account, sms(wait_time=30)))
    await asyncio.sleep(0.05)
    store = engine.store
    spans: dict[str, tuple[float, float]] = {}

    def timed(name: str, delay: float) -> None:
        original = getattr(store, name)

        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.monotonic()
            await asyncio.sleep(delay)
            try:
                return await original(*args, **kwargs)
            finally:
                spans[name] = (started, time.monotonic())

        monkeypatch.setattr(store, name, wrapper)

    timed("inbound_by_ref", 0.2)
    timed("latest_open_message", 0.0)
    text = InboundText(
        channel="sms", from_addr=HUMAN, to_addr=SHARED_SMS_NUMBER, body="yes", ref="SM9"
    )
    stored = await engine.receive_text(text)
    assert stored is not None and (await held).reply == "yes"
    (ref_start, ref_end), (match_start, _) = spans["inbound_by_ref"], spans["latest_open_message"]
    assert ref_start <= match_start < ref_end
    assert await engine.receive_text(text) is None  # and a retry is still taken once
