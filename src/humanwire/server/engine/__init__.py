"""The engine: accounts, interactions and their windows, reply matching, forms, calls,
numbers, webhooks and channel cards. It knows nothing of HTTP: the routes
(``server/routes``, mounted by ``server/http/app.py``) validate bodies into wire models,
call one method here, and serialize what comes back.
Errors are raised as ``humanwire.server.errors.ServiceError`` subclasses.

``Engine`` is a facade over role objects built on one runtime (``runtime``), each
reached by its name, and the parts not yet role objects, still mixed in:

- roles: ``engine.accounts`` (keys, limits, suspension, operators' actions),
  ``engine.sessions`` (the inbox's logins: a token in the cookie, never the key),
  ``engine.idempotency`` (``Idempotency-Key``), ``engine.numbers``, ``engine.webhooks``,
  ``engine.channel_cards`` (the account's resources), ``engine.events`` (the outcome
  stream, appended and read);
- ``core`` and the parts it builds on (``state``, ``deadlines``, ``holding``,
  ``opening``, ``delivering``): start / drain / close, windows closing, held requests
  (``Hold``), interactions opened and delivered, other replicas' notices; what differs
  with replicas is the ``Coordinator``'s (``coordination``);
- ``sends`` and ``calls``: messages, channel-card messages, forms, status; calls and
  ``/phone/*``; ``outcomes``: the 202 of a respond-async send;
- ``human``: what comes back from recipients, through provider-neutral entry points
  that the sandbox API, the inbox and the real providers all use (``shared_senders``:
  whose a reply to a shared sender is);
- ``links``: forms and reply links reached by their token;
- ``approvals``, ``approval_records``, ``approval_asks``, ``approval_steps``,
  ``approval_replies`` and ``approval_access``: a role of its own (``engine.approvals``,
  reaching the rest through ``approval_host``, registered where it plugs in):
  approval requests, their decisions (pages, sms / whatsapp replies, Slack buttons,
  calls), reminders and escalation (schedule steps), ``consume`` and the audit log.

Waiting is event-driven (see ``core``): no polling loops and no task per wait.

Decisions this module makes where the specification is silent:

- A reply or submission handed to a held request is not sent to webhooks (the agent has
  it already); one that arrives when no request holds the interaction (after
  ``waitTime``, or with the request gone) becomes a webhook event carrying the
  ``interactionId``. Either way the interaction's status ``result`` shows it.
- Calls always emit ``call.conversation.ended`` when they end, whatever the outcome;
  a ``/phone/call`` that runs past the limit is ended (outcome ``timeout``) without one.
- An idempotent send stores key → interaction with the interaction, before delivering.
  A retry whose first run never finished (the service restarted while it was held)
  re-attaches to that interaction and delivers nothing; a reply that came while no
  request held it went to the webhooks and is also what the retry returns.
- ``from`` on an sms must be the account's reserved number (or the shared number);
  any other number is ``400 invalid_request`` with field ``from``. whatsapp always goes
  out from the shared whatsapp account, wrapped in the specification's templates.
- A stop (``drain()``, then ``close()``) answers every held request 503 ``unavailable``
  with ``Retry-After`` and ends nothing: the windows stay open in the store, re-armed at
  the next start, so the client's retry with the same key re-attaches.
"""

from __future__ import annotations

from typing import Any

from humanwire.types.approvals import Approval, ApprovalRequest, ConsumeRequest, ConsumeResponse

from ..config import ServiceConfig
from ..store.records import ApproverRecord
from ._common import (
    CALL_NOT_ANSWERED,
    DELETED_MESSAGE,
    SPAM_MESSAGE,
    SUSPENDED_MESSAGE,
    Account,
    Channel,
    FormRequest,
    FormState,
    FormView,
    InboxChange,
    MessageRequest,
    RateCount,
    ReplyLinkState,
    ReplyLinkView,
    wire_json,
)
from .approval_access import ApprovalAccess, ApprovalPage, InboxApproval
from .calls import Calls
from .context import HELD_TO_THE_END, SendContext
from .holds import Hold
from .human import InboundText
from .links import LinkPages
from .outcomes import Outcomes
from .sends import Sends

__all__ = [
    "CALL_NOT_ANSWERED",
    "DELETED_MESSAGE",
    "HELD_TO_THE_END",
    "SPAM_MESSAGE",
    "SUSPENDED_MESSAGE",
    "Account",
    "Channel",
    "Engine",
    "FormRequest",
    "FormState",
    "FormView",
    "Hold",
    "InboundText",
    "InboxChange",
    "MessageRequest",
    "RateCount",
    "ReplyLinkState",
    "ReplyLinkView",
    "SendContext",
    "wire_json",
]


class Engine(Calls, Sends, LinkPages, Outcomes):
    """The service's rules, one instance per service (see the module docstring).

    The roles built on its runtime are attributes (``engine.accounts``,
    ``engine.sessions``, ``engine.idempotency``, ``engine.numbers``, ``engine.webhooks``,
    ``engine.channel_cards``, ``engine.events``, ``engine.approvals``:
    docs/explanation/architecture.md, "Roles"); the parts below are still mixed in, until
    they are role objects too."""

    def __init__(self, config: ServiceConfig, **options: Any) -> None:
        super().__init__(config, **options)
        self.approvals = ApprovalAccess(self)
        """Approval requests and their decisions: a role of its own, which registers
        where it plugs in (``ApprovalAccess.__init__``); its public methods below."""

    # -- approvals (``self.approvals``) -------------------------------------------------
    async def request_approval(
        self, account: Account, request: ApprovalRequest, context: SendContext = HELD_TO_THE_END
    ) -> Approval:
        return await self.approvals.request_approval(account, request, context)

    async def get_approval(self, account: Account, interaction_id: str) -> Approval:
        return await self.approvals.get_approval(account, interaction_id)

    async def consume_approval(
        self, account: Account, interaction_id: str, body: ConsumeRequest
    ) -> ConsumeResponse:
        return await self.approvals.consume_approval(account, interaction_id, body)

    async def audit_page(self, account: Account, after: int, limit: int) -> dict[str, Any]:
        return await self.approvals.audit_page(account, after, limit)

    async def approval_page(self, token: str) -> ApprovalPage:
        return await self.approvals.approval_page(token)

    async def decide_on_page(self, token: str, decision: str, comment: str | None) -> str:
        return await self.approvals.decide_on_page(token, decision, comment)

    async def inbox_approvals(self, account: Account, limit: int) -> list[InboxApproval]:
        return await self.approvals.inbox_approvals(account, limit)

    async def decide_in_inbox(
        self,
        account: Account,
        interaction_id: str,
        position: int,
        decision: str,
        comment: str | None,
    ) -> tuple[str, ApproverRecord]:
        return await self.approvals.decide_in_inbox(
            account, interaction_id, position, decision, comment
        )

    async def slack_approver(self, interaction_id: str, to_addr: str) -> int | None:
        return await self.approvals.slack_approver(interaction_id, to_addr)

    async def decide_by_slack(
        self, interaction_id: str, position: int, user: str, decision: str
    ) -> tuple[str, str]:
        return await self.approvals.decide_by_slack(interaction_id, position, user, decision)

    async def email_link(self, token: str, decision: str, signature: str) -> ApprovalPage:
        return await self.approvals.email_link(token, decision, signature)

    async def decide_by_email_link(
        self, token: str, decision: str, signature: str, comment: str | None
    ) -> str:
        return await self.approvals.decide_by_email_link(token, decision, signature, comment)

    async def email_approver(self, token: str) -> ApproverRecord | None:
        return await self.approvals.email_approver(token)

    async def decide_by_email_reply(self, row: ApproverRecord, body: str, *, signed: bool) -> str:
        return await self.approvals.decide_by_email_reply(row, body, signed=signed)
