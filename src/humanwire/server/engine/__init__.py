"""The engine: accounts, interactions and their windows, reply matching, forms, calls,
numbers, webhooks and channel cards. It knows nothing of HTTP: the routes
(``server/routes``, mounted by ``server/http/app.py``) validate bodies into wire models,
call one method here, and serialize what comes back.
Errors are raised as ``humanwire.server.errors.ServiceError`` subclasses.

``Engine`` (``facade``) is a facade over role objects built on one runtime
(``runtime``), each reached by its name (docs/explanation/architecture.md, "Roles"):

- the account's (``accounts.py``): ``engine.accounts`` (keys, limits, suspension,
  operators' actions), ``engine.sessions`` (the inbox's logins), ``engine.idempotency``
  (``Idempotency-Key``); ``engine.numbers``, ``engine.webhooks``, ``engine.channel_cards``;
- an interaction's life: ``engine.interactions`` and ``engine.delivery`` (opened,
  re-attached, read back; handed to a provider, its delivery status:
  ``interactions.py``), ``engine.holding`` and ``engine.deadlines`` (held requests
  answered, expired, let go; windows closing: ``holding.py``, on the ``Hold`` values and
  the send's context of ``holds.py``), ``engine.events`` (the outcome stream and the held
  answers of respond-async sends: ``events.py``), ``engine.replica_notices`` (what other
  replicas announce, beside the replicas' ``Coordinator``: ``replicas.py``; one
  process's is the runtime's);
- the sends (``sends.py``): ``engine.senders`` (whom a send goes out from, the shared
  sender's codes), ``engine.sends`` (messages, channel-card messages, forms, status);
  ``engine.calls`` (calls and ``/phone/*``), ``engine.respond_async`` (the 202 of a
  respond-async send);
- what comes back: ``engine.inbound`` (texts, replies, calls' ends, from any carrier;
  the providers' inbound port over the roles, ``EngineProviderPort``: ``human.py``),
  ``engine.links`` (forms and reply links reached by their token), ``engine.sandbox``
  (the human played through the API and the inbox);
- ``engine.approvals`` (the ``approval*`` modules): approval requests, their decisions,
  reminders and escalation, ``consume`` and the audit log, reaching the rest through
  ``approval_host`` and registered where it plugs in (``ApprovalAccess.__init__``).

Waiting is event-driven (``holding``, ``deadlines``): no polling loops and no task per wait.

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
)
from .facade import Engine
from .holds import HELD_TO_THE_END, Hold, SendContext
from .human import InboundText
from .runtime import wire_json

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
