"""The agent-skill endpoints ``/phone/sms`` and ``/phone/call``."""

from __future__ import annotations

from collections.abc import Mapping

from humanwire._http import Flow
from humanwire.types import (
    PHONE_CALL_LIMIT_SECONDS,
    CallResponse,
    MessageResponse,
    PhoneCallRequest,
    PhoneSMSRequest,
)

from ._base import ModeT, Resource, build, endpoint

__all__ = ["Phone"]


class Phone(Resource[ModeT]):
    @endpoint
    def sms(
        self,
        *,
        to: str,
        message: str,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[MessageResponse]:
        """``POST /phone/sms``: send a text."""
        body = build(PhoneSMSRequest, to=to, message=message, metadata=metadata)
        return self._post("/phone/sms", body, MessageResponse, idempotency_key=idempotency_key)

    @endpoint
    def call(
        self,
        *,
        to: str,
        message: str,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[CallResponse]:
        """``POST /phone/call``: place a call with ``message`` as the voice agent's prompt
        and hold up to five minutes for its end. Past that the service answers 504 and
        ``CallTimeoutError`` is raised; a pending call is never retried."""
        body = build(PhoneCallRequest, to=to, message=message, metadata=metadata)
        return self._post(
            "/phone/call",
            body,
            CallResponse,
            wait=PHONE_CALL_LIMIT_SECONDS,
            idempotency_key=idempotency_key,
            never_retry_pending=True,
        )
