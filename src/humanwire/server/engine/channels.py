"""The channel cards role (``engine.channel_cards``): stored routes (recipient, windows,
templates) addressed by one id. Sending through a card is in ``sends``."""

from __future__ import annotations

import secrets

from humanwire.types import (
    DEFAULT_NO_RESPONSE_TEMPLATE,
    DEFAULT_RESPONSE_TEMPLATE,
    ChannelCard,
    ChannelCardCreateRequest,
)

from ..errors import (
    NotFound,
)
from ..store.records import ChannelRecord
from ._common import Account
from .runtime import Runtime, _timestamp


class ChannelCards:
    """The account's channel cards."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._store = runtime.store

    async def create(self, account: Account, request: ChannelCardCreateRequest) -> ChannelCard:
        record = ChannelRecord(
            id="ch_" + secrets.token_urlsafe(18),
            account_id=account.id,
            type=request.type,
            to_addr=request.to,
            wait_time=request.wait_time,
            follow_up_time=request.follow_up_time,
            message_template=request.message_template,
            response_template=request.response_template or DEFAULT_RESPONSE_TEMPLATE,
            no_response_template=request.no_response_template or DEFAULT_NO_RESPONSE_TEMPLATE,
            reply_link=request.reply_link,
            created_at=self._runtime.clock(),
            metadata=request.metadata,
        )
        await self._store.insert_channel(record)
        self._runtime.notices.notify(account.id, "channel", record.id)
        return self._card(record)

    @staticmethod
    def _card(record: ChannelRecord) -> ChannelCard:
        return ChannelCard(
            id=record.id,
            type=record.type,
            to=record.to_addr,
            wait_time=record.wait_time,
            follow_up_time=record.follow_up_time,
            message_template=record.message_template,
            response_template=record.response_template,
            no_response_template=record.no_response_template,
            reply_link=record.reply_link,
            created_at=_timestamp(record.created_at),
            metadata=record.metadata,
        )

    async def of(self, account: Account) -> list[ChannelCard]:
        return [self._card(record) for record in await self._store.channels_of(account.id)]

    async def get(self, account: Account, channel_id: str) -> ChannelCard:
        record = await self._store.get_channel(account.id, channel_id)
        if record is None:
            raise NotFound(f"no channel {channel_id!r}", field="channelId")
        return self._card(record)

    async def delete(self, account: Account, channel_id: str) -> None:
        if not await self._store.delete_channel(account.id, channel_id):
            raise NotFound(f"no channel {channel_id!r}", field="channelId")
        self._runtime.notices.notify(account.id, "channel", channel_id)
