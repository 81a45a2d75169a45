"""The built-in provider: every delivery lands in the store, where the web inbox and the
sandbox API show it to whoever plays the human."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from types import MappingProxyType

from ..config import (
    SHARED_EMAIL_ADDRESS,
    SHARED_SLACK_WORKSPACE,
    SHARED_SMS_NUMBER,
    SHARED_WHATSAPP_NUMBER,
)
from ..store.protocol import Store
from ..store.records import DeliveryRecord
from .base import Outbound, Sent
from .chat import CHAT_CHANNELS

__all__ = ["SandboxProvider"]


class SandboxProvider:
    """Writes each delivery to the store, then, once it is committed, tells
    ``on_delivered`` (the engine wakes the scripted human and the live inbox from
    there)."""

    name = "sandbox"
    senders: Mapping[str, str] = MappingProxyType(
        {
            "sms": SHARED_SMS_NUMBER,
            "whatsapp": SHARED_WHATSAPP_NUMBER,
            "slack": SHARED_SLACK_WORKSPACE,
            "email": SHARED_EMAIL_ADDRESS,
            "call": SHARED_SMS_NUMBER,
            **{channel.name: channel.sandbox_sender for channel in CHAT_CHANNELS.values()},
        }
    )

    def __init__(self, store: Store, on_delivered: Callable[[DeliveryRecord], None]) -> None:
        self._store = store
        self._on_delivered = on_delivered

    async def deliver(self, item: Outbound) -> Sent:
        record = await self._store.insert_delivery(
            id=str(uuid.uuid4()),
            account_id=item.account_id,
            interaction_id=item.interaction_id,
            channel=item.channel,
            kind=item.kind,
            from_addr=item.from_addr,
            to_addr=item.to_addr,
            text=item.text,
            form_url=item.form_url,
            created_at=time.time(),
        )
        # The row is the message: shown once committed, with the interaction it belongs
        # to (the same batch); a rollback raises ``StoreUnavailable``, nothing shown.
        await self._store.committed()
        self._on_delivered(record)
        return Sent(ref=record.id, status="delivered")

    async def accepts_sender(self, account_id: str, channel: str, sender: str) -> bool:
        """Any workspace id: the sandbox has no installs to check; its one shared number
        is the engine's to check."""
        return channel == "slack"

    async def hang_up(self, ref: str) -> None:
        """Nothing runs on the sandbox once the engine ended the call's interaction."""
