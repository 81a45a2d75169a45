"""Channel cards: ``/channels`` (send through one with ``messages.channel``)."""

from __future__ import annotations

import builtins
from collections.abc import Mapping

from humanwire._http import Flow
from humanwire.types import ChannelCard, ChannelCardCreateRequest

from ._base import ModeT, Resource, build, endpoint, path_id

__all__ = ["Channels"]


class Channels(Resource[ModeT]):
    @endpoint
    def create(
        self,
        *,
        type: str,
        to: str,
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        message_template: str | None = None,
        response_template: str | None = None,
        no_response_template: str | None = None,
        reply_link: bool = False,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[ChannelCard]:
        """``POST /channels``: ``type`` is sms, whatsapp, slack, email, call, telegram,
        discord or teams (``to`` that channel's address: a teams card's is a Teams user id,
        ``29:…``). Every card but a call card needs ``wait_time``; ``message_template``
        must contain ``{{message}}``."""
        body = build(
            ChannelCardCreateRequest,
            type=type,
            to=to,
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            message_template=message_template,
            response_template=response_template,
            no_response_template=no_response_template,
            reply_link=reply_link,
            metadata=metadata,
        )
        return self._post("/channels", body, ChannelCard, idempotency_key=idempotency_key)

    @endpoint
    def list(self) -> Flow[builtins.list[ChannelCard]]:
        return self._get("/channels", builtins.list[ChannelCard])

    @endpoint
    def get(self, channel_id: str) -> Flow[ChannelCard]:
        return self._get(f"/channels/{path_id(channel_id, 'channelId')}", ChannelCard)

    @endpoint
    def delete(self, channel_id: str) -> Flow[None]:
        return self._delete(f"/channels/{path_id(channel_id, 'channelId')}")
