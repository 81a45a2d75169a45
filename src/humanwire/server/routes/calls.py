"""``POST /calls`` and the agent-skill pair ``POST /phone/sms``, ``POST /phone/call``."""

from __future__ import annotations

from pydantic import TypeAdapter

from humanwire.types import (
    CallRequest,
    CallResponse,
    MessageResponse,
    PhoneCallRequest,
    PhoneSMSRequest,
)

from ._api import ApiCall, Operation, Payload

__all__ = ["operations"]

_call_response = TypeAdapter(CallResponse)


async def _place_call(call: ApiCall) -> Payload:
    return await call.engine.calls.place_call(call.account, call.body_as(CallRequest), call.send)


async def _phone_sms(call: ApiCall) -> Payload:
    return await call.engine.calls.phone_sms(call.account, call.body_as(PhoneSMSRequest), call.send)


async def _phone_call(call: ApiCall) -> Payload:
    return await call.engine.calls.phone_call(
        call.account, call.body_as(PhoneCallRequest), call.send
    )


def operations() -> list[Operation]:
    return [
        Operation(
            "POST",
            "/calls",
            _place_call,
            operation_id="placeCall",
            summary="Place a voice call driven by a prompt",
            description="`waitForCallEnd` false: `pending` at once, poll the status. "
            "True: held until the call ends, with its `outcome` and `summary`.",
            tag="calls",
            body=TypeAdapter(CallRequest),
            response=_call_response,
        ),
        Operation(
            "POST",
            "/phone/sms",
            _phone_sms,
            operation_id="phoneSms",
            summary="Agent skill: send a text",
            tag="phone",
            body=TypeAdapter(PhoneSMSRequest),
            response=TypeAdapter(MessageResponse),
        ),
        Operation(
            "POST",
            "/phone/call",
            _phone_call,
            operation_id="phoneCall",
            summary="Agent skill: place a call and wait for its end",
            description="Held up to 5 minutes; past it 504 `timeout` (never retried). "
            "Nobody answering: `outcome` `no_answer` with `error` `human did not respond`.",
            tag="phone",
            body=TypeAdapter(PhoneCallRequest),
            response=_call_response,
            errors=(504,),
        ),
    ]
