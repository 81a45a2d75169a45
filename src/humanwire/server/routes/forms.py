"""``POST /forms/sms|slack|email|whatsapp`` and one per registered chat channel
(``/forms/telegram``): a form link goes out, the submission comes back."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from pydantic import TypeAdapter

from humanwire.types import (
    EmailFormRequest,
    FormResponse,
    SlackFormRequest,
    SMSFormRequest,
    WhatsAppFormRequest,
    WhatsAppOwnNumberFormRequest,
    WhatsAppSharedFormRequest,
)

from ..delivery.channels import ChatChannel
from ..delivery.chat import CHAT_CHANNELS
from ._api import ApiCall, Operation, Payload

__all__ = ["operations"]

_response = TypeAdapter(FormResponse)
_whatsapp: TypeAdapter[Any] = TypeAdapter(WhatsAppFormRequest)


# Functions that return the engine's coroutine: a held form keeps no frame of its handler
# alive (as the message senders, messages.py).
def _sms(call: ApiCall) -> Awaitable[Payload]:
    return call.engine.sends.send_form(call.account, call.body_as(SMSFormRequest), call.send)


def _slack(call: ApiCall) -> Awaitable[Payload]:
    return call.engine.sends.send_form(call.account, call.body_as(SlackFormRequest), call.send)


def _email(call: ApiCall) -> Awaitable[Payload]:
    return call.engine.sends.send_form(call.account, call.body_as(EmailFormRequest), call.send)


def _whatsapp_form(call: ApiCall) -> Awaitable[Payload]:
    request = call.body
    assert isinstance(request, (WhatsAppSharedFormRequest, WhatsAppOwnNumberFormRequest))
    return call.engine.sends.send_form(call.account, request, call.send)


_WINDOWS = (
    " At least one of `waitTime` and `followUpTime` is required; only `waitTime` means "
    "`followUpTime` 90. Submitted inside `waitTime`: `values` and `content`; otherwise "
    "the no-response text. Only `followUpTime`: returns at once with `formUrl`."
)


def _chat_form(channel: ChatChannel) -> Operation:
    """``POST /forms/<name>`` of a registered chat channel (``delivery/chat.py``)."""

    def send(call: ApiCall) -> Awaitable[Payload]:
        request = call.body_as(channel.form_request)
        return call.engine.sends.send_form(call.account, request, call.send)

    return Operation(
        "POST",
        f"/forms/{channel.name}",
        send,
        operation_id=channel.form_operation_id,
        summary=f"Send a form link over {channel.title}",
        description=f"The body of /forms/sms with a {channel.title} id in `to`." + _WINDOWS,
        tag="forms",
        batchable=True,
        body_off_loop=True,
        body=TypeAdapter(channel.form_request),
        response=_response,
    )


def operations() -> list[Operation]:
    return [
        Operation(
            "POST",
            "/forms/sms",
            _sms,
            operation_id="sendSmsForm",
            summary="Text a form link",
            description="`message` may hold `{{url}}`." + _WINDOWS,
            tag="forms",
            batchable=True,
            body_off_loop=True,
            body=TypeAdapter(SMSFormRequest),
            response=_response,
        ),
        Operation(
            "POST",
            "/forms/slack",
            _slack,
            operation_id="sendSlackForm",
            summary="Send a form link over Slack",
            description="The body of /forms/sms with a slack id in `to`." + _WINDOWS,
            tag="forms",
            batchable=True,
            body_off_loop=True,
            body=TypeAdapter(SlackFormRequest),
            response=_response,
        ),
        Operation(
            "POST",
            "/forms/email",
            _email,
            operation_id="sendEmailForm",
            summary="Email a form link",
            description="The body of /forms/sms with an email address in `to` and an "
            "optional `subject` (default: the form's title)." + _WINDOWS,
            tag="forms",
            batchable=True,
            body_off_loop=True,
            body=TypeAdapter(EmailFormRequest),
            response=_response,
        ),
        Operation(
            "POST",
            "/forms/whatsapp",
            _whatsapp_form,
            operation_id="sendWhatsAppForm",
            summary="Send a form link over WhatsApp",
            description="Shared-account variant, or own-number variant with `from` and "
            "`template`." + _WINDOWS,
            tag="forms",
            batchable=True,
            body_off_loop=True,
            body=_whatsapp,
            response=_response,
        ),
        *(_chat_form(channel) for channel in CHAT_CHANNELS.values()),
    ]
