"""Composing an outgoing email: multipart text + HTML, the reply address of its
interaction, and the threading headers mail clients group a conversation by.

Every message of one interaction carries ``Reply-To: reply+<token>@<reply_domain>`` (the
listener matches a reply by it) and a ``Message-ID`` on the reply domain; a follow-up
names the earlier ones in ``In-Reply-To`` / ``References`` so Gmail, Outlook and Apple
Mail show one thread. The HTML part is the text escaped (never markup from the agent),
with http(s) links made clickable.
"""

from __future__ import annotations

import html
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from email.headerregistry import Address
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import format_datetime, getaddresses, parseaddr

__all__ = [
    "REPLY_PREFIX",
    "ComposedEmail",
    "Sender",
    "compose_email",
    "html_body",
    "new_message_id",
    "parse_sender",
    "reply_address",
    "token_of",
    "token_of_message_id",
]

REPLY_PREFIX = "reply+"
_TOKEN = re.compile(r"[A-Za-z0-9_-]{8,64}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
_URL = re.compile(r"https?://[^\s<>\"']+")
MAX_SUBJECT = 200


@dataclass(frozen=True)
class Sender:
    """Who a message is from: ``name`` is the display name mail clients show."""

    address: str
    name: str = ""

    def header(self) -> Address:
        username, _, domain = self.address.rpartition("@")
        return Address(display_name=_one_line(self.name), username=username, domain=domain)


def parse_sender(value: str) -> Sender:
    """``Acme Agent <agent@acme.example>`` or ``agent@acme.example`` as a :class:`Sender`;
    raises ``ValueError`` when it is not one address."""
    from email_validator import EmailNotValidError, validate_email

    if len(getaddresses([value])) != 1:
        raise ValueError("must be one address, such as Acme Agent <agent@acme.example>")
    name, address = parseaddr(value)
    if not address:
        raise ValueError("must be an address, such as Acme Agent <agent@acme.example>")
    try:
        normalized = validate_email(address, check_deliverability=False).normalized
    except EmailNotValidError as exc:
        raise ValueError(f"must be an email address ({exc})") from None
    return Sender(address=normalized, name=_one_line(name))


def reply_address(token: str, reply_domain: str) -> str:
    """``reply+<token>@<reply_domain>``: where replies to one interaction go."""
    if not _TOKEN.fullmatch(token):
        raise ValueError("a reply token is 8 to 64 letters, digits, '-' or '_'")
    return f"{REPLY_PREFIX}{token}@{reply_domain.lower()}"


def token_of(address: str, reply_domain: str) -> str | None:
    """The token of ``reply+<token>@<reply_domain>`` (the domain without case, the token
    as written), or None for any other address."""
    local, at, domain = address.strip().strip("<>").rpartition("@")
    if not at or domain.lower().rstrip(".") != reply_domain.lower():
        return None
    if local[: len(REPLY_PREFIX)].lower() != REPLY_PREFIX:
        return None
    token = local[len(REPLY_PREFIX) :]
    return token if _TOKEN.fullmatch(token) else None


def new_message_id(token: str, reply_domain: str) -> str:
    """A fresh ``<token.nonce@reply_domain>``: unique, on the domain replies come back to,
    and naming its interaction (a bounce quoting only the headers still finds it)."""
    reply_address(token, reply_domain)  # checks the token
    return f"<{token}.{secrets.token_hex(8)}@{reply_domain.lower()}>"


def token_of_message_id(message_id: str, reply_domain: str) -> str | None:
    """The token inside one of :func:`new_message_id`'s ids, or None."""
    inner = message_id.strip().strip("<>")
    local, at, domain = inner.rpartition("@")
    if not at or domain.lower() != reply_domain.lower():
        return None
    token, dot, _nonce = local.rpartition(".")
    return token if dot and _TOKEN.fullmatch(token) else None


def _one_line(text: str) -> str:
    """A header value on one line: control characters (CR, LF: header injection) become
    spaces."""
    return " ".join(_CONTROL.sub(" ", text).split())


def html_body(text: str) -> str:
    """The text as a small HTML document: escaped, line breaks kept, http(s) links
    clickable (their text and target escaped too)."""
    parts: list[str] = []
    last = 0
    for match in _URL.finditer(text):
        url = match.group(0).rstrip(".,;:!?)")
        end = match.start() + len(url)
        parts.append(html.escape(text[last : match.start()]))
        parts.append(f'<a href="{html.escape(url, quote=True)}">{html.escape(url)}</a>')
        last = end
    parts.append(html.escape(text[last:]))
    body = "".join(parts).replace("\r\n", "\n").replace("\n", "<br>\n")
    return (
        '<!doctype html>\n<html><head><meta charset="utf-8"></head>\n'
        f'<body><div style="font-family: sans-serif; white-space: normal">{body}</div></body>'
        "</html>\n"
    )


@dataclass(frozen=True)
class ComposedEmail:
    """A message ready for the relay: ``message_id`` is what replies and bounces name;
    ``envelope_from`` the return path (bounces come back to the reply address)."""

    message: EmailMessage
    message_id: str
    envelope_from: str
    to: str


def compose_email(
    *,
    sender: Sender,
    to: str,
    subject: str,
    text: str,
    token: str,
    reply_domain: str,
    thread: Sequence[str] = (),
    now: datetime | None = None,
) -> ComposedEmail:
    """One message of the interaction ``token``.

    ``thread`` is the ``Message-ID`` s sent before in this interaction, oldest first: the
    last becomes ``In-Reply-To``, all of them ``References``, so a follow-up (a reminder,
    the answer to a reply) lands in the same conversation. The return path is the reply
    address, so a bounce reaches the listener and names the interaction."""
    replies_to = reply_address(token, reply_domain)
    message_id = new_message_id(token, reply_domain)
    message = EmailMessage(policy=SMTP)
    message["From"] = sender.header()
    message["To"] = to
    message["Subject"] = _one_line(subject)[:MAX_SUBJECT] or "(no subject)"
    message["Reply-To"] = replies_to
    message["Date"] = format_datetime(now or datetime.now(timezone.utc))
    message["Message-ID"] = message_id
    earlier = [mid for mid in thread if mid]
    if earlier:
        message["In-Reply-To"] = earlier[-1]
        message["References"] = " ".join(earlier[-20:])
    message.set_content(text)
    message.add_alternative(html_body(text), subtype="html")
    return ComposedEmail(message=message, message_id=message_id, envelope_from=replies_to, to=to)
