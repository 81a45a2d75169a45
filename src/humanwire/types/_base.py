"""Shared building blocks of the wire models.

Python names are snake_case, wire names camelCase (aliases); a model accepts either.
Request models are closed (unknown properties are rejected); response models ignore
unknown properties so an older client keeps working against a newer service.

Validation errors raised here carry a ``field`` in their context when the offending
path is deeper than pydantic's own location (for example ``options`` under a field),
and the error type ``invalid_to_number`` for recipients, so the service can map them
to docs/design.md's error body without guessing.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    WithJsonSchema,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

__all__ = [
    "DISCORD_ID_SCHEMA",
    "E164",
    "E164_SCHEMA",
    "EMAIL_SCHEMA",
    "FALLBACK_SCHEMA",
    "IDEMPOTENCY_KEY",
    "RECIPIENT_SCHEMA",
    "SLACK_ID_SCHEMA",
    "TEAMS_ID_SCHEMA",
    "TELEGRAM_CHAT_SCHEMA",
    "UNDELIVERED_TEXT",
    "WAIT_AND_RECIPIENT_SCHEMA",
    "WAIT_OR_FOLLOW_UP_SCHEMA",
    "Addressed",
    "DeliveryStatus",
    "DiscordId",
    "DiscordIdOrPerson",
    "E164OrPerson",
    "EmailAddress",
    "EmailAddressOrPerson",
    "EmailSubject",
    "FallbackAfter",
    "FallsBack",
    "FollowUpTime",
    "HttpUrl",
    "RequestModel",
    "ResponseModel",
    "SlackId",
    "SlackIdOrPerson",
    "SlackWorkspaceId",
    "TeamsId",
    "TeamsIdOrPerson",
    "TelegramChatId",
    "TelegramChatIdOrPerson",
    "Timestamp",
    "WaitTime",
    "check_discord_id",
    "check_e164",
    "check_email_address",
    "check_slack_id",
    "check_teams_id",
    "check_telegram_chat_id",
    "format_seconds",
    "no_default",
    "schema_pattern",
    "utc_now",
]


DeliveryStatus = Literal["queued", "sent", "delivered", "read", "undelivered", "failed"]
"""How far a message, form link or call got (docs/providers.md): the sandbox reports
``delivered``; Twilio reports each step through its status callbacks; Slack ``sent`` once
``chat.postMessage`` answers ok."""

UNDELIVERED_TEXT = "The message could not be delivered to the human."
"""What a held wait returns when the provider reports the delivery failed: not the
no-response text, so the agent knows the human never saw it."""


class RequestModel(BaseModel):
    """A closed request body: unknown properties are an error."""

    # defer_build (here and in ResponseModel, inherited by every model): a model's
    # validator and serializer are built on its first use, not at ``import humanwire``.
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        str_strip_whitespace=False,
        defer_build=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON body as sent: camelCase names, unset optional fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ResponseModel(BaseModel):
    """A response or resource: unknown properties are ignored."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True
    )

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def schema_pattern(regex: re.Pattern[str]) -> str:
    """``regex`` as a JSON Schema ``pattern`` with the validator's ``fullmatch`` meaning
    (a schema's pattern matches anywhere in the string)."""
    return f"^(?:{regex.pattern})$"


IDEMPOTENCY_KEY = re.compile(r"[!-~]([ -~]{0,253}[!-~])?")
"""An ``Idempotency-Key`` (a header or a batch item's ``idempotencyKey``): 1 to 255
printable ASCII characters, no space at either end (as a header value can carry it)."""


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def _serialize_timestamp(value: datetime) -> str:
    value = value.astimezone(timezone.utc)
    text = value.isoformat(timespec="milliseconds" if value.microsecond else "seconds")
    return text.replace("+00:00", "Z")


Timestamp = Annotated[datetime, PlainSerializer(_serialize_timestamp, when_used="json")]
"""ISO 8601 UTC, written with a ``Z``."""


def _seconds(low: float, high: float, name: str) -> Any:
    def check(value: Any) -> int | float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise PydanticCustomError(
                "invalid_request", f"{name} must be a number of seconds from {low:g} to {high:g}"
            )
        if not (low <= value <= high):
            # A huge JSON integer cannot be formatted as a float (OverflowError → a 500).
            got = f"{value:g}" if isinstance(value, float) or abs(value) < 10**15 else "more"
            raise PydanticCustomError(
                "invalid_request",
                f"{name} must be from {low:g} to {high:g} seconds, got {got}",
            )
        return value

    return Annotated[
        int | float,
        PlainValidator(check),
        WithJsonSchema({"type": "number", "minimum": low, "maximum": high}),
    ]


WaitTime = _seconds(1, 600, "waitTime")
"""Seconds a request is held open for the reply: 1 to 600."""

FollowUpTime = _seconds(1, 60000, "followUpTime")
"""Seconds the service keeps listening after ``waitTime``: 1 to 60000."""

FallbackAfter = _seconds(1, 60600, "fallbackAfter")
"""Seconds after which a send to a person moves to their next confirmed address when
nobody answered: 1 up to the longest window (and less than the request's own)."""

WAIT_OR_FOLLOW_UP_SCHEMA: dict[str, Any] = {
    # Inside allOf, not beside the properties: generators (openapi-python-client) read a
    # top-level anyOf as a union of its branches and drop the properties beside it.
    "allOf": [
        {
            "anyOf": [
                {"required": [name], "properties": {name: {"type": "number"}}}
                for name in ("waitTime", "followUpTime")
            ]
        }
    ]
}
"""A body's JSON Schema rule for ``waitTime``, ``followUpTime`` or both (forms, approvals)."""


def format_seconds(value: float) -> str:
    """``30`` rather than ``30.0``: a wait renders as the client wrote it."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _invalid_number() -> PydanticCustomError:
    return PydanticCustomError("invalid_to_number", "invalid to number")


# ASCII digits: Python's \d would take any script's, JSON Schema's (ECMA 262) does not.
_E164 = re.compile(r"\+[1-9][0-9]{6,14}")


def check_e164(value: Any) -> str:
    """A valid phone number in E.164 form, as ``phonenumbers`` judges it."""
    if not isinstance(value, str) or not _E164.fullmatch(value):
        raise _invalid_number()
    import phonenumbers  # here, not at the top: it costs ~10 ms and most imports never need it

    try:
        parsed = phonenumbers.parse(value, None)
    except phonenumbers.NumberParseException:
        raise _invalid_number() from None
    if not phonenumbers.is_valid_number(parsed):
        raise _invalid_number()
    return value


E164_SCHEMA: dict[str, Any] = {
    "type": "string",
    "pattern": schema_pattern(_E164),
    # The rest (a number ``phonenumbers`` finds valid) JSON Schema cannot say.
    "format": "e164",
}
E164 = Annotated[str, PlainValidator(check_e164), WithJsonSchema(E164_SCHEMA)]

MAX_EMAIL_ADDRESS = 254
"""The longest address SMTP carries (RFC 5321's path limit less the brackets)."""


def check_email_address(value: Any) -> str:
    """An email address as ``email-validator`` judges it (no DNS lookup), normalized
    (the domain lower-cased, international names in Unicode); else ``invalid_request``
    naming the field."""
    if not isinstance(value, str) or not value.strip():
        raise PydanticCustomError("invalid_request", "to must be an email address")
    if len(value) > MAX_EMAIL_ADDRESS:
        raise PydanticCustomError(
            "invalid_request",
            f"to must be an email address of at most {MAX_EMAIL_ADDRESS} characters",
        )
    from email_validator import EmailNotValidError, validate_email  # lazily: ~20 ms

    try:
        return validate_email(value.strip(), check_deliverability=False).normalized
    except EmailNotValidError as exc:
        raise PydanticCustomError(
            "invalid_request", "to must be an email address ({reason})", {"reason": str(exc)}
        ) from None


EMAIL_SCHEMA: dict[str, Any] = {"type": "string", "format": "email", "maxLength": MAX_EMAIL_ADDRESS}
EmailAddress = Annotated[str, PlainValidator(check_email_address), WithJsonSchema(EMAIL_SCHEMA)]
"""A recipient's email address (``/messages/email``, ``/forms/email``)."""

EmailSubject = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]*$")]
"""An email's subject: one line of at most 200 characters (no control characters, so
no header injection)."""

# Member ids start with U or W, channels with C, G (private) or D (direct message).
_SLACK_ID = re.compile(r"[UWCGD][A-Z0-9]{6,20}")
_SLACK_WORKSPACE = re.compile(r"T[A-Z0-9]{6,20}")


def check_slack_id(value: Any) -> str:
    if not isinstance(value, str) or not _SLACK_ID.fullmatch(value):
        raise _invalid_number()
    return value


def _check_workspace(value: str) -> str:
    if not _SLACK_WORKSPACE.fullmatch(value):
        raise PydanticCustomError(
            "invalid_request", "from must be a slack workspace id such as T0123ABCD"
        )
    return value


SLACK_ID_SCHEMA: dict[str, Any] = {"type": "string", "pattern": schema_pattern(_SLACK_ID)}
SlackId = Annotated[str, PlainValidator(check_slack_id), WithJsonSchema(SLACK_ID_SCHEMA)]
SlackWorkspaceId = Annotated[
    str,
    AfterValidator(_check_workspace),
    Field(json_schema_extra={"pattern": schema_pattern(_SLACK_WORKSPACE)}),
]

# A Telegram chat's id: a person's or a group's (negative), at most 52 significant bits.
_TELEGRAM_CHAT = re.compile(r"-?[1-9][0-9]{0,15}")


def check_telegram_chat_id(value: Any) -> str:
    if not isinstance(value, str) or not _TELEGRAM_CHAT.fullmatch(value):
        raise _invalid_number()
    return value


TELEGRAM_CHAT_SCHEMA: dict[str, Any] = {"type": "string", "pattern": schema_pattern(_TELEGRAM_CHAT)}
TelegramChatId = Annotated[
    str, PlainValidator(check_telegram_chat_id), WithJsonSchema(TELEGRAM_CHAT_SCHEMA)
]
"""A Telegram chat id (``/messages/telegram``), as a string: the person's chat with the bot."""

# A Discord snowflake (a user's or a channel's id): a 64-bit number, 17 to 19 digits today
# (a 20th comes around 2090), so at most 19: the pattern alone says it, as the schema does.
_DISCORD_ID = re.compile(r"[1-9][0-9]{5,18}")


def check_discord_id(value: Any) -> str:
    if not isinstance(value, str) or not _DISCORD_ID.fullmatch(value):
        raise _invalid_number()
    return value


DISCORD_ID_SCHEMA: dict[str, Any] = {"type": "string", "pattern": schema_pattern(_DISCORD_ID)}
DiscordId = Annotated[str, PlainValidator(check_discord_id), WithJsonSchema(DISCORD_ID_SCHEMA)]
"""A Discord user id (a DM) or channel id (``/messages/discord``), as a string."""

# A Teams person: the user id the bot sees (``29:…``, base64url-like), bound to the
# conversation their install of the app gave.
_TEAMS_ID = re.compile(r"29:[A-Za-z0-9_-]{1,250}")


def check_teams_id(value: Any) -> str:
    if not isinstance(value, str) or not _TEAMS_ID.fullmatch(value):
        raise _invalid_number()
    return value


TEAMS_ID_SCHEMA: dict[str, Any] = {"type": "string", "pattern": schema_pattern(_TEAMS_ID)}
TeamsId = Annotated[str, PlainValidator(check_teams_id), WithJsonSchema(TEAMS_ID_SCHEMA)]
"""A Teams user id (``29:…``, ``/messages/teams``), as a string."""

_HTTP_URL = re.compile(r"https?://[^\s/]+")


def _check_http_url(value: str) -> str:
    if not _HTTP_URL.match(value):
        raise PydanticCustomError("invalid_request", "must be an http or https URL")
    return value


HttpUrl = Annotated[
    str,
    AfterValidator(_check_http_url),
    # A prefix: the rest of the URL is free.
    Field(json_schema_extra={"format": "uri", "pattern": f"^{_HTTP_URL.pattern}"}),
]


# --- ``to`` or ``person`` ---------------------------------------------------------------
# Every request that takes an address also takes a person of the people directory in its
# place (exactly one of the two), asked on the person's first confirmed address on the
# request's channel.

RECIPIENT_SCHEMA: dict[str, Any] = {
    # Inside allOf, as WAIT_OR_FOLLOW_UP_SCHEMA (generators drop properties beside a oneOf).
    "allOf": [{"oneOf": [{"required": ["to"]}, {"required": ["person"]}]}]
}
"""A body's JSON Schema rule: ``to`` or ``person``, not both."""

WAIT_AND_RECIPIENT_SCHEMA: dict[str, Any] = {
    "allOf": [*WAIT_OR_FOLLOW_UP_SCHEMA["allOf"], *RECIPIENT_SCHEMA["allOf"]]
}
"""Both rules, for a form's body (``waitTime`` or ``followUpTime``; ``to`` or ``person``)."""


def no_default(schema: dict[str, Any]) -> None:
    """A field's JSON Schema without its ``default``: a field left out is no value of it
    (a ``null`` default would be one the document's schema refuses)."""
    schema.pop("default", None)


_LEFT_OUT = Field(json_schema_extra=no_default)

# ``to`` left out when a person is named: absent is None, but an explicit null is checked
# (and refused) as any other value, so the document's ``to`` is never nullable.
E164OrPerson = Annotated[
    str | None, PlainValidator(check_e164), WithJsonSchema(E164_SCHEMA), _LEFT_OUT
]
SlackIdOrPerson = Annotated[
    str | None, PlainValidator(check_slack_id), WithJsonSchema(SLACK_ID_SCHEMA), _LEFT_OUT
]
EmailAddressOrPerson = Annotated[
    str | None, PlainValidator(check_email_address), WithJsonSchema(EMAIL_SCHEMA), _LEFT_OUT
]
DiscordIdOrPerson = Annotated[
    str | None, PlainValidator(check_discord_id), WithJsonSchema(DISCORD_ID_SCHEMA), _LEFT_OUT
]
TeamsIdOrPerson = Annotated[
    str | None, PlainValidator(check_teams_id), WithJsonSchema(TEAMS_ID_SCHEMA), _LEFT_OUT
]
TelegramChatIdOrPerson = Annotated[
    str | None,
    PlainValidator(check_telegram_chat_id),
    WithJsonSchema(TELEGRAM_CHAT_SCHEMA),
    _LEFT_OUT,
]


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


FALLBACK_SCHEMA: dict[str, Any] = {"dependentRequired": {"fallbackAfter": ["person"]}}
"""A body's JSON Schema rule: ``fallbackAfter`` only beside ``person``."""


class FallsBack(RequestModel):
    """A request that may carry ``fallbackAfter`` (messages and forms to a person; each
    subclass declares ``fallback_after: FallbackAfter | None``): only with ``person`` (the
    document says so: ``FALLBACK_SCHEMA``)."""

    @model_validator(mode="after")
    def _fallback_with_person(self) -> Any:
        after = getattr(self, "fallback_after", None)
        if after is not None and getattr(self, "person", None) is None:
            raise PydanticCustomError(
                "invalid_request",
                "fallbackAfter moves between a person's addresses: give person, not to",
                {"field": "fallbackAfter"},
            )
        return self
