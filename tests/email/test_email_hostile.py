"""Hostile mail against the real service, over real SMTP on loopback, on each store: a
reply from an address not asked, junk with nothing to read, messages shaped to make the
parsers slow, and idle connections hoarding the listener. What is asserted: the ask is
answered only by the person asked, hostile messages are refused or kept safely, and a
legitimate reply and an HTTP request go through while they are handled (bounded
relative to the same reply's time on a quiet service, never a tight deadline)."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from email.policy import SMTP
from typing import Any

import aiosmtplib
import dkim
import httpx
import pytest
from test_email_approvals import signing_key  # noqa: F401
from test_email_service import ADA, EmailLive, email_live, in_background  # noqa: F401

from humanwire.testing.email import RelayedMail
from humanwire.testing.receiver import WebhookReceiver

MALLORY = "mallory@evil.example"


@pytest.fixture
def live(email_live: EmailLive) -> EmailLive:  # noqa: F811
    return email_live


def _until(check: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    return value


def _status(live: EmailLive, interaction_id: str) -> str:
    return live.client.interactions.status(interaction_id).status


def _raw_reply(mail: RelayedMail, sender: str, headers: bytes, body: bytes) -> bytes:
    return (
        (
            f"From: {sender}\r\nTo: {mail.message['Reply-To']}\r\n"
            f"In-Reply-To: {mail.message['Message-ID']}\r\nMIME-Version: 1.0\r\n"
        ).encode()
        + headers
        + b"\r\n"
        + body
    )


def _send_raw(live: EmailLive, raw: bytes, to: str) -> int:
    """The listener's answer to ``raw`` (its code: 250, or the refusal's)."""

    async def send() -> int:
        try:
            await aiosmtplib.send(
                raw,
                sender="someone@example.net",
                recipients=[to],
                hostname="127.0.0.1",
                port=live.listener_port,
                start_tls=False,
                timeout=120,
            )
        except aiosmtplib.SMTPResponseException as refused:
            return refused.code
        return 250

    return asyncio.run(send())


# -- who may answer ----------------------------------------------------------------------------
def test_a_reply_from_another_address_is_kept_and_the_asked_told(live: EmailLive) -> None:
    with WebhookReceiver() as receiver:
        receiver.register(live.client)

        def replies() -> None:
            mail = live.sent()
            # Ada forwarded the ask; Mallory answers it, four times.
            for attempt in range(4):
                forged = live.reply(mail, f"Wire it to my account ({attempt}).")
                forged.replace_header("From", f"Mallory <{MALLORY}>")
                live.deliver(forged)
            live.deliver(live.reply(mail, "No, hold the release."))

        done = in_background(replies)
        result = live.client.messages.email(
            to=ADA, subject="Release", message="Ship it on Friday?", wait_time=30
        )
        done()
        assert (result.responded, result.reply) == (True, "No, hold the release.")
        # Mallory's replies were kept for the account, answering nothing.
        events = receiver.wait_for("message.received", count=4)
        assert {(e.payload.interaction_id, e.payload.from_) for e in events} == {(None, MALLORY)}
        assert events[0].payload.body == "Wire it to my account (0)."
    # Ada was told, at her address and three times at most; Mallory was sent nothing.
    ask, *notices = live.relay.messages
    assert len(notices) == 3
    for notice in notices:
        assert notice.recipients == (ADA,)
        assert str(notice.message["Subject"]) == "Re: Release"
        assert str(notice.message["Reply-To"]) == str(ask.message["Reply-To"])
        assert MALLORY in notice.text and "not taken as your answer" in notice.text
        assert "Wire it" not in notice.text


def test_under_require_dkim_only_a_signed_reply_answers(
    live: EmailLive,
    signing_key: tuple[bytes, dict[bytes, bytes]],  # noqa: F811
) -> None:
    pem, records = signing_key
    provider: Any = live.runner.engine.providers["email"]
    provider.config = replace(provider.config, require_dkim=True)
    provider.dkim_dns = lambda name, timeout=5: records.get(name)
    sent = live.client.messages.email(to=ADA, subject="Pay", message="Pay it?", follow_up_time=60)
    mail = live.sent()
    live.deliver(live.reply(mail, "Yes, pay it."))  # from Ada's address, unsigned
    notice = live.sent(2)
    assert notice.recipients == (ADA,) and "DKIM" in notice.text
    assert _status(live, sent.interaction_id) == "pending"
    raw = live.reply(mail, "Yes, signed.").as_bytes(policy=SMTP)
    signed = dkim.sign(raw, b"sel", b"example.com", pem, include_headers=[b"from", b"to"])
    assert _send_raw(live, signed + raw, str(mail.message["Reply-To"])) == 250
    status = live.client.interactions.status(sent.interaction_id)
    assert status.status == "ended"
    assert status.result is not None and status.result.payload.body == "Yes, signed."


def test_junk_with_nothing_to_read_answers_nothing(live: EmailLive) -> None:
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        sent = live.client.messages.email(to=ADA, subject="Q", message="Ready?", follow_up_time=60)
        mail = live.sent()
        junk = _raw_reply(
            mail,
            ADA,
            b'Content-Type: multipart/mixed; boundary="b"\r\n',
            b"--b\r\n"
            b'Content-Type: text/plain; charset="../../../etc/passwd\x01"\r\n'
            b"Content-Transfer-Encoding: base64\r\n\r\n!!!!@@@@####$$$$\r\n"
            b"--b\r\nContent-Type: text/plain; charset=utf-7\r\n\r\n"
            b"+ADw-script+AD4-alert(1)+ADw-/script+AD4-\r\n--b--\r\n",
        )
        assert _send_raw(live, junk, str(mail.message["Reply-To"])) == 250
        [event] = receiver.wait_for("message.received")
        assert event.payload.interaction_id is None and event.payload.body == ""
    assert _status(live, sent.interaction_id) == "pending"  # the ask still waits
    notice = live.sent(2)
    assert notice.recipients == (ADA,) and "no text that could be read" in notice.text
    live.deliver(live.reply(mail, "Ready."))
    status = live.client.interactions.status(sent.interaction_id)
    assert status.result is not None and status.result.payload.body == "Ready."


# -- what mail may cost ------------------------------------------------------------------------
def _hostile(mail: RelayedMail) -> dict[str, bytes]:
    """The probes' shapes at sizes inside the fixture's 200 kB message limit."""
    plain = b"Content-Type: text/plain; charset=utf-8\r\n"
    html = b"Content-Type: text/html; charset=utf-8\r\n"
    words = b"\r\n ".join([b"ab " * 25] * 2000)  # 150 kB of short words, folded
    nested = b"".join(
        b'Content-Type: multipart/mixed; boundary="n%d"\r\n\r\n--n%d\r\n' % (i, i)
        for i in range(2000)
    )
    shapes = {
        "subject": _raw_reply(mail, ADA, b"Subject: " + words + b"\r\n" + plain, b"hi\r\n"),
        "from": _raw_reply(mail, "x@y.example", b"From: " + words + b"\r\n" + plain, b"hi\r\n"),
        "redos": _raw_reply(mail, ADA, plain, (b"On " + b"a " * 78 + b"\r\n") * 1000),
        "nested": _raw_reply(mail, ADA, b"", nested + plain + b"\r\nhi\r\n"),
    }
    for index in range(6):  # as many as the loop's default thread pool has threads
        comments = (b"<!--" * 50 + b"\r\n") * 600
        shapes[f"comments-{index}"] = _raw_reply(mail, ADA, html, comments)
    shapes["html"] = _raw_reply(
        mail, ADA, html, b"<div><p>quoted <b>history</b></p></div>\r\n" * 3000
    )
    return shapes


def _timed(action: Callable[[], Any]) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


def test_hostile_mail_slows_neither_a_legitimate_reply_nor_http(
    live: EmailLive, caplog: pytest.LogCaptureFixture
) -> None:
    health = live.runner.base_url + "/healthz"
    live.client.messages.email(to=ADA, subject="Target", message="Target?", follow_up_time=60)
    target = live.sent(1)

    def legitimate_reply() -> None:
        sent = live.client.messages.email(to=ADA, message="Quick?", follow_up_time=60)
        mail = live.sent(len(live.relay.messages))
        live.deliver(live.reply(mail, "Yes."))
        assert live.client.interactions.status(sent.interaction_id).status == "ended"

    legitimate_reply()  # the parsing workers started
    quiet_reply = min(_timed(legitimate_reply) for _ in range(2))
    quiet_http = min(_timed(lambda: httpx.get(health).raise_for_status()) for _ in range(3))

    outcomes: dict[str, int] = {}
    senders = [
        threading.Thread(
            target=lambda name=name, raw=raw: outcomes.__setitem__(
                name, _send_raw(live, raw, str(target.message["Reply-To"]))
            ),
            daemon=True,
        )
        for name, raw in _hostile(target).items()
    ]
    caplog.set_level(logging.INFO, logger="humanwire.email")
    for sender in senders:
        sender.start()
    time.sleep(2)  # the hostile messages are in the listener's hands
    busy_http = max(_timed(lambda: httpx.get(health).raise_for_status()) for _ in range(3))
    busy_reply = _timed(legitimate_reply)
    for sender in senders:
        sender.join(180)
    # Before the bounds, one of these took a minute; now each costs about a second at
    # most on a loaded machine, and none of it on the loop that answers HTTP.
    assert busy_reply < 10 * quiet_reply + 10, (busy_reply, quiet_reply)
    assert busy_http < 20 * quiet_http + 2, (busy_http, quiet_http)
    assert outcomes["subject"] == outcomes["from"] == 250
    assert outcomes["nested"] == 554
    assert all(code in (250, 552, 554) for code in outcomes.values()), outcomes
    assert not [record for record in caplog.records if record.exc_info], "tracebacks logged"


# -- idle connections --------------------------------------------------------------------------
def test_idle_connections_do_not_lock_replies_out(live: EmailLive) -> None:
    sent = live.client.messages.email(to=ADA, message="Still there?", follow_up_time=60)
    mail = live.sent()
    hoard = []
    try:
        for _ in range(150):  # past the listener's 100 connections; silent after the greeting
            hoard.append(socket.create_connection(("127.0.0.1", live.listener_port), timeout=60))
        greetings = [connection.recv(100)[:3] for connection in hoard]
        # Each was answered (a slow machine may evict some early ones for later ones).
        assert set(greetings) <= {b"220", b"421"} and greetings.count(b"220") >= 100
        time.sleep(1.5)  # silent past the listener's eviction age
        live.deliver(live.reply(mail, "Yes, here."))
    finally:
        for connection in hoard:
            connection.close()
    status = live.client.interactions.status(sent.interaction_id)
    assert status.result is not None and status.result.payload.body == "Yes, here."
