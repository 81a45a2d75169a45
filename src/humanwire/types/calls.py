"""Voice calls: ``POST /calls`` and what it returns."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from ._base import E164, DeliveryStatus, RequestModel, ResponseModel, schema_pattern
from ._metadata import Metadata

__all__ = ["VOICES", "CallOutcome", "CallRequest", "CallResponse", "Voice"]

Voice = Literal["female", "male"]
VOICES: tuple[str, ...] = ("female", "male")
CallOutcome = Literal["completed", "no_answer", "transferred"]

# BCP 47: a language subtag, then optional script / region / variant subtags.
_BCP47 = re.compile(r"[A-Za-z]{2,3}(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?(-[A-Za-z0-9]{5,8})*")


class CallRequest(RequestModel):
    prompt: str = Field(min_length=1)
    to: E164
    transfer_to: E164 | None = None
    language: str = Field(default="en-US", json_schema_extra={"pattern": schema_pattern(_BCP47)})
    voice: Voice = "female"
    wait_for_call_end: bool = False
    metadata: Metadata | None = None

    @field_validator("language")
    @classmethod
    def _bcp47(cls, value: str) -> str:
        if not _BCP47.fullmatch(value):
            raise PydanticCustomError(
                "invalid_request", "language must be a BCP 47 tag such as en-US or fr-FR"
            )
        return value


class CallResponse(ResponseModel):
    """A call: ``pending`` at once, or, when waited for, its ``outcome`` and ``summary``.

    ``no_answer`` also carries ``error`` = ``"human did not respond"``.
    """

    interaction_id: str
    status: Literal["pending", "ended"]
    outcome: CallOutcome | None = None
    summary: str | None = None
    from_: str | None = Field(default=None, alias="from")
    to: str | None = None
    error: str | None = None
    delivery_status: DeliveryStatus | None = None
    metadata: dict[str, str] | None = None

    @property
    def text(self) -> str:
        if self.outcome == "no_answer":
            return self.error or "human did not respond"
        if self.summary is not None:
            return self.summary
        return f"Call placed; interaction {self.interaction_id} is {self.status}."
