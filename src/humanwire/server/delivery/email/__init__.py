"""Email: out through any SMTP relay, in through the service's own SMTP listener.

The parts the engine calls (docs/going-live/email.md says how to deploy them);
:class:`EmailChannel` puts them together from ``[email]``:

- :func:`compose_email` builds one message of an interaction (text + HTML, the reply
  address ``reply+<token>@<reply_domain>``, a ``Message-ID`` on the reply domain, the
  threading headers of a follow-up); :meth:`SmtpRelay.send` hands it to the relay and
  raises :class:`EmailRelayUnavailable` / :class:`EmailRecipientRefused`.
- :class:`EmailListener` takes replies for known tokens only and hands each to
  ``on_email`` as an :class:`InboundEmail` (the reply text without quotes or
  signature, the subject, the attachments, the threading headers) or a bounce to
  ``on_bounce`` as a :class:`Bounce`.
- :func:`dkim_verifies_async` tells whether a reply's DKIM signature verifies for the
  approver's domain (approvals by email reply).
"""

from .channel import EmailChannel, new_reply_token
from .compose import (
    ComposedEmail,
    Sender,
    compose_email,
    new_message_id,
    parse_sender,
    reply_address,
    token_of,
    token_of_message_id,
)
from .dkim import dkim_verifies, dkim_verifies_async
from .inbound import (
    Attachment,
    Bounce,
    EmailListener,
    InboundEmail,
    OnBounce,
    OnEmail,
    TokenLookup,
    parse_message,
)
from .reply_text import html_to_text, reply_text
from .send import EmailRecipientRefused, EmailRelayUnavailable, SmtpRelay

__all__ = [
    "Attachment",
    "Bounce",
    "ComposedEmail",
    "EmailChannel",
    "EmailListener",
    "EmailRecipientRefused",
    "EmailRelayUnavailable",
    "InboundEmail",
    "OnBounce",
    "OnEmail",
    "Sender",
    "SmtpRelay",
    "TokenLookup",
    "compose_email",
    "dkim_verifies",
    "dkim_verifies_async",
    "html_to_text",
    "new_message_id",
    "new_reply_token",
    "parse_message",
    "parse_sender",
    "reply_address",
    "reply_text",
    "token_of",
    "token_of_message_id",
]
