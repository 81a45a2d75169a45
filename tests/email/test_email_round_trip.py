"""The channel end to end over real SMTP on loopback: a message out through the relay,
the person's reply (to its Reply-To, threaded on its Message-ID) into the listener, and a
bounce of a later message back to the same interaction."""

from __future__ import annotations

from email.message import EmailMessage

import aiosmtplib

from humanwire.server.config import EmailConfig
from humanwire.server.delivery.email import (
    Bounce,
    EmailChannel,
    InboundEmail,
    new_reply_token,
    parse_message,
)
from humanwire.testing.email import smtp_relay_fake

DOMAIN = "replies.acme.example"


async def test_a_message_out_and_its_reply_in_name_the_same_interaction() -> None:
    token = new_reply_token()
    received: list[InboundEmail] = []
    bounces: list[Bounce] = []

    async def known(candidate: str) -> bool:
        return candidate == token

    async def on_email(email: InboundEmail) -> None:
        received.append(email)

    async def on_bounce(bounce: Bounce) -> None:
        bounces.append(bounce)

    with smtp_relay_fake() as relay:
        channel = EmailChannel(
            EmailConfig(
                smtp_host="127.0.0.1",
                smtp_port=relay.port,
                starttls=False,
                from_addr="Acme Agent <agent@acme.example>",
                reply_domain=DOMAIN,
                inbound_port=0,
            )
        )
        sent = await channel.send(
            to="ada@example.com", subject="Release", text="Ship it on Friday?", token=token
        )
        (out,) = relay.wait_for(1)
        async with channel.listener(
            known_token=known, on_email=on_email, on_bounce=on_bounce
        ) as listener:
            # Ada's mail client answers: to the Reply-To, threaded on the Message-ID.
            reply = EmailMessage()
            reply["From"] = "Ada <ada@example.com>"
            reply["To"] = str(out.message["Reply-To"])
            reply["Subject"] = "Re: Release"
            reply["In-Reply-To"] = str(out.message["Message-ID"])
            reply["References"] = str(out.message["Message-ID"])
            reply.set_content(
                "Yes, go.\n\nOn Tue, Nov 24, 2026 at 3:04 PM Acme Agent "
                "<agent@acme.example> wrote:\n> Ship it on Friday?\n"
            )
            await aiosmtplib.send(
                reply, hostname="127.0.0.1", port=listener.port, start_tls=False, timeout=5
            )
    (email,) = received
    assert email.token == token and email.text == "Yes, go."
    assert email.in_reply_to == sent.message_id and email.references == (sent.message_id,)
    assert email.subject == "Re: Release" and email.sender == "ada@example.com"
    assert bounces == []


def test_a_bounce_quoting_the_whole_original_finds_its_interaction_by_message_id() -> None:
    token = new_reply_token()
    channel = EmailChannel(
        EmailConfig(smtp_host="relay.invalid", from_addr="agent@acme.example", reply_domain=DOMAIN)
    )
    original = channel.compose(to="gone@example.com", subject="Hi", text="Hello", token=token)
    dsn = (
        b"From: MAILER-DAEMON@relay.example\r\nTo: someone@relay.example\r\n"
        b"MIME-Version: 1.0\r\n"
        b'Content-Type: multipart/report; report-type="delivery-status"; boundary="x"\r\n\r\n'
        b"--x\r\nContent-Type: text/plain\r\n\r\nDelayed.\r\n"
        b"--x\r\nContent-Type: message/delivery-status\r\n\r\n"
        b"Reporting-MTA: dns; relay.example\r\n\r\n"
        b"Final-Recipient: rfc822; gone@example.com\r\nAction: delayed\r\nStatus: 4.4.1\r\n"
        b"--x\r\nContent-Type: message/rfc822\r\n\r\n"
        + original.message.as_bytes()
        + b"\r\n--x--\r\n"
    )
    bounce = parse_message(dsn, DOMAIN, ())
    assert isinstance(bounce, Bounce)
    assert bounce.token == token and bounce.original_message_id == original.message_id
    assert bounce.action == "delayed" and bounce.status == "4.4.1" and not bounce.failed
