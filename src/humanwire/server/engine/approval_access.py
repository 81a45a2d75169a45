"""What reaches an approval request from outside its flow: an approver's page
(``/a/{token}``: what it shows, the decision it posts), ``consume`` (used once), and the
account's audit log (``GET /audit``), and the account's requests listed (``GET
/approvals``)."""

from __future__ import annotations

import dataclasses
import hmac
import re
import time
from typing import Any

from humanwire.types.approvals import (
    Approval,
    ApprovalList,
    ApprovalRequest,
    ConsumeRequest,
    ConsumeResponse,
)

from ..approvals import texts
from ..errors import AlreadyConsumed, InvalidRequest, NotApproved, NotFound
from ..store.records import ApprovalQuery, ApproverRecord, AuditDraft
from ._common import Account
from .approval_claims import ApprovalClaims, ClaimView
from .approval_delegations import ApprovalDelegations
from .approval_host import ApprovalHost
from .approval_records import REPLY_CHANNELS, _approver, _tally
from .approval_replies import ApprovalReplies
from .approvals import ESCALATE, REMIND
from .human import TextMatcher, WaitingSource

__all__ = ["ApprovalAccess", "ApprovalPage", "InboxApproval", "QueuedApproval"]

MAX_LINKS_BACK = 3
"""Answers with the links one email approver gets at most: an auto-responder that does not
say it is one must not ping-pong with the service."""
_LINKS_BACK = "approvals.links-back"
_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,64}")
"""The shape of an approver's page token (``secrets.token_urlsafe``)."""


@dataclasses.dataclass(frozen=True)
class ApprovalPage:
    """What an approver's page shows."""

    approver: ApproverRecord
    request: ApprovalRequest
    approval: Approval
    open: bool
    """Whether a decision is still taken (pending, and this person has not decided)."""


@dataclasses.dataclass(frozen=True)
class InboxApproval:
    """What the inbox shows of one approval request, and whom it may decide as."""

    request: ApprovalRequest
    approval: Approval
    approvers: tuple[ApproverRecord, ...]
    """Every approver, in the request's order (escalation tiers not asked yet too)."""
    undecided: frozenset[int]
    """Positions of approvers asked whose person has not decided: the inbox may decide
    as them while the request is pending."""
    consumed: bool
    created_at: float


@dataclasses.dataclass(frozen=True)
class QueuedApproval:
    """One pending request of the console's queue: what the person is asked."""

    request: ApprovalRequest
    approval: Approval
    approvers: tuple[ApproverRecord, ...]
    decided: bool
    """The person decided already (from any of their addresses, or the console)."""
    deadline: float | None
    """When the request's last window closes (None: no window)."""
    created_at: float
    claim: ClaimView | None = None
    """Who said "I'm on it" (``approval_claims``), if anyone holds the request."""
    on_behalf_of: str | None = None
    """The name of the person away in whose place the person is asked (a delegation)."""


QUEUE_LIMIT = 200
"""Pending requests the console's queue reads at most."""


class ApprovalAccess(ApprovalReplies):
    """The approvals role: ``engine.approvals``, built with the engine as its ``host``
    (what it reaches of the rest: ``approval_host``); ``Engine`` delegates its public
    approval methods here. Its parts, each a module: ``approval_asks`` (asking an
    approver), ``approvals`` (requests, views, decisions), ``approval_steps`` (reminders,
    escalation), ``approval_replies`` (decisions by reply, button, call), and this one
    (pages, the inbox, email links and replies, ``consume``, the audit log, the list)."""

    def __init__(self, host: ApprovalHost) -> None:
        self.host = host
        self._link_key_bytes = None
        self._held_approvals = set()
        self.delegations = ApprovalDelegations(host)
        self.claims = ApprovalClaims(self)
        """Claims and reassignment from the console (``approval_claims``)."""
        # Where approvals plug into the rest of the engine, each in its registry's order:
        # after the message matcher and the asks, before nothing else.
        # A text matched to a message is offered only when it may name a code; one of
        # another channel never: a plain reply to a message runs no approval code.
        host.inbound.matchers.append(
            TextMatcher(self._match_approval, channels=REPLY_CHANNELS, matched_body=texts.CODE)
        )
        host.inbound.takers["approval"] = self._take_decision
        host.inbound.waiting.append(
            WaitingSource(
                host.runtime.store.open_approvers_at,
                self._approvals_waiting,
                channels=REPLY_CHANNELS,
            )
        )
        host.inbound.call_ended.append(self._call_decided)
        host.deadlines.closers["approval"] = self._time_out
        host.holding.accepted_bodies["approval"] = self._accepted_approval
        host.runtime.schedule.handlers[REMIND] = self._remind_step
        host.runtime.schedule.handlers[ESCALATE] = self._escalate_step

    # -- the page -----------------------------------------------------------------------
    async def _approver_at(self, token: str) -> ApproverRecord:
        """The approver whose page ``token`` is (asked already), else ``NotFound``; a
        token of another shape is not looked up."""
        row = await self.store.approver_by_token(token) if _TOKEN.fullmatch(token) else None
        if row is None or row.asked_at is None:
            raise NotFound("no approval at this link")
        return row

    async def approval_page(self, token: str) -> ApprovalPage:
        row = await self._approver_at(token)
        record = await self.host.interactions.current(row.interaction_id)
        request = ApprovalRequest.model_validate(record.request)
        approval = await self.approval_view(record)
        tally = _tally(request, await self.store.approvers_of(record.id))
        open_ = approval.status == "pending" and not tally.has_decided(_approver(row))
        return ApprovalPage(row, request, approval, open_)

    async def decide_on_page(self, token: str, decision: str, comment: str | None) -> str:
        row = await self._approver_at(token)
        return await self._decide(row, decision, comment, "page")

    # -- the inbox ----------------------------------------------------------------------
    async def inbox_approvals(self, account: Account, limit: int) -> list[InboxApproval]:
        """The account's newest approval requests (open and decided), newest first."""
        found = []
        for record in await self.store.list_interactions(account.id, limit):
            if record.kind != "approval":
                continue
            approval = await self.store.get_approval(record.id)
            rows = tuple(sorted(await self.store.approvers_of(record.id), key=lambda r: r.position))
            request = ApprovalRequest.model_validate(record.request)
            view = await self.approval_view(record)
            tally = _tally(request, rows)
            undecided = frozenset(
                r.position
                for r in rows
                if view.status == "pending"
                and r.asked_at is not None
                and not tally.has_decided(_approver(r))
            )
            consumed = approval is not None and approval.consumed_at is not None
            found.append(InboxApproval(request, view, rows, undecided, consumed, record.created_at))
        return sorted(found, key=lambda a: a.created_at, reverse=True)

    async def decide_in_inbox(
        self,
        account: Account,
        interaction_id: str,
        position: int,
        decision: str,
        comment: str | None,
    ) -> tuple[str, ApproverRecord]:
        """The inbox deciding as one approver of the account's request, the way their
        page would: ``recorded``, ``already`` or ``closed``, and the approver.
        ``LiveChannel`` for an approver a real provider reaches (``sandbox.answers``)."""
        record = await self.host.interactions.of(account, interaction_id)
        if record.kind != "approval":
            raise NotFound(f"no approval {interaction_id!r}", field="interactionId")
        if decision not in ("approve", "reject"):
            raise InvalidRequest("decision must be approve or reject", field="decision")
        row = next(
            (r for r in await self.store.approvers_of(record.id) if r.position == position),
            None,
        )
        if row is None:
            raise InvalidRequest("no such approver of this request", field="approver")
        self.host.sandbox.check_answers(row.channel, field="approver")
        return await self._decide(row, decision, comment, "inbox"), row

    # -- the console ----------------------------------------------------------------------
    async def person_queue(self, account: Account, person_id: str) -> list[QueuedApproval]:
        """The account's pending requests this person has been asked (an escalation tier
        not reached yet is not theirs yet), the first deadline first, then the newest."""
        query = ApprovalQuery(
            account_id=account.id, status="pending", person_id=person_id, limit=QUEUE_LIMIT
        )
        found = []
        for listed in await self.store.list_approvals(query):
            record = listed.interaction
            rows = tuple(sorted(await self.store.approvers_of(record.id), key=lambda r: r.position))
            mine = [r for r in rows if r.person_id == person_id and r.asked_at is not None]
            if not mine:
                continue
            request = ApprovalRequest.model_validate(record.request)
            tally = _tally(request, rows)
            deadline = record.follow_up_deadline or record.wait_deadline
            found.append(
                QueuedApproval(
                    request,
                    await self.approval_view(record),
                    rows,
                    tally.has_decided(_approver(mine[0])),
                    deadline,
                    record.created_at,
                    await self.claims.view(account.id, record.id),
                    await self._name_of(account, mine[0].on_behalf_of),
                )
            )
        return sorted(
            found,
            key=lambda q: (q.deadline is None, q.deadline or 0.0, -q.created_at),
        )

    async def _name_of(self, account: Account, person_id: str | None) -> str | None:
        if person_id is None:
            return None
        person = await self.store.get_person(account.id, person_id)
        return person.name if person is not None else person_id

    async def decide_in_console(
        self,
        account: Account,
        person_id: str,
        interaction_id: str,
        decision: str,
        comment: str | None,
    ) -> str:
        """The person's decision from the console, counted as any of theirs (``via:
        console``): ``recorded``, ``already`` or ``closed``. ``NotFound`` unless the
        request is the account's and the person has been asked it."""
        if decision not in ("approve", "reject"):
            raise InvalidRequest("decision must be approve or reject", field="decision")
        record = await self.host.interactions.of(account, interaction_id)
        rows = await self.store.approvers_of(record.id) if record.kind == "approval" else []
        mine = sorted(
            (r for r in rows if r.person_id == person_id and r.asked_at is not None),
            key=lambda r: r.position,
        )
        if not mine:
            raise NotFound(f"no approval {interaction_id!r}", field="interactionId")
        return await self._decide(mine[0], decision, comment, "console")

    # -- email approvers ------------------------------------------------------------------
    async def email_link(self, token: str, decision: str, signature: str) -> ApprovalPage:
        """The page of the email approver whose signed ``decision`` link this is; else
        ``NotFound`` (another's token, the other decision, an edited signature)."""
        row = await self._approver_at(token)
        if decision not in ("approve", "reject") or row.channel != "email":
            raise NotFound("no approval at this link")
        expected = await self.link_signature(token, decision)
        if not hmac.compare_digest(signature.encode(), expected.encode()):
            raise NotFound("no approval at this link")
        return await self.approval_page(token)

    async def decide_by_email_link(
        self, token: str, decision: str, signature: str, comment: str | None
    ) -> str:
        """A signed link's decision, confirmed: what ``_decide`` says. Single use: the
        approver's first decision stands, a second use finds it (``already``)."""
        page = await self.email_link(token, decision, signature)
        return await self._decide(page.approver, decision, comment, "email_link")

    async def email_approver(self, token: str) -> ApproverRecord | None:
        """The email approver whose reply address ``reply+<token>@…`` is (asked)."""
        row = await self.store.approver_by_token(token) if _TOKEN.fullmatch(token) else None
        if row is None or row.channel != "email" or row.asked_at is None:
            return None
        return row

    async def decide_by_email_reply(self, row: ApproverRecord, body: str, *, signed: bool) -> str:
        """An email approver's reply: a YES / NO decides (``email_reply``) only when
        ``signed`` (its DKIM signature verifies for their domain, from their address);
        any other reply to an open request gets the links back (``unread``)."""
        reply = texts.parse_reply(body)
        if signed and reply is not None:
            return await self._decide(row, reply.decision, reply.comment, "email_reply")
        found = await self._open_request(row.interaction_id)
        if found is not None and await self._may_answer(row):
            record, request, _rows = found
            text = texts.email_unread_text(request.title, await self.email_links(row))
            await self._send_to(record, row, text, subject=f"Re: {request.title}")
        return "unread"

    async def _may_answer(self, row: ApproverRecord) -> bool:
        """Counts one answer with the links to ``row``; False past ``MAX_LINKS_BACK``."""
        state = await self.store.get_provider_state(_LINKS_BACK, row.token)
        sent = int(state["sent"]) if state is not None else 0
        if sent >= MAX_LINKS_BACK:
            return False
        await self.store.put_provider_state(_LINKS_BACK, row.token, {"sent": sent + 1}, time.time())
        return True

    # -- used once ----------------------------------------------------------------------
    async def consume_approval(
        self, account: Account, interaction_id: str, body: ConsumeRequest
    ) -> ConsumeResponse:
        record = await self.host.interactions.of(account, interaction_id)
        approval = await self.store.get_approval(record.id)
        if record.kind != "approval" or approval is None:
            raise NotFound(f"no approval {interaction_id!r}", field="interactionId")
        if body.action_digest != approval.action_digest:
            raise InvalidRequest(
                "actionDigest is not the digest of the action this approval is about",
                field="actionDigest",
            )
        now = time.time()
        if await self.store.consume_approval(record.id, now):
            data = {"actionDigest": approval.action_digest}
            await self._audit(
                account.id, [AuditDraft(now, "approval.consumed", record.id, data=data)]
            )
            self.host.runtime.notices.notify(account.id, "approval", record.id)
            return ConsumeResponse(consumed=True)
        approval = await self.store.get_approval(record.id)
        if approval is None or approval.outcome != "approved":
            raise NotApproved("this approval is not approved (rejected, or still pending)")
        raise AlreadyConsumed("this approval was consumed already")

    # -- listed -------------------------------------------------------------------------
    async def list_approvals(self, query: ApprovalQuery) -> ApprovalList:
        """``GET /approvals``: the account's requests as ``get_approval`` shows each (the
        store keeps to ``query.account_id``: no other account's request is read), and
        the cursor: the last one's ``seq``, else ``after`` (nothing more yet)."""
        found = await self.store.list_approvals(query)
        approvals = [await self.approval_view(listed.interaction) for listed in found]
        cursor = found[-1].seq if found else query.after
        return ApprovalList(approvals=approvals, cursor=str(cursor))

    # -- the audit log ------------------------------------------------------------------
    async def audit_page(self, account: Account, after: int, limit: int) -> dict[str, Any]:
        """``GET /audit``: the entries exactly as stored and hashed (an ``actor`` of null
        stays: the hash covers it), and ``next`` (null at the end of the log)."""
        found = await self.store.audit_after(account.id, after, limit)
        following = str(found[-1].sequence) if len(found) == limit else None
        return {"entries": [record.wire() for record in found], "next": following}
