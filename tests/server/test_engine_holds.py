"""A held request's states as the engine moves it through them (the ``Hold`` alone:
``tests/unit/test_engine_holds.py``). Each test observes the hold between the event that
moves it and the held request waking, where a missed transition shows."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from engine_support import SLACK_HUMAN, account, engine, eventually, fast_config, slack

from humanwire.server.config import SHARED_SLACK_WORKSPACE
from humanwire.server.engine import Account, Engine, Hold, InboundText, SendContext, events
from humanwire.server.engine.holds import Follow, HoldState, Release
from humanwire.server.errors import ServiceUnavailable
from humanwire.types import MessageResponse
from pg_support import drop_schema, new_schema

__all__ = ["account", "engine"]


async def held_send(
    engine: Engine,
    account: Account,
    *,
    gone: asyncio.Future[None] | None = None,
    then: Awaitable[Any] | None = None,
) -> tuple[asyncio.Task[tuple[int, bytes]], Hold]:
    """A slack send held for 30 s as the HTTP layer runs it (its task answers status and
    body), and its hold, handed over by the context's accept future as for a 202.
    ``then``: awaited after the send returned, before its task ends."""
    accepted: asyncio.Future[Hold | None] = asyncio.get_running_loop().create_future()
    context = SendContext(gone=gone, accept=accepted)

    async def send() -> tuple[int, bytes]:
        response = await engine.send_message(account, slack(wait_time=30), context)
        if then is not None:
            await then
        return 200, response.model_dump_json(by_alias=True, exclude_none=True).encode()

    task = asyncio.create_task(send())
    hold = await asyncio.wait_for(accepted, 5)
    assert hold is not None and hold.state is HoldState.HOLDING
    assert engine.held_waits == 1
    return task, hold


async def answer(engine: Engine, account: Account, hold: Hold, body: str = "yes") -> None:
    """The human replies in the send's Slack thread."""
    await engine.receive_text(
        InboundText(
            channel="slack",
            from_addr=SLACK_HUMAN,
            to_addr=SHARED_SLACK_WORKSPACE,
            body=body,
            thread=hold.interaction_id,
        ),
        account.id,
    )


def reply_of(answered: tuple[int, bytes]) -> MessageResponse:
    status, body = answered
    assert status == 200
    return MessageResponse.model_validate_json(body)


async def held_by(engine: Engine, hold: Hold) -> str | None:
    stored = await engine.store.get_interaction(hold.interaction_id)
    assert stored is not None
    return stored.held_by


async def test_a_hold_answered_is_let_go_with_the_end_that_answered_it(
    engine: Engine, account: Account
) -> None:
    task, hold = await held_send(engine, account)
    await answer(engine, account, hold)
    # Before the request wakes: answered, and (replicas) let go in the end's statement,
    # so the request's wake-up has nothing left to let go.
    assert hold.state is HoldState.ANSWERED
    replicated = engine.coordinator.shared is not None
    assert hold.release is (Release.LET_GO if replicated else Release.HELD)
    response = reply_of(await asyncio.wait_for(task, 5))
    assert (response.responded, response.reply) == (True, "yes")
    assert engine.held_waits == 0
    assert await held_by(engine, hold) is None


async def test_a_drained_hold_answers_503_and_leaves_its_interaction_open(
    engine: Engine, account: Account
) -> None:
    task, hold = await held_send(engine, account)
    engine.drain()
    assert hold.state is HoldState.DRAINED
    with pytest.raises(ServiceUnavailable):
        await asyncio.wait_for(task, 5)
    assert engine.held_waits == 0
    stored = await engine.store.get_interaction(hold.interaction_id)
    assert stored is not None and stored.status == "pending"  # the retry re-attaches
    await answer(engine, account, hold)  # too late for the drained request
    assert hold.state is HoldState.DRAINED and await hold.answered is None


async def test_a_hold_whose_requester_left_lets_go_and_takes_no_answer(
    engine: Engine, account: Account
) -> None:
    gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    task, hold = await held_send(engine, account, gone=gone)
    gone.set_result(None)  # the client closed its connection
    with pytest.raises(ServiceUnavailable, match="closed by the client"):
        await asyncio.wait_for(task, 5)
    assert hold.state is HoldState.LEFT
    assert engine.held_waits == 0
    assert await held_by(engine, hold) is None  # an answer now is the webhooks'
    await answer(engine, account, hold)
    assert hold.answered.result() is None  # settled as it left: the answer is not its
    stored = await engine.store.get_interaction(hold.interaction_id)
    assert stored is not None and stored.status == "ended"


@pytest.fixture
def schema_url() -> Iterator[str]:
    schema, url = new_schema("hw_holds")
    yield url
    drop_schema(schema)


@dataclass
class Replicated:
    """Replica A holding a send answered 202 (followed) until ``finish`` is set, and
    replica B, on one database."""

    a: Engine
    b: Engine
    account: Account
    task: asyncio.Task[tuple[int, bytes]]
    hold: Hold
    finish: asyncio.Event


@pytest.fixture
async def replicated(tmp_path: Path, schema_url: str) -> AsyncIterator[Replicated]:
    config = fast_config(tmp_path, db_path=schema_url)
    a, b = Engine(config), Engine(replace(config))
    await a.start()
    await b.start()
    try:
        account, _key = await a.accounts.create("held")
        finish = asyncio.Event()
        task, hold = await held_send(a, account, then=finish.wait())
        a.respond_async.follow_async(hold, task)
        assert await held_by(a, hold) == a.coordinator.id
        yield Replicated(a, b, account, task, hold, finish)
    finally:
        await a.close()
        await b.close()


async def test_a_hold_answered_on_another_replica_gets_its_wait_ended_from_the_end(
    replicated: Replicated,
) -> None:
    """Replica A holds a message send answered 202 (followed); the reply reaches replica
    B, whose end writes the send's ``wait.ended`` and lets go of A's hold in one
    statement: A's hold is WRITTEN and LET_GO from the notice, and A writes nothing."""
    a, hold = replicated.a, replicated.hold
    await answer(replicated.b, replicated.account, hold)
    assert await held_by(a, hold) is None  # let go by B's end
    await eventually(lambda: hold.state is HoldState.ANSWERED, timeout=10)
    assert (hold.release, hold.follow) == (Release.LET_GO, Follow.WRITTEN)
    written = a.store.round_trips  # type: ignore[attr-defined]
    replicated.finish.set()
    answered = reply_of(await asyncio.wait_for(replicated.task, 5))
    assert answered.reply == "yes"
    await asyncio.sleep(0.2)  # whatever A would write after its task, written
    assert a.store.round_trips == written  # type: ignore[attr-defined]
    events = await a.store.outcomes_after(replicated.account.id, 0, 100)
    waits = [body for _seq, body in events if body["eventType"] == "wait.ended"]
    # The answer A's request computed, written by B: what a retry under its key gets.
    assert [body["response"] for body in waits] == [
        answered.model_dump(mode="json", by_alias=True, exclude_none=True)
    ]


async def test_a_hold_answered_from_another_replicas_notice_is_let_go_with_its_wait_ended(
    replicated: Replicated, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replica A holds a send answered 202 (followed); the reply reaches replica B near
    the end of its wait, where A writes its ``wait.ended`` itself. A's hold is answered
    from B's notice while the database still names A as its holder (UNRELEASED), and is
    let go in the transaction of its ``wait.ended``."""
    monkeypatch.setattr(events, "HELD_ANSWER_MARGIN", 3600.0)  # always "near"
    a, hold = replicated.a, replicated.hold
    await answer(replicated.b, replicated.account, hold)
    await eventually(lambda: hold.state is HoldState.ANSWERED, timeout=10)
    await eventually(lambda: a.held_waits == 0)  # the request woke and returned
    # Answered from the notice, its wait over, and still A's in the database: its
    # wait.ended (not yet written) is what lets it go.
    assert hold.release is Release.UNRELEASED
    assert await held_by(a, hold) == a.coordinator.id
    replicated.finish.set()
    assert reply_of(await asyncio.wait_for(replicated.task, 5)).reply == "yes"

    async def wait_ended() -> bool:
        events = await a.store.outcomes_after(replicated.account.id, 0, 100)
        return any(body["eventType"] == "wait.ended" for _seq, body in events)

    await eventually(wait_ended, timeout=5)
    assert hold.release is Release.LET_GO
    assert await held_by(a, hold) is None
