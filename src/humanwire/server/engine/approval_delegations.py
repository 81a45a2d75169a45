"""Out-of-office delegations (the approvers' console): while Ana is away, from a start
until an end, requests that ask her ask Bob in her place; Bob decides as himself, and
his decision names her (``onBehalfOf``). Built by the approvals role
(``engine.approvals.delegations``), made, listed and ended by the console's
``/console/away`` (the person signed in) and by the account's API (``/people/{personId}/
delegations``) through the same calls, and read where an approver is asked
(``Approvals._ask``: a tier at the start, an escalation tier, a request handed on).

A delegation to someone away too is followed (Ana to Bob, Bob to Cy: Cy is asked), never
round a loop: a delegation that would close one, or to oneself, is refused when it is
made. Where the person it leads to is asked the request already, the person is asked
themselves (one person, one place: the quorum counts distinct people)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import get_args

from humanwire.types.people import DELEGATION_ID, PERSON_ID, Delegation, PersonChannel

from ..errors import InvalidRequest, NotFound, ServiceError
from ..literals import APPROVER_CHANNEL
from ..store.records import (
    ApproverRecord,
    AuditDraft,
    DelegationRecord,
    InteractionRecord,
    Reassignment,
)
from ._common import Account
from .approval_host import ApprovalHost
from .approval_records import REPLY_CHANNELS, _actor, _code
from .runtime import _timestamp

__all__ = [
    "API_FIELDS",
    "CONSOLE_FIELDS",
    "MAX_DELEGATION",
    "ApprovalDelegations",
    "DelegationFields",
    "delegation_wire",
]

MAX_DELEGATION = 90 * 86400.0
"""The longest one delegation lasts (seconds)."""
MAX_HOPS = 10
_PERSON_CHANNELS: tuple[str, ...] = get_args(PersonChannel)


@dataclass(frozen=True)
class DelegationFields:
    """What a refusal of the start or the end names: the field its caller took it in."""

    start: str
    end: str


CONSOLE_FIELDS = DelegationFields(start="from", end="until")
"""The console's form (``/console/away``)."""
API_FIELDS = DelegationFields(start="startsAt", end="endsAt")
"""``POST /people/{personId}/delegations``."""


def delegation_wire(record: DelegationRecord) -> Delegation:
    return Delegation(
        delegation_id=record.id,
        person_id=record.person_id,
        delegate=record.delegate_id,
        starts_at=_timestamp(record.starts_at),
        ends_at=_timestamp(record.ends_at),
        created_at=_timestamp(record.created_at),
    )


def _overlaps(d: DelegationRecord, starts_at: float, ends_at: float) -> bool:
    return d.starts_at < ends_at and starts_at < d.ends_at


def _holding(found: Sequence[DelegationRecord], person_id: str, at: float) -> str | None:
    """Whom ``person_id``'s delegation holding at ``at`` names, if one does."""
    for d in found:
        if d.person_id == person_id and d.starts_at <= at < d.ends_at:
            return d.delegate_id
    return None


class ApprovalDelegations:
    """``engine.approvals.delegations`` (the module docstring)."""

    def __init__(self, host: ApprovalHost) -> None:
        self._host = host
        self._store = host.runtime.store

    # -- made, listed, ended ----------------------------------------------------------------
    async def create(
        self,
        account: Account,
        person_id: str,
        delegate_id: str,
        starts_at: float,
        ends_at: float,
        fields: DelegationFields = CONSOLE_FIELDS,
    ) -> DelegationRecord:
        """Refused (400 or 404 naming the field): a person unknown or another account's
        (404, ``personId``), oneself (``delegate``), an unknown or another account's
        delegate (404, ``delegate``), an end not after the start or past already, a
        period over ``MAX_DELEGATION`` (``fields.end``), a delegation of the person's for
        an overlapping time (``fields.start``), a loop (``delegate``)."""
        now = time.time()
        await self._known(account, person_id)
        if delegate_id == person_id:
            raise InvalidRequest("you cannot delegate to yourself", field="delegate")
        known = PERSON_ID.fullmatch(delegate_id) is not None  # nothing else is looked up
        delegate = await self._store.get_person(account.id, delegate_id) if known else None
        if delegate is None:
            raise NotFound(f"no person {delegate_id!r}", field="delegate")
        if ends_at <= max(starts_at, now):
            raise InvalidRequest("the end must be after the start, and to come", field=fields.end)
        if ends_at - starts_at > MAX_DELEGATION:
            raise InvalidRequest("a delegation lasts 90 days at most", field=fields.end)
        found = [
            d
            for d in await self._store.live_delegations(account.id, now)
            if _overlaps(d, starts_at, ends_at)
        ]
        if any(d.person_id == person_id for d in found):
            raise InvalidRequest("you have a delegation for that time already", field=fields.start)
        # A loop: the delegate's delegations (over that time), followed, come back.
        seen, current = {person_id}, delegate_id
        while True:
            if current in seen:
                raise InvalidRequest(
                    f"{delegate.name} delegates back to you for that time: that is a loop",
                    field="delegate",
                )
            seen.add(current)
            nxt = next((d.delegate_id for d in found if d.person_id == current), None)
            if nxt is None:
                break
            current = nxt
        record = DelegationRecord(
            id=f"dlg_{secrets.token_hex(8)}",
            account_id=account.id,
            person_id=person_id,
            delegate_id=delegate_id,
            starts_at=starts_at,
            ends_at=ends_at,
            created_at=now,
        )
        await self._store.insert_delegation(record)
        return record

    async def _known(self, account: Account, person_id: str) -> None:
        """404 (``personId``) for a person not of the account (the console's is always)."""
        if (
            not PERSON_ID.fullmatch(person_id)
            or await self._store.get_person(account.id, person_id) is None
        ):
            raise NotFound(f"no person {person_id!r}", field="personId")

    async def of(self, account: Account, person_id: str) -> list[DelegationRecord]:
        """The person's delegations that hold or are to come, and those to them, in the
        order they start (404 for a person not of the account)."""
        await self._known(account, person_id)
        found = await self._store.live_delegations(account.id, time.time())
        return [d for d in found if person_id in (d.person_id, d.delegate_id)]

    async def end(self, account: Account, person_id: str, delegation_id: str) -> None:
        """Ends one of the person's own delegations at once (404 for a person not of the
        account, ``personId``; for a delegation not theirs, or ended, ``delegationId``)."""
        await self._known(account, person_id)
        if not DELEGATION_ID.fullmatch(delegation_id) or not await self._store.revoke_delegation(
            account.id, person_id, delegation_id, time.time()
        ):
            raise NotFound(f"no delegation {delegation_id!r} of yours", field="delegationId")

    # -- asking -----------------------------------------------------------------------------
    async def route(
        self, record: InteractionRecord, rows: Sequence[ApproverRecord]
    ) -> list[ApproverRecord]:
        """``rows`` about to be asked, each of a person away handed to whom their
        delegation leads (``approval.delegated`` in the chain); the others as they are."""
        if not any(r.person_id for r in rows):
            return list(rows)
        now = time.time()
        found = await self._store.live_delegations(record.account_id, now)
        if not found:
            return list(rows)
        everyone = {r.person_id for r in await self._store.approvers_of(record.id)}
        routed = []
        for row in rows:
            target = self._follow(found, row.person_id, now)
            if target is None or target in everyone:
                routed.append(row)
                continue
            moved = await self._hand(record, row, target)
            if moved is None:
                routed.append(row)
                continue
            everyone.add(target)
            routed.append(moved)
        return routed

    @staticmethod
    def _follow(found: Sequence[DelegationRecord], person_id: str | None, at: float) -> str | None:
        if person_id is None:
            return None
        seen, current = {person_id}, person_id
        for _ in range(MAX_HOPS):
            nxt = _holding(found, current, at)
            if nxt is None or nxt in seen:
                break
            seen.add(nxt)
            current = nxt
        return None if current == person_id else current

    async def _hand(
        self, record: InteractionRecord, row: ApproverRecord, target: str
    ) -> ApproverRecord | None:
        """The row handed to ``target`` for its person; None when it cannot be (the
        delegate has no confirmed address now: the person is asked themselves)."""
        assert row.person_id is not None
        account = await self._host.accounts.by_id(record.account_id)
        try:
            channel, to = await self._host.recipients.address(account, target, _PERSON_CHANNELS)
        except ServiceError:
            return None
        code = None
        if channel in REPLY_CHANNELS:
            open_ = await self._store.open_approvers_at(channel, to)
            code = _code({r.code for r in open_ if r.code})
        change = Reassignment(
            interaction_id=record.id,
            position=row.position,
            from_person=row.person_id,
            person_id=target,
            channel=APPROVER_CHANNEL(channel),
            to_addr=to,
            token=secrets.token_urlsafe(24),
            code=code,
            on_behalf_of=row.on_behalf_of or row.person_id,
        )
        if not await self._store.reassign_approver(change):
            return None
        given = {"channel": channel, "to": to, "person": target}
        draft = AuditDraft(
            time.time(),
            "approval.delegated",
            record.id,
            _actor(row),
            {"from": _actor(row), "to": given},
        )
        await self._store.append_audit(record.account_id, [draft])
        rows = await self._store.approvers_of(record.id)
        return next(r for r in rows if r.position == row.position)
