"""The account's audit log: hash-chained entries, and the check that finds a broken chain.

An entry's ``hash`` is ``sha256:`` + the hex SHA-256 of its ``prev`` (the hash before it,
``GENESIS`` for the first), a newline, and the entry's canonical JSON (RFC 8785) without
``prev`` and ``hash``: its wire form (camelCase), so anyone holding an export can check it
with nothing but this rule. ``verify`` walks a log in order: an edited entry no longer
hashes to its ``hash``; a removed one leaves a gap in ``sequence`` and a ``prev`` that does
not follow; the last entry removed shows against the head the store keeps apart (or one
an operator noted down: ``humanwire audit verify --head``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["GENESIS", "Break", "entry_hash", "verify"]

GENESIS = "sha256:" + "0" * 64
"""The ``prev`` of an account's first entry."""

_UNHASHED = ("prev", "hash")


def entry_hash(prev: str, entry: Mapping[str, Any]) -> str:
    """The hash of ``entry`` (its wire form; ``prev`` and ``hash`` in it are ignored)
    following ``prev``."""
    import rfc8785

    body = {name: value for name, value in entry.items() if name not in _UNHASHED}
    digest = hashlib.sha256(prev.encode("ascii") + b"\n" + rfc8785.dumps(body))
    return "sha256:" + digest.hexdigest()


@dataclass(frozen=True)
class Break:
    """Where a log stops being the one the service wrote."""

    sequence: int
    """The entry where it shows (for a removed last entry: the one expected next)."""
    problem: str


def verify(
    entries: Iterable[Mapping[str, Any]], head: tuple[int, str] | None = None
) -> list[Break]:
    """Every break in one account's log, read in ``sequence`` order (wire form entries).
    ``head``: the last ``(sequence, hash)`` the log is known to have reached."""
    breaks: list[Break] = []
    expected, prev = 1, GENESIS
    for entry in entries:
        sequence = entry.get("sequence")
        if not isinstance(sequence, int) or isinstance(sequence, bool):
            breaks.append(Break(expected, "an entry without a sequence number"))
            continue
        if sequence != expected:
            missing = (
                f"entry {expected} is missing"
                if sequence == expected + 1
                else f"entries {expected} to {sequence - 1} are missing"
            )
            breaks.append(Break(expected, missing + " (removed?)"))
        if entry.get("prev") != prev:
            breaks.append(Break(sequence, "its prev is not the hash of the entry before it"))
        recomputed = entry_hash(str(entry.get("prev", "")), entry)
        if entry.get("hash") != recomputed:
            breaks.append(Break(sequence, "its content does not match its hash (edited?)"))
        expected, prev = sequence + 1, str(entry.get("hash", ""))
    if head is not None:
        head_sequence, head_hash = head
        if expected - 1 < head_sequence:
            breaks.append(
                Break(
                    expected,
                    f"the log ends at entry {expected - 1} but had reached {head_sequence} "
                    "(entries removed from its end?)",
                )
            )
        elif expected - 1 == head_sequence and prev != head_hash:
            breaks.append(Break(head_sequence, "the last entry is not the one the log reached"))
    return breaks
