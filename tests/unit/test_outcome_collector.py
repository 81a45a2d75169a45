"""``OutcomeCollector``: what a stream reader heard appended, taken only when it follows
the reader's last event without a gap."""

from __future__ import annotations

from humanwire.server.engine.events import OutcomeCollector, OutcomeHandoff


def heard(*handoffs: OutcomeHandoff | None) -> OutcomeCollector:
    collector = OutcomeCollector()
    for handoff in handoffs:
        collector.add(handoff)
    return collector


def event(after: int, id: int) -> OutcomeHandoff:
    return OutcomeHandoff(after, id, {"n": id})


def test_a_chain_from_the_position_is_taken_in_order_whatever_order_it_was_heard() -> None:
    collector = heard(event(7, 9), event(5, 7), event(3, 5))
    assert collector.take(5) == [(7, {"n": 7}), (9, {"n": 9})]  # 5 was sent on already
    assert collector.heard == [] and collector.take(9) is None  # nothing heard: read


def test_a_gap_an_unknown_event_or_too_many_mean_reading() -> None:
    assert heard(event(5, 7), event(8, 9)).take(5) is None  # 8 was not heard
    assert heard(event(4, 7)).take(5) is None  # something between 5 and 7
    assert heard(event(5, 7), None).take(5) is None  # one heard without its event
    too_many = heard(*(event(n, n + 1) for n in range(OutcomeCollector.LIMIT + 1)))
    assert too_many.take(0) is None
    assert heard(event(3, 5)).take(5) == []  # heard, and sent on already
