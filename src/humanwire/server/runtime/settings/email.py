"""The ``[email]`` section: the SMTP relay out, the listener in, the replies' domain."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import (
    AfterValidator,
    Field,
)

from ...config import (
    EmailConfig,
)
from .checks import (
    Port,
    Secret,
    Switch,
    Text,
    _about,
    _count,
    _domain,
    _seconds,
    _sender,
    _Strict,
    _text,
)
from .keys import _how, _keys

__all__ = ["EmailSettings"]


def _expand(path: str | None) -> str | None:
    return str(Path(path).expanduser()) if path else None


class EmailSettings(_Strict):
    """Email out through an SMTP relay, replies in through the service's listener
    (docs/going-live/email.md)."""

    smtp_host: Annotated[
        Text | None,
        _about(
            "The SMTP relay mail goes out through (your provider's, e.g. `smtp.sendgrid.net`); "
            "with `from` and `reply_domain`, turns email on."
        ),
    ] = None
    smtp_port: Annotated[
        Port, _about("The relay's port: 587 (STARTTLS), 465 (TLS from the start) or 25.")
    ] = EmailConfig.smtp_port
    smtp_username: Annotated[Text | None, _about("The relay's login name, if it asks for one.")] = (
        None
    )
    smtp_password: Annotated[Secret | None, _about("The relay's password or API key.")] = None
    starttls: Annotated[
        Switch,
        _about(
            "Upgrade the relay connection with STARTTLS (port 587); port 465 always uses TLS; "
            "`false` only for a relay on loopback."
        ),
    ] = EmailConfig.starttls
    from_: Annotated[
        Annotated[str, AfterValidator(_sender)] | None,
        Field(alias="from"),
        _about(
            "The sender, with the name mail clients show: `Acme Agent <agent@acme.example>` "
            "(its domain needs SPF and DKIM at the relay)."
        ),
    ] = None
    reply_domain: Annotated[
        Annotated[str, AfterValidator(_domain)] | None,
        _about(
            "Replies go to `reply+<token>@<reply_domain>`; its MX record points at this "
            "service's listener (`inbound_host`, `inbound_port`)."
        ),
    ] = None
    inbound_host: Annotated[
        Text, _about("Address the SMTP listener for replies binds (`0.0.0.0`: every interface).")
    ] = EmailConfig.inbound_host
    inbound_port: Annotated[
        Port,
        _about("Port of the SMTP listener (25 to take mail from the internet; `0`: any free)."),
    ] = EmailConfig.inbound_port
    inbound_tls_cert: Annotated[
        Annotated[str, AfterValidator(_text)] | None,
        _about(
            "PEM certificate chain (a file) the listener offers STARTTLS with, for the name "
            "the MX record points at; with `inbound_tls_key`. Without it replies arrive "
            "unencrypted."
        ),
    ] = None
    inbound_tls_key: Annotated[
        Annotated[str, AfterValidator(_text)] | None,
        _about("The certificate's private key (a PEM file)."),
    ] = None
    timeout: Annotated[
        float, _seconds(300), _about("Seconds the relay has for each step of one send.")
    ] = EmailConfig.timeout
    max_message_bytes: Annotated[
        int,
        _count(10_000, 100 << 20),
        _about("Largest reply the listener takes, attachments included; past it: 552."),
    ] = EmailConfig.max_message_bytes
    require_dkim: Annotated[
        Switch,
        _about(
            "A reply answers only when its DKIM signature verifies for the asked address's "
            "domain (as approvals by reply demand); else coming `From` that address suffices."
        ),
    ] = EmailConfig.require_dkim

    @property
    def given(self) -> bool:
        return bool(self.model_fields_set)

    def config(self) -> EmailConfig | None:
        if self.smtp_host is None or self.from_ is None or self.reply_domain is None:
            return None
        port_465 = self.smtp_port == 465
        return EmailConfig(
            smtp_host=self.smtp_host,
            from_addr=self.from_,
            reply_domain=self.reply_domain,
            smtp_port=self.smtp_port,
            smtp_username=self.smtp_username,
            smtp_password=self.smtp_password.get_secret_value() if self.smtp_password else None,
            starttls=self.starttls and not port_465,
            use_tls=port_465,
            timeout=self.timeout,
            inbound_host=self.inbound_host,
            inbound_port=self.inbound_port,
            max_message_bytes=self.max_message_bytes,
            require_dkim=self.require_dkim,
            inbound_tls_cert=_expand(self.inbound_tls_cert),
            inbound_tls_key=_expand(self.inbound_tls_key),
        )

    def problems(self) -> list[str]:
        if not self.given:
            return []
        needs = {"smtp_host": self.smtp_host, "from": self.from_, "reply_domain": self.reply_domain}
        missing = [key for key, value in needs.items() if value is None]
        problems: list[str] = []
        if missing:
            problems.append(
                f"email is half-configured: missing {_keys('email', missing)}: set "
                + " and ".join(_how("email", key) for key in missing)
            )
        if (self.smtp_username is None) != (self.smtp_password is None):
            problems.append(
                "email.smtp_username and email.smtp_password go together (the relay's login)"
            )
        tls = {"inbound_tls_cert": self.inbound_tls_cert, "inbound_tls_key": self.inbound_tls_key}
        if (tls["inbound_tls_cert"] is None) != (tls["inbound_tls_key"] is None):
            problems.append(
                "email.inbound_tls_cert and email.inbound_tls_key go together (the listener's "
                "certificate and its key)"
            )
        for key, value in tls.items():
            if value is not None and not Path(_expand(value) or "").is_file():
                problems.append(f"email.{key}: no such file")
        return problems
