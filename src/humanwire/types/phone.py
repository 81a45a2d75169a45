"""The agent-skill endpoints ``/phone/sms`` and ``/phone/call``."""

from __future__ import annotations

from pydantic import Field

from ._base import E164, RequestModel
from ._metadata import Metadata

__all__ = ["PHONE_CALL_LIMIT_SECONDS", "PhoneCallRequest", "PhoneSMSRequest"]

PHONE_CALL_LIMIT_SECONDS = 300
"""A ``/phone/call`` request is held at most this long; then 504 ``timeout``."""


class PhoneSMSRequest(RequestModel):
    message: str = Field(min_length=1)
    to: E164
    metadata: Metadata | None = None


class PhoneCallRequest(RequestModel):
    """``message`` is the structured prompt for the voice agent."""

    message: str = Field(min_length=1)
    to: E164
    metadata: Metadata | None = None
