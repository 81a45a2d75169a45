"""The schedule (``humanwire.server.background.schedule``) on both stores: steps armed as
rows, claimed when due in bounded batches, run once by one replica, taken over after a dead
replica's lease, and nothing held in memory that is not due soon."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from engine_support import eventually

from humanwire.server.background.schedule import Schedule
from humanwire.server.store import SQLiteStore, Store
from humanwire.server.store.postgres import PostgresStore
from humanwire.server.store.records import StepRecord
from pg_support import drop_schema, new_schema


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[Store]:
    if request.param == "sqlite":
        lite = SQLiteStore(str(tmp_path / "schedule.db"))
        try:
            yield lite
        finally:
            await lite.close()
        return
    schema, url = new_schema("hw_schedule")
    pg = PostgresStore(url, connect_timeout=5)
    try:
        yield pg
    finally:
        await pg.close()
        drop_schema(schema)


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    schema, url = new_schema("hw_schedule")
    try:
        yield url
    finally:
        drop_schema(schema)


def step(key: str, due_at: float, kind: str = "window", **changes: Any) -> StepRecord:
    return StepRecord(kind=kind, key=key, due_at=due_at, **changes)


# -- the store's part -----------------------------------------------------------------------
async def test_steps_are_claimed_when_due_earliest_first_in_batches(store: Store) -> None:
    await store.put_steps(
        [step(f"s{n}", 1000.0 + n, account_id="acct", payload={"n": n}) for n in range(10)],
        None,
        None,
    )
    await store.put_steps([step("late", 5000.0)], None, None)
    first = await store.claim_steps("r1", due_before=1004.5, now=1000.0, lease=30, limit=3)
    assert [s.key for s in first] == ["s0", "s1", "s2"]
    assert first[0].payload == {"n": 0} and first[0].account_id == "acct"
    rest = await store.claim_steps("r1", due_before=1004.5, now=1000.0, lease=30, limit=10)
    assert [s.key for s in rest] == ["s3", "s4"]  # claimed ones are not claimed again
    # Another replica finds nothing until the claims run out (due time + lease).
    assert await store.claim_steps("r2", due_before=1004.5, now=1020.0, lease=30, limit=10) == []
    taken = await store.claim_steps("r2", due_before=1004.5, now=1031.5, lease=30, limit=10)
    assert [s.key for s in taken] == ["s0", "s1"]
    assert await store.count_steps() == 11


async def test_arming_again_replaces_the_step_and_finishing_the_old_one_keeps_it(
    store: Store,
) -> None:
    await store.put_steps([step("w1", 100.0)], None, None)
    (claimed,) = await store.claim_steps("r1", due_before=200, now=90, lease=30, limit=5)
    await store.put_steps([step("w1", 700.0, payload={"phase": "close"})], None, None)
    assert not await store.finish_step(claimed)  # armed again meanwhile: it stays
    again = await store.get_step("window", "w1")
    assert again is not None and again.due_at == 700.0 and again.payload == {"phase": "close"}
    # Unclaimed by the new arming: due, anyone takes it.
    (later,) = await store.claim_steps("r2", due_before=800, now=95, lease=30, limit=5)
    assert later.due_at == 700.0
    assert await store.finish_step(later)
    assert await store.get_step("window", "w1") is None


async def test_a_failed_step_is_retried_later_unclaimed(store: Store) -> None:
    await store.put_steps([step("w1", 100.0)], "r1", 130.0)
    held = await store.get_step("window", "w1")
    assert held is not None
    await store.retry_step(held, 160.0)
    assert await store.claim_steps("r2", due_before=150, now=101, lease=30, limit=5) == []
    (retried,) = await store.claim_steps("r2", due_before=165, now=101, lease=30, limit=5)
    assert retried.attempts == 1 and retried.due_at == 160.0
    await store.put_steps([step("w1", 900.0)], None, None)  # armed again: attempts start over
    fresh = await store.get_step("window", "w1")
    assert fresh is not None and fresh.attempts == 0


async def test_cancelled_and_released_steps(store: Store) -> None:
    await store.put_steps([step("a", 100.0), step("b", 100.0, kind="reminder")], "r1", 500.0)
    await store.cancel_step("window", "a")
    assert await store.get_step("window", "a") is None
    assert await store.claim_steps("r2", due_before=200, now=101, lease=30, limit=5) == []
    await store.release_steps("r1")
    (b,) = await store.claim_steps("r2", due_before=200, now=101, lease=30, limit=5)
    assert (b.kind, b.key) == ("reminder", "b")


async def test_two_replicas_never_claim_one_step(pg_url: str) -> None:
    one, two = PostgresStore(pg_url, max_size=4), PostgresStore(pg_url, max_size=4)
    try:
        await one.put_steps([step(f"s{n}", 100.0 + n / 1000) for n in range(600)], None, None)

        async def claim(store: PostgresStore, owner: str) -> list[str]:
            got: list[str] = []
            while batch := await store.claim_steps(
                owner, due_before=200, now=100, lease=30, limit=25
            ):
                got += [s.key for s in batch]
            return got

        results = await asyncio.gather(*(claim(s, f"r{i}") for i, s in enumerate([one, two] * 3)))
        claimed = [key for keys in results for key in keys]
        assert len(claimed) == 600 and len(set(claimed)) == 600
        assert sum(1 for keys in results if keys) >= 2, "one claimer took everything"
    finally:
        await one.close()
        await two.close()


# -- the schedule at work -----------------------------------------------------------------
class Ran:
    """What the handlers ran, with when."""

    def __init__(self) -> None:
        self.at: dict[tuple[str, str], list[float]] = {}
        self.failures: Counter[str] = Counter()
        self.fail_first: set[str] = set()

    async def __call__(self, step: StepRecord) -> None:
        if step.key in self.fail_first and self.failures[step.key] == 0:
            self.failures[step.key] += 1
            raise RuntimeError("the provider is down")
        self.at.setdefault((step.kind, step.key), []).append(time.time())

    def keys(self) -> Counter[str]:
        return Counter({key: len(times) for (_, key), times in self.at.items()})


async def wait_for(condition: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def steps_left(store: Store, count: int) -> None:
    """Waits for the store to hold ``count`` steps: a step that ran is removed after its
    handler returns, so a test that saw it run waits for its row to go."""

    async def counted() -> bool:
        return await store.count_steps() == count

    await eventually(counted, timeout=10)


async def test_steps_run_on_time_and_only_the_due_soon_are_held(store: Store) -> None:
    ran = Ran()
    schedule = Schedule(
        store, owner="r1", handlers={"window": ran, "reminder": ran}, horizon=0.6, lease=5
    )
    schedule.start()
    try:
        now = time.time()
        await schedule.arm("window", "soon", now + 0.3)
        await schedule.arm("window", "later", now + 3.0)  # past the horizon: a row, not a timer
        await schedule.arm("window", "far", now + 86_400 * 30)
        await schedule.arm("window", "gone", now + 0.4)
        await schedule.cancel("window", "gone")
        assert schedule.held() == 1  # "soon" only
        await wait_for(lambda: ("window", "later") in ran.at)
        # On time: never early, and (loose, for a loaded machine) not a horizon late.
        assert ran.at[("window", "soon")][0] - (now + 0.3) < 1.0
        assert ran.at[("window", "later")][0] - (now + 3.0) < 1.0
        assert ran.at[("window", "soon")][0] >= now + 0.3 - 0.01
        assert ("window", "gone") not in ran.at
        assert schedule.held() == 0
        await steps_left(store, 1)  # "far", untouched
    finally:
        await schedule.close()


async def test_arming_again_moves_a_held_step(store: Store) -> None:
    ran = Ran()
    schedule = Schedule(store, owner="r1", handlers={"window": ran}, horizon=1.0, lease=5)
    schedule.start()
    try:
        now = time.time()
        await schedule.arm("window", "w", now + 0.2)
        await schedule.arm("window", "w", now + 0.6)
        await wait_for(lambda: ("window", "w") in ran.at)
        await asyncio.sleep(0.2)
        assert len(ran.at[("window", "w")]) == 1
        assert ran.at[("window", "w")][0] >= now + 0.59
    finally:
        await schedule.close()


async def test_a_failing_handler_is_retried(store: Store) -> None:
    ran = Ran()
    ran.fail_first = {"flaky"}
    schedule = Schedule(
        store, owner="r1", handlers={"window": ran}, horizon=0.4, lease=5, retry_delay=0.3
    )
    schedule.start()
    try:
        started = time.time()
        await schedule.arm("window", "flaky", started + 0.1)
        await wait_for(lambda: ("window", "flaky") in ran.at)
        assert ran.failures["flaky"] == 1
        assert ran.at[("window", "flaky")][0] >= started + 0.1 + 0.3 - 0.01
        await wait_for(lambda: schedule.held() == 0)
        await steps_left(store, 0)
    finally:
        await schedule.close()


async def test_a_burst_of_due_steps_runs_every_one_once(store: Store) -> None:
    ran = Ran()
    schedule = Schedule(store, owner="r1", handlers={"window": ran}, horizon=1.0, lease=5, batch=64)
    now = time.time()
    await store.put_steps([step(f"s{n}", now + 0.3) for n in range(1000)], None, None)
    schedule.start()
    try:
        await wait_for(lambda: len(ran.at) == 1000)
        await asyncio.sleep(0.2)
        assert set(ran.keys().values()) == {1}
        assert min(min(times) for times in ran.at.values()) >= now + 0.3 - 0.01
    finally:
        await schedule.close()


async def test_replicas_run_each_step_once_and_take_over_a_dead_ones(pg_url: str) -> None:
    stores = [PostgresStore(pg_url, max_size=3) for _ in range(3)]
    ran = Ran()
    schedules = [
        Schedule(s, owner=f"r{i}", handlers={"window": ran}, horizon=0.6, lease=1.5)
        for i, s in enumerate(stores)
    ]
    try:
        for schedule in schedules:
            schedule.start()
        now = time.time()
        # Armed through one replica, due soon and later: every step runs once somewhere.
        await stores[0].put_steps(
            [step(f"s{n}", now + 0.4 + n / 200) for n in range(300)], None, None
        )
        await wait_for(lambda: len(ran.at) == 300)
        assert set(ran.keys().values()) == {1}
        # A replica dies holding steps (its claims are not given up): another runs them
        # once the lease runs out.
        dying = schedules[0]
        armed_at = time.time()
        await dying.arm("window", "held-by-the-dead", armed_at + 0.3)
        assert dying.held() == 1
        await dying.close(release=False)
        await wait_for(lambda: ("window", "held-by-the-dead") in ran.at, timeout=10)
        late = ran.at[("window", "held-by-the-dead")][0]
        assert late >= armed_at + 0.3 + 1.5 - 0.05  # once its claim ran out, not before
        # A replica that stops gracefully hands its steps over at once.
        leaving = schedules[1]
        await leaving.arm("window", "handed-over", time.time() + 0.4)
        assert leaving.held() == 1
        left_at = time.time()
        await leaving.close()
        await wait_for(lambda: ("window", "handed-over") in ran.at)
        assert ran.at[("window", "handed-over")][0] - left_at < 1.2
        assert ran.keys()["handed-over"] == 1 and ran.keys()["held-by-the-dead"] == 1
    finally:
        for schedule in schedules:
            await schedule.close()
        for s in stores:
            await s.close()


# -- provider jobs (``delivery/jobs.py``) on the schedule ---------------------------------
class CarrierDown(Exception):
    def __init__(self, status: int, retry_after: float | None = None) -> None:
        super().__init__(f"carrier answered {status}")
        self.status = status
        self.retry_after = retry_after


async def test_provider_jobs_are_steps_retried_with_back_off(store: Store) -> None:
    from humanwire.server.delivery.jobs import ProviderJobs

    tries: list[tuple[str, str, float]] = []
    refusals = {"CA1": [503, 503], "PN1": [404]}

    async def carrier(kind: str, sid: str) -> None:
        tries.append((kind, sid, time.time()))
        if refusals.get(sid):
            raise CarrierDown(refusals[sid].pop(0))

    schedule = Schedule(store, owner="r1", handlers={}, horizon=1.0, lease=5)
    jobs = ProviderJobs(
        store,
        scope="carrier-jobs",
        label="Carrier",
        do=carrier,
        error=CarrierDown,
        schedule=schedule,
        first_delay=0.2,
    )
    # A job an older version left in provider_state is moved onto the schedule.
    job = {"kind": "release_number", "sid": "PN1", "attempts": 0}
    await store.put_provider_state("carrier-jobs", "release_number:PN1", job, time.time())
    schedule.start()
    try:
        await jobs.start()
        assert await store.provider_states("carrier-jobs") == []
        started = time.time()
        await jobs.add("hang_up", "CA1")
        await wait_for(lambda: [sid for _, sid, _ in tries].count("CA1") == 3)
        times = [at for _, sid, at in tries if sid == "CA1"]
        # At once, then after 0.2 s, then 0.4 s more (back-off); a 404 is not retried.
        assert times[0] - started < 0.5
        assert times[1] - times[0] >= 0.19 and times[2] - times[1] >= 0.39
        assert [sid for _, sid, _ in tries].count("PN1") == 1
        await wait_for(lambda: schedule.held() == 0)
        await steps_left(store, 0)
    finally:
        await schedule.close()
