"""The people directory (docs/people.md): a person is who an agent wants to reach, an
address is where. Ids are ``per_`` + 24 characters; an address is used for the person only
once the person confirmed it."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, PlainValidator, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from ._base import (
    DISCORD_ID_SCHEMA,
    E164_SCHEMA,
    EMAIL_SCHEMA,
    SLACK_ID_SCHEMA,
    TEAMS_ID_SCHEMA,
    TELEGRAM_CHAT_SCHEMA,
    RequestModel,
    ResponseModel,
    Timestamp,
    check_discord_id,
    check_e164,
    check_email_address,
    check_slack_id,
    check_teams_id,
    check_telegram_chat_id,
    no_default,
)
from ._metadata import Metadata

__all__ = [
    "CODE_CHANNELS",
    "CONFIRMABLE_CHANNELS",
    "DELEGATION_ID",
    "MAX_ADDRESSES",
    "PERSON_ID",
    "Delegation",
    "DelegationCreateRequest",
    "DelegationList",
    "Person",
    "PersonAddress",
    "PersonAddressInput",
    "PersonChannel",
    "PersonConfirmRequest",
    "PersonConfirmation",
    "PersonCreateRequest",
    "PersonId",
    "PersonInsteadOfTo",
    "PersonList",
    "PersonUpdateRequest",
    "check_person_id",
]

PersonChannel = Literal["sms", "whatsapp", "slack", "email", "telegram", "discord", "teams"]
"""The channels a person's address may be on (a new channel adds itself here)."""
CONFIRMABLE_CHANNELS: tuple[PersonChannel, ...] = (
    "sms",
    "whatsapp",
    "email",
    "telegram",
    "discord",
    "teams",
)
"""The channels ``POST /people/{personId}/confirm`` confirms on: a code sent by SMS,
WhatsApp or email; on Telegram the bot's start link, opened by the person; on Discord a
DM with a Confirm button, pressed by the person; on Teams a card with a Confirm button
in the person's chat with the bot (their install's), pressed by the person."""
CODE_CHANNELS: tuple[PersonChannel, ...] = ("sms", "whatsapp", "email")
"""The channels confirmed by a code sent to the address."""
MAX_ADDRESSES = 10
PERSON_ID = re.compile(r"per_[A-Za-z0-9_-]{1,64}")
DELEGATION_ID = re.compile(r"dlg_[0-9a-f]{16}")
"""An out-of-office delegation's id (``POST /people/{personId}/delegations``)."""
_NAME = r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$"
"""A person's name: printable, not blank."""


def _invalid(message: str, field: str | None = None) -> PydanticCustomError:
    return PydanticCustomError("invalid_request", message, {"field": field} if field else None)


def check_person_id(value: Any) -> str:
    if not isinstance(value, str) or not PERSON_ID.fullmatch(value):
        # The field's name comes from where it is (``person``, an approver's ``person``).
        raise _invalid("must be a person's id (per_…)")
    return value


PersonId = Annotated[
    str,
    PlainValidator(check_person_id),
    WithJsonSchema({"type": "string", "pattern": f"^{PERSON_ID.pattern}$"}),
]
"""A person's id where a request takes one."""
PERSON_ID_SCHEMA: dict[str, Any] = {"type": "string", "pattern": f"^{PERSON_ID.pattern}$"}
PersonInsteadOfTo = Annotated[
    str | None,
    PlainValidator(check_person_id),
    WithJsonSchema(PERSON_ID_SCHEMA),
    Field(json_schema_extra=no_default),
]
"""``person`` beside ``to``: absent is None, an explicit null is refused (never nullable)."""


class PersonAddressInput(RequestModel):
    """Where a person is reached: a number (E.164) for ``sms`` and ``whatsapp``, a Slack
    member id for ``slack``, an email address for ``email``, a chat id for ``telegram``,
    a user id for ``discord``, a Teams user id (``29:…``) for ``teams``.
    A ``telegram`` address may leave ``to`` out: the chat is learned when the person
    opens the bot's start link (``POST /people/{personId}/confirm``)."""

    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                {
                    "if": {"properties": {"channel": {"enum": ["sms", "whatsapp"]}}},
                    "then": {"properties": {"to": E164_SCHEMA}},
                },
                {
                    "if": {"properties": {"channel": {"const": "slack"}}},
                    "then": {"properties": {"to": SLACK_ID_SCHEMA}},
                },
                {
                    "if": {"properties": {"channel": {"const": "email"}}},
                    "then": {"properties": {"to": EMAIL_SCHEMA}},
                },
                {
                    "if": {"properties": {"channel": {"const": "telegram"}}},
                    "then": {"properties": {"to": TELEGRAM_CHAT_SCHEMA}},
                    "else": {"required": ["to"]},
                },
                {
                    "if": {"properties": {"channel": {"const": "discord"}}},
                    "then": {"properties": {"to": DISCORD_ID_SCHEMA}},
                },
                {
                    "if": {"properties": {"channel": {"const": "teams"}}},
                    "then": {"properties": {"to": TEAMS_ID_SCHEMA}},
                },
            ]
        }
    )

    channel: PersonChannel
    to: str | None = Field(default=None, min_length=1, max_length=254)

    @model_validator(mode="after")
    def _check_to(self) -> PersonAddressInput:
        if self.to is None:
            if self.channel != "telegram":
                raise _invalid(f"to is required for {self.channel}", "to")
            return self
        try:
            if self.channel == "telegram":
                check_telegram_chat_id(self.to)
            elif self.channel == "email":
                self.to = check_email_address(self.to)
            elif self.channel == "slack":
                check_slack_id(self.to)
            elif self.channel == "discord":
                check_discord_id(self.to)
            elif self.channel == "teams":
                check_teams_id(self.to)
            else:
                check_e164(self.to)
        except PydanticCustomError:
            what = {
                "email": "an email address",
                "slack": "a Slack member id such as U0123ABCD",
                "telegram": "a Telegram chat id such as 123456789 (or left out)",
                "discord": "a Discord user id such as 80351110224678912",
                "teams": "a Teams user id such as 29:1a2b3c",
            }.get(self.channel, "a phone number in E.164 form")
            raise _invalid(f"to must be {what} for {self.channel}", "to") from None
        return self


def _check_addresses(addresses: list[PersonAddressInput] | None) -> None:
    seen: set[tuple[str, str]] = set()
    for n, address in enumerate(addresses or ()):
        to = address.to or ""
        key = (address.channel, to.lower() if address.channel == "email" else to)
        if key in seen:
            raise _invalid(
                f"addresses[{n}] is listed twice ({address.channel} {to or 'unbound'})",
                f"addresses[{n}]",
            )
        seen.add(key)


class PersonCreateRequest(RequestModel):
    """``POST /people``: the addresses in the order the person is tried on."""

    name: str = Field(min_length=1, max_length=200, pattern=_NAME)
    addresses: list[PersonAddressInput] = Field(default_factory=list, max_length=MAX_ADDRESSES)
    metadata: Metadata | None = None

    @model_validator(mode="after")
    def _distinct(self) -> PersonCreateRequest:
        _check_addresses(self.addresses)
        return self


class PersonUpdateRequest(RequestModel):
    """``PATCH /people/{personId}``: each field given replaces the person's. An address
    kept (the same channel and ``to``) stays confirmed; a new one starts unconfirmed."""

    name: str | None = Field(default=None, min_length=1, max_length=200, pattern=_NAME)
    addresses: list[PersonAddressInput] | None = Field(default=None, max_length=MAX_ADDRESSES)
    metadata: Metadata | None = None

    @model_validator(mode="after")
    def _distinct(self) -> PersonUpdateRequest:
        _check_addresses(self.addresses)
        return self


class PersonConfirmRequest(RequestModel):
    """``POST /people/{personId}/confirm``: the address on ``channel`` (the first there,
    or the one ``to`` names) is sent a one-time code; the person's reply with it
    confirms the address. On ``telegram`` nothing is sent (a bot cannot write first):
    the answer carries the bot's start link for the person to open. On ``discord`` the
    user is sent a DM with a Confirm button, on ``teams`` a card with one in their chat
    with the bot; their press confirms it."""

    channel: PersonChannel
    to: str | None = Field(default=None, min_length=1, max_length=254)


class PersonAddress(ResponseModel):
    channel: str
    """One of ``PersonChannel`` (a newer service may have more: kept as text)."""
    to: str | None = None
    """None: a ``telegram`` address whose chat is not known yet (its start link binds it)."""
    confirmed: bool = False
    confirmed_at: Timestamp | None = None


class Person(ResponseModel):
    person_id: str
    name: str
    addresses: list[PersonAddress] = Field(default_factory=list)
    metadata: dict[str, str] | None = None
    created_at: Timestamp
    updated_at: Timestamp


class PersonList(ResponseModel):
    """``GET /people``: the account's people past ``after`` that the filter keeps, in the
    order they were added, and the cursor to continue from (the last one's, or ``after``
    when none came)."""

    people: list[Person]
    cursor: str


class PersonConfirmation(ResponseModel):
    """What ``POST /people/{personId}/confirm`` answers: the code went out (its
    interaction), to be answered before ``expiresAt``; on ``telegram``, the bot's
    ``startLink`` to give the person, to be opened before ``expiresAt`` (once); on
    ``discord``, the DM with its Confirm button went out, to be pressed before
    ``expiresAt`` (once)."""

    person_id: str
    channel: str
    to: str | None = None
    """None: a ``telegram`` address whose chat the start link will tell."""
    interaction_id: str | None = None
    """The code's message (None on ``telegram`` and ``discord``: no code is sent)."""
    start_link: str | None = None
    """``telegram``: ``https://t.me/<bot>?start=<token>``, one-time."""
    expires_at: Timestamp


class DelegationCreateRequest(RequestModel):
    """``POST /people/{personId}/delegations``: while the person is away, from
    ``startsAt`` (left out: now) until ``endsAt``, the requests that ask them ask
    ``delegate`` in their place (docs/guides/console.md, "Out of office"). A time without
    an offset is UTC."""

    delegate: PersonId
    """The person (``per_…``) of the account asked in the person's place."""
    starts_at: datetime | None = None
    """When it starts holding (left out or null: now)."""
    ends_at: datetime
    """When it stops: after the start and to come, at most 90 days after the start."""


class Delegation(ResponseModel):
    """An out-of-office delegation: from ``startsAt`` until ``endsAt`` (unless revoked
    before), the requests asking ``personId`` ask ``delegate`` in their place."""

    delegation_id: str
    person_id: str
    delegate: str
    starts_at: Timestamp
    ends_at: Timestamp
    created_at: Timestamp


class DelegationList(ResponseModel):
    """``GET /people/{personId}/delegations``: the delegations that hold or are to come,
    the person's own (``personId`` the person) and those to them (``delegate`` the
    person), in the order they start."""

    delegations: list[Delegation]
