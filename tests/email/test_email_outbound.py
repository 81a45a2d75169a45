"""Sending: the composed message as a relay receives it over real SMTP on loopback (the
test kit's relay), and the relay's failures as typed errors."""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from email.utils import parseaddr

import pytest

from humanwire.server.delivery.base import ProviderFailure, RecipientUnreachable
from humanwire.server.delivery.email import (
    EmailRecipientRefused,
    EmailRelayUnavailable,
    Sender,
    SmtpRelay,
    compose_email,
    parse_sender,
    token_of,
    token_of_message_id,
)
from humanwire.testing.email import smtp_relay_fake

DOMAIN = "replies.acme.example"
TOKEN = "tok_0123456789abcdef"
ACME = Sender(address="agent@acme.example", name="Acme Agent")


def _compose(text: str = "Ship the release on Friday?", **kwargs: object) -> object:
    options: dict[str, object] = {
        "sender": ACME,
        "to": "ada@example.com",
        "subject": "Release",
        "text": text,
        "token": TOKEN,
        "reply_domain": DOMAIN,
    }
    options.update(kwargs)
    return compose_email(**options)  # type: ignore[arg-type]


async def test_a_message_reaches_the_relay_with_reply_address_threading_and_both_parts() -> None:
    first = compose_email(
        sender=ACME,
        to="ada@example.com",
        subject="Release",
        text="Ship it?",
        token=TOKEN,
        reply_domain=DOMAIN,
    )
    follow_up = compose_email(
        sender=ACME,
        to="ada@example.com",
        subject="Re: Release",
        text="Still there?",
        token=TOKEN,
        reply_domain=DOMAIN,
        thread=[first.message_id],
    )
    with smtp_relay_fake() as relay:
        sending = SmtpRelay(host="127.0.0.1", port=relay.port, starttls=False, timeout=5)
        await sending.send(first)
        await sending.send(follow_up)
        one, two = relay.wait_for(2)
    message = one.message
    assert one.recipients == ("ada@example.com",)
    # Bounces come back to the reply address, naming the interaction.
    assert one.envelope_from == f"reply+{TOKEN}@{DOMAIN}"
    assert parseaddr(str(message["From"])) == ("Acme Agent", "agent@acme.example")
    assert str(message["Reply-To"]) == f"reply+{TOKEN}@{DOMAIN}"
    assert token_of(str(message["Reply-To"]), DOMAIN) == TOKEN
    assert str(message["Message-ID"]) == first.message_id
    assert first.message_id.endswith(f"@{DOMAIN}>")
    assert token_of_message_id(first.message_id, DOMAIN) == TOKEN
    assert message["In-Reply-To"] is None and message["Date"] is not None
    assert message.get_content_type() == "multipart/alternative"
    assert one.text.strip() == "Ship it?" and "Ship it?" in one.html
    # The follow-up names the first, so mail clients show one conversation.
    assert str(two.message["In-Reply-To"]) == first.message_id
    assert str(two.message["References"]) == first.message_id
    assert two.message["Message-ID"] != message["Message-ID"]


async def test_the_html_part_escapes_the_text_and_links_urls() -> None:
    text = 'Fill <script>alert(1)</script> & "this": https://hw.example/f/abc?x=1&y=2.'
    with smtp_relay_fake() as relay:
        await SmtpRelay(host="127.0.0.1", port=relay.port, starttls=False).send(
            _compose(text)  # type: ignore[arg-type]
        )
        (mail,) = relay.wait_for(1)
    assert "<script>" not in mail.html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp;" in mail.html
    assert '<a href="https://hw.example/f/abc?x=1&amp;y=2">' in mail.html
    assert mail.text.strip() == text


def test_header_injection_through_the_subject_or_the_name_is_one_line() -> None:
    composed = compose_email(
        sender=Sender(address="agent@acme.example", name="Acme\r\nBcc: victim@example.com"),
        to="ada@example.com",
        subject="Hello\r\nBcc: victim@example.com",
        text="hi",
        token=TOKEN,
        reply_domain=DOMAIN,
    )
    raw = composed.message.as_bytes()
    assert b"\r\nBcc:" not in raw and b"\nBcc:" not in raw
    assert str(composed.message["Subject"]) == "Hello Bcc: victim@example.com"


def test_the_sender_setting_takes_a_name() -> None:
    assert parse_sender("Acme Agent <Agent@Acme.example>") == Sender(
        address="Agent@acme.example", name="Acme Agent"
    )
    assert parse_sender("agent@acme.example") == Sender(address="agent@acme.example")
    for bad in ("not an address", "a@b.example, c@d.example", ""):
        with pytest.raises(ValueError):
            parse_sender(bad)


async def test_starttls_and_login_and_a_wrong_password(
    tls_pair: tuple[ssl.SSLContext, ssl.SSLContext],
) -> None:
    server_tls, client_tls = tls_pair
    with smtp_relay_fake(username="svc", password="s3cret", tls_context=server_tls) as relay:
        good = SmtpRelay(
            host="127.0.0.1",
            port=relay.port,
            username="svc",
            password="s3cret",
            starttls=True,
            tls_context=client_tls,
            timeout=5,
        )
        await good.send(_compose())  # type: ignore[arg-type]
        (mail,) = relay.wait_for(1)
        assert mail.over_tls and mail.authenticated_as == "svc"
        bad = SmtpRelay(
            host="127.0.0.1",
            port=relay.port,
            username="svc",
            password="wrong",
            starttls=True,
            tls_context=client_tls,
            timeout=5,
        )
        with pytest.raises(EmailRelayUnavailable) as refused:
            await bad.send(_compose())  # type: ignore[arg-type]
        assert refused.value.permanent and "login" in refused.value.message
        assert "wrong" not in str(refused.value)
        # A relay that demands TLS, spoken to in the clear: refused, typed.
        clear = SmtpRelay(host="127.0.0.1", port=relay.port, starttls=False, timeout=5)
        with pytest.raises(EmailRelayUnavailable):
            await clear.send(_compose())  # type: ignore[arg-type]
    assert len(relay.messages) == 1


async def test_a_relay_that_is_down_or_refuses_the_recipient_raises_typed_errors() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    down = SmtpRelay(host="127.0.0.1", port=closed_port, starttls=False, timeout=2)
    with pytest.raises(EmailRelayUnavailable) as unavailable:
        await down.send(_compose())  # type: ignore[arg-type]
    assert isinstance(unavailable.value, ProviderFailure)
    assert "cannot be reached" in unavailable.value.message
    with smtp_relay_fake(refuse=["ada@example.com"]) as relay:
        refusing = SmtpRelay(host="127.0.0.1", port=relay.port, starttls=False, timeout=5)
        with pytest.raises(EmailRecipientRefused) as refused:
            await refusing.send(_compose())  # type: ignore[arg-type]
        assert isinstance(refused.value, RecipientUnreachable)
        assert refused.value.field == "to"
        assert relay.messages == []


async def test_a_relay_that_never_answers_times_out() -> None:
    silent = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    try:
        relay = SmtpRelay(host="127.0.0.1", port=port, starttls=False, timeout=0.5)
        started = time.monotonic()
        with pytest.raises(EmailRelayUnavailable) as slow:
            await relay.send(_compose())  # type: ignore[arg-type]
        assert time.monotonic() - started < 3
        assert "did not answer" in slow.value.message
    finally:
        silent.close()
