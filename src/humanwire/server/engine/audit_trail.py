"""What the console's audit page (``/console/audit``) reads of an account's log: the
entries one person of it may see, filtered and a page at a time or all of them for an
export, and the check of the account's whole chain, the one ``humanwire audit verify``
runs (``approvals.audit_check``).

A person sees the entries of the approval requests they have been asked (the store keeps
to those: ``Store.audit_seen_by``) and those of the standing approvals they granted or
revoked; nothing of another account, nor of a request they were never asked. A page reads
the log newest first, ``SCAN`` entries at a time, and stops after ``MAX_SCAN`` (a filter
that matches little still costs a bounded read: the page then offers to go on)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from humanwire.types.grants import GRANT_ID

from ..approvals.audit_check import LogCheck, check_log
from ..store.protocol import Store
from ..store.records import AuditQuery, AuditRecord
from ._common import Account

__all__ = ["MAX_EXPORT", "AuditFilter", "AuditSlice", "AuditTrail"]

SCAN = 500
"""Entries read from the store at a time."""
MAX_SCAN = 5000
"""Entries one page reads at most before it stops and offers the next."""
MAX_EXPORT = 100_000
"""Entries one export holds at most (more: the filter must be narrower)."""


@dataclass(frozen=True)
class AuditFilter:
    """What the page is narrowed to; each filter left out when None."""

    interaction_id: str | None = None
    person: str | None = None
    """The actor: a person's id (``per_…``) or one of the addresses it was reached at."""
    event: str | None = None
    action_name: str | None = None
    since: float | None = None
    until: float | None = None


@dataclass(frozen=True)
class AuditSlice:
    """One page: entries in wire form, newest first, and the cursor of the older ones
    (None: there are none)."""

    entries: list[dict[str, Any]]
    older: int | None


def _grant_entry_seen(record: AuditRecord, person_id: str) -> bool:
    data = record.entry.get("data") or {}
    actor = record.entry.get("actor") or {}
    return bool(data.get("grantedBy") == person_id or actor.get("person") == person_id)


def _matches(entry: dict[str, Any], wanted: AuditFilter) -> bool:
    if wanted.event is not None and entry.get("type") != wanted.event:
        return False
    if wanted.person is not None:
        actor = entry.get("actor") or {}
        names = {str(actor.get(key, "")).casefold() for key in ("person", "to")}
        if wanted.person.casefold() not in names - {""}:
            return False
    return True


class AuditTrail:
    """The audit page's reads (see the module docstring)."""

    def __init__(self, store: Store, public_key: str | None = None) -> None:
        self.store = store
        self.public_key = public_key
        """The service's checkpoint key (``[audit] signing_key``'s), if it has one."""

    def _seen(self, record: AuditRecord, person_id: str) -> bool:
        # The store returned the entries of the requests asked of the person, and those
        # of every grant of the account: of a grant, only the person's own are shown.
        if GRANT_ID.fullmatch(record.interaction_id):
            return _grant_entry_seen(record, person_id)
        return True

    def _query(self, account: Account, person_id: str, wanted: AuditFilter) -> AuditQuery:
        return AuditQuery(
            account_id=account.id,
            person_id=person_id,
            limit=SCAN,
            interaction_id=wanted.interaction_id,
            action_name=wanted.action_name,
            since=wanted.since,
            until=wanted.until,
        )

    async def is_theirs(self, account: Account, person_id: str, interaction_id: str) -> bool:
        """Whether the person may see this request's (or grant's) entries: asked it, or
        granted or revoked the grant."""
        if GRANT_ID.fullmatch(interaction_id):
            found = await self.store.audit_of(interaction_id)
            return any(
                r.account_id == account.id and _grant_entry_seen(r, person_id) for r in found
            )
        rows = await self.store.approvers_of(interaction_id)
        return any(
            r.account_id == account.id and r.person_id == person_id and r.asked_at is not None
            for r in rows
        )

    async def page(
        self,
        account: Account,
        person_id: str,
        wanted: AuditFilter,
        before: int | None = None,
        limit: int = 50,
    ) -> AuditSlice:
        """Up to ``limit`` entries below the sequence ``before``, newest first."""
        query = replace(self._query(account, person_id, wanted), before=before)
        found: list[dict[str, Any]] = []
        scanned = 0
        while True:
            batch = await self.store.audit_seen_by(query)
            for record in batch:
                scanned += 1
                entry = record.wire()
                if self._seen(record, person_id) and _matches(entry, wanted):
                    found.append(entry)
                    if len(found) == limit:
                        return AuditSlice(found, record.sequence if record.sequence > 1 else None)
            if len(batch) < SCAN:
                return AuditSlice(found, None)
            query = replace(query, before=batch[-1].sequence)
            if scanned >= MAX_SCAN:
                return AuditSlice(found, batch[-1].sequence)

    async def export(
        self, account: Account, person_id: str, wanted: AuditFilter
    ) -> list[dict[str, Any]] | None:
        """Every entry the filter matches, oldest first (None: more than ``MAX_EXPORT``)."""
        query = self._query(account, person_id, wanted)
        found: list[dict[str, Any]] = []
        while True:
            batch = await self.store.audit_seen_by(query)
            for record in batch:
                entry = record.wire()
                if self._seen(record, person_id) and _matches(entry, wanted):
                    found.append(entry)
                    if len(found) > MAX_EXPORT:
                        return None
            if len(batch) < SCAN:
                found.reverse()
                return found
            query = replace(query, before=batch[-1].sequence)

    async def names(self, account: Account, person_ids: Iterable[str]) -> dict[str, str]:
        """The names of these people of the account (one missing: deleted, or not the
        account's)."""
        names: dict[str, str] = {}
        for person_id in set(person_ids):
            found = await self.store.get_person(account.id, person_id)
            if found is not None:
                names[person_id] = found.name
        return names

    async def check(self, account: Account) -> LogCheck:
        """The account's whole log checked as ``humanwire audit verify --account`` does:
        its chain and the head the store keeps, and, when the service signs checkpoints,
        as with ``--public-key`` and the service's key (a checkpoint of another key, one
        signed before a key change, is left aside)."""
        head = await self.store.audit_head(account.id)
        keys = () if self.public_key is None else (self.public_key,)
        return await check_log(
            self.store, account.id, head, public_keys=keys, others_unchecked=True
        )
