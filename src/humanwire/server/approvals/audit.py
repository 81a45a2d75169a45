"""The account's audit log: hash-chained entries, and the check that finds a broken chain.

An entry's ``hash`` is ``sha256:`` + the hex SHA-256 of its ``prev`` (the hash before it,
``GENESIS`` for the first), a newline, and the entry's canonical JSON (RFC 8785) without
``prev`` and ``hash``: its wire form (camelCase), so anyone holding an export can check it
with nothing but this rule. ``verify`` walks a log in order: an edited entry no longer
hashes to its ``hash``; a removed one leaves a gap in ``sequence`` and a ``prev`` that does
not follow; the log must end exactly at the head the store keeps apart (an entry past it
was appended behind the service's back, the last ones missing were removed). A chain has
no key: whoever writes the database can re-hash it after an edit and move the head. Marks
are what anchors it: heads an operator noted down (``humanwire audit verify --head``) and
the service's signed checkpoints (``approvals.checkpoints``), each a ``(sequence, hash)``
the log must still have.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..store.records import AuditRecord

__all__ = [
    "GENESIS",
    "AuditPages",
    "Break",
    "Mark",
    "audit_time",
    "entry_hash",
    "read_log",
    "verify",
]

GENESIS = "sha256:" + "0" * 64
"""The ``prev`` of an account's first entry."""

_UNHASHED = ("prev", "hash")


def audit_time(at: float) -> str:
    """A time as entries and checkpoints carry it (and hash or sign it): UTC, always to
    the millisecond, with a ``Z``."""
    moment = datetime.fromtimestamp(round(at, 3), timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def entry_hash(prev: str, entry: Mapping[str, Any]) -> str:
    """The hash of ``entry`` (its wire form; ``prev`` and ``hash`` in it are ignored)
    following ``prev``."""
    import rfc8785

    body = {name: value for name, value in entry.items() if name not in _UNHASHED}
    digest = hashlib.sha256(prev.encode("ascii") + b"\n" + rfc8785.dumps(body))
    return "sha256:" + digest.hexdigest()


class AuditPages(Protocol):
    """What reading a log needs of a store (``Store`` is one): its entries a page at a
    time. Named here so the audit chain imports nothing of the store's interface, which
    names the checkpoints of this package."""

    async def audit_after(self, account_id: str, after: int, limit: int) -> list[AuditRecord]: ...


async def read_log(
    store: AuditPages, account_id: str, after: int = 0, page: int = 500
) -> AsyncIterator[dict[str, Any]]:
    """The account's entries after ``after``, in wire form, a page at a time."""
    while True:
        found = await store.audit_after(account_id, after, page)
        for record in found:
            yield record.wire()
        if len(found) < page:
            return
        after = found[-1].sequence


@dataclass(frozen=True)
class Break:
    """Where a log stops being the one the service wrote."""

    sequence: int
    """The entry where it shows (for a removed last entry: the one expected next)."""
    problem: str


@dataclass(frozen=True)
class Mark:
    """A position the log is known to have passed: its entry ``sequence`` hashed ``hash``.
    ``by`` says who knows (``the noted head``, ``the checkpoint of …``)."""

    sequence: int
    hash: str
    by: str


def verify(
    entries: Iterable[Mapping[str, Any]],
    head: tuple[int, str] | None = None,
    marks: Iterable[Mark] = (),
    *,
    after: tuple[int, str] = (0, GENESIS),
) -> list[Break]:
    """Every break in one account's log, read in ``sequence`` order (wire form entries).

    ``head``: the ``(sequence, hash)`` the store keeps apart: the log must end exactly
    there (an entry past it was appended behind the service's back, one short of it
    removed). ``marks``: positions the log passed (a head noted down, signed
    checkpoints): each entry there must still hash as it did, or the log was rewritten
    up to it, however consistently it was re-hashed. ``after``: the ``(sequence, hash)``
    of the entry ``entries`` follow (the start of the log by default)."""
    breaks: list[Break] = []
    expected, prev = after[0] + 1, after[1]
    hashes: dict[int, str] = {}
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
        hashes[sequence] = prev
    last = expected - 1
    if head is not None:
        breaks += _head_breaks(last, prev, head)
    breaks += _mark_breaks(last, hashes, marks)
    return breaks


def _head_breaks(last: int, last_hash: str, head: tuple[int, str]) -> list[Break]:
    head_sequence, head_hash = head
    if last < head_sequence:
        return [
            Break(
                last + 1,
                f"the log ends at entry {last} but had reached {head_sequence} "
                "(entries removed from its end?)",
            )
        ]
    if last > head_sequence:
        return [
            Break(
                head_sequence + 1,
                f"the log goes on past its head, entry {head_sequence} "
                "(appended behind the service's back?)",
            )
        ]
    if last_hash != head_hash:
        return [Break(head_sequence, "the last entry is not the one the log reached")]
    return []


def _mark_breaks(last: int, hashes: Mapping[int, str], marks: Iterable[Mark]) -> list[Break]:
    breaks: list[Break] = []
    intact = 0  # the last marked entry found as it was: what comes before it is too
    for mark in sorted(marks, key=lambda m: m.sequence):
        if mark.sequence > last:
            breaks.append(
                Break(
                    last + 1,
                    f"the log ends at entry {last} but {mark.by} had reached {mark.sequence} "
                    "(entries removed from its end?)",
                )
            )
        elif hashes.get(mark.sequence) != mark.hash:
            changed = (
                "this entry was replaced"
                if intact == mark.sequence - 1
                else f"an entry from {intact + 1} to this one was edited, inserted, "
                "reordered or removed"
            )
            breaks.append(
                Break(
                    mark.sequence,
                    f"it is not the entry {mark.by} had: {changed} and the chain re-hashed",
                )
            )
        else:
            intact = max(intact, mark.sequence)
    return breaks
