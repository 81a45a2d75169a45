"""The sandbox API: the human's side of the embedded service (only when
``config.sandbox_enabled``), scoped to the caller's account like everything else. It
answers only on the channels the sandbox carries: one a real provider carries is 403
``live_channel`` (unless ``sandbox_live_channels``), and whatever it decides is recorded
``via: sandbox``."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import from_json

from humanwire.types import (
    CallResponse,
    SandboxCallOutcomeRequest,
    SandboxDelivery,
    SandboxInboundCallRequest,
    SandboxReplyRequest,
)

from ..delivery.chat import CHAT_CHANNELS
from ..errors import InvalidRequest, NotFound
from ._api import ApiCall, Operation, PathParam, Payload, QueryParam, query_wait

__all__ = ["operations"]

CHANNELS = ("sms", "whatsapp", "slack", "call", "email", *CHAT_CHANNELS)
_THREADED = ("slack", "email", *CHAT_CHANNELS)


async def _matching(call: ApiCall, after: str | None) -> tuple[list[SandboxDelivery], str | None]:
    """The filtered deliveries (newest first; only those newer than ``after`` when given)
    and the id of the newest delivery of the account, filter or not."""
    every = await call.engine.sandbox.deliveries(call.account)
    newest = every[0].id if every else None
    filtered = await call.engine.sandbox.deliveries(
        call.account,
        to=call.query.get("to"),
        channel=call.query.get("channel"),
        interaction_id=call.query.get("interactionId"),
    )
    if after is None:
        return filtered, newest
    ids = [delivery.id for delivery in every]
    if after not in ids:
        raise NotFound(f"no such delivery: {after!r}", field="after")
    newer = set(ids[: ids.index(after)])
    return [delivery for delivery in filtered if delivery.id in newer], newest


async def _deliveries(call: ApiCall) -> Payload:
    channel = call.query.get("channel")
    if channel is not None and channel not in CHANNELS:
        raise InvalidRequest(f"channel must be one of {', '.join(CHANNELS)}", field="channel")
    wait = query_wait(call)
    after = call.query.get("after")
    found, newest = await _matching(call, after)
    if wait is not None:
        # Event-driven: each wake-up means a new delivery exists; re-check the filter.
        deadline = time.monotonic() + wait
        while not found and (remaining := deadline - time.monotonic()) > 0:
            await call.engine.sandbox.wait_for_delivery(call.account, newest, remaining)
            found, newest = await _matching(call, after)
    # docs/design.md lists ``formUrl`` on every delivery: null, not left out, when no form.
    return [{**delivery.to_wire(), "formUrl": delivery.form_url} for delivery in found]


async def _reply(call: ApiCall) -> Payload:
    request = call.body_as(SandboxReplyRequest)
    call.engine.sandbox.check_answers(request.channel, field="channel")
    # A start link opened in the chat with the sandbox's bot: bound as Telegram's /start
    # is (docs/people.md), and a token not valid said in the answer.
    binding = await call.engine.people.open_start_text(request.channel, request.from_, request.body)
    if binding is not None:
        if not binding.bound:
            raise InvalidRequest(binding.text, field="body")
        return None
    await call.engine.sandbox.reply(call.account, request, call.named)
    return None


def _thread_named(params: Mapping[str, Any], raw: bytes) -> str | None:
    """A slack or email reply's thread, ``interactionId`` in its body (read ahead)."""
    try:
        data = from_json(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("channel") not in _THREADED:
        return None
    named = data.get("interactionId")
    return named if isinstance(named, str) else None


async def _end_call(call: ApiCall) -> Payload:
    request = call.body_as(SandboxCallOutcomeRequest)
    return await call.engine.sandbox.end_call(call.account, call.path("interactionId"), request)


async def _inbound_call(call: ApiCall) -> Payload:
    await call.engine.sandbox.inbound_call(call.account, call.body_as(SandboxInboundCallRequest))
    return None


def operations() -> list[Operation]:
    return [
        Operation(
            "GET",
            "/sandbox/messages",
            _deliveries,
            operation_id="listSandboxDeliveries",
            summary="What reached the human (newest first)",
            description="`text` exactly as the recipient sees it. With `after` only newer "
            "deliveries; with `wait` the request is held until one matches.",
            tag="sandbox",
            response=TypeAdapter(list[SandboxDelivery]),
            errors=(404,),
            query=(
                QueryParam("to", "Recipient.", {"type": "string"}),
                QueryParam("channel", "Channel.", {"type": "string", "enum": list(CHANNELS)}),
                QueryParam("interactionId", "Interaction.", {"type": "string"}),
                QueryParam("after", "Only deliveries newer than this id.", {"type": "string"}),
                QueryParam(
                    "wait",
                    "Seconds to hold until a delivery matches (0 to 60; 0 holds nothing).",
                    {"type": "number", "minimum": 0, "maximum": 60},
                ),
            ),
        ),
        Operation(
            "POST",
            "/sandbox/replies",
            _reply,
            operation_id="sandboxReply",
            summary="The human texts back (or writes unsolicited)",
            description="`from` is the human, `to` the number or workspace that sent. A "
            "channel a real provider carries is 403 `live_channel`; an approval it decides "
            "is recorded `via: sandbox`. On telegram, `/start <token>` opens a person's start "
            "link (`POST /people/{personId}/confirm`) in the chat `from`: it binds that "
            "chat, or is 400 naming `body` when the token is not valid.",
            tag="sandbox",
            status=204,
            body=TypeAdapter(SandboxReplyRequest),
            names=_thread_named,
        ),
        Operation(
            "POST",
            "/sandbox/calls/{interactionId}",
            _end_call,
            operation_id="sandboxEndCall",
            summary="The callee ends an outbound call",
            description="403 `live_channel` when a real provider places calls.",
            tag="sandbox",
            body=TypeAdapter(SandboxCallOutcomeRequest),
            response=TypeAdapter(CallResponse),
            errors=(404, 409),
            path_params=(PathParam("interactionId", "The call interaction."),),
        ),
        Operation(
            "POST",
            "/sandbox/inbound-calls",
            _inbound_call,
            operation_id="sandboxInboundCall",
            summary="Someone calls a reserved number and leaves a message",
            description="403 `live_channel` when a real provider takes calls.",
            tag="sandbox",
            status=204,
            body=TypeAdapter(SandboxInboundCallRequest),
            errors=(404,),
        ),
    ]
