"""Channel cards: ``POST /channels``, ``GET /channels``, ``GET|DELETE /channels/{id}``."""

from __future__ import annotations

from pydantic import TypeAdapter

from humanwire.types import ChannelCard, ChannelCardCreateRequest

from ._api import ApiCall, Operation, PathParam, Payload
from .messages import CHANNEL_ID

__all__ = ["operations"]

_channel_id = PathParam("channel_id", "A channel card id (`ch_` + 24 characters).", CHANNEL_ID)


async def _create(call: ApiCall) -> Payload:
    return await call.engine.channel_cards.create(
        call.account, call.body_as(ChannelCardCreateRequest)
    )


async def _list(call: ApiCall) -> Payload:
    return await call.engine.channel_cards.of(call.account)


async def _get(call: ApiCall) -> Payload:
    return await call.engine.channel_cards.get(call.account, call.path("channel_id"))


async def _delete(call: ApiCall) -> Payload:
    await call.engine.channel_cards.delete(call.account, call.path("channel_id"))
    return None


def operations() -> list[Operation]:
    return [
        Operation(
            "POST",
            "/channels",
            _create,
            operation_id="createChannel",
            summary="Create a channel card",
            description="sms and whatsapp cards need a number and `waitTime`; slack a member "
            "or channel id and `waitTime`; call a number.",
            tag="channels",
            status=201,
            body=TypeAdapter(ChannelCardCreateRequest),
            response=TypeAdapter(ChannelCard),
        ),
        Operation(
            "GET",
            "/channels",
            _list,
            operation_id="listChannels",
            summary="The account's channel cards",
            tag="channels",
            response=TypeAdapter(list[ChannelCard]),
        ),
        Operation(
            "GET",
            "/channels/{channel_id}",
            _get,
            operation_id="getChannel",
            summary="One channel card",
            tag="channels",
            response=TypeAdapter(ChannelCard),
            errors=(404,),
            path_params=(_channel_id,),
        ),
        Operation(
            "DELETE",
            "/channels/{channel_id}",
            _delete,
            operation_id="deleteChannel",
            summary="Delete a channel card",
            tag="channels",
            status=204,
            errors=(404,),
            path_params=(_channel_id,),
        ),
    ]
