"""Mail coming back: the service's own SMTP listener (aiosmtpd), and what it makes of a
message.

The reply domain's MX points at the listener (or a relay forwards to it). It takes mail
only for ``reply+<token>@<reply_domain>`` of a token the engine knows (asked at RCPT
through an async callback, so a stranger's mail is refused before its data is sent),
bounds what a sender may cost (message size, recipients, silence, the whole session),
and parses each message off the event loop:

- a delivery status notification (``multipart/report; report-type=delivery-status``)
  becomes a :class:`Bounce` for ``on_bounce``;
- anything else an :class:`InboundEmail` for ``on_email``, once per token it was sent
  to: the subject, the reply without its quoted history and signature, the attachments,
  ``In-Reply-To`` / ``References``, and the raw bytes (for :func:`dkim_verifies_async`).

A callback that raises makes the listener answer ``451`` (the sending server tries again
later); a message that cannot be read at all gets ``554``. Neither stops the listener.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.header import decode_header, make_header
from email.message import EmailMessage, Message
from email.parser import BytesHeaderParser
from email.utils import getaddresses
from typing import Any

from .compose import token_of, token_of_message_id
from .reply_text import html_to_text, reply_text

__all__ = [
    "MAX_ATTACHMENTS",
    "MAX_DEPTH",
    "MAX_HEADER_BYTES",
    "MAX_PARTS",
    "Attachment",
    "Bounce",
    "EmailListener",
    "InboundEmail",
    "MessageRefused",
    "OnBounce",
    "OnEmail",
    "TokenLookup",
    "parse_message",
]

TokenLookup = Callable[[str], Awaitable[bool]]
"""``await known(token)``: whether ``reply+<token>@…`` may receive mail (asked at RCPT)."""
OnEmail = Callable[["InboundEmail"], Awaitable[None]]
OnBounce = Callable[["Bounce"], Awaitable[None]]

MAX_ATTACHMENTS = 20
"""Attachments kept of one message; the rest are dropped (and logged)."""
MAX_HEADER_VALUE = 2000
"""Characters of a subject or a threading header kept."""
MAX_HEADER_BYTES = 256 << 10
"""The largest top-level header section taken (552 past it)."""
MAX_PARTS = 100
"""MIME parts (and ``Content-Type`` lines) of one message at most (554 past it)."""
MAX_DEPTH = 8
"""Multiparts nested at most (554 past it)."""
MAX_MIME_HEADER = 4000
"""Characters of one ``Content-*`` header of a part at most (554 past it)."""

_log = logging.getLogger("humanwire.email")
_MESSAGE_ID = re.compile(r"<[^<>\s]{1,250}>")
_STATUS_TYPES = ("message/delivery-status", "message/global-delivery-status")
_FILENAME_JUNK = re.compile(r"[\x00-\x1f\x7f]+")
_CONTENT_TYPE_LINE = re.compile(rb"^content-type:", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class Attachment:
    """A file that came with a reply (its name made safe: no path, no control
    characters)."""

    filename: str
    content_type: str
    data: bytes = field(repr=False)


@dataclass(frozen=True)
class InboundEmail:
    """A reply (or any mail) to ``reply+<token>@<reply_domain>``."""

    token: str
    sender: str
    """The ``From`` address (lower-cased domain); forgeable: see :attr:`raw`."""
    envelope_from: str
    subject: str
    text: str
    """What the person wrote: no quoted history, no signature."""
    full_text: str
    """The whole text body (an HTML-only message: its text)."""
    message_id: str | None
    in_reply_to: str | None
    references: tuple[str, ...]
    attachments: tuple[Attachment, ...]
    automatic: bool
    """An auto-reply or bulk mail (``Auto-Submitted``, ``Precedence: bulk``, an
    out-of-office): not the person's answer."""
    raw: bytes = field(repr=False)
    """The message as received, for :func:`dkim_verifies_async` (approvals)."""

    @property
    def sender_domain(self) -> str:
        return self.sender.rpartition("@")[2].lower()


@dataclass(frozen=True)
class Bounce:
    """A delivery status notification about a message the service sent."""

    token: str | None
    """The interaction's token: from the address the bounce came to, else from the
    original ``Message-ID``."""
    original_message_id: str | None
    recipient: str | None
    """The address that could not be reached (``Final-Recipient``)."""
    action: str
    """``failed``, ``delayed``, ``delivered``, ``relayed`` or ``expanded`` (RFC 3464)."""
    status: str
    """The enhanced status code, e.g. ``5.1.1``."""
    diagnostic: str | None = None

    @property
    def failed(self) -> bool:
        """The message will not be delivered (a ``delayed`` notice is not a failure)."""
        return self.action == "failed" or (self.action == "" and self.status.startswith("5"))


# -- parsing (sync, run in a thread) --------------------------------------------------------
def _header(message: Message, name: str) -> str:
    """The first ``name`` header: read raw, cut, and its encoded words decoded, never
    through the policy's structured parser (superlinear: a 4 kB ``From`` of short words
    costs it a second)."""
    wanted = name.lower()
    raw = next((value for key, value in message.raw_items() if key.lower() == wanted), None)
    if raw is None:
        return ""
    unfolded = str(raw).replace("\r", "").replace("\n", "")[: 2 * MAX_HEADER_VALUE]
    try:
        value = str(make_header(decode_header(unfolded)))
    except Exception:  # an unknown charset, a broken encoded word: as it came
        value = unfolded
    return " ".join(value.split())[:MAX_HEADER_VALUE]


def _message_ids(text: str) -> tuple[str, ...]:
    return tuple(_MESSAGE_ID.findall(text))[:50]


def _decoded(part: Message) -> str:
    try:
        content = part.get_content() if isinstance(part, EmailMessage) else None
        if isinstance(content, str):
            return content
    except (LookupError, UnicodeError, ValueError, AssertionError):
        pass  # an unknown charset or broken encoding: decode by hand below
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return ""
    charset = part.get_content_charset() or "utf-8"
    try:
        return payload.decode(charset, errors="replace")
    except LookupError:
        return payload.decode("utf-8", errors="replace")


def _body(message: EmailMessage) -> tuple[str, Message | None]:
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return "", None
    text = _decoded(part)
    if part.get_content_type() == "text/html":
        text = html_to_text(text)
    return text, part


def _safe_filename(name: str | None, index: int) -> str:
    # The last path element only (either slash), then no control characters.
    last = re.split(r"[/\\]", name or "")[-1]
    cleaned = " ".join(_FILENAME_JUNK.sub(" ", last).split()).strip(". ")[:200]
    return cleaned or f"attachment-{index}"


def _attachments(message: EmailMessage, body: Message | None) -> tuple[Attachment, ...]:
    found: list[Attachment] = []
    for part in message.walk():
        if part is body or part.is_multipart():
            continue
        disposition = part.get_content_disposition()
        filename = part.get_filename()
        if disposition != "attachment" and not (disposition == "inline" and filename):
            continue
        if len(found) == MAX_ATTACHMENTS:
            _log.info("email: attachments past %d dropped", MAX_ATTACHMENTS)
            break
        data = part.get_payload(decode=True)
        if not isinstance(data, bytes):
            continue
        found.append(
            Attachment(
                filename=_safe_filename(filename, len(found) + 1),
                content_type=part.get_content_type(),
                data=data,
            )
        )
    return tuple(found)


def _automatic(message: Message) -> bool:
    auto = _header(message, "Auto-Submitted").lower()
    if auto and auto != "no":
        return True
    if _header(message, "Precedence").lower() in ("bulk", "junk", "list", "auto_reply"):
        return True
    return any(_header(message, name) for name in ("X-Autoreply", "X-Autorespond"))


def _is_report(message: Message) -> bool:
    return (
        message.get_content_type() == "multipart/report"
        and str(message.get_param("report-type", "")).lower() == "delivery-status"
    )


def _status_blocks(part: Message) -> list[Message]:
    payload = part.get_payload()
    if isinstance(payload, list):
        return [block for block in payload if isinstance(block, Message)]
    if isinstance(payload, str):
        # Some servers send the fields as text: parse its blocks as headers.
        parser = BytesHeaderParser(policy=policy.default)
        return [
            parser.parsebytes(block.encode("utf-8", "replace") + b"\n\n")
            for block in re.split(r"\r?\n\s*\r?\n", payload)
            if block.strip()
        ]
    return []


def _original_headers(message: Message) -> Message | None:
    for part in message.walk():
        kind = part.get_content_type()
        if kind in ("message/rfc822", "message/global"):
            inner = part.get_payload()
            if isinstance(inner, list) and inner and isinstance(inner[0], Message):
                return inner[0]
        if kind in ("text/rfc822-headers", "message/global-headers"):
            raw = part.get_payload(decode=True)
            if isinstance(raw, bytes):
                return BytesHeaderParser(policy=policy.default).parsebytes(raw)
    return None


def _bounce(message: Message, reply_domain: str, tokens: tuple[str, ...]) -> Bounce:
    recipient, action, status, diagnostic = None, "", "", None
    for part in message.walk():
        if part.get_content_type() not in (
            "message/delivery-status",
            "message/global-delivery-status",
        ):
            continue
        for block in _status_blocks(part)[1:2] or _status_blocks(part)[:1]:
            final = _header(block, "Final-Recipient") or _header(block, "Original-Recipient")
            recipient = final.split(";", 1)[-1].strip() or None if final else None
            action = _header(block, "Action").lower()
            status = _header(block, "Status").split(" ")[0]
            diagnostic = _header(block, "Diagnostic-Code") or None
        break
    original = _original_headers(message)
    original_id = _header(original, "Message-ID") if original is not None else ""
    ids = _message_ids(original_id)
    original_message_id = ids[0] if ids else None
    token = tokens[0] if tokens else None
    if token is None and original_message_id is not None:
        token = token_of_message_id(original_message_id, reply_domain)
    return Bounce(
        token=token,
        original_message_id=original_message_id,
        recipient=recipient,
        action=action,
        status=status,
        diagnostic=diagnostic,
    )


def _from_address(message: Message) -> str:
    try:
        pairs = getaddresses([_header(message, "From")])
    except Exception:
        return ""
    address = pairs[0][1] if pairs else ""
    local, at, domain = address.rpartition("@")
    return f"{local}@{domain.lower()}" if at else ""


class MessageRefused(ValueError):
    """A message past the bounds of what is read (its header, its MIME structure), or
    unreadable: ``reply`` is the SMTP answer."""

    def __init__(self, reply: str) -> None:
        super().__init__(reply)
        self.reply = reply


def _header_section(raw: bytes) -> int:
    """The length of the top-level header section (to its blank line, else the whole)."""
    ends = [at for at in (raw.find(b"\r\n\r\n"), raw.find(b"\n\n")) if at >= 0]
    return min(ends) if ends else len(raw)


def _check_before_parsing(raw: bytes) -> None:
    """Bounds checked on the bytes, in linear time, before the parser runs: a header
    section past ``MAX_HEADER_BYTES``; more ``Content-Type`` lines than ``MAX_PARTS``
    (every nested multipart needs one, and the parser recurses per level)."""
    if _header_section(raw) > MAX_HEADER_BYTES:
        raise MessageRefused("552 5.3.4 The message header is too large")
    if len(_CONTENT_TYPE_LINE.findall(raw)) > MAX_PARTS:
        raise MessageRefused("554 5.6.0 The message has too many MIME parts")


def _check_structure(message: Message) -> None:
    """Parts counted, nesting measured and MIME headers sized without recursing (the
    library's ``walk`` and ``get_body`` recurse), before anything reads the parts."""
    pending: list[tuple[Message, int]] = [(message, 0)]
    parts = 0
    while pending:
        part, depth = pending.pop()
        parts += 1
        if parts > MAX_PARTS or depth > MAX_DEPTH:
            raise MessageRefused("554 5.6.0 The message has too many MIME parts")
        for key, value in part.raw_items():
            if key.lower().startswith("content-") and len(str(value)) > MAX_MIME_HEADER:
                raise MessageRefused("554 5.6.0 A MIME header of the message is too large")
        payload = part.get_payload()
        if isinstance(payload, list):
            pending.extend((inner, depth + 1) for inner in payload if isinstance(inner, Message))


def parse_message(
    raw: bytes, reply_domain: str, tokens: tuple[str, ...], envelope_from: str = ""
) -> list[InboundEmail] | Bounce:
    """What a received message is: a :class:`Bounce`, or one :class:`InboundEmail` per
    token it was sent to. Raises :class:`MessageRefused` (a ``ValueError``) when it is
    past the bounds or cannot be read at all.

    Bounded: the header section in bytes and the MIME parts in count, depth and header
    size, before any part is read; header values cut before they are decoded; the text
    extraction linear (``reply_text``). Hostile input costs at most about a second."""
    _check_before_parsing(raw)
    try:
        message = message_from_bytes(raw, policy=policy.default)
    except Exception as exc:  # the parser is lenient; this is a last resort
        kind = type(exc).__name__
        raise MessageRefused(f"554 5.6.0 The message cannot be read ({kind})") from None
    assert isinstance(message, EmailMessage)
    _check_structure(message)
    if _is_report(message):
        return _bounce(message, reply_domain, tokens)
    try:
        full_text, body = _body(message)
        attachments = _attachments(message, body)
    except Exception as exc:  # broken MIME: keep the headers' facts
        _log.info("email: body unreadable (%s)", type(exc).__name__)
        full_text, attachments = "", ()
    in_reply_to = _message_ids(_header(message, "In-Reply-To"))
    message_ids = _message_ids(_header(message, "Message-ID"))
    common: dict[str, Any] = {
        "sender": _from_address(message),
        "envelope_from": envelope_from,
        "subject": _header(message, "Subject"),
        "text": reply_text(full_text),
        "full_text": full_text.strip(),
        "message_id": message_ids[0] if message_ids else None,
        "in_reply_to": in_reply_to[0] if in_reply_to else None,
        "references": _message_ids(_header(message, "References")),
        "attachments": attachments,
        "automatic": _automatic(message),
        "raw": raw,
    }
    return [InboundEmail(token=token, **common) for token in tokens]


# -- the listener ----------------------------------------------------------------------------
class _Handler:
    def __init__(self, listener: EmailListener) -> None:
        self.listener = listener

    async def handle_RCPT(  # aiosmtpd's hook name
        self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: list[str]
    ) -> str:
        listener = self.listener
        if len(envelope.rcpt_tos) >= listener.max_recipients:
            return "452 4.5.3 Too many recipients"
        token = token_of(address, listener.reply_domain)
        if token is None:
            return "550 5.1.1 No such recipient here"
        try:
            known = await listener.known_token(token)
        except Exception:
            _log.exception("email: the recipient lookup failed")
            return "451 4.3.0 Try again later"
        if not known:
            return "550 5.1.1 No such recipient here"
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 OK"

    async def handle_DATA(  # aiosmtpd's hook name
        self, server: Any, session: Any, envelope: Any
    ) -> str:
        server.handling = True
        try:
            return await self._handle_data(server, envelope)
        finally:
            server.handling = False

    async def _handle_data(self, server: Any, envelope: Any) -> str:
        listener = self.listener
        raw = envelope.original_content or b""
        tokens: list[str] = []
        for address in envelope.rcpt_tos:
            token = token_of(address, listener.reply_domain)
            if token is not None and token not in tokens:
                tokens.append(token)
        from .parsing import ParseOverrun

        try:
            parsed = await listener.parsers.parse(
                raw, listener.reply_domain, tuple(tokens), envelope.mail_from or ""
            )
        except MessageRefused as refused:
            _log.info("email: a message refused (%s)", refused.reply)
            return refused.reply
        except ParseOverrun as overrun:
            _log.warning("email: a message overran its parse and was refused (%s)", overrun)
            return "554 5.6.0 The message cannot be read in time"
        try:
            if isinstance(parsed, Bounce):
                await listener.on_bounce(parsed)
            else:
                for email in parsed:
                    await listener.on_email(email)
        except Exception:
            _log.exception("email: handing a received message on failed")
            return "451 4.3.0 Try again later"
        return "250 OK"


class EmailListener:
    """The SMTP listener at ``host``:``port`` (``0``: any free port; :attr:`port` says
    which). Use ``async with`` or :meth:`start` / :meth:`stop`, on the service's loop.

    Connections: at most ``max_connections``; a sender silent for ``idle_timeout``
    before or between commands is closed (``stressed_idle_timeout`` once more than
    three quarters of the connections are taken), and one connection lasts at most
    ``session_timeout``. When every connection is taken, a new one closes the session
    that has been silent longest (at least ``evict_after`` seconds, not in the middle
    of a message) to make room, else it gets 421: idle connections cannot lock senders
    out. Messages are parsed by ``parse_workers`` child processes, each in at most
    ``parse_timeout`` seconds (:class:`~.parsing.MessageParsers`)."""

    def __init__(
        self,
        *,
        reply_domain: str,
        known_token: TokenLookup,
        on_email: OnEmail,
        on_bounce: OnBounce,
        host: str = "127.0.0.1",
        port: int = 2525,
        max_message_bytes: int = 10 << 20,
        max_recipients: int = 20,
        idle_timeout: float = 60.0,
        stressed_idle_timeout: float = 10.0,
        session_timeout: float = 600.0,
        max_connections: int = 100,
        evict_after: float = 1.0,
        parse_workers: int = 2,
        parse_timeout: float = 10.0,
        tls_context: ssl.SSLContext | None = None,
        hostname: str | None = None,
    ) -> None:
        from .parsing import MessageParsers

        self.reply_domain = reply_domain.lower()
        self.known_token = known_token
        self.on_email = on_email
        self.on_bounce = on_bounce
        self.host = host
        self.port = port
        self.max_message_bytes = max_message_bytes
        self.max_recipients = max_recipients
        self.idle_timeout = idle_timeout
        self.stressed_idle_timeout = min(stressed_idle_timeout, idle_timeout)
        self.session_timeout = session_timeout
        self.max_connections = max_connections
        self.evict_after = evict_after
        self.parsers = MessageParsers(workers=parse_workers, timeout=parse_timeout)
        self.tls_context = tls_context
        """Offered with STARTTLS (mail servers upgrade when it is offered); None: plain."""
        self.hostname = hostname or self.reply_domain
        self._server: asyncio.AbstractServer | None = None
        self._sessions: dict[asyncio.BaseTransport, Any] = {}
        """Each connection's first transport -> its session."""

    def _idle_bound(self) -> float:
        stressed = len(self._sessions) * 4 > self.max_connections * 3
        return self.stressed_idle_timeout if stressed else self.idle_timeout

    def _make_room(self) -> bool:
        """Closes the session silent longest (past ``evict_after``, not in a message)
        for a new connection; False when there is none."""
        loop = asyncio.get_running_loop()
        idle = [
            session
            for session in self._sessions.values()
            if not session.in_message and loop.time() - session.last_heard >= self.evict_after
        ]
        if not idle:
            return False
        oldest = min(idle, key=lambda session: session.last_heard)
        oldest.evict()
        return True

    def _protocol(self) -> Any:
        from aiosmtpd.smtp import SMTP

        listener = self
        sessions = self._sessions

        class _Session(SMTP):  # type: ignore[misc]
            """aiosmtpd's session with a bound on its whole length (the idle timeout
            alone lets a sender trickle one byte a minute forever), an idle bound that
            tightens under load, and a place in the listener's count."""

            _cutoff: asyncio.TimerHandle | None = None
            _first: asyncio.BaseTransport | None = None
            _turned_away = False
            last_heard = 0.0
            in_message = False
            """Between DATA and the answer to it: not evicted."""
            handling = False
            """The message is being parsed or handed on: the idle timeout waits."""

            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                if self._first is not None:
                    # STARTTLS: the same connection, now over TLS (counted already).
                    super().connection_made(transport)
                    return
                if len(sessions) >= listener.max_connections and not listener._make_room():
                    # Past the bound: answered and closed before a session is made.
                    self._turned_away = True
                    assert isinstance(transport, asyncio.WriteTransport)
                    transport.write(b"421 4.7.0 Too many connections, try again later\r\n")
                    transport.close()
                    return
                super().connection_made(transport)
                self._first = transport
                sessions[transport] = self
                self._cutoff = self.loop.call_later(listener.session_timeout, self._cut_off)

            def _reset_timeout(self, duration: float | None = None) -> None:
                # Called at the greeting and after every command: the silence bound
                # restarts, as tight as the listener's load says.
                self.last_heard = self.loop.time()
                super()._reset_timeout(duration or listener._idle_bound())

            def _timeout_cb(self) -> None:
                # aiosmtpd times silence from the last line read, also while its handler
                # works; a slow parse or callback must not cut the sender off (it would
                # send again: a duplicate).
                if self.handling:
                    self._reset_timeout()
                    return
                super()._timeout_cb()  # type: ignore[no-untyped-call]

            async def smtp_DATA(self, arg: str) -> None:  # aiosmtpd's command hook
                self.in_message = True
                try:
                    await super().smtp_DATA(arg)
                finally:
                    self.in_message = False
                    self.last_heard = self.loop.time()

            def evict(self) -> None:
                if isinstance(self.transport, asyncio.WriteTransport):
                    with contextlib.suppress(Exception):
                        self.transport.write(b"421 4.4.2 Idle too long, closing\r\n")
                self._cut_off()

            def _cut_off(self) -> None:
                if self.transport is not None:
                    self.transport.close()
                if self._first is not None:
                    self._first.close()
                    # Counted out now: a closing transport may linger past this turn.
                    sessions.pop(self._first, None)

            def connection_lost(self, error: Exception | None) -> None:
                if self._turned_away:
                    return
                if self._cutoff is not None:
                    self._cutoff.cancel()
                if self._first is not None:
                    sessions.pop(self._first, None)
                super().connection_lost(error)

        return _Session(
            _Handler(self),
            data_size_limit=self.max_message_bytes,
            enable_SMTPUTF8=True,
            decode_data=False,
            hostname=self.hostname,
            ident="humanwire",
            timeout=self.idle_timeout,
            tls_context=self.tls_context,
            loop=asyncio.get_running_loop(),
        )

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._protocol, self.host, self.port)
        sockets = self._server.sockets
        if sockets:
            self.port = sockets[0].getsockname()[1]
        _log.info("email: listening for replies on %s:%d", self.host, self.port)

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            for transport in list(self._sessions):
                transport.close()
            self._sessions.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(server.wait_closed(), timeout=5)
        await self.parsers.aclose()

    async def __aenter__(self) -> EmailListener:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
