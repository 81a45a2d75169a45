"""Approval requests (``POST /approvals``): a decision asked of one or more people about
one action, held like a form (``waitTime``, then the ``followUpTime`` window).

An approval is an interaction of kind ``approval``: its windows, its held request, its
``Idempotency-Key`` and ``Prefer: respond-async`` are those of every send. Beside it the
store keeps the request's state (``ApprovalRecord``: settled how, consumed) and one row per
approver (``ApproverRecord``: their page's token, their sms short code, their decision).
Every way a person decides (their page, an sms / whatsapp reply, a Slack button, a call,
an email's signed link or DKIM-signed reply) ends in ``_decide``; once
the tally settles the request (``server.approvals.tally``), the interaction ends with an
``approval.decided`` event: the held request gets it, else the webhooks. When the windows
close undecided, ``onTimeout`` applies (``deadlines.end``). Every decision (a refused one too:
``_refuse``), reminder, escalation, timeout and consumption is an entry of the account's
hash-chained audit log, whose heads ``audit_checkpoints`` signs.

The other parts: ``approval_steps`` (reminders and escalation tiers, steps of the
schedule), ``approval_replies`` (decisions by sms / whatsapp reply, Slack button, call),
``approval_access`` (the approver's page, email approvers' signed links and replies,
``consume``, the audit log).
"""

from __future__ import annotations

import functools
import logging
import secrets
import time
from collections.abc import Sequence
from typing import Any, get_args

from pydantic import ValidationError

from humanwire.types import InteractionState
from humanwire.types.approvals import (
    Approval,
    ApprovalOutcome,
    ApprovalRequest,
    Approver,
    ApproverChannel,
    ApproverDecision,
    ApproverLink,
    AuditEntryType,
)
from humanwire.types.errors import detail_from_validation_error
from humanwire.types.forms import DEFAULT_FORM_FOLLOW_UP_TIME
from humanwire.types.grants import GrantCreateRequest
from humanwire.types.people import PersonChannel

from ..approvals import texts
from ..approvals.tally import response_text, timeout_text
from ..errors import (
    InvalidRequest,
    NotFound,
    ServiceError,
)
from ..literals import APPROVAL_DECISION
from ..store.records import (
    ApprovalRecord,
    ApproverRecord,
    AuditDraft,
    GrantRecord,
    InteractionRecord,
)
from ..telemetry import log_event
from . import approval_grants
from ._common import Account
from .approval_asks import ApprovalAsks
from .approval_delegations import ApprovalDelegations
from .approval_records import (
    _OUTCOME,
    REPLY_CHANNELS,
    _actor,
    _approver,
    _code,
    _decided,
    _decided_event,
    _tally,
    approval_wire,
)
from .holds import HELD_TO_THE_END, Hold, NewInteraction, SendContext
from .runtime import _metadata, _timestamp

__all__ = ["MAX_REMINDERS", "Approvals", "approval_wire"]

logger = logging.getLogger("humanwire.engine")

MAX_REMINDERS = 3
"""Reminders one approver gets at most."""
REMIND = "approval.remind"
ESCALATE = "approval.escalate"


_PERSON_APPROVER: tuple[str, ...] = get_args(PersonChannel)
"""The channels a person's address may be on: each one an approver can be asked on."""


def _address(approver: Approver) -> tuple[ApproverChannel, str]:
    """An approver's channel and address, once ``_with_people`` gave every one both."""
    assert approver.channel is not None and approver.to is not None
    return approver.channel, approver.to


class Approvals(ApprovalAsks):
    _held_approvals: set[str]
    """Approvals held here: their 202 (respond-async) is the approval, not a send's."""
    delegations: ApprovalDelegations
    """Out-of-office delegations (``approval_delegations``): read as a tier is asked."""

    # -- email approvers' signed links ---------------------------------------------------

    # -- asking -------------------------------------------------------------------------
    async def request_approval(
        self,
        account: Account,
        request: ApprovalRequest,
        context: SendContext = HELD_TO_THE_END,
    ) -> Approval:
        request = await self._with_people(account, request)
        for path, approver in request.all_approvers_with_paths():
            if (
                approver.channel == "email"
                and "email" not in self.host.runtime.carriers.by_channel["email"].senders
            ):
                # No relay configured (the carrier carries no email): refused before
                # anyone is asked, not a failure halfway through the asking.
                raise InvalidRequest(
                    "email approvers need the service's email set up ([email])",
                    field=f"{path}.channel",
                )
        sent = [a for a in request.approvers if a.channel != "link"]
        for approver in sent:
            await self.host.accounts.check_send(account, request.title, _address(approver)[1])
        if not sent:
            await self.host.accounts.require_active(account)
        follow_up = request.follow_up_time
        if follow_up is None and request.wait_time is not None:
            follow_up = DEFAULT_FORM_FOLLOW_UP_TIME
        new = NewInteraction(
            kind="approval",
            channel="approval",
            to=_address(request.approvers[0])[1],
            from_addr="",
            request=request.to_wire(),
            wait_time=request.wait_time,
            follow_up_time=follow_up,
        )
        record, resumed, hold = await self.host.interactions.open(
            account, new, holding=request.wait_time is not None, context=context
        )
        if resumed and await self.store.get_approval(record.id) is None:
            # The first run stopped between the interaction and its approvers: asked now.
            await self._start_approval(account, record, request)
        start = functools.partial(self._start_approval, account, record, request)
        await self.host.interactions.send_out(record, resumed, hold, start)
        if hold is not None:
            self._held_approvals.add(record.id)
            try:
                await self.host.holding.hold(hold)
            finally:
                self._held_approvals.discard(record.id)
        return await self.approval_view(await self.host.interactions.current(record.id))

    async def _with_people(self, account: Account, request: ApprovalRequest) -> ApprovalRequest:
        """The request with every approver's address and person: a ``{person}`` asked on
        their first confirmed address (on its ``channel`` when given), an address given
        with a person checked to be theirs and confirmed, an address of a person of the
        directory given alone marked as theirs. Checked again as a request: the quorum
        counts people, and two addresses of one person are one of them."""
        wire = request.to_wire()
        tiers = [wire["approvers"], *(tier["approvers"] for tier in wire.get("escalation", ()))]
        paths = [p for p, _ in request.all_approvers_with_paths()]
        recipients = self.host.recipients
        for path, approver in zip(paths, (a for tier in tiers for a in tier), strict=True):
            channel, to, person = (
                approver.get("channel"),
                approver.get("to"),
                approver.get("person"),
            )
            try:
                if person is None:
                    if channel != "link":
                        approver["person"] = await recipients.person_at(account, channel, to)
                elif to is None:
                    asked_on = ("sms", "whatsapp") if channel == "call" else _PERSON_APPROVER
                    on = (channel,) if channel not in (None, "call") else asked_on
                    found, approver["to"] = await recipients.address(account, person, on)
                    approver["channel"] = channel or found
                elif not await recipients.confirmed(account, person, channel, to):
                    raise InvalidRequest(f"{to} is not a confirmed address of person {person!r}")
            except ServiceError as exc:
                raise type(exc)(f"{path}: {exc.message}", field=f"{path}.person") from None
            if approver.get("person") is None:
                approver.pop("person", None)
        try:
            return ApprovalRequest.model_validate(wire)
        except ValidationError as exc:  # fewer people than named, once their addresses are
            detail = detail_from_validation_error(exc)
            raise InvalidRequest(detail.message, field=detail.field) from None

    async def _start_approval(
        self, account: Account, record: InteractionRecord, request: ApprovalRequest
    ) -> None:
        tiers = [request.approvers, *(tier.approvers for tier in request.escalation or ())]
        rows: list[ApproverRecord] = []
        codes: set[str] = set()
        for tier, approvers in enumerate(tiers):
            for approver in approvers:
                channel, to = _address(approver)
                code = None
                if channel in REPLY_CHANNELS:
                    # Unlike the codes of the number's other open requests: a reply
                    # naming one is never two requests' answer.
                    open_ = await self.store.open_approvers_at(channel, to)
                    code = _code(codes | {r.code for r in open_ if r.code})
                    codes.add(code)
                rows.append(
                    ApproverRecord(
                        interaction_id=record.id,
                        position=len(rows),
                        account_id=account.id,
                        tier=tier,
                        channel=channel,
                        to_addr=to,
                        person_id=approver.person,
                        token=secrets.token_urlsafe(24),
                        code=code,
                    )
                )
        name = None if request.action is None else request.action.name
        approval = ApprovalRecord(record.id, account.id, request.action_digest, action_name=name)
        await self.store.insert_approval(approval, rows)
        data = {"title": request.title, "actionDigest": request.action_digest}
        await self._audit(
            account.id, [AuditDraft(time.time(), "approval.requested", record.id, data=data)]
        )
        grant = await approval_grants.covering_grant(self.store, account.id, request.action)
        if grant is not None:
            # A standing approval covers the action: approved at once, nobody asked.
            decided = {"decision": "approve", "comment": None, "via": "grant", "grantId": grant.id}
            actor = {"person": grant.granted_by}
            await self._audit(
                account.id,
                [AuditDraft(time.time(), "approval.decision", record.id, actor, decided)],
            )
            log_event(
                logger,
                "approval.decision",
                interaction_id=record.id,
                account_id=account.id,
                decision="approve",
                via="grant",
            )
            await self._settle(record, request, "approved", timed_out=False)
            return
        for index, escalation in enumerate(request.escalation or (), start=1):
            await self.schedule.arm(
                ESCALATE,
                f"{record.id}:{index}",
                record.created_at + escalation.after,
                account_id=account.id,
            )
        await self._ask(record, request, [r for r in rows if r.tier == 0])

    async def _ask(
        self, record: InteractionRecord, request: ApprovalRequest, rows: Sequence[ApproverRecord]
    ) -> None:
        """Asks ``rows`` (a tier): marked asked first (a reply at once finds them), then
        each in turn: its reminders armed, its text sent (``link`` approvers: nothing),
        its ``approval.asked`` audit entry written. That entry is the durable mark that
        the text went out: a tier's step run again after its replica died mid-way asks
        only the approvers without one (``ApprovalSteps._escalate_step``), and reminders
        go only to approvers with one. A person away is asked through their delegation
        (``delegations.route``: the row handed to their delegate first)."""
        rows = await self.delegations.route(record, rows)
        now = time.time()
        await self.store.mark_approvers_asked(record.id, [r.position for r in rows], now)
        for row in rows:
            if request.remind_every is not None and row.channel not in ("link", "call"):
                # Armed before the text goes (nobody is called again): once its entry is
                # written, the approver's reminders are armed whatever happens next.
                await self.schedule.arm(
                    REMIND,
                    f"{record.id}:{row.position}",
                    time.time() + request.remind_every,
                    account_id=record.account_id,
                )
            delivered: bool | None = None
            if row.channel == "email":
                text = texts.email_ask_text(
                    request.title,
                    request.description,
                    None if request.action is None else request.action.model_dump(),
                    await self.email_links(row),
                )
                subject = f"Approval requested: {request.title}"
                delivered = await self._send_to(record, row, text, subject=subject)
            elif row.channel != "link":
                url = self.approval_page_url(row.token)
                shown = row.code if await self._shares_number(row) else None
                text = texts.ask_text(
                    request.title,
                    request.description,
                    None if request.action is None else request.action.model_dump(),
                    url,
                    shown,
                    replies=row.channel in REPLY_CHANNELS,
                    comments=request.allow_comment,
                    queue=self.queue_url(row),
                    short=row.channel == "sms",
                )
                delivered = await self._send_to(record, row, text)
            data: dict[str, Any] = {"tier": row.tier}
            if delivered is False:
                data["delivered"] = False
            draft = AuditDraft(time.time(), "approval.asked", record.id, _actor(row), data)
            await self._audit(record.account_id, [draft])
        # The inbox shows whom a request asks (a request of link approvers sends nothing).
        self.host.runtime.notices.notify(record.account_id, "approval", record.id)

    async def _audit(self, account_id: str, drafts: Sequence[AuditDraft]) -> None:
        await self.store.append_audit(account_id, drafts)

    # -- standing approvals --------------------------------------------------------------
    async def create_grant(
        self, account: Account, body: GrantCreateRequest, person_id: str | None = None
    ) -> dict[str, Any]:
        """Made by the account's key, or by ``person_id`` from the console."""
        await self.host.accounts.require_active(account)
        record = await approval_grants.create_grant(
            self.store, self.config, account, body, person_id
        )
        return approval_grants.grant_wire(record)

    async def live_grants(self, account: Account) -> list[GrantRecord]:
        return await self.store.live_grants(account.id, time.time())

    async def list_grants(self, account: Account) -> dict[str, Any]:
        found = await self.live_grants(account)
        return {"grants": [approval_grants.grant_wire(g) for g in found]}

    async def revoke_grant(
        self, account: Account, grant_id: str, person_id: str | None = None
    ) -> None:
        """Revoked by the account's key, or by ``person_id`` from the console."""
        await approval_grants.revoke_grant(self.store, account, grant_id, person_id)

    async def _grant_decision(self, record: InteractionRecord) -> ApproverDecision | None:
        """The decision of the standing approval that approved ``record``, from its audit
        entry (the one place it is kept)."""
        for entry in await self.store.audit_of(record.id):
            data = entry.entry.get("data") or {}
            if entry.entry.get("type") == "approval.decision" and data.get("via") == "grant":
                actor = entry.entry.get("actor") or {}
                return ApproverDecision(
                    approver=Approver.model_construct(person=actor.get("person")),
                    decision="approve",
                    comment=None,
                    at=_timestamp(entry.created_at),
                    via="grant",
                    grant_id=data.get("grantId"),
                )
        return None

    # -- what the caller reads ----------------------------------------------------------
    async def get_approval(self, account: Account, interaction_id: str) -> Approval:
        record = await self.host.interactions.of(account, interaction_id)
        if record.kind != "approval":
            raise NotFound(f"no approval {interaction_id!r}", field="interactionId")
        return await self.approval_view(record)

    async def _accepted_approval(self, hold: Hold) -> dict[str, Any] | None:
        """``Prefer: respond-async``'s 202 (``accepted_bodies["approval"]``): an
        approval held here as it is now (its links); None: the body of any send."""
        if hold.interaction_id in self._held_approvals:
            current = await self.host.interactions.current(hold.interaction_id)
            return approval_wire(await self.approval_view(current))
        return None

    async def approval_view(
        self, record: InteractionRecord, *, status: InteractionState | None = None
    ) -> Approval:
        """The approval as the wire shows it (``status`` in place of the record's)."""
        approval = await self.store.get_approval(record.id)
        rows = await self.store.approvers_of(record.id)
        request = ApprovalRequest.model_validate(record.request)
        tally = _tally(request, rows)
        outcome = approval.outcome if approval is not None else None
        response: str | None
        if approval is not None and approval.timed_out:
            response = timeout_text(request.on_timeout, tally)
        elif outcome is not None:
            response = response_text(tally)
        else:
            response = (
                f"Waiting for a decision ({len(tally.approvals)} of {tally.rules.quorum} "
                "approvals)."
            )
        decisions = [
            ApproverDecision(
                approver=_approver(r),
                decision=decision,
                comment=r.comment,
                at=_timestamp(r.decided_at or 0.0),
                via=r.via or "page",
                on_behalf_of=r.on_behalf_of,
            )
            for r, decision in _decided(rows)
        ]
        if (
            outcome == "approved"
            and approval is not None
            and not approval.timed_out
            and not decisions
            and (granted := await self._grant_decision(record)) is not None
        ):
            decisions = [granted]
            response = (
                f"Approved by standing approval {granted.grant_id} "
                f"(granted by {granted.approver.person})."
            )
        links = [
            ApproverLink(to=r.to_addr, url=self.approval_page_url(r.token))
            for r in rows
            if r.channel == "link" and r.asked_at is not None
        ]
        return Approval(
            interaction_id=record.id,
            status=status or record.status,
            decision=outcome,
            timed_out=approval is not None and approval.timed_out,
            decisions=decisions,
            action_digest=request.action_digest,
            approval_url=links[0].url if links else None,
            links=links,
            response=response,
            metadata=_metadata(record),
        )

    # -- deciding -----------------------------------------------------------------------
    async def _decide(
        self, row: ApproverRecord, decision: str, comment: str | None, via: str
    ) -> str:
        """One approver's decision, however it came: ``recorded``, ``already`` (this
        person decided before: their first stands) or ``closed`` (settled or ended).
        ``decision`` is ``approve`` or ``reject`` (every caller checked it)."""
        choice = APPROVAL_DECISION(decision)
        approval = await self.store.get_approval(row.interaction_id)
        record = await self.store.get_interaction(row.interaction_id)
        if approval is None or approval.settled_at is not None:
            return await self._refuse(row, choice, via, "closed")
        if record is None or record.status != "pending" or row.asked_at is None:
            return await self._refuse(row, choice, via, "closed")
        request = ApprovalRequest.model_validate(record.request)
        rows = await self.store.approvers_of(record.id)
        if _tally(request, rows).has_decided(_approver(row)):
            return await self._refuse(row, choice, via, "already")
        if not request.allow_comment:
            comment = None
        now = time.time()
        if not await self.store.record_approver_decision(
            record.id, row.position, choice, comment, via, now
        ):
            return await self._refuse(row, choice, via, "already")
        data: dict[str, Any] = {"decision": choice, "comment": comment, "via": via}
        if row.on_behalf_of is not None:
            data["onBehalfOf"] = row.on_behalf_of
        await self._audit(
            record.account_id,
            [AuditDraft(now, "approval.decision", record.id, _actor(row), data)],
        )
        log_event(
            logger,
            "approval.decision",
            interaction_id=record.id,
            account_id=record.account_id,
            decision=choice,
            via=via,
        )
        # The inbox shows the tally as it grows, not only once settled.
        self.host.runtime.notices.notify(record.account_id, "approval", record.id)
        tally = _tally(request, await self.store.approvers_of(record.id))
        if tally.outcome is not None:
            await self._settle(record, request, tally.outcome, timed_out=False)
        return "recorded"

    async def _refuse(self, row: ApproverRecord, choice: str, via: str, result: str) -> str:
        """A decision not counted is an entry too (``approval.decision_refused``): who
        tried what, how, and why it did not count. Returns ``result``."""
        reason = "decided_before" if result == "already" else "closed"
        data = {"decision": choice, "via": via, "reason": reason}
        kind: AuditEntryType = "approval.decision_refused"
        draft = AuditDraft(time.time(), kind, row.interaction_id, _actor(row), data)
        await self._audit(row.account_id, [draft])
        return result

    async def _settle(
        self,
        record: InteractionRecord,
        request: ApprovalRequest,
        outcome: ApprovalOutcome | None,
        *,
        timed_out: bool,
    ) -> bool:
        """Settles the request once (False: it was settled before): its steps cancelled,
        the audit entry, and the interaction ended with its ``approval.decided`` event."""
        now = time.time()
        if not await self.store.settle_approval(record.id, outcome, timed_out, now):
            return False
        for row in await self.store.approvers_of(record.id):
            await self.schedule.cancel(REMIND, f"{record.id}:{row.position}")
        for index in range(1, len(request.escalation or ()) + 1):
            await self.schedule.cancel(ESCALATE, f"{record.id}:{index}")
        kind: AuditEntryType = "approval.timed_out" if timed_out else "approval.decided"
        data = {"decision": outcome, "timedOut": timed_out}
        await self._audit(record.account_id, [AuditDraft(now, kind, record.id, data=data)])
        view = await self.approval_view(record, status="ended")
        event = _decided_event(view)
        await self.host.holding.answer(record, event)
        return True

    async def _time_out(self, record: InteractionRecord) -> bool:
        """An approval's last window closed undecided (``window_closers["approval"]``):
        ``onTimeout`` applies. False when it has no approval's state (the plain end)."""
        approval = await self.store.get_approval(record.id)
        if approval is None:
            return False
        request = ApprovalRequest.model_validate(record.request)
        self.host.deadlines.disarm(record.id)
        timeout = _OUTCOME[request.on_timeout]
        if not await self._settle(record, request, timeout, timed_out=True):
            # Settled before (a decision whose end was not stored): ended now.
            view = await self.approval_view(record, status="ended")
            await self.host.holding.answer(record, _decided_event(view))
        return True
