"""Channel cards: stored routes addressed by one channel id (``ch_`` + 24 characters)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from ._base import (
    E164_SCHEMA,
    EMAIL_SCHEMA,
    SLACK_ID_SCHEMA,
    FollowUpTime,
    RequestModel,
    ResponseModel,
    Timestamp,
    WaitTime,
    check_e164,
    check_email_address,
    check_slack_id,
)
from ._metadata import Metadata

__all__ = ["ChannelCard", "ChannelCardCreateRequest", "ChannelType"]

ChannelType = Literal["sms", "whatsapp", "slack", "email", "call"]

_MESSAGE_PLACEHOLDER = "{{message}}"


class ChannelCardCreateRequest(RequestModel):
    """``POST /channels``. sms and whatsapp need ``to`` (a number) and ``waitTime``; slack
    a member or channel id and ``waitTime``; email an address and ``waitTime``; call a
    number. ``messageTemplate`` wraps the
    agent's ``{{message}}`` and may use ``{{waitTime}}``."""

    # What ``_by_type`` enforces, said to the schema too.
    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                {
                    "if": {"properties": {"type": {"const": "slack"}}},
                    "then": {"properties": {"to": SLACK_ID_SCHEMA}},
                    "else": {
                        "if": {"properties": {"type": {"const": "email"}}},
                        "then": {"properties": {"to": EMAIL_SCHEMA}},
                        "else": {"properties": {"to": E164_SCHEMA}},
                    },
                },
                {
                    "if": {"properties": {"type": {"const": "call"}}},
                    "then": {"properties": {"replyLink": {"const": False}}},
                    "else": {
                        "required": ["waitTime"],
                        "properties": {"waitTime": {"type": "number"}},
                    },
                },
            ]
        }
    )

    type: ChannelType
    to: str
    wait_time: WaitTime | None = None
    follow_up_time: FollowUpTime | None = None
    message_template: (
        Annotated[str, Field(json_schema_extra={"pattern": re.escape(_MESSAGE_PLACEHOLDER)})] | None
    ) = None
    response_template: str | None = None
    no_response_template: str | None = None
    reply_link: bool = False
    metadata: Metadata | None = None
    """Every message sent through the card carries it (a send's own keys win)."""

    @model_validator(mode="after")
    def _by_type(self) -> ChannelCardCreateRequest:
        if self.type == "email":
            # An address is checked as /messages/email checks it (invalid_request naming to).
            try:
                self.to = check_email_address(self.to)
            except PydanticCustomError as exc:
                raise PydanticCustomError(
                    "invalid_request", "{reason}", {"field": "to", "reason": exc.message()}
                ) from None
        else:
            try:
                check_slack_id(self.to) if self.type == "slack" else check_e164(self.to)
            except PydanticCustomError:
                raise PydanticCustomError(
                    "invalid_to_number", "invalid to number", {"field": "to"}
                ) from None
        if self.type != "call" and self.wait_time is None:
            raise PydanticCustomError(
                "invalid_request",
                "waitTime is required for a {type} card",
                {"field": "waitTime", "type": self.type},
            )
        if self.type == "call" and self.reply_link:
            raise PydanticCustomError(
                "invalid_request",
                "replyLink is only for sms, whatsapp, slack and email cards",
                {"field": "replyLink"},
            )
        if self.message_template is not None and _MESSAGE_PLACEHOLDER not in self.message_template:
            raise PydanticCustomError(
                "invalid_request",
                "messageTemplate must contain {{message}}",
                {"field": "messageTemplate"},
            )
        return self


class ChannelCard(ResponseModel):
    id: str
    type: ChannelType
    to: str
    wait_time: int | float | None = None
    follow_up_time: int | float | None = None
    message_template: str | None = None
    response_template: str
    no_response_template: str
    reply_link: bool = False
    created_at: Timestamp
    metadata: dict[str, str] | None = None
