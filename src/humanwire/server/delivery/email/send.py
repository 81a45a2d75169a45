"""Sending through an SMTP relay with aiosmtplib: STARTTLS or implicit TLS, login, a
timeout on every step, and typed errors.

A relay that cannot be reached, times out, refuses the login or answers 4xx raises
:class:`EmailRelayUnavailable` (a :class:`ProviderFailure`: nothing was sent, retry
later); a relay that refuses the recipient with 5xx raises :class:`EmailRecipientRefused`
(a :class:`RecipientUnreachable`). The engine turns either into a ``failed`` delivery or
the API's error, as it does for the other providers.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from ..base import ProviderFailure, RecipientUnreachable
from .compose import ComposedEmail

__all__ = ["EmailRecipientRefused", "EmailRelayUnavailable", "SmtpRelay"]


class EmailRelayUnavailable(ProviderFailure):
    """The relay is down, slow, refused the login or answered a temporary error:
    nothing was sent."""

    def __init__(self, message: str, *, retry_after: float = 30.0, permanent: bool = False):
        super().__init__(message, retry_after=retry_after)
        self.permanent = permanent
        """The relay refused for good (a 5xx to the sender or the data; a bad login)."""


class EmailRecipientRefused(RecipientUnreachable):
    """The relay refused the recipient for good (5xx at RCPT): nothing was sent."""

    def __init__(self, message: str = "the mail relay refused the recipient") -> None:
        super().__init__(message, field="to")


@dataclass(frozen=True)
class SmtpRelay:
    """The relay every message goes out through (``[email] smtp_*``)."""

    host: str
    port: int = 587
    username: str | None = None
    password: str | None = None
    starttls: bool = True
    use_tls: bool = False
    timeout: float = 30.0
    tls_context: ssl.SSLContext | None = None
    """Certificates to trust (tests: their own CA); None: the system's."""

    async def send(self, email: ComposedEmail) -> None:
        """Hands ``email`` to the relay; raises :class:`EmailRelayUnavailable` or
        :class:`EmailRecipientRefused`. Returns once the relay accepted it (its delivery
        is reported later, by a bounce, or never)."""
        import aiosmtplib

        try:
            _refused, _reply = await aiosmtplib.send(
                email.message,
                sender=email.envelope_from,
                recipients=[email.to],
                hostname=self.host,
                port=self.port,
                username=self.username,
                password=self.password,
                start_tls=self.starttls if not self.use_tls else False,
                use_tls=self.use_tls,
                timeout=self.timeout,
                tls_context=self.tls_context,
            )
        except aiosmtplib.SMTPRecipientsRefused as exc:
            codes = [refused.code for refused in exc.recipients]
            if codes and all(500 <= code < 600 for code in codes):
                raise EmailRecipientRefused(
                    f"the mail relay refused the recipient ({codes[0]})"
                ) from None
            raise EmailRelayUnavailable(
                f"the mail relay deferred the recipient ({codes[0] if codes else '?'})"
            ) from None
        except aiosmtplib.SMTPAuthenticationError as exc:
            raise EmailRelayUnavailable(
                f"the mail relay refused the login ({exc.code})", permanent=True
            ) from None
        except aiosmtplib.SMTPResponseException as exc:
            permanent = 500 <= exc.code < 600
            raise EmailRelayUnavailable(
                f"the mail relay refused the message ({exc.code})", permanent=permanent
            ) from None
        except aiosmtplib.SMTPTimeoutError:
            raise EmailRelayUnavailable(
                f"the mail relay did not answer within {self.timeout:g} s"
            ) from None
        except (aiosmtplib.SMTPException, OSError) as exc:
            # Connection refused, reset, TLS failures, a name that does not resolve.
            raise EmailRelayUnavailable(
                f"the mail relay at {self.host}:{self.port} cannot be reached "
                f"({type(exc).__name__})"
            ) from None
