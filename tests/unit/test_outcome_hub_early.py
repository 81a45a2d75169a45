"""The outcome hub keeps the events nobody waits for (yet): another client's answers on
the same account's stream, or one that overtook its send's 202. Keeping one must not
cost a look at all the others (issue 13: three clients sharing one account's stream each
kept the other two's 20,000 answers and scanned them on every event; the benchmark's
replies slowed to a crawl)."""

from __future__ import annotations

import time

import pytest

from humanwire import _outcomes
from humanwire._outcomes import EARLY_TTL, SyncOutcomeHub


def hub() -> SyncOutcomeHub:
    return SyncOutcomeHub(None, "http://127.0.0.1:1", {"Authorization": "Bearer k"})  # type: ignore[arg-type]


def event(i: int) -> dict[str, object]:
    return {"id": str(i), "eventType": "wait.ended", "interactionId": f"int_{i}"}


def test_keeping_many_unclaimed_events_is_linear() -> None:
    kept = hub()
    started = time.process_time()
    for i in range(40_000):
        kept._dispatch(event(i))
        # A scan of all kept events per event is ~8e8 steps here (minutes); one look
        # at the oldest is well under a second.
        spent = time.process_time() - started
        assert spent < 5.0, f"{spent:.1f} s of CPU to keep {i + 1:,} events"
    assert len(kept._early) == 40_000
    assert kept._take_early("int_123") == event(123)
    assert kept._take_early("int_123") is None


def test_expired_events_go_oldest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(_outcomes.time, "monotonic", lambda: clock[0])
    kept = hub()
    for i in range(1500):
        kept._dispatch(event(i))
        clock[0] += 0.1
    # 150 s later: none has expired yet
    assert len(kept._early) == 1500
    clock[0] += EARLY_TTL - 100.0  # the first 500 (kept in the first 50 s) are past it
    kept._dispatch(event(99_999))
    assert len(kept._early) == 1001
    assert kept._take_early("int_499") is None
    assert kept._take_early("int_500") == event(500)
    assert kept._take_early("int_99999") == event(99_999)
