"""A local SMTP relay that records what the service sends (``humanwire[email]``).

Point ``[email] smtp_host`` / ``smtp_port`` at it and every message the service hands
its relay lands in :attr:`SmtpRelayFake.messages`, parsed, with its envelope. It speaks
real SMTP (aiosmtpd, on its own thread), so a test exercises the service's sending code
as a real relay would: optional login (``username`` / ``password``), optional STARTTLS
(``tls_context``), and recipients it refuses with 550 (``refuse``)::

    from humanwire.testing.email import smtp_relay_fake

    with smtp_relay_fake(username="svc", password="secret") as relay:
        ...  # the service sends to 127.0.0.1:relay.port
        mail = relay.wait_for(1, timeout=5)[0]
        assert mail.message["To"] == "ada@example.com"

It imports nothing of the service: it stands for the relay, so it cannot agree with the
implementation by construction.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any

__all__ = ["RelayedMail", "SmtpRelayFake", "smtp_relay_fake"]


@dataclass(frozen=True)
class RelayedMail:
    """One message the relay accepted: the envelope and the parsed message."""

    envelope_from: str
    recipients: tuple[str, ...]
    raw: bytes = field(repr=False)
    authenticated_as: str | None = None
    over_tls: bool = False

    @property
    def message(self) -> EmailMessage:
        parsed = message_from_bytes(self.raw, policy=policy.default)
        assert isinstance(parsed, EmailMessage)
        return parsed

    @property
    def text(self) -> str:
        """The text/plain part."""
        part = self.message.get_body(preferencelist=("plain",))
        return str(part.get_content()) if part is not None else ""

    @property
    def html(self) -> str:
        """The text/html part."""
        part = self.message.get_body(preferencelist=("html",))
        return str(part.get_content()) if part is not None else ""


class SmtpRelayFake:
    """The relay's state: what it accepted, whom it refuses. Thread-safe."""

    def __init__(
        self,
        *,
        username: str | None = None,
        password: str | None = None,
        refuse: Iterable[str] = (),
    ) -> None:
        self.username = username
        self.password = password
        self.refuse = {address.lower() for address in refuse}
        """Recipients answered ``550 5.1.1`` at RCPT (a mailbox that does not exist)."""
        self.messages: list[RelayedMail] = []
        self.port = 0
        self._changed = threading.Condition()

    # aiosmtpd's hooks (run on the relay's thread)
    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        if address.lower() in self.refuse:
            return "550 5.1.1 No such user"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        login = session.auth_data
        mail = RelayedMail(
            envelope_from=envelope.mail_from,
            recipients=tuple(envelope.rcpt_tos),
            raw=envelope.original_content or b"",
            authenticated_as=login.login.decode() if login is not None else None,
            over_tls=session.ssl is not None,
        )
        with self._changed:
            self.messages.append(mail)
            self._changed.notify_all()
        return "250 2.0.0 Queued"

    def _authenticate(
        self, server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any
    ) -> Any:
        from aiosmtpd.smtp import AuthResult

        login, password = auth_data.login.decode(), auth_data.password.decode()
        ok = login == self.username and password == self.password
        # handled=False: aiosmtpd answers 535 itself (True would leave the client waiting).
        return AuthResult(success=ok, handled=False, auth_data=auth_data if ok else None)

    def wait_for(self, count: int, timeout: float = 5.0) -> list[RelayedMail]:
        """The first ``count`` messages, once they are in; ``TimeoutError`` otherwise."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.messages) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(self.messages)} of {count} messages relayed")
                self._changed.wait(left)
            return list(self.messages[:count])


@contextmanager
def smtp_relay_fake(
    *,
    username: str | None = None,
    password: str | None = None,
    refuse: Iterable[str] = (),
    tls_context: ssl.SSLContext | None = None,
    host: str = "127.0.0.1",
) -> Iterator[SmtpRelayFake]:
    """Runs a :class:`SmtpRelayFake` on ``host`` (a free port: ``relay.port``) until the
    block ends. With ``username``, a login is required (over STARTTLS when
    ``tls_context`` is given, else in the clear: it is loopback)."""
    from aiosmtpd.controller import Controller

    fake = SmtpRelayFake(username=username, password=password, refuse=refuse)
    options: dict[str, Any] = {}
    if username is not None:
        options.update(
            auth_required=True,
            auth_require_tls=tls_context is not None,
            authenticator=fake._authenticate,
        )
    if tls_context is not None:
        options.update(tls_context=tls_context, require_starttls=True)

    class _AnyPort(Controller):  # type: ignore[misc]
        def _trigger_server(self) -> None:
            # Port 0 binds any free port; the readiness probe must dial the real one.
            server: Any = self.server
            self.port = server.sockets[0].getsockname()[1]
            super()._trigger_server()  # type: ignore[no-untyped-call]

    controller = _AnyPort(fake, hostname=host, port=0, server_hostname="localhost", **options)
    controller.start()
    try:
        fake.port = controller.port
        yield fake
    finally:
        controller.stop()
