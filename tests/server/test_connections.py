"""What a connection is counted under, and the counts (the per-address bound). Over real
sockets: tests/integration/test_e2e_connections.py."""

from __future__ import annotations

import pytest

from humanwire.server.http.middleware import AddressCounts, address_key


@pytest.mark.parametrize(
    ("peer", "key"),
    [
        (("203.0.113.7", 50123), "203.0.113.7"),
        # One IPv6 client usually has a whole /64: counted together.
        (("2001:db8:1:2:aaaa::1", 443), "2001:db8:1:2::/64"),
        (("2001:db8:1:2:bbbb::9", 443), "2001:db8:1:2::/64"),
        (("2001:db8:1:3::1", 443), "2001:db8:1:3::/64"),
        (("fe80::1%eth0", 443), "fe80::/64"),
        # A dual-stack listener sees IPv4 clients as mapped addresses: as IPv4.
        (("::ffff:203.0.113.7", 50123), "203.0.113.7"),
        # A Unix socket has no IP peer: never bounded.
        (None, None),
        (("", 0), None),
    ],
)
def test_address_key(peer: tuple[str, int] | None, key: str | None) -> None:
    assert address_key(peer) == key


def test_counts_admit_up_to_the_bound_and_release_frees_a_place() -> None:
    counts = AddressCounts(2)
    assert counts.admit("a") and counts.admit("a")
    assert not counts.admit("a")  # refused, and not counted
    assert counts.admit("b")  # another address has its own count
    assert counts.open("a") == 2
    counts.release("a")
    assert counts.admit("a")
    for _ in range(2):
        counts.release("a")
    counts.release("b")
    assert counts.open("a") == counts.open("b") == 0


def test_a_zero_bound_admits_everything() -> None:
    counts = AddressCounts(0)
    assert all(counts.admit("a") for _ in range(10_000))
    assert counts.open("a") == 10_000
