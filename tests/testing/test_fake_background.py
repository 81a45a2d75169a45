"""``FakeBackground``, the serving shell every contract fake's background work runs on:
counted from the call (so ``wait_idle`` never misses work not yet started), failures
named in the fake's errors, ``run`` refused on its own loop, nothing without a loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from humanwire.testing._fake_server import FakeBackground


@pytest.fixture
def served() -> Iterator[tuple[FakeBackground, list[str]]]:
    """A background bound to a loop in its own thread, as a fake's lifespan binds it."""
    errors: list[str] = []
    lock = threading.RLock()
    background = FakeBackground("fake Thing", "ThingFakeServer", lock, errors.append)
    bound = threading.Event()
    stop: asyncio.Event | None = None

    async def serve() -> None:
        nonlocal stop
        stop = asyncio.Event()
        async with background.serving():
            bound.set()
            await stop.wait()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert bound.wait(5)
    try:
        yield background, errors
    finally:
        loop = background.loop
        assert loop is not None and stop is not None
        loop.call_soon_threadsafe(stop.set)
        thread.join(5)
    assert background.loop is None


def test_spawned_work_counts_from_the_call_until_it_ends(
    served: tuple[FakeBackground, list[str]],
) -> None:
    background, errors = served
    holding, release = threading.Event(), threading.Event()

    def hold_the_loop() -> None:  # not spawned work: blocks the loop, uncounted
        holding.set()
        release.wait(5)

    async def work() -> None:
        pass

    loop = background.loop
    assert loop is not None
    loop.call_soon_threadsafe(hold_the_loop)
    assert holding.wait(5)
    background.spawn(work(), "work")
    assert not background.idle  # counted though the loop has not started it
    release.set()
    for _ in range(500):
        if background.idle:
            break
        threading.Event().wait(0.01)
    assert background.idle
    assert errors == []


def test_a_failure_of_spawned_work_is_named_in_the_errors(
    served: tuple[FakeBackground, list[str]],
) -> None:
    background, errors = served

    async def broken() -> None:
        raise ValueError("boom")

    background.spawn(broken(), "event delivery")
    for _ in range(500):
        if errors:
            break
        threading.Event().wait(0.01)
    assert errors == ["event delivery: ValueError('boom')"]
    assert background.idle


def test_run_waits_for_a_coroutine_from_another_thread_and_refuses_its_own_loop(
    served: tuple[FakeBackground, list[str]],
) -> None:
    background, _ = served

    async def answer() -> int:
        return 42

    assert background.run(answer()) == 42

    async def inside() -> str:
        try:
            background.run(answer())
        except RuntimeError as exc:
            return str(exc)
        return "ran"

    assert "own loop" in background.run(inside())

    async def twin() -> int:
        return await background.arun(answer())

    assert background.run(twin()) == 42


def test_nothing_runs_while_not_served() -> None:
    errors: list[str] = []
    background = FakeBackground("fake Thing", "ThingFakeServer", threading.RLock(), errors.append)

    async def work() -> None:
        pass

    with pytest.raises(RuntimeError, match=r"fake Thing is not being served \(ThingFakeServer\)"):
        background.spawn(work(), "work")
    with pytest.raises(RuntimeError, match="not being served"):
        background.run(work())
    with pytest.raises(RuntimeError, match="not being served"):
        _ = background.http
    assert background.idle
