"""Asking an approver: by text (sms, whatsapp with its template outside the 24-hour
window, Slack with its buttons), by email with signed single-use approve / reject links,
or by a call of their own; and their page's address. The request's parts
(``approvals``, ``approval_steps``) decide whom to ask and when."""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import time
from typing import Any

from humanwire.types.approvals import (
    ApprovalRequest,
)

from ..approvals import texts
from ..background.schedule import Schedule
from ..config import ServiceConfig
from ..delivery import Outbound, ProviderFailure, RecipientUnreachable, WhatsAppTemplate
from ..delivery.chat import CHAT_CHANNELS
from ..errors import (
    InvalidToNumber,
    ProviderError,
)
from ..literals import DELIVERY_CHANNEL
from ..store import Store
from ..store.records import ApproverRecord, InteractionRecord
from ..telemetry import log_event, mask_address
from ._common import Account
from .approval_host import ApprovalHost
from .approval_records import REPLY_CHANNELS
from .holds import NewInteraction
from .runtime import _metadata

logger = logging.getLogger("humanwire.engine")

_BUTTON_CHANNELS = ("slack", *CHAT_CHANNELS)
"""Where an approval's ask carries Approve / Reject buttons (beside the approver's page)."""
_LINK_KEY = ("approvals", "email-link-key")
"""Where the key signing email approvers' approve / reject links is kept (made once)."""


class ApprovalAsks:
    """The first of the approvals role's parts (``ApprovalAccess`` is the role, built
    with the engine as its ``host``)."""

    host: ApprovalHost
    """The rest of the engine, as far as approvals reach it (``approval_host``)."""
    _link_key_bytes: bytes | None

    @property
    def store(self) -> Store:
        return self.host.runtime.store

    @property
    def schedule(self) -> Schedule:
        return self.host.runtime.schedule

    @property
    def config(self) -> ServiceConfig:
        return self.host.runtime.config

    def approval_page_url(self, token: str) -> str:
        return f"{self.config.public_url.rstrip('/')}/a/{token}"

    def queue_url(self, row: ApproverRecord) -> str | None:
        """The console's queue (``/console``), offered to an approver asked as a person of
        the directory: the one who can sign in there and find this request (the
        console's queue is by person). None for an approver asked by a bare address."""
        if row.person_id is None:
            return None
        return f"{self.config.public_url.rstrip('/')}/console"

    async def _link_key(self) -> bytes:
        if self._link_key_bytes is not None:
            return self._link_key_bytes
        stored = await self.store.get_provider_state(*_LINK_KEY)
        if stored is None:
            await self.store.put_provider_state(
                *_LINK_KEY, {"key": secrets.token_hex(32)}, time.time()
            )
            await self.store.committed()
            stored = await self.store.get_provider_state(*_LINK_KEY)
        assert stored is not None
        self._link_key_bytes = bytes.fromhex(str(stored["key"]))
        return self._link_key_bytes

    async def link_signature(self, token: str, decision: str) -> str:
        """The signature of an email approver's ``decision`` link: binds the decision to
        their token, so a link is never edited into the other decision or another's."""
        message = f"{token}.{decision}".encode()
        return hmac.new(await self._link_key(), message, hashlib.sha256).hexdigest()

    async def email_links(self, row: ApproverRecord) -> texts.EmailLinks:
        page = self.approval_page_url(row.token)
        signed = [
            f"{page}/{d}?signature={await self.link_signature(row.token, d)}"
            for d in ("approve", "reject")
        ]
        return texts.EmailLinks(page, signed[0], signed[1], self.queue_url(row))

    async def _shares_number(self, row: ApproverRecord) -> bool:
        """Whether the number has other open approvals (its replies must name a code)."""
        if row.channel not in REPLY_CHANNELS:
            return False
        found = await self.store.open_approvers_at(row.channel, row.to_addr)
        return any(r.interaction_id != row.interaction_id for r in found)

    async def _send_to(
        self, record: InteractionRecord, row: ApproverRecord, text: str, subject: str | None = None
    ) -> bool:
        """Sends ``text`` to an approver; False (logged) when the provider refused it.
        An email approver's replies come to ``reply+<their page token>@…``: the token
        names them (and only them), as their page's link does."""
        account = await self.host.accounts.by_id(record.account_id)
        if row.channel == "call":
            return await self._call_to(account, record, row)
        if row.channel == "email":
            sender = self.host.senders.shared("email")
        elif row.channel == "sms":
            sender = await self.host.senders.phone(account, None)
        elif row.channel == "whatsapp":
            sender = self.host.senders.shared("whatsapp")
        elif row.channel in CHAT_CHANNELS:
            sender = await self.host.senders.chat(account, DELIVERY_CHANNEL(row.channel))
        else:
            sender = await self.host.senders.slack(account, None)
        item = Outbound(
            account_id=record.account_id,
            interaction_id=record.id,
            channel=DELIVERY_CHANNEL(row.channel),  # not call (above), nor link (never sent)
            kind="message",
            from_addr=sender,
            to_addr=row.to_addr,
            text=text,
            # Outside WhatsApp's 24-hour window only a template goes out: the shared
            # account's ``notification`` ({{1}} the text), as for a message without a wait.
            template=(
                WhatsAppTemplate(name="notification", variables={"1": text})
                if row.channel == "whatsapp"
                else None
            ),
            # Slack and the chat channels show Approve / Reject (and the approver's page).
            form_url=(
                self.approval_page_url(row.token) if row.channel in _BUTTON_CHANNELS else None
            ),
            queue_url=self.queue_url(row) if row.channel in _BUTTON_CHANNELS else None,
            listening=True,
            wait_deadline=record.wait_deadline,
            subject=subject,
            reply_token=row.token if row.channel == "email" else None,
        )
        try:
            await self.host.runtime.carriers.by_channel.get(
                row.channel, self.host.runtime.carriers.default
            ).deliver(item)
        except (RecipientUnreachable, ProviderFailure) as exc:
            log_event(
                logger,
                "approval.delivery_failed",
                interaction_id=record.id,
                account_id=record.account_id,
                channel=row.channel,
                to=mask_address(row.to_addr),
                error=str(exc),
                level=logging.WARNING,
            )
            return False
        return True

    async def _call_to(
        self, account: Account, record: InteractionRecord, row: ApproverRecord
    ) -> bool:
        """Calls a ``call`` approver: a call of its own (kind ``call``, reported as calls
        are) whose request names the approval; its end is read as the decision
        (``ApprovalReplies.end_call``)."""
        request = ApprovalRequest.model_validate(record.request)
        prompt = texts.call_prompt(
            request.title,
            request.description,
            None if request.action is None else request.action.model_dump(),
        )
        link = {"interactionId": record.id, "position": row.position}
        wire: dict[str, Any] = {"to": row.to_addr, "prompt": prompt, "approval": link}
        if metadata := _metadata(record):
            wire["metadata"] = metadata
        sender = await self.host.senders.phone(account, None)
        new = NewInteraction(
            kind="call", channel="call", to=row.to_addr, from_addr=sender, request=wire
        )
        call, _ = await self.host.interactions.create(account, new)
        try:
            await self.host.delivery.deliver(call, prompt)
        except (InvalidToNumber, ProviderError) as exc:
            log_event(
                logger,
                "approval.delivery_failed",
                interaction_id=record.id,
                account_id=record.account_id,
                channel="call",
                to=mask_address(row.to_addr),
                error=exc.message,
                level=logging.WARNING,
            )
            return False
        return True
