"""Approvals decided over a channel: an sms or whatsapp reply (YES / NO, a reason may
follow, "YES 4821" naming a request by its short code when one number has several open),
Slack's Approve / Reject buttons (``decide_by_slack``: the approver's click only), and a
call (``_call_decided``: the keys 1 / 2 or the words the callee said).

Approvals plug into the human side by registering (``ApprovalAccess.__init__``): a
matcher, a taker of texts matched to an approval, a source of who waits on a shared
sender, a listener of calls' ends (``Inbound``'s lists); and, for the holding
code, what closes an approval whose windows passed and its 202's body.

Replies are matched as every text is (``Inbound.receive``), within the one account
the text belongs to (the shared sender's rules, ``sends``: on a shared sender, the
account that waits on the person there; approvals are among what waits,
``_approvals_waiting``): a message waiting for a reply from that number takes it first,
as before approvals existed, unless the reply names an open approval's code. A text
that matched nothing else is looked up among the account's open approvals for the
number: read as a decision when it is one and names one request; else one clarifying
text goes back, never a guess.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence

from humanwire.types.approvals import ApprovalRequest, DecisionVia

from ..approvals import texts
from ..delivery.chat import CHAT_CHANNELS
from ..literals import MEDIUM
from ..store.records import ApproverRecord, InboundRecord, InteractionRecord
from .approval_steps import ApprovalSteps
from .human import CallEnd, InboundText
from .sends import Waiting

__all__ = ["ApprovalReplies"]

BUTTON_VIA: dict[str, DecisionVia] = {
    "slack": "slack_button",
    **{c.name: c.button_via for c in CHAT_CHANNELS.values() if c.button_via is not None},
}
"""The channels whose approvers decide by a button, and the ``via`` it records."""


class ApprovalReplies(ApprovalSteps):
    # -- calls --------------------------------------------------------------------------
    async def _call_decided(self, record: InteractionRecord, end: CallEnd) -> None:
        """A ``call`` approver's call ended: what they said or pressed is their decision
        (the human's turns; without a transcript, as the sandbox ends a call, the
        summary), recorded ``via`` who played the callee when no carrier ran the call.
        An answer that is no decision decides nothing (``inbound.call_ended``)."""
        link = record.request.get("approval") if record.kind == "call" else None
        if isinstance(link, dict) and end.outcome == "completed" and record.status == "pending":
            if end.transcript is not None:
                said = [text for speaker, text in end.transcript if speaker == "human"]
            else:
                said = [end.summary]
            answer = texts.call_answer(said)
            rows = await self.store.approvers_of(str(link.get("interactionId")))
            row = next((r for r in rows if r.position == link.get("position")), None)
            if answer is not None and row is not None and row.channel == "call":
                decision, heard = answer
                await self._decide(row, decision, None, end.via or heard)

    # -- buttons (Slack's, the chat channels') ---------------------------------------------
    async def button_approver(self, channel: str, interaction_id: str, to_addr: str) -> int | None:
        """The position of approver ``to_addr`` on ``channel`` (``slack``, a chat channel)
        of an approval request (None: the interaction is no approval, or they are none of
        its approvers there)."""
        if channel not in BUTTON_VIA:
            return None
        for row in await self.store.approvers_of(interaction_id):
            if row.channel == channel and row.to_addr == to_addr:
                return row.position
        return None

    async def decide_by_button(
        self, channel: str, interaction_id: str, position: int, user: str, decision: str
    ) -> tuple[str, str]:
        """A click on an approval's button on ``channel`` by ``user``: ``refused`` (not
        this approver), else what ``_decide`` says; with the text to show (the refusal,
        or the approval's ``response`` once closed)."""
        rows = await self.store.approvers_of(interaction_id)
        row = next((r for r in rows if r.position == position), None)
        via = BUTTON_VIA.get(channel)
        if row is None or via is None or row.channel != channel:
            return "refused", "This is not an approval request of this service."
        if row.to_addr != user:
            who = f"<@{row.to_addr}>" if channel == "slack" else "the approver asked here"
            return "refused", f"Only {who} can decide this approval."
        result = await self._decide(row, decision, None, via)
        text = ""
        if result == "closed":
            record = await self.store.get_interaction(interaction_id)
            if record is not None:
                text = (await self.approval_view(record)).response or ""
        return result, text

    async def _open_approvers(
        self, text: InboundText, account_id: str | None
    ) -> list[ApproverRecord]:
        rows = await self.store.open_approvers_at(text.channel, text.from_addr)
        if account_id is not None:
            rows = [r for r in rows if r.account_id == account_id]
        return rows

    async def _approvals_waiting(
        self, text: InboundText, rows: Sequence[ApproverRecord]
    ) -> list[Waiting]:
        """Every account's approvals asked of the person on that channel, ``rows`` (the
        open approvers there, ``inbound.waiting``: beside the asks waiting on the shared
        sender). An approver's row does not keep the number it was asked from: one asked
        from a reserved number counts too, never a guess."""
        requests: dict[str, ApprovalRequest | None] = {}
        for row in rows:
            if row.interaction_id not in requests:
                record = await self.store.get_interaction(row.interaction_id)
                requests[row.interaction_id] = (
                    None if record is None else ApprovalRequest.model_validate(record.request)
                )
        return [
            Waiting(
                account_id=row.account_id,
                interaction_id=row.interaction_id,
                label=request.title,
                codes=(row.code,) if row.code else (),
                decision=True,
                comments=request.allow_comment,
            )
            for row in rows
            if (request := requests[row.interaction_id]) is not None
        ]

    async def _match_approval(
        self, text: InboundText, account_id: str | None, record: InteractionRecord | None
    ) -> InteractionRecord | None:
        """``inbound.matchers``: a message ``record`` the text matched keeps it unless
        the text names an open approval's code; a text that matched nothing is looked up
        among the open approvals of its sender (the account's, when known)."""
        # Registered for REPLY_CHANNELS only (``ApprovalAccess.__init__``).
        reply = texts.parse_reply(text.body)
        if record is not None and (reply is None or reply.code is None):
            return record
        rows = await self._open_approvers(text, account_id)
        if record is not None:
            assert reply is not None
            rows = [r for r in rows if r.code == reply.code]
        if not rows:
            return record
        # The approval the text is about (or one of them): ``Inbound.take_text`` reads it.
        return await self.store.get_interaction(rows[0].interaction_id)

    async def _take_decision(
        self, account_id: str, text: InboundText, record: InteractionRecord
    ) -> InboundRecord:
        """``inbound.takers["approval"]``: a text matched to an approval is read as a
        decision when it is one and names one request; else one clarifying text goes
        back. Either way it is stored, linked to the approval."""
        rows = await self._open_approvers(text, account_id)
        reply = texts.parse_reply(text.body)
        chosen: ApproverRecord | None = None
        if reply is not None:
            named = [r for r in rows if reply.code is not None and r.code == reply.code]
            if reply.code is None and len({r.interaction_id for r in rows}) == 1:
                named = rows[:1]
            chosen = named[0] if len(named) == 1 else None
        if chosen is not None and reply is not None:
            via = text.via or f"{text.channel}_reply"
            await self._decide(chosen, reply.decision, reply.comment, via)
        elif rows:
            await self._clarify(text, rows)
        inbound = InboundRecord(
            id=secrets.token_hex(16),
            account_id=account_id,
            channel=MEDIUM(text.channel),
            from_addr=text.from_addr,
            to_addr=text.to_addr,
            body=text.body,
            media_urls=list(text.media_urls),
            interaction_id=(chosen.interaction_id if chosen is not None else record.id),
            created_at=time.time(),
            ref=text.ref,
        )
        await self.store.insert_inbound(inbound)
        self.host.runtime.notices.notify(account_id, "inbound", inbound.id)
        return inbound

    async def _clarify(self, text: InboundText, rows: Sequence[ApproverRecord]) -> None:
        titles: list[tuple[str, str | None]] = []
        seen: set[str] = set()
        comments = True  # a reason is offered only when every request listed takes one
        for row in rows:
            if row.interaction_id in seen:
                continue
            seen.add(row.interaction_id)
            record = await self.store.get_interaction(row.interaction_id)
            if record is not None:
                shown = row.code if len(rows) > 1 else None
                titles.append((str(record.request.get("title", "")), shown))
                request = ApprovalRequest.model_validate(record.request)
                comments = comments and request.allow_comment
        await self.host.inbound.text_back(
            text,
            texts.clarify_text(titles, comments),
            account_id=rows[0].account_id,
            interaction_id=rows[0].interaction_id,
        )
