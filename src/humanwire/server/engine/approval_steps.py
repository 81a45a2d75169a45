"""Reminders and escalation tiers of approval requests: steps of the engine's schedule
(``approval.remind``, ``approval.escalate``), so they survive a restart and run once
across replicas. A step runs at least once: each reads the request first and does
nothing once it is settled, the approver decided, or the tier was asked already."""

from __future__ import annotations

import time
from typing import Any

from humanwire.types.approvals import ApprovalRequest

from ..approvals import texts
from ..store.base import ApproverRecord, AuditDraft, InteractionRecord, StepRecord
from .approvals import (
    ESCALATE,
    MAX_REMINDERS,
    REMIND,
    REPLY_CHANNELS,
    Approvals,
    _actor,
    _approver,
    _tally,
)

__all__ = ["ApprovalSteps"]


class ApprovalSteps(Approvals):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.schedule.handlers[REMIND] = self._remind_step
        self.schedule.handlers[ESCALATE] = self._escalate_step

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
        interaction_id, _, position = step.key.rpartition(":")
        found = await self._open_request(interaction_id)
        if found is None:
            return
        record, request, rows = found
        row = next((r for r in rows if r.position == int(position)), None)
        if row is None or row.reminders >= MAX_REMINDERS:
            return
        if _tally(request, rows).has_decided(_approver(row)):
            return
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
            )
            await self._send_to(record, row, text)
        await self.store.add_approver_reminder(record.id, row.position)
        now = time.time()
        data = {"reminder": row.reminders + 1}
        await self._audit(
            record.account_id,
            [AuditDraft(now, "approval.reminded", record.id, _actor(row), data)],
        )
        if row.reminders + 1 < MAX_REMINDERS and request.remind_every is not None:
            await self.schedule.arm(
                REMIND, step.key, now + request.remind_every, account_id=record.account_id
            )

    async def _escalate_step(self, step: StepRecord) -> None:
        interaction_id, _, tier = step.key.rpartition(":")
        found = await self._open_request(interaction_id)
        if found is None:
            return
        record, request, rows = found
        asked = [r for r in rows if r.tier == int(tier) and r.asked_at is None]
        if not asked:
            return  # escalated already (a step runs at least once)
        data = {"tier": int(tier), "approvers": [_actor(r) for r in asked]}
        await self._audit(
            record.account_id,
            [AuditDraft(time.time(), "approval.escalated", record.id, data=data)],
        )
        await self._ask(record, request, asked)
