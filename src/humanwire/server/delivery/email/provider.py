"""``EmailProvider``: the email channel through the configured SMTP relay and the
service's own listener (docs/going-live/email.md).

- **Sends**: every email interaction has a token (``reply_token``, made when it is
  opened); the message goes out ``From`` the configured sender with
  ``Reply-To: reply+<token>@<reply_domain>``, a ``Message-ID`` naming the token and the
  return path on the reply address. The token is the interaction's provider ref, so a
  bounce finds it as a carrier's status callback does. ``deliveryStatus`` is ``sent``
  once the relay accepted the message.
- **Replies**: the listener takes mail only for the token of an email interaction
  (refused at ``RCPT`` otherwise); a reply answers that interaction while it is an open
  message, else it is the account's unsolicited ``message.received`` (a late reply, a
  reply to a form's email). The reply address names the interaction; a mail that came
  without it is matched by the token in its ``In-Reply-To``. Automatic replies (an
  out-of-office) are dropped: they are not the person's answer.
- **Approvers**: an email approver's reply address is ``reply+<their page token>@…``;
  their reply (or one whose ``In-Reply-To`` names their message) decides only when it
  comes from their address and its DKIM signature verifies for their domain
  (``dkim_dns``: the key lookup, DNS unless a test injects one); any other gets the
  links back (``Engine.decide_by_email_reply``).
- **Bounces**: a failed delivery status notification is ``deliveryStatus`` ``failed``:
  the interaction ends and a held wait returns the could-not-be-delivered text.
- **Attachments** are kept (``media``) and named in the reply's ``mediaUrls`` as
  expiring signed links of the service.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from starlette.routing import BaseRoute

from ..base import Credentials, Outbound, Sent
from .channel import EmailChannel
from .compose import token_of_message_id
from .dkim import DnsTxt, dkim_verifies_async
from .inbound import Bounce, EmailListener, InboundEmail
from .media import EmailMedia

if TYPE_CHECKING:
    from ...config import EmailConfig
    from ...engine import Engine
    from ...store.base import ApproverRecord, InteractionRecord

__all__ = ["EmailProvider"]

logger = logging.getLogger("humanwire.email")


class EmailProvider:
    name = "email"

    def __init__(self, config: EmailConfig, engine: Engine, *, public_url: str) -> None:
        self.config = config
        self.engine = engine
        self.channel = EmailChannel(config)
        self.media = EmailMedia(engine.store, public_url=public_url)
        self.credentials = Credentials()
        self.listener: EmailListener | None = None
        self.dkim_dns: DnsTxt | None = None
        """The DKIM key lookup (None: DNS); tests serve their key's public half."""

    @property
    def senders(self) -> Mapping[str, str]:
        return {"email": self.channel.sender.address}

    @property
    def port(self) -> int | None:
        """The listener's port once started (``inbound_port = 0``: the one it got)."""
        return self.listener.port if self.listener is not None else None

    def routes(self) -> list[BaseRoute]:
        return self.media.routes()

    async def start(self) -> None:
        await self.media.start()
        self.listener = self.channel.listener(
            known_token=self._known, on_email=self._on_email, on_bounce=self._on_bounce
        )
        await self.listener.start()
        # The relay is not dialled at start (many take a login only with a message): a
        # send that fails says why.
        self.credentials = Credentials("unverified", "the SMTP relay is tried at the first send")

    async def aclose(self) -> None:
        if self.listener is not None:
            await self.listener.stop()
            self.listener = None

    # -- sends -------------------------------------------------------------------------
    async def deliver(self, item: Outbound) -> Sent:
        """Hands the message to the relay; raises ``EmailRecipientRefused`` (400 naming
        ``to``) or ``EmailRelayUnavailable`` (502)."""
        assert item.reply_token is not None, "an email interaction has a reply token"
        await self.channel.send(
            to=item.to_addr,
            subject=item.subject or "",
            text=item.text,
            token=item.reply_token,
        )
        return Sent(ref=item.reply_token, status="sent")

    async def accepts_sender(self, account_id: str, channel: str, sender: str) -> bool:
        return False

    async def hang_up(self, ref: str) -> None:
        """Email places no calls."""

    # -- what comes back ---------------------------------------------------------------
    async def _interaction(self, token: str) -> InteractionRecord | None:
        record = await self.engine.store.interaction_by_reply_token(token)
        return record if record is not None and record.channel == "email" else None

    async def _known(self, token: str) -> bool:
        if await self._interaction(token) is not None:
            return True
        return await self.engine.email_approver(token) is not None

    async def _on_email(self, email: InboundEmail) -> None:
        record = await self._interaction(email.token)
        approver = None if record is not None else await self.engine.email_approver(email.token)
        if record is None and approver is None and email.in_reply_to is not None:
            other = token_of_message_id(email.in_reply_to, self.channel.reply_domain)
            if other is not None:
                record = await self._interaction(other)
                approver = None if record is not None else await self.engine.email_approver(other)
        if approver is not None:
            await self._approver_reply(approver, email)
            return
        if record is None:
            return  # its interaction went with its account meanwhile
        if email.automatic:
            logger.info("email: an automatic reply (out-of-office, bulk) to %s dropped", record.id)
            return
        from ...engine.human import InboundText

        media = await self.media.keep(record.account_id, email.attachments, self.media.clock())
        ref = f"email:{email.token}:{email.message_id}" if email.message_id else None
        await self.engine.receive_reply(
            InboundText(
                channel="email",
                from_addr=email.sender or email.envelope_from,
                to_addr=record.from_addr,
                body=email.text,
                media_urls=media,
                ref=ref,
                subject=email.subject or None,
            ),
            record,
        )

    async def _approver_reply(self, approver: ApproverRecord, email: InboundEmail) -> None:
        """A reply to an approval request: signed when it comes from the approver's
        address and its DKIM signature verifies for their domain (a ``From`` alone is
        forged in one line)."""
        if email.automatic:
            logger.info("email: an automatic reply to an approval request dropped")
            return
        domain = approver.to_addr.rpartition("@")[2]
        signed = email.sender.lower() == approver.to_addr.lower() and await dkim_verifies_async(
            email.raw, domain, dns=self.dkim_dns
        )
        await self.engine.decide_by_email_reply(approver, email.text, signed=signed)

    async def _on_bounce(self, bounce: Bounce) -> None:
        if bounce.token is None:
            return
        if bounce.failed:
            logger.info("email: a bounce (%s) for %s", bounce.status or "?", bounce.token[:4])
            await self.engine.delivery_status(bounce.token, "failed")
        elif bounce.action == "delivered":
            await self.engine.delivery_status(bounce.token, "delivered")
