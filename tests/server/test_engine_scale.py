"""Ten thousand requests held at once in one engine, all answered: the waiting core is a
future and a timer handle per wait, not a task or a polling loop.

On PostgreSQL the same test holds 200: its store commits every write before the method
returns (no group commit per event-loop turn, ``store/postgres.py``), about 10 ms a send
and as much an answer on a shared test machine, so ten thousand would take minutes of the
suite for the same waiting core."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from engine_support import SLACK_HUMAN, fast_config, reply, slack

from humanwire.server.config import SHARED_SLACK_WORKSPACE
from humanwire.server.engine import Engine
from pg_support import store_database


@pytest.mark.parametrize(("store", "count"), [("sqlite", 10_000), ("postgres", 200)])
async def test_ten_thousand_held_waits_are_all_answered(
    tmp_path: Path, store: str, count: int
) -> None:
    with store_database(store, Path(":memory:"), "hw_scale") as db:
        await _held_waits_are_all_answered(Engine(fast_config(tmp_path, db_path=db)), count)


async def _held_waits_are_all_answered(engine: Engine, count: int) -> None:
    await engine.start()
    try:
        account, _ = await engine.accounts.create()
        started = time.perf_counter()
        held = [
            asyncio.ensure_future(engine.send_message(account, slack(f"q{i}", wait_time=600)))
            for i in range(count)
        ]
        await asyncio.sleep(0)
        # Every send has delivered and is holding (a hold is registered before its
        # delivery goes out, and the delivery is stored as it goes).
        while engine.held_waits < count or (
            len(await engine.store.list_deliveries(account.id, limit=count)) < count
        ):
            await asyncio.sleep(0.05)
        assert engine.open_windows == count
        sent = time.perf_counter()
        for delivery in await engine.store.list_deliveries(account.id, limit=count):
            assert delivery.interaction_id is not None
            await engine.sandbox_reply(
                account,
                reply(
                    "slack",
                    SLACK_HUMAN,
                    SHARED_SLACK_WORKSPACE,
                    f"a:{delivery.text}",
                    delivery.interaction_id,
                ),
            )
        # Each answered inside its window (600 s, the longest: how fast is the
        # benchmarks' question, bench_waits.py, not a timed test's).
        responses = await asyncio.gather(*held)
        answered = time.perf_counter()
        assert all(r.responded for r in responses)
        assert [r.reply for r in responses] == [f"a:q{i}" for i in range(count)]
        assert engine.held_waits == 0 and engine.open_windows == 0
        print(
            f"\n{count} held waits: sent in {sent - started:.2f}s, "
            f"all answered {answered - sent:.2f}s later"
        )
    finally:
        await engine.close()
