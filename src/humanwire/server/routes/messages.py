"""``POST /messages/sms|whatsapp|slack|email``, one per registered chat channel
(``/messages/telegram``), ``POST /messages/person`` and ``POST /messages/{channel_id}``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic import TypeAdapter

from humanwire.types import (
    ChannelMessageRequest,
    EmailMessageRequest,
    MessageResponse,
    PersonMessageRequest,
    SlackMessageRequest,
    SMSMessageRequest,
    WhatsAppMessageRequest,
)

from ..delivery.channels import ChatChannel
from ..delivery.chat import CHAT_CHANNELS
from ._api import ApiCall, Operation, PathParam, Payload

__all__ = ["operations"]

CHANNEL_ID = r"ch_[A-Za-z0-9_-]{1,64}"
"""Anything else after ``/messages/`` is no endpoint at all (404)."""
_response = TypeAdapter(MessageResponse)


# The senders are functions that return the engine's coroutine, not coroutines awaiting
# it: a held send keeps no frame of its handler alive (benchmarks/HISTORY.md, 2026-12-04).
def _send_sms(call: ApiCall) -> Awaitable[Payload]:
    request = call.body_as(SMSMessageRequest)
    return call.engine.sends.send_message(call.account, request, call.send)


def _send_whatsapp(call: ApiCall) -> Awaitable[Payload]:
    request = call.body_as(WhatsAppMessageRequest)
    return call.engine.sends.send_message(call.account, request, call.send)


def _send_slack(call: ApiCall) -> Awaitable[Payload]:
    request = call.body_as(SlackMessageRequest)
    return call.engine.sends.send_message(call.account, request, call.send)


def _send_email(call: ApiCall) -> Awaitable[Payload]:
    request = call.body_as(EmailMessageRequest)
    return call.engine.sends.send_message(call.account, request, call.send)


def _send_to_person(call: ApiCall) -> Awaitable[Payload]:
    request = call.body_as(PersonMessageRequest)
    return call.engine.sends.send_to_person(call.account, request, call.send)


def _chat_send(channel: ChatChannel) -> Callable[[ApiCall], Awaitable[Payload]]:
    def send(call: ApiCall) -> Awaitable[Payload]:
        request = call.body_as(channel.message_request)
        return call.engine.sends.send_message(call.account, request, call.send)

    return send


def _chat_operation(channel: ChatChannel) -> Operation:
    """``POST /messages/<name>`` of a registered chat channel (``delivery/chat.py``)."""
    return Operation(
        "POST",
        f"/messages/{channel.name}",
        _chat_send(channel),
        operation_id=channel.operation_id,
        summary=channel.summary,
        description=channel.description + _WAIT_NOTE,
        tag="messages",
        batchable=True,
        body=TypeAdapter(channel.message_request),
        response=_response,
    )


def _send_channel(call: ApiCall) -> Awaitable[Payload]:
    channel_id = call.path("channel_id")
    request = call.body_as(ChannelMessageRequest)
    return call.engine.sends.send_channel_message(call.account, channel_id, request, call.send)


_WAIT_NOTE = (
    " With `waitTime` the request is held until the reply or the end of the window; "
    "a timeout returns the no-response text, never an error."
)


def operations() -> list[Operation]:
    return [
        Operation(
            "POST",
            "/messages/sms",
            _send_sms,
            operation_id="sendSms",
            summary="Text a human over SMS",
            description="Sends an SMS." + _WAIT_NOTE,
            tag="messages",
            batchable=True,
            body=TypeAdapter(SMSMessageRequest),
            response=_response,
        ),
        Operation(
            "POST",
            "/messages/whatsapp",
            _send_whatsapp,
            operation_id="sendWhatsApp",
            summary="Message a human over WhatsApp",
            description="Sends a WhatsApp message from the shared account." + _WAIT_NOTE,
            tag="messages",
            batchable=True,
            body=TypeAdapter(WhatsAppMessageRequest),
            response=_response,
        ),
        Operation(
            "POST",
            "/messages/slack",
            _send_slack,
            operation_id="sendSlack",
            summary="Message a human over Slack",
            description="Posts to a member or channel; replies count in the thread." + _WAIT_NOTE,
            tag="messages",
            batchable=True,
            body=TypeAdapter(SlackMessageRequest),
            response=_response,
        ),
        Operation(
            "POST",
            "/messages/email",
            _send_email,
            operation_id="sendEmail",
            summary="Email a human",
            description="Sends an email (text and HTML) whose replies come back to its own "
            "reply address; without `subject` the message's first line is the subject."
            + _WAIT_NOTE,
            tag="messages",
            batchable=True,
            body=TypeAdapter(EmailMessageRequest),
            response=_response,
        ),
        *(_chat_operation(channel) for channel in CHAT_CHANNELS.values()),
        Operation(
            "POST",
            "/messages/person",
            _send_to_person,
            operation_id="sendToPerson",
            summary="Message a person wherever they answer",
            description="Sends to a person of the people directory on the first of their "
            "confirmed addresses, in their order, as that channel's message (its rules "
            "apply). Another account's person is 404; a person with no confirmed address, "
            "400." + _WAIT_NOTE,
            tag="messages",
            batchable=True,
            body=TypeAdapter(PersonMessageRequest),
            response=_response,
            errors=(404,),
        ),
        Operation(
            "POST",
            "/messages/{channel_id}",
            _send_channel,
            operation_id="sendThroughChannel",
            summary="Send through a channel card",
            description="The card supplies recipient, windows and templates.",
            tag="messages",
            batchable=True,
            body=TypeAdapter(ChannelMessageRequest),
            response=_response,
            errors=(404,),
            path_params=(
                PathParam("channel_id", "A channel card id (`ch_` + 24 characters).", CHANNEL_ID),
            ),
        ),
    ]
