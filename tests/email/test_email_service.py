"""The email channel of the real service, end to end over real SMTP on loopback, on each
store: the service sends through a relay of the test's (``smtp_relay_fake``), the person
answers into the service's own listener (what their mail server would do), and the
agent's side is the core client over HTTP."""

from __future__ import annotations

import asyncio
import re
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from email.message import EmailMessage
from typing import Any

import aiosmtplib
import httpx
import pytest

from humanwire import HumanWire, InvalidToNumberError
from humanwire.server.config import EmailConfig
from humanwire.server.delivery.email.media import MEDIA_PREFIX, MEDIA_TTL
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.email import RelayedMail, SmtpRelayFake, smtp_relay_fake
from humanwire.testing.receiver import WebhookReceiver
from humanwire.testing.service import fast_config

DOMAIN = "replies.acme.example"
ADA = "ada@example.com"
_IN_BACKGROUND_TIMEOUT = 30.0


@dataclass
class EmailLive:
    relay: SmtpRelayFake
    runner: ServiceRunner
    client: HumanWire
    key: str

    @property
    def listener_port(self) -> int:
        port = self.runner.engine.providers["email"].port  # type: ignore[attr-defined]
        assert isinstance(port, int)
        return port

    def sent(self, count: int = 1) -> RelayedMail:
        """The ``count``-th message the service handed the relay."""
        return self.relay.wait_for(count, timeout=10)[count - 1]

    def deliver(self, message: EmailMessage, *, to: str | None = None) -> None:
        """A mail server hands ``message`` to the service's listener."""
        recipients = [to] if to is not None else None
        asyncio.run(
            aiosmtplib.send(
                message,
                recipients=recipients,
                hostname="127.0.0.1",
                port=self.listener_port,
                start_tls=False,
                timeout=10,
            )
        )

    def reply(self, to: RelayedMail, text: str, **headers: str) -> EmailMessage:
        """What Ada's mail client makes of "Reply": to the Reply-To, threaded, quoting."""
        reply = EmailMessage()
        reply["From"] = "Ada Lovelace <ada@example.com>"
        reply["To"] = str(to.message["Reply-To"])
        reply["Subject"] = f"Re: {to.message['Subject']}"
        reply["Message-ID"] = f"<{uuid.uuid4().hex}@example.com>"
        reply["In-Reply-To"] = str(to.message["Message-ID"])
        reply["References"] = str(to.message["Message-ID"])
        for name, value in headers.items():
            reply[name.replace("_", "-")] = value
        quoted = "\n".join(f"> {line}" for line in to.text.splitlines())
        reply.set_content(
            f"{text}\n\n-- \nAda\n\nOn Tue, Nov 24, 2026 at 3:04 PM Acme Agent "
            f"<agent@acme.example> wrote:\n{quoted}\n"
        )
        return reply


@pytest.fixture
def email_live(database: str) -> Iterator[EmailLive]:
    with smtp_relay_fake() as relay:
        email = EmailConfig(
            smtp_host="127.0.0.1",
            smtp_port=relay.port,
            starttls=False,
            from_addr="Acme Agent <agent@acme.example>",
            reply_domain=DOMAIN,
            inbound_port=0,
            max_message_bytes=200_000,
        )
        runner = ServiceRunner(replace(fast_config(database), email=email), "127.0.0.1", 0)
        runner.start()
        key = runner.create_account("tester")
        client = HumanWire(api_key=key, base_url=runner.base_url, max_retries=0)
        try:
            yield EmailLive(relay, runner, client, key)
        finally:
            client.close()
            runner.stop()


def in_background(action: Any) -> Any:
    """Runs ``action`` (the person's side) in a thread while the test's request is held;
    returns its join, which re-raises what it raised."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            action()
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def join() -> None:
        thread.join(_IN_BACKGROUND_TIMEOUT)
        if failure:
            raise failure[0]

    return join


def test_a_held_email_is_answered_by_the_reply(email_live: EmailLive) -> None:
    live = email_live

    def answer() -> None:
        live.deliver(live.reply(live.sent(), "Yes, ship it."))

    done = in_background(answer)
    result = live.client.messages.email(
        to="Ada@Example.com",
        subject="Release",
        message="Ship it on Friday? Notes: https://acme.example/notes?a=1&b=2",
        wait_time=20,
        metadata={"ticket": "T-1"},
    )
    done()
    assert (result.responded, result.reply) == (True, "Yes, ship it.")
    assert result.response == "Human response: Yes, ship it."
    assert result.metadata == {"ticket": "T-1"}
    mail = live.sent()
    message = mail.message
    assert mail.recipients == ("Ada@example.com",)  # normalized: the domain lower-cased
    assert str(message["From"]) == "Acme Agent <agent@acme.example>"
    assert str(message["Subject"]) == "Release"
    reply_to = str(message["Reply-To"])
    token = re.fullmatch(rf"reply\+([A-Za-z0-9_-]{{24}})@{re.escape(DOMAIN)}", reply_to)
    assert token is not None
    assert mail.envelope_from == reply_to  # bounces come back to the listener
    assert re.fullmatch(
        rf"<{token.group(1)}\.[0-9a-f]+@{re.escape(DOMAIN)}>", message["Message-ID"]
    )
    assert message.get_content_type() == "multipart/alternative"
    assert "Ship it on Friday?" in mail.text
    assert '<a href="https://acme.example/notes?a=1&amp;b=2">' in mail.html
    status = live.client.interactions.status(result.interaction_id)
    # Sent once the relay took it (the reply may overtake the record of that).
    assert (status.status, status.channel, status.delivery_status) == ("ended", "email", "sent")
    assert status.result is not None and status.result.payload.body == "Yes, ship it."


def test_replies_without_a_held_wait_reach_the_webhooks(email_live: EmailLive) -> None:
    live = email_live
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        sent = live.client.messages.email(to=ADA, message="Anything to add?", follow_up_time=60)
        assert sent.status == "pending" and sent.responded is None
        mail = live.sent()
        assert str(mail.message["Subject"]) == "Anything to add?"  # the first line
        # An out-of-office is not the answer: dropped.
        live.deliver(live.reply(mail, "I am away until Monday.", Auto_Submitted="auto-replied"))
        reply = live.reply(mail, "See the attached list.")
        reply.add_attachment(
            b"%PDF-1.4 the list", maintype="application", subtype="pdf", filename="list.pdf"
        )
        live.deliver(reply)
        [event] = receiver.wait_for("message.received")
        payload = event.payload
        assert payload.interaction_id == sent.interaction_id
        assert (payload.medium, payload.from_, payload.to) == ("email", ADA, "agent@acme.example")
        assert payload.subject == "Re: Anything to add?"
        assert payload.body == "See the attached list."  # no signature, no quote
        [url] = payload.media_urls
        served = httpx.get(url)
        assert served.status_code == 200 and served.content == b"%PDF-1.4 the list"
        assert served.headers["content-type"] == "application/pdf"
        forged = re.sub(r"signature=[0-9a-f]{4}", "signature=0000", url)
        assert httpx.get(forged).status_code == 404
        # A second reply to the ended interaction is the account's, unsolicited.
        live.deliver(live.reply(mail, "One more thing."))
        late = receiver.wait_for("message.received", count=2)[1].payload
        assert (late.interaction_id, late.body, late.medium) == (None, "One more thing.", "email")


def test_the_listener_refuses_strangers_at_rcpt(email_live: EmailLive) -> None:
    live = email_live
    stray = EmailMessage()
    stray["From"] = ADA
    stray["Subject"] = "hello"
    stray.set_content("hi")
    for address in (f"reply+{'A' * 24}@{DOMAIN}", f"postmaster@{DOMAIN}", "ada@elsewhere.example"):
        with pytest.raises(aiosmtplib.SMTPRecipientsRefused):
            live.deliver(stray, to=address)
    big = live.reply(_sent_one(live), "x" * 300_000)
    with pytest.raises(aiosmtplib.SMTPResponseException) as refused:
        live.deliver(big)
    assert refused.value.code == 552


def _sent_one(live: EmailLive) -> RelayedMail:
    live.client.messages.email(to=ADA, message="Hello", follow_up_time=60)
    return live.sent()


def _bounce_for(mail: RelayedMail) -> bytes:
    """A mail server's delivery status notification for ``mail`` (RFC 3464), as Gmail's
    mailer daemon writes one, sent back to its return path."""
    return (
        "From: Mail Delivery Subsystem <mailer-daemon@googlemail.com>\r\n"
        f"To: {mail.envelope_from}\r\n"
        "Subject: Delivery Status Notification (Failure)\r\n"
        "Auto-Submitted: auto-replied\r\n"
        "MIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="b"\r\n'
        "\r\n"
        "--b\r\n"
        "Content-Type: text/plain\r\n"
        "\r\n"
        f"Your message wasn't delivered to {ADA}.\r\n"
        "--b\r\n"
        "Content-Type: message/delivery-status\r\n"
        "\r\n"
        "Reporting-MTA: dns; googlemail.com\r\n"
        "\r\n"
        f"Final-Recipient: rfc822; {ADA}\r\n"
        "Action: failed\r\n"
        "Status: 5.1.1\r\n"
        "Diagnostic-Code: smtp; 550 5.1.1 The email account does not exist\r\n"
        "--b\r\n"
        "Content-Type: text/rfc822-headers\r\n"
        "\r\n"
        f"To: {ADA}\r\n"
        f"Message-ID: {mail.message['Message-ID']}\r\n"
        "--b--\r\n"
    ).encode()


def test_a_bounce_ends_the_held_wait_as_undelivered(email_live: EmailLive) -> None:
    live = email_live

    def bounce() -> None:
        mail = live.sent()
        raw = _bounce_for(mail)
        asyncio.run(
            aiosmtplib.send(
                raw,
                sender="mailer-daemon@googlemail.com",
                recipients=[mail.envelope_from],
                hostname="127.0.0.1",
                port=live.listener_port,
                start_tls=False,
                timeout=10,
            )
        )

    done = in_background(bounce)
    result = live.client.messages.email(to=ADA, message="Are you there?", wait_time=20)
    done()
    assert result.responded is False and result.delivery_status == "failed"
    assert result.response == "The message could not be delivered to the human."
    status = live.client.interactions.status(result.interaction_id)
    assert (status.status, status.delivery_status) == ("ended", "failed")


def test_an_email_form_carries_its_link(email_live: EmailLive) -> None:
    live = email_live
    form = live.client.forms.email(
        to=ADA,
        title="Expense report",
        fields=[{"id": "amount", "label": "Amount", "type": "text", "required": True}],
        follow_up_time=60,
    )
    assert form.status == "pending" and form.form_url is not None
    mail = live.sent()
    assert str(mail.message["Subject"]) == "Expense report"
    assert form.form_url in mail.text
    assert f'<a href="{form.form_url}">' in mail.html


def test_bad_addresses_are_refused_naming_to(email_live: EmailLive) -> None:
    live = email_live
    headers = {"Authorization": f"Bearer {live.key}"}
    for path, body in (
        ("/messages/email", {"to": "not an address", "message": "hi"}),
        ("/messages/email", {"to": "ada@", "message": "hi", "waitTime": 5}),
        (
            "/forms/email",
            {
                "to": "ada@@example.com",
                "title": "t",
                "fields": [{"id": "a", "label": "A", "type": "text"}],
                "followUpTime": 60,
            },
        ),
    ):
        answer = httpx.post(live.runner.base_url + path, json=body, headers=headers)
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert (error["code"], error["field"]) == ("invalid_request", "to")
    live.relay.refuse.add("gone@example.com")
    with pytest.raises(InvalidToNumberError) as refused:
        live.client.messages.email(to="gone@example.com", message="hi", wait_time=5)
    assert refused.value.field == "to"
    assert live.relay.messages == []


def test_a_reply_to_a_gone_address_finds_its_interaction_by_in_reply_to(
    email_live: EmailLive,
) -> None:
    live = email_live
    runner = live.runner
    other, other_key = runner.call(runner.engine.accounts.create, "other", None)
    with HumanWire(api_key=other_key, base_url=runner.base_url, max_retries=0) as theirs:
        theirs.messages.email(to=ADA, message="An old question", follow_up_time=60)
    gone = live.sent(1)
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        sent = live.client.messages.email(to=ADA, message="Anything to add?", follow_up_time=60)
        mail = live.sent(2)
        # Ada's client threads her answer under our message but addresses it to the old
        # one's reply address, whose interaction goes (its account deleted) between the
        # listener's RCPT check and the message's data.
        reply = live.reply(mail, "Yes: the budget.")
        reply.replace_header("To", str(gone.message["Reply-To"]))

        async def session() -> None:
            smtp = aiosmtplib.SMTP(
                hostname="127.0.0.1", port=live.listener_port, start_tls=False, timeout=10
            )
            await smtp.connect()
            await smtp.mail(ADA)
            await smtp.rcpt(str(gone.message["Reply-To"]))
            await asyncio.to_thread(runner.call, runner.engine.accounts.delete, other.id)
            await smtp.data(reply.as_bytes())
            await smtp.quit()

        asyncio.run(session())
        [event] = receiver.wait_for("message.received")
        assert event.payload.interaction_id == sent.interaction_id
        assert event.payload.body == "Yes: the budget."


def _media_id(url: str) -> str:
    path = httpx.URL(url).path
    assert path.startswith(MEDIA_PREFIX + "/")
    return path.removeprefix(MEDIA_PREFIX + "/")


def _stored_media(runner: ServiceRunner, url: str) -> Any:
    store = runner.engine.store
    return runner.call(store.get_provider_state, "email-media", _media_id(url))


def test_attachment_links_expire_and_expired_attachments_go_at_the_next_start(
    email_live: EmailLive,
) -> None:
    live = email_live
    media = live.runner.engine.providers["email"].media  # type: ignore[attr-defined]
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        live.client.messages.email(to=ADA, message="Send the plans?", follow_up_time=60)
        mail = live.sent()
        fresh = live.reply(mail, "Here they are.")
        fresh.add_attachment(b"plan A", maintype="text", subtype="plain", filename="a.txt")
        live.deliver(fresh)
        [url] = receiver.wait_for("message.received")[0].payload.media_urls
        assert httpx.get(url).content == b"plan A"
        # Past its expiry the link is refused, though the attachment is still kept ...
        media.clock = lambda: time.time() + MEDIA_TTL + 60
        assert httpx.get(url).status_code == 404
        assert _stored_media(live.runner, url) is not None
        # ... and a link whose expiry is moved on no longer matches its signature.
        later = re.sub(r"expires=\d+", f"expires={int(time.time() + 2 * MEDIA_TTL)}", url)
        assert httpx.get(later).status_code == 404
        # An attachment kept as long ago as its links last: its link is dead from the
        # start, and the next start deletes it (the fresh one stays).
        media.clock = lambda: time.time() - MEDIA_TTL - 3600
        old = live.reply(mail, "And the old ones.")
        old.add_attachment(b"plan B", maintype="text", subtype="plain", filename="b.txt")
        live.deliver(old)
        [old_url] = receiver.wait_for("message.received", count=2)[1].payload.media_urls
        media.clock = time.time
        assert httpx.get(old_url).status_code == 404
        assert httpx.get(url).content == b"plan A"
    assert _stored_media(live.runner, old_url) is not None
    live.runner.stop()
    live.runner.start()
    assert _stored_media(live.runner, old_url) is None
    assert _stored_media(live.runner, url) is not None
    # The signing key outlives the restart: the fresh link works at the new address.
    moved = live.runner.base_url + httpx.URL(url).raw_path.decode()
    assert httpx.get(moved).content == b"plan A"


def test_an_email_channel_card_goes_through_the_relay_and_its_reply_ends_it(
    email_live: EmailLive,
) -> None:
    live = email_live
    card = live.client.channels.create(
        type="email",
        to="Ops@Example.com",
        wait_time=20,
        message_template="[ops] {{message}} (answer within {{waitTime}}s)",
        response_template="Ops said: {{message}}",
        no_response_template="Ops is away.",
        metadata={"team": "ops"},
    )
    assert (card.type, card.to) == ("email", "Ops@example.com")

    def answer() -> None:
        reply = live.reply(live.sent(), "Restart it.")
        reply.replace_header("From", "Ops <ops@example.com>")
        live.deliver(reply)

    done = in_background(answer)
    result = live.client.messages.channel(card.id, message="Disk full on db-1")
    done()
    assert (result.responded, result.reply) == (True, "Restart it.")
    assert result.response == "Ops said: Restart it."
    assert result.metadata == {"team": "ops"}
    mail = live.sent()
    assert mail.recipients == ("Ops@example.com",)
    assert str(mail.message["Subject"]) == "[ops] Disk full on db-1 (answer within 20s)"
    assert "[ops] Disk full on db-1 (answer within 20s)" in mail.text
    assert str(mail.message["Reply-To"]).endswith(f"@{DOMAIN}")
    status = live.client.interactions.status(result.interaction_id)
    assert (status.status, status.channel) == ("ended", "email")
    assert status.result is not None and status.result.payload.body == "Restart it."


def test_an_email_without_windows_ends_at_once_and_a_reply_is_unsolicited(
    email_live: EmailLive,
) -> None:
    live = email_live
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        sent = live.client.messages.email(to=ADA, subject="Deploy", message="FYI: deploy done.")
        assert sent.status == "ended"
        assert (sent.responded, sent.response) == (None, None)
        mail = live.sent()
        assert mail.recipients == (ADA,)
        assert str(mail.message["Subject"]) == "Deploy"
        assert "FYI: deploy done." in mail.text
        status = live.client.interactions.status(sent.interaction_id)
        assert (status.status, status.channel, status.delivery_status) == (
            "ended",
            "email",
            "sent",
        )
        assert status.result is None
        # Its reply address still takes mail: the reply is the account's, unsolicited.
        live.deliver(live.reply(mail, "Thanks, noted."))
        [event] = receiver.wait_for("message.received")
        payload = event.payload
        assert (payload.interaction_id, payload.medium) == (None, "email")
        assert (payload.from_, payload.body) == (ADA, "Thanks, noted.")
        assert payload.subject == "Re: Deploy"
    assert live.client.interactions.status(sent.interaction_id).result is None


def test_a_held_email_form_ends_when_the_form_is_submitted(email_live: EmailLive) -> None:
    live = email_live

    def fill() -> None:
        mail = live.sent()
        base = live.runner.base_url
        [url] = [link for link in re.findall(r"https?://\S+", mail.text) if link.startswith(base)]
        submitted = httpx.post(url, json={"values": {"amount": "42.50"}})
        assert submitted.status_code == 200, submitted.text

    done = in_background(fill)
    form = live.client.forms.email(
        to=ADA,
        title="Expense report",
        fields=[{"id": "amount", "label": "Amount", "type": "text", "required": True}],
        wait_time=20,
    )
    done()
    assert (form.responded, form.status) == (True, "ended")
    assert form.values == {"amount": "42.50"}
    assert form.content == "Amount: 42.50"
    mail = live.sent()
    assert form.form_url is not None and form.form_url in mail.text
    assert str(mail.message["Subject"]) == "Expense report"
    status = live.client.interactions.status(form.interaction_id)
    assert (status.kind, status.status, status.channel) == ("form", "ended", "email")
