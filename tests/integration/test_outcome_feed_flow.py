"""The durable-engine bridge's feed reader (``humanwire._durable_bridge``): one flow
(``FeedFlows``) driven with blocking I/O (``OutcomeFollower``, DBOS) and awaited I/O
(``OutcomeFeed``, Temporal), against the real service over loopback."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from humanwire import AsyncHumanWire, HumanWire
from humanwire._durable_bridge import (
    Deliver,
    FeedFlows,
    FileCursor,
    OutcomeFeed,
    OutcomeFollower,
    ReadPage,
)
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.types import OutcomeEvent

HUMANS = ("+12025550100", "+12025550101")
LIMIT = 60.0


def _two_answered(client: HumanWire, human: ScriptedHuman) -> list[str]:
    """Two texts, each answered; their interaction ids in the order they ended."""
    ended = []
    for number in HUMANS:
        sent = client.messages.sms(message=f"Ship? ({number})", to=number, follow_up_time=60)
        human.reply(f"yes from {number}", to=number, interaction_id=sent.interaction_id).wait(LIMIT)
        ended.append(sent.interaction_id)
    return ended


def test_the_flow_reads_from_now_delivers_in_order_and_saves_after_each(
    humanwire_client: HumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    """Driven by hand: the actions a driver is asked for, in order, and the cursor."""
    cursor = FileCursor(tmp_path / "cursor")
    flows = FeedFlows(cursor, poll_wait=5, retry_delay=0.1)
    actions: list[Any] = []
    saved: list[str | None] = []

    def drive(flow: Any) -> Any:
        result: Any = None
        while True:
            try:
                action = flow.send(result)
            except StopIteration as stop:
                return stop.value
            actions.append(action)
            if isinstance(action, ReadPage):
                kwargs: dict[str, Any] = {"wait": action.wait}
                if action.after is not None:
                    kwargs.update(after=action.after, event_type="interaction.ended")
                result = humanwire_client.interactions.events(**kwargs)
            else:
                assert isinstance(action, Deliver)
                saved.append(cursor.load())
                result = action.event.interaction_id == ended[0]

    ended: list[str] = []
    start = drive(flows.start_cursor())
    assert actions == [ReadPage(None, 0)]  # first start: "now", saved at once
    assert cursor.load() == start
    ended.extend(_two_answered(humanwire_client, human))
    actions.clear()
    taken = 0
    while len([a for a in actions if isinstance(a, Deliver)]) < 2:
        taken += drive(flows.deliver_once(wait=5))
    delivers = [a for a in actions if isinstance(a, Deliver)]
    assert [d.event.interaction_id for d in delivers] == ended
    assert actions[0] == ReadPage(start, 5)  # no ReadPage(None): the cursor was saved
    assert taken == 1  # only the first was taken by a run (deliver said True)
    # Saved after each event: the second was handed over from the first's id on.
    assert saved == [start, delivers[0].event.id]
    assert cursor.load() is not None and cursor.load() != start


class _Flaky:
    """A deliverer that fails the first time it sees the second event."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.failed = False

    def __call__(self, event: OutcomeEvent) -> bool:
        self.seen.append(event.id)
        if len(self.seen) == 2 and not self.failed:
            self.failed = True
            raise RuntimeError("the engine is down")
        return True


def _check_redelivered(flaky: _Flaky) -> None:
    first, second, again = flaky.seen
    assert again == second != first  # the failed event came again, the first did not


def test_the_blocking_driver_retries_a_failed_delivery_and_stops_between_pages(
    humanwire_client: HumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    flaky = _Flaky()
    follower = OutcomeFollower(
        humanwire_client, FileCursor(tmp_path / "cursor"), flaky, poll_wait=1, retry_delay=0.1
    )
    assert isinstance(follower.flows, FeedFlows)
    follower.start_cursor()
    stop = threading.Event()
    thread = threading.Thread(target=follower.run, args=(stop,), daemon=True)
    thread.start()
    _two_answered(humanwire_client, human)
    deadline = time.monotonic() + LIMIT
    while len(flaky.seen) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    stop.set()
    thread.join(LIMIT)
    assert not thread.is_alive()
    _check_redelivered(flaky)


async def test_the_async_driver_retries_a_failed_delivery_and_stops_on_cancel(
    humanwire_service: RunningService,
    humanwire_client: HumanWire,
    humanwire_api_key: str,
    human: ScriptedHuman,
    tmp_path: Path,
) -> None:
    flaky = _Flaky()

    async def deliver(event: OutcomeEvent) -> bool:
        return flaky(event)

    async with AsyncHumanWire(
        base_url=humanwire_service.base_url, api_key=humanwire_api_key
    ) as client:
        feed = OutcomeFeed(
            client, FileCursor(tmp_path / "cursor"), deliver, poll_wait=1, retry_delay=0.1
        )
        assert isinstance(feed.flows, FeedFlows)
        await feed.start_cursor()
        task = asyncio.create_task(feed.run())
        await asyncio.to_thread(_two_answered, humanwire_client, human)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LIMIT
        while len(flaky.seen) < 3 and loop.time() < deadline:
            await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    _check_redelivered(flaky)


def test_a_pause_is_where_a_stopped_blocking_driver_ends(
    humanwire_client: HumanWire, tmp_path: Path
) -> None:
    """A stop set while the flow pauses after a failure ends the run at once."""
    follower = OutcomeFollower(
        humanwire_client.with_options(max_retries=0),
        FileCursor(tmp_path / "cursor"),
        lambda event: True,
        poll_wait=1,
        retry_delay=30,
    )
    follower.flows.cursor.save("not-a-cursor")  # every read fails: the flow pauses 30 s
    stop = threading.Event()
    thread = threading.Thread(target=follower.run, args=(stop,), daemon=True)
    thread.start()
    time.sleep(0.5)
    started = time.monotonic()
    stop.set()
    thread.join(LIMIT)
    assert not thread.is_alive()
    assert time.monotonic() - started < 5
