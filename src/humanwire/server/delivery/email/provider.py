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
  reply to a form's email). It answers only from the address asked (with a DKIM
  signature for its domain under ``require_dkim``) and with text to read (or an
  attachment); any other is kept unsolicited, the ask waits on, and the address asked
  is told why (``notices``; three times at most). The reply address names the
  interaction; a mail that came without it is matched by the token in its
  ``In-Reply-To``. Automatic replies (an out-of-office) are dropped: they are not the
  person's answer.
- **Approvers**: an email approver's reply address is ``reply+<their page token>@…``;
  their reply (or one whose ``In-Reply-To`` names their message) decides only when it
  comes from their address and its DKIM signature verifies for their domain
  (``dkim_dns``: the key lookup, DNS unless a test injects one); any other gets the
  links back (``InboundPort.decide_by_email_reply``).
- **Bounces**: a failed delivery status notification is ``deliveryStatus`` ``failed``:
  the interaction ends and a held wait returns the could-not-be-delivered text.
- **Attachments** are kept (``media``) and named in the reply's ``mediaUrls`` as
  expiring signed links of the service.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from starlette.routing import BaseRoute

from ..base import Credentials, Outbound, Sent
from . import notices as texts
from .channel import EmailChannel
from .compose import token_of_message_id
from .dkim import DnsTxt, dkim_verifies_async
from .inbound import Bounce, EmailListener, InboundEmail
from .media import EmailMedia
from .reply_text import readable

if TYPE_CHECKING:
    from ...config import EmailConfig
    from ...store.records import ApproverRecord, InteractionRecord
    from ..port import InboundPort

__all__ = ["EmailProvider"]

logger = logging.getLogger("humanwire.email")

MAX_NOTICES = 3
"""Emails telling the person asked that a reply was no answer, per interaction."""
_NOTICES = "email.notices"


class EmailProvider:
    name = "email"
    channels = ("email",)

    def __init__(self, config: EmailConfig, inbound: InboundPort, *, public_url: str) -> None:
        self.config = config
        self.inbound = inbound
        self.channel = EmailChannel(config)
        self.media = EmailMedia(inbound.state, public_url=public_url)
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
        record = await self.inbound.interaction_by_reply_token(token)
        return record if record is not None and record.channel == "email" else None

    async def _known(self, token: str) -> bool:
        if await self._interaction(token) is not None:
            return True
        return await self.inbound.email_approver(token) is not None

    async def _on_email(self, email: InboundEmail) -> None:
        record = await self._interaction(email.token)
        approver = None if record is not None else await self.inbound.email_approver(email.token)
        if record is None and approver is None and email.in_reply_to is not None:
            other = token_of_message_id(email.in_reply_to, self.channel.reply_domain)
            if other is not None:
                record = await self._interaction(other)
                approver = None if record is not None else await self.inbound.email_approver(other)
        if approver is not None:
            await self._approver_reply(approver, email)
            return
        if record is None:
            return  # its interaction went with its account meanwhile
        if email.automatic:
            logger.info("email: an automatic reply (out-of-office, bulk) to %s dropped", record.id)
            return
        from ..port import InboundText

        media = await self.media.keep(record.account_id, email.attachments, self.media.clock())
        ref = f"email:{email.token}:{email.message_id}" if email.message_id else None
        text = InboundText(
            channel="email",
            from_addr=email.sender or email.envelope_from,
            to_addr=record.from_addr,
            body=email.text,
            media_urls=media,
            ref=ref,
            subject=email.subject or None,
        )
        refusal = await self._why_no_answer(record, email)
        if refusal is None:
            await self.inbound.receive_reply(text, record)
            return
        # Kept for the account, the ask left waiting, and the person asked told why
        # (never the reply's From: that may be anyone's).
        logger.info("email: a reply to %s is no answer (%s)", record.id, refusal.split(":")[0])
        stored = await self.inbound.receive_unsolicited(text, record.account_id)
        if stored is not None and record.kind == "message" and record.status == "pending":
            await self._tell_the_asked(record, email.token, refusal)

    async def _why_no_answer(self, record: InteractionRecord, email: InboundEmail) -> str | None:
        """None when ``email`` is the answer of the person ``record`` asked; else what
        to tell them: a reply answers only from the address asked (a forwarded email
        hands its reply address to anyone), signed for its domain when ``require_dkim``,
        with something to read."""
        asked = record.to_addr
        if email.sender.lower() != asked.lower():
            return texts.from_another_address(email.sender, asked)
        if self.config.require_dkim:
            domain = asked.rpartition("@")[2]
            if not await dkim_verifies_async(email.raw, domain, dns=self.dkim_dns):
                return texts.not_signed(domain)
        if not readable(email.text) and not email.attachments:
            return texts.nothing_to_read()
        return None

    async def _tell_the_asked(self, record: InteractionRecord, token: str, text: str) -> None:
        """At most ``MAX_NOTICES`` per interaction (a loop with an auto-responder that
        does not say it is one ends there); a relay that fails loses only the notice."""
        state = await self.inbound.state.get_provider_state(_NOTICES, token)
        sent = int(state["sent"]) if state is not None else 0
        if sent >= MAX_NOTICES:
            return
        await self.inbound.state.put_provider_state(
            _NOTICES, token, {"sent": sent + 1}, time.time()
        )
        subject = str(record.request.get("subject") or record.request.get("title") or "")
        try:
            await self.channel.send(
                to=record.to_addr,
                subject=f"Re: {subject}" if subject else "Your reply",
                text=text,
                token=token,
            )
        except Exception as exc:
            logger.warning("email: telling %s about a reply failed (%s)", record.id, exc)

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
        await self.inbound.decide_by_email_reply(approver, email.text, signed=signed)

    async def _on_bounce(self, bounce: Bounce) -> None:
        if bounce.token is None:
            return
        if bounce.failed:
            logger.info("email: a bounce (%s) for %s", bounce.status or "?", bounce.token[:4])
            await self.inbound.delivery_status(bounce.token, "failed")
        elif bounce.action == "delivered":
            await self.inbound.delivery_status(bounce.token, "delivered")
