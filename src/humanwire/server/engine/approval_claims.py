"""Claims and reassignment of approval requests (the approvers' console): a person asked
a pending request says "I'm on it" (a claim: one per request, shown to the others asked,
whose reminders stop while it holds), releases it, or hands the request to another person
of the account's people directory, who becomes an approver in their place and is asked on
their first confirmed address the way every approver is.

Each is an entry of the request's audit chain (``approval.claimed``,
``approval.claim_released``, ``approval.reassigned``). Reminders are steps of the schedule
(``approval.remind``, keyed by the approver's position): a claim cancels the others', a
release arms them again (the reminder's handler also reads the claim, since a step
cancelled while another replica held it may still run there). Built by the approvals role
(``engine.approvals.claims``); it reaches the rest of the engine through that role's host.
"""

from __future__ import annotations

import dataclasses
import secrets
import time
from typing import Any, get_args

from humanwire.types.approvals import ApprovalRequest, AuditEntryType
from humanwire.types.people import PERSON_ID, PersonChannel

from ..errors import Conflict, InvalidRequest, NotFound
from ..literals import APPROVER_CHANNEL
from ..store.records import (
    ApproverRecord,
    AuditDraft,
    ClaimRecord,
    InteractionRecord,
    PeopleQuery,
    PersonRecord,
    Reassignment,
)
from ._common import Account
from .approval_records import REPLY_CHANNELS, _actor, _approver, _code, _tally
from .approvals import MAX_REMINDERS, REMIND, Approvals

__all__ = ["ApprovalClaims", "ClaimView"]

_PERSON_CHANNELS: tuple[str, ...] = get_args(PersonChannel)
PEOPLE_LIMIT = 200
"""People of the directory the reassign page offers at most."""


@dataclasses.dataclass(frozen=True)
class ClaimView:
    """Who holds a request's claim, as the console shows it."""

    person_id: str
    name: str
    claimed_at: float


@dataclasses.dataclass(frozen=True)
class _Asked:
    """A pending request and the rows of it the signed-in person holds (asked)."""

    record: InteractionRecord
    request: ApprovalRequest
    rows: list[ApproverRecord]
    mine: list[ApproverRecord]


class ApprovalClaims:
    """``engine.approvals.claims``: claim, release, reassign (the module docstring)."""

    def __init__(self, approvals: Approvals) -> None:
        self._approvals = approvals
        self._store = approvals.store
        self._schedule = approvals.schedule
        self._host = approvals.host

    # -- reads --------------------------------------------------------------------------
    async def view(self, account_id: str, interaction_id: str) -> ClaimView | None:
        claim = await self._store.get_claim(interaction_id)
        if claim is None or claim.account_id != account_id:
            return None
        person = await self._store.get_person(account_id, claim.person_id)
        name = person.name if person is not None else claim.person_id
        return ClaimView(claim.person_id, name, claim.claimed_at)

    async def candidates(
        self, account: Account, person_id: str, interaction_id: str
    ) -> list[PersonRecord]:
        """The people of the directory the request may be handed to: not one of its
        approvers already (nor the giver), with a confirmed address it can be asked on."""
        asked = await self._asked(account, person_id, interaction_id)
        taken = {r.person_id for r in asked.rows}
        found = await self._store.list_people(PeopleQuery(account.id, limit=PEOPLE_LIMIT))
        return [
            p
            for p in found
            if p.id not in taken
            and any(
                a.confirmed_at is not None and a.channel in _PERSON_CHANNELS for a in p.addresses
            )
        ]

    async def _asked(self, account: Account, person_id: str, interaction_id: str) -> _Asked:
        """The account's request the person has been asked; ``NotFound`` otherwise (as
        for every console route: another account's, nobody's, not asked of them yet).
        ``Conflict`` once it is settled or ended."""
        record = await self._host.interactions.of(account, interaction_id)
        rows = await self._store.approvers_of(record.id) if record.kind == "approval" else []
        mine = sorted(
            (r for r in rows if r.person_id == person_id and r.asked_at is not None),
            key=lambda r: r.position,
        )
        if not mine:
            raise NotFound(f"no approval {interaction_id!r}", field="interactionId")
        approval = await self._store.get_approval(record.id)
        if record.status != "pending" or approval is None or approval.settled_at is not None:
            raise Conflict("this request is no longer open")
        return _Asked(record, ApprovalRequest.model_validate(record.request), rows, mine)

    # -- claims -------------------------------------------------------------------------
    async def claim(self, account: Account, person_id: str, interaction_id: str) -> ClaimView:
        """Claims the request for the person; ``Conflict`` when someone else holds it
        (their claim stands), the person decided it already, or it is settled. Claiming
        one's own claim again is the claim as it is."""
        asked = await self._asked(account, person_id, interaction_id)
        if _tally(asked.request, asked.rows).has_decided(_approver(asked.mine[0])):
            raise Conflict("you decided this request already: nothing to be on")
        now = time.time()
        held = await self._store.claim_approval(
            ClaimRecord(asked.record.id, account.id, person_id, now)
        )
        if held is None or held.person_id != person_id:
            raise Conflict("someone else is on this request already")
        if held.claimed_at == now:  # this call made it
            await self._entry(asked, "approval.claimed", {"person": person_id})
            for row in asked.rows:
                if row.person_id != person_id:
                    await self._schedule.cancel(REMIND, f"{asked.record.id}:{row.position}")
            self._host.runtime.notices.notify(account.id, "approval", asked.record.id)
        view = await self.view(account.id, asked.record.id)
        assert view is not None
        return view

    async def release(self, account: Account, person_id: str, interaction_id: str) -> None:
        """Releases the person's claim of the request; ``Conflict`` when they hold none.
        The others' reminders are armed again."""
        asked = await self._asked(account, person_id, interaction_id)
        if not await self._store.release_claim(asked.record.id, person_id):
            raise Conflict("you are not on this request")
        await self._entry(asked, "approval.claim_released", {"person": person_id})
        await self._remind_again(asked, exclude=person_id)
        self._host.runtime.notices.notify(account.id, "approval", asked.record.id)

    async def _remind_again(self, asked: _Asked, *, exclude: str | None) -> None:
        """Arms the reminders a claim stopped: each asked, undecided approver (but
        ``exclude``) reached by a text, with reminders left."""
        every = asked.request.remind_every
        if every is None:
            return
        rows = await self._store.approvers_of(asked.record.id)
        tally = _tally(asked.request, rows)
        for row in rows:
            if (
                row.person_id == exclude
                or row.asked_at is None
                or row.channel in ("link", "call")
                or row.reminders >= MAX_REMINDERS
                or tally.has_decided(_approver(row))
            ):
                continue
            await self._schedule.arm(
                REMIND,
                f"{asked.record.id}:{row.position}",
                time.time() + every,
                account_id=asked.record.account_id,
            )

    # -- reassignment -------------------------------------------------------------------
    async def reassign(
        self, account: Account, person_id: str, interaction_id: str, to_person: str
    ) -> PersonRecord:
        """Hands the person's place in the request to ``to_person`` of the account's
        directory, who is asked at once. Refused: oneself or a person asked already
        (400, ``person``: the quorum counts distinct people), another account's or an
        unknown person (404, ``person``), a person with no confirmed address (400), the
        giver's decision made already or the request settled (409)."""
        asked = await self._asked(account, person_id, interaction_id)
        if to_person == person_id:
            raise InvalidRequest("you cannot hand a request to yourself", field="person")
        known = PERSON_ID.fullmatch(to_person) is not None  # nothing else is looked up
        target = await self._store.get_person(account.id, to_person) if known else None
        if target is None:
            raise NotFound(f"no person {to_person!r}", field="person")
        if any(r.person_id == to_person for r in asked.rows):
            raise InvalidRequest(
                f"{target.name} is an approver of this request already", field="person"
            )
        tally = _tally(asked.request, asked.rows)
        if tally.has_decided(_approver(asked.mine[0])):
            raise Conflict("you decided this request already: your decision stands")
        channel, to = await self._host.recipients.address(account, to_person, _PERSON_CHANNELS)
        if len(asked.mine) > 1:
            raise Conflict(
                "you are asked this request on several addresses: it cannot be handed on"
            )
        record, row = asked.record, asked.mine[0]
        code = None
        if channel in REPLY_CHANNELS:
            open_ = await self._store.open_approvers_at(channel, to)
            code = _code({r.code for r in open_ if r.code})
        change = Reassignment(
            interaction_id=record.id,
            position=row.position,
            from_person=person_id,
            person_id=to_person,
            channel=APPROVER_CHANNEL(channel),
            to_addr=to,
            token=secrets.token_urlsafe(24),
            code=code,
            # Still for the person away, unless handed back to them.
            on_behalf_of=None if row.on_behalf_of == to_person else row.on_behalf_of,
        )
        if not await self._store.reassign_approver(change):
            raise Conflict("you decided this request already: your decision stands")
        await self._schedule.cancel(REMIND, f"{record.id}:{row.position}")
        given = {"channel": channel, "to": to, "person": to_person}
        await self._entry(asked, "approval.reassigned", {"from": _actor(row), "to": given})
        if await self._store.release_claim(record.id, person_id):
            await self._entry(asked, "approval.claim_released", {"person": person_id})
            await self._remind_again(asked, exclude=None)
        rows = await self._store.approvers_of(record.id)
        [handed] = [r for r in rows if r.position == row.position]
        await self._approvals._ask(record, asked.request, [handed])
        return target

    # -- the audit chain ----------------------------------------------------------------
    async def _entry(
        self,
        asked: _Asked,
        kind: AuditEntryType,
        data: dict[str, Any],
        *,
        actor: dict[str, Any] | None = None,
    ) -> None:
        who = actor if actor is not None else _actor(asked.mine[0])
        draft = AuditDraft(time.time(), kind, asked.record.id, who, data)
        await self._store.append_audit(asked.record.account_id, [draft])
