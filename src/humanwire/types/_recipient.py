"""``to`` or ``person``: every request that takes an address also takes a person of the
people directory in its place (exactly one of the two), asked on the person's first
confirmed address on the request's channel."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import PlainValidator, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from ._base import (
    DISCORD_ID_SCHEMA,
    E164_SCHEMA,
    EMAIL_SCHEMA,
    SLACK_ID_SCHEMA,
    TELEGRAM_CHAT_SCHEMA,
    WAIT_OR_FOLLOW_UP_SCHEMA,
    RequestModel,
    check_discord_id,
    check_e164,
    check_email_address,
    check_slack_id,
    check_telegram_chat_id,
)

__all__ = [
    "RECIPIENT_SCHEMA",
    "WAIT_AND_RECIPIENT_SCHEMA",
    "Addressed",
    "DiscordIdOrPerson",
    "E164OrPerson",
    "EmailAddressOrPerson",
    "SlackIdOrPerson",
    "TelegramChatIdOrPerson",
]

# ``to`` left out when a person is named: absent is None, but an explicit null is checked
# (and refused) as any other value, so the document's ``to`` is never nullable.
E164OrPerson = Annotated[str | None, PlainValidator(check_e164), WithJsonSchema(E164_SCHEMA)]
SlackIdOrPerson = Annotated[
    str | None, PlainValidator(check_slack_id), WithJsonSchema(SLACK_ID_SCHEMA)
]
EmailAddressOrPerson = Annotated[
    str | None, PlainValidator(check_email_address), WithJsonSchema(EMAIL_SCHEMA)
]
DiscordIdOrPerson = Annotated[
    str | None, PlainValidator(check_discord_id), WithJsonSchema(DISCORD_ID_SCHEMA)
]
TelegramChatIdOrPerson = Annotated[
    str | None, PlainValidator(check_telegram_chat_id), WithJsonSchema(TELEGRAM_CHAT_SCHEMA)
]

RECIPIENT_SCHEMA: dict[str, Any] = {
    # Inside allOf, as WAIT_OR_FOLLOW_UP_SCHEMA (generators drop properties beside a oneOf).
    "allOf": [{"oneOf": [{"required": ["to"]}, {"required": ["person"]}]}]
}
"""A body's JSON Schema rule: ``to`` or ``person``, not both."""

WAIT_AND_RECIPIENT_SCHEMA: dict[str, Any] = {
    "allOf": [*WAIT_OR_FOLLOW_UP_SCHEMA["allOf"], *RECIPIENT_SCHEMA["allOf"]]
}
"""Both rules, for a form's body (``waitTime`` or ``followUpTime``; ``to`` or ``person``)."""


class Addressed(RequestModel):
    """A request with ``to`` or ``person`` (each subclass declares both fields, ``to``
    with its channel's address type)."""

    @model_validator(mode="after")
    def _one_recipient(self) -> Any:
        to, person = getattr(self, "to", None), getattr(self, "person", None)
        if to is None and person is None:
            raise PydanticCustomError(
                "invalid_request",
                "to is required (or person: a person's id, per_…, in its place)",
                {"field": "to"},
            )
        if to is not None and person is not None:
            raise PydanticCustomError(
                "invalid_request",
                "person: give to or person, not both",
                {"field": "person"},
            )
        return self
