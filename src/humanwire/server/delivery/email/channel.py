"""The email channel as the engine uses it: one object made from ``[email]``
(:class:`EmailConfig`) that sends an interaction's messages and makes its listener."""

from __future__ import annotations

import secrets
import ssl
from collections.abc import Sequence

from ...config import EmailConfig
from .compose import ComposedEmail, Sender, compose_email, parse_sender
from .inbound import EmailListener, OnBounce, OnEmail, TokenLookup
from .send import SmtpRelay

__all__ = ["EmailChannel", "new_reply_token"]


def new_reply_token() -> str:
    """A fresh interaction token for ``reply+<token>@…``: 24 URL-safe characters (144
    random bits), so a reply address cannot be guessed."""
    return secrets.token_urlsafe(18)


class EmailChannel:
    """Sends through the configured relay and makes the listener for replies.

    ``tls_context``: the certificates the relay's is checked against (tests: their own
    CA); None: the system's."""

    def __init__(self, config: EmailConfig, *, tls_context: ssl.SSLContext | None = None):
        self.config = config
        self.sender: Sender = parse_sender(config.from_addr)
        self.relay = SmtpRelay(
            host=config.smtp_host,
            port=config.smtp_port,
            username=config.smtp_username,
            password=config.smtp_password,
            starttls=config.starttls,
            use_tls=config.use_tls,
            timeout=config.timeout,
            tls_context=tls_context,
        )

    @property
    def reply_domain(self) -> str:
        return self.config.reply_domain

    def compose(
        self, *, to: str, subject: str, text: str, token: str, thread: Sequence[str] = ()
    ) -> ComposedEmail:
        return compose_email(
            sender=self.sender,
            to=to,
            subject=subject,
            text=text,
            token=token,
            reply_domain=self.config.reply_domain,
            thread=thread,
        )

    async def send(
        self, *, to: str, subject: str, text: str, token: str, thread: Sequence[str] = ()
    ) -> ComposedEmail:
        """Composes and sends one message of the interaction ``token``; ``thread`` is
        the ``Message-ID`` s it sent before (oldest first). Returns what was sent (keep
        its ``message_id`` for the next one's ``thread``); raises
        :class:`EmailRelayUnavailable` / :class:`EmailRecipientRefused`."""
        email = self.compose(to=to, subject=subject, text=text, token=token, thread=thread)
        await self.relay.send(email)
        return email

    def listener(
        self, *, known_token: TokenLookup, on_email: OnEmail, on_bounce: OnBounce
    ) -> EmailListener:
        """The listener at ``inbound_host``:``inbound_port``, offering STARTTLS when a
        certificate is configured (start it on the service's loop; stop it before the
        store closes)."""
        config = self.config
        tls: ssl.SSLContext | None = None
        if config.inbound_tls_cert and config.inbound_tls_key:
            tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            tls.load_cert_chain(config.inbound_tls_cert, config.inbound_tls_key)
        return EmailListener(
            reply_domain=config.reply_domain,
            known_token=known_token,
            on_email=on_email,
            on_bounce=on_bounce,
            host=config.inbound_host,
            port=config.inbound_port,
            max_message_bytes=config.max_message_bytes,
            max_recipients=config.max_recipients,
            idle_timeout=config.idle_timeout,
            session_timeout=config.session_timeout,
            max_connections=config.max_connections,
            tls_context=tls,
        )
