"""Channel cards: stored routes addressed by one channel id (``ch_`` + 24 characters)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from ._base import (
    DISCORD_ID_SCHEMA,
    E164_SCHEMA,
    EMAIL_SCHEMA,
    SLACK_ID_SCHEMA,
    TEAMS_ID_SCHEMA,
    TELEGRAM_CHAT_SCHEMA,
    FollowUpTime,
    RequestModel,
    ResponseModel,
    Timestamp,
    WaitTime,
    check_discord_id,
    check_e164,
    check_email_address,
    check_slack_id,
    check_teams_id,
    check_telegram_chat_id,
)
from ._metadata import Metadata

__all__ = ["ChannelCard", "ChannelCardCreateRequest", "ChannelType"]

ChannelType = Literal["sms", "whatsapp", "slack", "email", "call", "telegram", "discord", "teams"]

_ADDRESS: dict[str, tuple[Callable[[Any], str], dict[str, Any]]] = {
    "slack": (check_slack_id, SLACK_ID_SCHEMA),
    "telegram": (check_telegram_chat_id, TELEGRAM_CHAT_SCHEMA),
    "discord": (check_discord_id, DISCORD_ID_SCHEMA),
    "teams": (check_teams_id, TEAMS_ID_SCHEMA),
}
"""A card's ``to`` by its type, beside a number (sms, whatsapp, call) and an email address."""
_ADDRESS_SCHEMAS: list[Any] = [
    {"if": {"properties": {"type": {"const": name}}}, "then": {"properties": {"to": schema}}}
    for name, (_, schema) in _ADDRESS.items()
]

_MESSAGE_PLACEHOLDER = "{{message}}"


class ChannelCardCreateRequest(RequestModel):
    """``POST /channels``. sms and whatsapp need ``to`` (a number) and ``waitTime``; slack
    a member or channel id and ``waitTime``; telegram a chat id, discord a user or channel
    id, teams a Teams user id (``29:…``), email an address, each with ``waitTime``; call a
    number. ``messageTemplate`` wraps the agent's ``{{message}}`` and may use
    ``{{waitTime}}``."""

    # What ``_by_type`` enforces, said to the schema too.
    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                *_ADDRESS_SCHEMAS,
                {
                    "if": {"properties": {"type": {"const": "email"}}},
                    "then": {"properties": {"to": EMAIL_SCHEMA}},
                },
                {
                    "if": {"properties": {"type": {"enum": ["sms", "whatsapp", "call"]}}},
                    "then": {"properties": {"to": E164_SCHEMA}},
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
                check = _ADDRESS[self.type][0] if self.type in _ADDRESS else check_e164
                check(self.to)
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
                "replyLink is only for cards that send a message, not call cards",
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
