"""One account's log checked as ``humanwire audit verify`` checks it: its chain
(``audit.verify``), against the head the store keeps, against a head noted down, and,
given public keys, against the service's signed checkpoints. Written once, for the command
line and for the console's audit page (``/console/audit``), so the two never disagree."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .audit import AuditPages, Break, Mark, read_log, verify

if TYPE_CHECKING:
    from .checkpoints import Checkpoint

__all__ = ["CheckedStore", "LogCheck", "check_entries", "check_log"]


class CheckedStore(AuditPages, Protocol):
    """What the check reads of a store (``Store`` is one)."""

    async def audit_checkpoints(self, account_id: str) -> list[Checkpoint]: ...


@dataclass(frozen=True)
class LogCheck:
    """What the check found of one log."""

    entries: int
    """Entries read."""
    last: int
    """The last entry's sequence (0: none)."""
    breaks: list[Break] = field(default_factory=list)
    """In entry order; none when the log is intact."""
    signed: str = ""
    """What the checkpoints say when given keys (``, signed up to entry …``), else ``""``."""
    unreadable: str | None = None
    """Why the log could not be read at all (an entry edited into something not JSON)."""

    @property
    def intact(self) -> bool:
        return not self.breaks and self.unreadable is None


def _key_of(checkpoint: Checkpoint) -> bytes | None:
    from .checkpoints import parse_key

    try:
        return parse_key(checkpoint.public_key)
    except ValueError:
        return None


async def check_log(
    store: CheckedStore,
    account_id: str,
    head: tuple[int, str] | None,
    *,
    noted_head: tuple[int, str] | None = None,
    public_keys: Sequence[str] = (),
    kept: Sequence[Checkpoint] = (),
    others_unchecked: bool = False,
) -> LogCheck:
    """The check of the account's whole log. ``head``: the one the store keeps for it
    (``audit_heads``); ``noted_head``: one an operator noted down; ``public_keys``: the
    keys its checkpoints must be signed with (none: they are not checked); ``kept``:
    checkpoints kept outside the database, checked beside the stored ones;
    ``others_unchecked``: a checkpoint naming another key is left aside rather than a
    break (the service checking with its own key alone: one signed before a key change
    is neither trusted nor an alarm)."""
    try:
        entries = [entry async for entry in read_log(store, account_id)]
    except Exception as exc:  # an entry edited into something no longer JSON
        return LogCheck(0, 0, unreadable=str(exc))
    return await check_entries(
        store,
        account_id,
        entries,
        head,
        noted_head=noted_head,
        public_keys=public_keys,
        kept=kept,
        others_unchecked=others_unchecked,
    )


async def check_entries(
    store: CheckedStore,
    account_id: str,
    entries: Sequence[Mapping[str, Any]],
    head: tuple[int, str] | None,
    *,
    noted_head: tuple[int, str] | None = None,
    public_keys: Sequence[str] = (),
    kept: Sequence[Checkpoint] = (),
    others_unchecked: bool = False,
) -> LogCheck:
    """``check_log`` of entries read already (wire form, in order)."""
    from .checkpoints import checkpoint_marks, parse_key

    last = entries[-1].get("sequence") if entries else 0
    last = last if isinstance(last, int) and not isinstance(last, bool) else 0
    breaks: list[Break] = []
    if head is None and entries:
        breaks.append(
            Break(
                last or 1,
                "the store keeps no head for this log (removed behind the service's back?)",
            )
        )
    marks: list[Mark] = []
    if noted_head is not None:
        marks.append(Mark(*noted_head, by="the noted head"))
    signed = ""
    if public_keys:
        stored = await store.audit_checkpoints(account_id)
        outside = [c for c in kept if c.account_id == account_id]
        checkpoints = dict.fromkeys([*stored, *outside])  # a copy kept of a stored one: once
        if others_unchecked:
            keys = {parse_key(key) for key in public_keys}
            checkpoints = {c: None for c in checkpoints if _key_of(c) in keys}
        signatures, unsigned = checkpoint_marks(checkpoints, public_keys)
        marks += signatures
        breaks += unsigned
        latest = max(signatures, key=lambda mark: mark.sequence, default=None)
        signed = (
            f", signed up to entry {latest.sequence} ({latest.by})"
            if latest is not None
            else ", no checkpoint signs it"
        )
    # Hashing every entry is CPU work (some 40 µs an entry): off the event loop, which a
    # service's other requests share.
    breaks = await asyncio.to_thread(verify, entries, head, marks) + breaks
    return LogCheck(len(entries), last, sorted(breaks, key=lambda found: found.sequence), signed)
