"""The engine: accounts, interactions and their windows, reply matching, forms, calls,
numbers, webhooks and channel cards. It knows nothing of HTTP: the routes in ``app.py``
validate bodies into wire models, call one method here, and serialize what comes back.
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
  ``approval_replies`` and ``approval_access``:
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
from .accounts import AccountInfo, DeletedAccount
from .approval_access import ApprovalAccess
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


class Engine(ApprovalAccess, Calls, Sends, LinkPages, Outcomes):
    """The service's rules, one instance per service (see the module docstring).

    The roles built on its runtime are attributes (``engine.accounts``,
    ``engine.sessions``, ``engine.idempotency``, ``engine.numbers``, ``engine.webhooks``,
    ``engine.channel_cards``, ``engine.events``: docs/explanation/architecture.md,
    "Roles"); the parts below are still mixed in, until they are role objects too."""

    # -- until ``humanwire accounts`` (cli) and the Slack routes call ``engine.accounts``
    async def create_account(
        self, name: str | None = None, api_key: str | None = None
    ) -> tuple[Account, str]:
        return await self.accounts.create(name, api_key)

    async def authenticate(self, api_key: str) -> Account | None:
        return await self.accounts.authenticate(api_key)

    async def account_list(self) -> list[AccountInfo]:
        return await self.accounts.list_all()

    async def account_info(self, account_id: str) -> AccountInfo:
        return await self.accounts.info(account_id)

    async def suspend_account(self, account_id: str) -> bool:
        return await self.accounts.suspend(account_id)

    async def reinstate_account(self, account_id: str) -> bool:
        return await self.accounts.reinstate(account_id)

    async def rotate_key(self, account_id: str) -> tuple[str, str]:
        return await self.accounts.rotate_key(account_id)

    async def delete_account(self, account_id: str) -> DeletedAccount:
        return await self.accounts.delete(account_id)
