"""The listener: real SMTP exchanges on loopback (aiosmtplib → the listener), replies and
bounces handed to the callbacks, hostile senders refused without harm to the listener."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import ssl
import time
from collections.abc import AsyncIterator
from email.message import EmailMessage
from typing import Any

import aiosmtplib
import pytest

from humanwire.server.delivery.email import Bounce, EmailListener, InboundEmail

DOMAIN = "replies.acme.example"
KNOWN = "tok_known000000001"
OTHER = "tok_known000000002"
TO_KNOWN = f"reply+{KNOWN}@{DOMAIN}"


class Inbox:
    def __init__(self) -> None:
        self.emails: list[InboundEmail] = []
        self.bounces: list[Bounce] = []
        self.fail_next = False
        self.lookup_fails = False
        self.delay = 0.0
        self.arrived = asyncio.Event()

    async def known(self, token: str) -> bool:
        if self.lookup_fails:
            raise RuntimeError("store down")
        return token in (KNOWN, OTHER)

    async def on_email(self, email: InboundEmail) -> None:
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("engine busy")
        await asyncio.sleep(self.delay)
        self.emails.append(email)
        self.arrived.set()

    async def on_bounce(self, bounce: Bounce) -> None:
        self.bounces.append(bounce)
        self.arrived.set()


@pytest.fixture
async def inbox() -> AsyncIterator[tuple[Inbox, EmailListener]]:
    box = Inbox()
    listener = EmailListener(
        reply_domain=DOMAIN,
        known_token=box.known,
        on_email=box.on_email,
        on_bounce=box.on_bounce,
        port=0,
        max_message_bytes=200_000,
        max_recipients=2,
        idle_timeout=1.0,
        session_timeout=6.0,
        max_connections=3,
    )
    async with listener:
        yield box, listener


async def _send(
    listener: EmailListener, raw: bytes | EmailMessage, to: list[str], **kw: Any
) -> Any:
    return await aiosmtplib.send(
        raw,
        sender=kw.pop("sender", "ada@example.com"),
        recipients=to,
        hostname="127.0.0.1",
        port=listener.port,
        start_tls=False,
        timeout=kw.pop("timeout", 30),
        **kw,
    )


async def _send_bounce(listener: EmailListener, raw: bytes, to: str) -> None:
    """As a mail server sends a bounce: from the null sender ``<>``."""
    client = aiosmtplib.SMTP(hostname="127.0.0.1", port=listener.port, start_tls=False)
    async with client:
        await client.ehlo()
        mail = await client.execute_command(b"MAIL", b"FROM:<>")
        assert mail.code == 250, mail
        assert (await client.rcpt(to)).code == 250
        assert (await client.data(raw)).code == 250


GMAIL_REPLY = (
    "From: Ada Lovelace <ada@Example.COM>\r\n"
    f"To: Acme Agent <{TO_KNOWN}>\r\n"
    "Subject: Re: Release\r\n"
    "Message-ID: <CAF+abc123@mail.gmail.com>\r\n"
    f"In-Reply-To: <{KNOWN}.0001@{DOMAIN}>\r\n"
    f"References: <{KNOWN}.0000@{DOMAIN}> <{KNOWN}.0001@{DOMAIN}>\r\n"
    "MIME-Version: 1.0\r\n"
    'Content-Type: multipart/mixed; boundary="mixed"\r\n'
    "\r\n"
    "--mixed\r\n"
    'Content-Type: multipart/alternative; boundary="alt"\r\n'
    "\r\n"
    "--alt\r\n"
    'Content-Type: text/plain; charset="UTF-8"\r\n'
    "\r\n"
    "Yes, ship it on Friday. Caf\u00e9 is fine.\r\n"
    "\r\n"
    "On Tue, Nov 24, 2026 at 3:04\u202fPM Acme Agent <agent@acme.example> wrote:\r\n"
    "> Ship the release on Friday?\r\n"
    "--alt\r\n"
    'Content-Type: text/html; charset="UTF-8"\r\n'
    "\r\n"
    '<div dir="ltr">Yes, ship it on Friday.</div><div class="gmail_quote">quoted</div>\r\n'
    "--alt--\r\n"
    "--mixed\r\n"
    'Content-Type: application/pdf; name="../../etc/notes.pdf"\r\n'
    'Content-Disposition: attachment; filename="../../etc/notes.pdf"\r\n'
    "Content-Transfer-Encoding: base64\r\n"
    "\r\n"
    "JVBERi0xLjQK\r\n"
    "--mixed--\r\n"
).encode()


async def test_a_reply_reaches_on_email_without_quotes_with_threading_and_attachments(
    inbox: tuple[Inbox, EmailListener],
) -> None:
    box, listener = inbox
    await _send(listener, GMAIL_REPLY, [TO_KNOWN])
    (email,) = box.emails
    assert email.token == KNOWN
    assert email.sender == "ada@example.com" and email.sender_domain == "example.com"
    assert email.envelope_from == "ada@example.com"
    assert email.subject == "Re: Release"
    assert email.text == "Yes, ship it on Friday. Caf\u00e9 is fine."
    assert "Ship the release on Friday?" in email.full_text
    assert email.message_id == "<CAF+abc123@mail.gmail.com>"
    assert email.in_reply_to == f"<{KNOWN}.0001@{DOMAIN}>"
    assert email.references == (f"<{KNOWN}.0000@{DOMAIN}>", f"<{KNOWN}.0001@{DOMAIN}>")
    (attachment,) = email.attachments
    assert attachment.filename == "notes.pdf"  # no path survives
    assert attachment.content_type == "application/pdf"
    assert attachment.data == b"%PDF-1.4\n"
    assert not email.automatic
    assert email.raw == GMAIL_REPLY


async def test_unknown_recipients_are_refused_at_rcpt(inbox: tuple[Inbox, EmailListener]) -> None:
    box, listener = inbox
    for stranger in (
        f"reply+tok_unknown0000001@{DOMAIN}",
        f"postmaster@{DOMAIN}",
        f"reply+{KNOWN}@elsewhere.example",
        f"reply+a@{DOMAIN}",
    ):
        with pytest.raises(aiosmtplib.SMTPRecipientsRefused) as refused:
            await _send(listener, GMAIL_REPLY, [stranger])
        assert refused.value.recipients[0].code == 550
    # A lookup that fails is a temporary refusal: the sending server tries again later.
    box.lookup_fails = True
    with pytest.raises(aiosmtplib.SMTPRecipientsRefused) as deferred:
        await _send(listener, GMAIL_REPLY, [TO_KNOWN])
    assert deferred.value.recipients[0].code == 451
    assert box.emails == []


async def test_one_message_to_two_tokens_reaches_both_and_a_third_is_too_many(
    inbox: tuple[Inbox, EmailListener],
) -> None:
    box, listener = inbox
    to_other = f"reply+{OTHER}@{DOMAIN}"
    refused, _reply = await _send(
        listener, GMAIL_REPLY, [TO_KNOWN, to_other, f"REPLY+{KNOWN}@{DOMAIN.upper()}"]
    )
    assert refused[f"REPLY+{KNOWN}@{DOMAIN.upper()}"].code == 452
    assert [email.token for email in box.emails] == [KNOWN, OTHER]


async def test_a_message_over_the_size_limit_is_refused(inbox: tuple[Inbox, EmailListener]) -> None:
    box, listener = inbox
    big = GMAIL_REPLY + (b"x" * 998 + b"\r\n") * 250
    with pytest.raises(aiosmtplib.SMTPResponseException) as refused:
        await _send(listener, big, [TO_KNOWN])
    assert refused.value.code == 552
    assert box.emails == []


def _dsn() -> bytes:
    recipient = TO_KNOWN
    return (
        "From: Mail Delivery Subsystem <mailer-daemon@googlemail.com>\r\n"
        f"To: {recipient}\r\n"
        "Subject: Delivery Status Notification (Failure)\r\n"
        "Auto-Submitted: auto-replied\r\n"
        "MIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="b"\r\n'
        "\r\n"
        "--b\r\n"
        "Content-Type: text/plain\r\n"
        "\r\n"
        "Your message wasn't delivered to nobody@example.com.\r\n"
        "--b\r\n"
        "Content-Type: message/delivery-status\r\n"
        "\r\n"
        "Reporting-MTA: dns; googlemail.com\r\n"
        "\r\n"
        "Final-Recipient: rfc822; nobody@example.com\r\n"
        "Action: failed\r\n"
        "Status: 5.1.1\r\n"
        "Diagnostic-Code: smtp; 550 5.1.1 The email account does not exist\r\n"
        "--b\r\n"
        "Content-Type: text/rfc822-headers\r\n"
        "\r\n"
        "From: Acme Agent <agent@acme.example>\r\n"
        "To: nobody@example.com\r\n"
        f"Message-ID: <{KNOWN}.00ff00ff00ff00ff@{DOMAIN}>\r\n"
        "--b--\r\n"
    ).encode()


async def test_a_bounce_reaches_on_bounce_naming_the_interaction(
    inbox: tuple[Inbox, EmailListener],
) -> None:
    box, listener = inbox
    await _send_bounce(listener, _dsn(), TO_KNOWN)
    (bounce,) = box.bounces
    assert bounce.token == KNOWN and bounce.failed
    assert bounce.status == "5.1.1" and bounce.action == "failed"
    assert bounce.recipient == "nobody@example.com"
    assert bounce.original_message_id == f"<{KNOWN}.00ff00ff00ff00ff@{DOMAIN}>"
    assert "does not exist" in (bounce.diagnostic or "")
    assert box.emails == []


async def test_a_callback_that_fails_gets_451_and_the_listener_goes_on(
    inbox: tuple[Inbox, EmailListener],
) -> None:
    box, listener = inbox
    box.fail_next = True
    with pytest.raises(aiosmtplib.SMTPResponseException) as deferred:
        await _send(listener, GMAIL_REPLY, [TO_KNOWN])
    assert deferred.value.code == 451
    await _send(listener, GMAIL_REPLY, [TO_KNOWN])
    assert len(box.emails) == 1


async def test_hostile_messages_are_read_or_refused_never_crash_the_listener(
    inbox: tuple[Inbox, EmailListener],
) -> None:
    box, listener = inbox
    head = f"From: x@example.com\r\nTo: {TO_KNOWN}\r\n".encode()
    hostile = [
        # Not UTF-8, no charset, 8-bit body.
        head + b"Subject: caf\xe9\r\n\r\nd\xe9j\xe0 vu \xff\xfe\r\n",
        # An unknown charset and a broken base64 body.
        head + b"Content-Type: text/plain; charset=x-klingon\r\n"
        b"Content-Transfer-Encoding: base64\r\n\r\n@@@not base64!!\r\n",
        # A multipart whose boundary never comes, nested declarations, no body at all.
        head + b'Content-Type: multipart/mixed; boundary="never"\r\n\r\nplain words\r\n',
        head + b"Content-Type: multipart/mixed\r\n\r\n--\r\n--\r\n",
        head,
        # Many headers (each line short, the whole within the size limit).
        head + b"".join(b"X-Junk-%d: %s\r\n" % (i, b"y" * 80) for i in range(1500)) + b"\r\nok\r\n",
        # A From that is not an address, a Message-ID that is not one.
        b"From: <<<@@@>>>\r\nMessage-ID: nonsense\r\nSubject: =?bogus?Q?x?=\r\n\r\nhello\r\n",
    ]
    for raw in hostile:
        await _send(listener, raw, [TO_KNOWN])
    assert len(box.emails) == len(hostile)
    assert "d\ufffdj\ufffd vu" in box.emails[0].text or "déjà vu" in box.emails[0].text
    assert box.emails[-1].text == "hello" and box.emails[-1].message_id is None
    # Multiparts nested 3,000 deep (the parser recurses): 554, nothing handed on.
    nested = b"".join(
        b'Content-Type: multipart/mixed; boundary="b%d"\r\n\r\n--b%d\r\n' % (i, i)
        for i in range(3000)
    )
    with pytest.raises(aiosmtplib.SMTPResponseException) as unreadable:
        await _send(listener, head + nested + b"Content-Type: text/plain\r\n\r\nhi\r\n", [TO_KNOWN])
    assert unreadable.value.code == 554
    assert len(box.emails) == len(hostile)
    # A header line longer than SMTP allows: refused, and the next sender is served.
    with pytest.raises(aiosmtplib.SMTPResponseException) as too_long:
        await _send(listener, head + b"Subject: " + b"z" * 5000 + b"\r\n\r\nbody\r\n", [TO_KNOWN])
    assert too_long.value.code == 500
    await _send(listener, GMAIL_REPLY, [TO_KNOWN])
    assert len(box.emails) == len(hostile) + 1


async def test_an_out_of_office_is_marked_automatic(inbox: tuple[Inbox, EmailListener]) -> None:
    box, listener = inbox
    raw = (
        f"From: ada@example.com\r\nTo: {TO_KNOWN}\r\nSubject: Out of office\r\n"
        "Auto-Submitted: auto-replied\r\n\r\nI am away until Monday.\r\n"
    ).encode()
    await _send(listener, raw, [TO_KNOWN])
    assert box.emails[0].automatic


async def test_a_silent_or_trickling_client_is_cut_off(inbox: tuple[Inbox, EmailListener]) -> None:
    _box, listener = inbox
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    assert (await reader.readline()).startswith(b"220")
    started = time.monotonic()
    await asyncio.wait_for(reader.read(), timeout=5)
    assert reader.at_eof()
    assert time.monotonic() - started < 3  # idle_timeout 1 s
    writer.close()
    # Trickling a command every half second stays under the idle timeout; the session
    # bound (6 s) ends it anyway.
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    await reader.readline()
    started = time.monotonic()
    while not reader.at_eof() and time.monotonic() - started < 15:
        writer.write(b"NOOP\r\n")
        await asyncio.sleep(0.5)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(reader.readline(), timeout=0.1)
    assert reader.at_eof() and time.monotonic() - started < 9
    writer.close()


async def test_a_big_message_is_parsed_in_a_worker_process() -> None:
    box = Inbox()
    attachment = base64.encodebytes(bytes(range(256)) * 24_000).replace(b"\n", b"\r\n")
    raw = (
        (
            f"From: ada@example.com\r\nTo: {TO_KNOWN}\r\nSubject: big\r\nMIME-Version: 1.0\r\n"
            'Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\n'
            "Content-Type: text/plain\r\n\r\nSure.\r\n\r\nOn Mon, Ada wrote:\r\n> big?\r\n--b\r\n"
            "Content-Type: application/octet-stream\r\n"
            "Content-Disposition: attachment; filename=data.bin\r\n"
            "Content-Transfer-Encoding: base64\r\n\r\n"
        ).encode()
        + attachment
        + b"\r\n--b--\r\n"
    )
    async with EmailListener(
        reply_domain=DOMAIN,
        known_token=box.known,
        on_email=box.on_email,
        on_bounce=box.on_bounce,
        port=0,
        max_message_bytes=32 << 20,
    ) as listener:
        assert listener.parsers.pids == ()  # started with the first message
        await _send(listener, raw, [TO_KNOWN], timeout=120)
        pids = listener.parsers.pids
    assert box.emails[0].text == "Sure."
    assert len(box.emails[0].attachments[0].data) == 256 * 24_000
    assert box.emails[0].raw == raw  # the bytes stayed here; DKIM reads them
    # Parsed by a child process: the loop's thread, and its GIL, never did the work.
    assert len(pids) == 1 and os.getpid() not in pids


async def test_connections_past_the_bound_are_turned_away(
    inbox: tuple[Inbox, EmailListener],
) -> None:
    box, listener = inbox
    held = [await asyncio.open_connection("127.0.0.1", listener.port) for _ in range(3)]
    for reader, _writer in held:
        assert (await reader.readline()).startswith(b"220")
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    assert (await asyncio.wait_for(reader.readline(), timeout=5)).startswith(b"421 4.7.0")
    assert await asyncio.wait_for(reader.read(), timeout=5) == b""
    writer.close()
    for _reader, held_writer in held:
        held_writer.close()
        await held_writer.wait_closed()
    await asyncio.sleep(0.1)
    # Once they are gone, senders are served again.
    await _send(listener, GMAIL_REPLY, [TO_KNOWN])
    assert len(box.emails) == 1


async def test_the_listener_offers_starttls_when_it_has_a_certificate(
    tls_pair: tuple[ssl.SSLContext, ssl.SSLContext],
) -> None:
    server_tls, client_tls = tls_pair
    box = Inbox()
    async with EmailListener(
        reply_domain=DOMAIN,
        known_token=box.known,
        on_email=box.on_email,
        on_bounce=box.on_bounce,
        port=0,
        max_connections=1,
        tls_context=server_tls,
    ) as listener:
        for _ in range(2):  # the upgraded connection counts once, and is let go
            client = aiosmtplib.SMTP(
                hostname="127.0.0.1", port=listener.port, start_tls=False, tls_context=client_tls
            )
            async with client:
                await client.starttls()
                assert client.transport is not None
                assert client.transport.get_extra_info("ssl_object") is not None
                await client.sendmail("ada@example.com", [TO_KNOWN], GMAIL_REPLY)
            await asyncio.sleep(0.05)
    assert [email.text for email in box.emails] == [
        "Yes, ship it on Friday. Caf\u00e9 is fine."
    ] * 2


async def test_a_slow_callback_is_waited_for_past_the_idle_timeout(
    inbox: tuple[Inbox, EmailListener],
) -> None:
    box, listener = inbox
    box.delay = 2.5  # the fixture's idle timeout is 1 s
    await _send(listener, GMAIL_REPLY, [TO_KNOWN])  # 250, not a cut connection
    assert len(box.emails) == 1


async def test_a_parse_past_its_time_limit_kills_its_worker_and_the_next_gets_a_new_one() -> None:
    from humanwire.server.delivery.email.parsing import MessageParsers, ParseOverrun

    parsers = MessageParsers(workers=1, timeout=30)
    try:
        assert (await parsers.parse(GMAIL_REPLY, DOMAIN, (KNOWN,), ""))[0].token == KNOWN  # type: ignore[index]
        (first,) = parsers.pids
        parsers.timeout = 0.01  # far less than reading 8 MB takes
        big = GMAIL_REPLY + b"x" * (8 << 20)
        with pytest.raises(ParseOverrun):
            await parsers.parse(big, DOMAIN, (KNOWN,), "")
        assert parsers.pids == ()  # killed, not kept
        parsers.timeout = 30
        parsed = await parsers.parse(GMAIL_REPLY, DOMAIN, (KNOWN,), "")
        assert isinstance(parsed, list) and parsed[0].text.startswith("Yes, ship it")
        (second,) = parsers.pids
        assert second != first
    finally:
        await parsers.aclose()


async def test_a_full_listener_makes_room_by_closing_the_longest_silent_session() -> None:
    box = Inbox()
    async with EmailListener(
        reply_domain=DOMAIN,
        known_token=box.known,
        on_email=box.on_email,
        on_bounce=box.on_bounce,
        port=0,
        max_connections=3,
        evict_after=0.5,
    ) as listener:
        held = []
        for _ in range(3):
            reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
            assert (await reader.readline()).startswith(b"220")
            held.append((reader, writer))
        await asyncio.sleep(1)  # all silent past evict_after
        # The newest of them speaks: it is no longer the longest silent.
        held[2][1].write(b"NOOP\r\n")
        assert (await held[2][0].readline()).startswith(b"250")
        await _send(listener, GMAIL_REPLY, [TO_KNOWN])
        assert len(box.emails) == 1
        # The first connection was the one closed, told why.
        assert (await asyncio.wait_for(held[0][0].readline(), 10)).startswith(b"421 4.4.2")
        assert await asyncio.wait_for(held[0][0].read(), 10) == b""
        held[2][1].write(b"NOOP\r\n")
        assert (await asyncio.wait_for(held[2][0].readline(), 10)).startswith(b"250")
        for _reader, writer in held:
            writer.close()
