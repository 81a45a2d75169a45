"""Reminders and escalation tiers of approval requests: steps of the engine's schedule
(``approval.remind``, ``approval.escalate``), so they survive a restart and run once
across replicas. A step runs at least once: each reads the request first and does
nothing once it is settled, the approver decided, or the tier was asked already.

What was sent is read from the request's audit entries: each text's entry
(``approval.asked``, ``approval.reminded`` with its number) is written right after the
provider took the text. A step run again, after the replica running it was killed, sends
only what has no entry: nothing is lost, and a text is sent twice only when the kill
fell between the provider taking it and its entry being written (docs/design.md)."""

from __future__ import annotations

import time

from humanwire.types.approvals import ApprovalRequest

from ..approvals import texts
from ..store.records import ApproverRecord, AuditDraft, InteractionRecord, StepRecord
from .approval_records import REPLY_CHANNELS, _actor, _approver, _tally
from .approvals import (
    MAX_REMINDERS,
    REMIND,
    Approvals,
)

__all__ = ["ApprovalSteps"]


class ApprovalSteps(Approvals):
    # -- reminders and escalation (steps of the schedule) -------------------------------
    async def _open_request(
        self, interaction_id: str
    ) -> tuple[InteractionRecord, ApprovalRequest, list[ApproverRecord]] | None:
        """The request when it is still undecided, None otherwise."""
        record = await self.store.get_interaction(interaction_id)
        approval = await self.store.get_approval(interaction_id)
        if record is None or record.status != "pending":
            return None
        if approval is None or approval.settled_at is not None:
            return None
        request = ApprovalRequest.model_validate(record.request)
        return record, request, await self.store.approvers_of(interaction_id)

    async def _remind_step(self, step: StepRecord) -> None:
        """Reminder ``n`` (1 to 3) of one approver: ``n`` is one more than their
        ``approval.reminded`` audit entries, each written right after its text went
        out. So a step run again after its replica died sends again only a reminder
        with no entry (and one found early, its entry written but the next step not
        armed, is armed for its time instead)."""
        interaction_id, _, position = step.key.rpartition(":")
        found = await self._open_request(interaction_id)
        if found is None:
            return
        record, request, rows = found
        row = next((r for r in rows if r.position == int(position)), None)
        if row is None or _tally(request, rows).has_decided(_approver(row)):
            return
        claim = await self.store.get_claim(record.id)
        if claim is not None and claim.person_id != row.person_id:
            return  # someone else is on it: armed again if they release it
        actor = _actor(row)
        mine = [e for e in await self.store.audit_of(record.id) if e.entry.get("actor") == actor]
        if not any(e.entry.get("type") == "approval.asked" for e in mine):
            return  # not asked yet: their tier's step asks them and arms this again
        reminded = [e for e in mine if e.entry.get("type") == "approval.reminded"]
        if len(reminded) >= MAX_REMINDERS:
            return
        if reminded and request.remind_every is not None:
            due = max(e.created_at for e in reminded) + request.remind_every
            if due > time.time():  # the last one's successor was never armed
                await self.schedule.arm(REMIND, step.key, due, account_id=record.account_id)
                return
        number = len(reminded) + 1
        if row.channel == "email":
            text = texts.email_reminder_text(request.title, await self.email_links(row))
            await self._send_to(record, row, text, subject=f"Reminder: {request.title}")
        else:
            url = self.approval_page_url(row.token)
            shown = row.code if await self._shares_number(row) else None
            text = texts.reminder_text(
                request.title,
                url,
                shown,
                replies=row.channel in REPLY_CHANNELS,
                comments=request.allow_comment,
                queue=self.queue_url(row),
                short=row.channel == "sms",
            )
            await self._send_to(record, row, text)
        now = time.time()
        await self._audit(
            record.account_id,
            [AuditDraft(now, "approval.reminded", record.id, actor, {"reminder": number})],
        )
        await self.store.add_approver_reminder(record.id, row.position)
        if number < MAX_REMINDERS and request.remind_every is not None:
            await self.schedule.arm(
                REMIND, step.key, now + request.remind_every, account_id=record.account_id
            )

    async def _escalate_step(self, step: StepRecord) -> None:
        """Asks escalation tier ``n``: the approvers of the tier without an
        ``approval.asked`` entry (all of them, unless a replica died mid-way through
        the tier: then the rest), and one ``approval.escalated`` entry."""
        interaction_id, _, tier = step.key.rpartition(":")
        found = await self._open_request(interaction_id)
        if found is None:
            return
        record, request, rows = found
        entries = [e.entry for e in await self.store.audit_of(record.id)]
        asked = [e.get("actor") for e in entries if e.get("type") == "approval.asked"]
        tier_rows = [r for r in rows if r.tier == int(tier)]
        missing = [r for r in tier_rows if _actor(r) not in asked]
        if not missing:
            return  # escalated already (a step runs at least once)
        escalated = any(
            e.get("type") == "approval.escalated" and (e.get("data") or {}).get("tier") == int(tier)
            for e in entries
        )
        if not escalated:
            data = {"tier": int(tier), "approvers": [_actor(r) for r in tier_rows]}
            await self._audit(
                record.account_id,
                [AuditDraft(time.time(), "approval.escalated", record.id, data=data)],
            )
        await self._ask(record, request, missing)
