"""Message requests (sms, whatsapp, slack, channel card) and the reply they return."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from ._base import (
    E164,
    FALLBACK_SCHEMA,
    RECIPIENT_SCHEMA,
    Addressed,
    DeliveryStatus,
    DiscordIdOrPerson,
    E164OrPerson,
    EmailAddressOrPerson,
    EmailSubject,
    FallbackAfter,
    FallsBack,
    FollowUpTime,
    RequestModel,
    ResponseModel,
    SlackIdOrPerson,
    SlackWorkspaceId,
    TeamsIdOrPerson,
    TelegramChatIdOrPerson,
    WaitTime,
)
from ._metadata import Metadata
from .people import PersonId, PersonInsteadOfTo

__all__ = [
    "DEFAULT_NO_RESPONSE_TEMPLATE",
    "DEFAULT_RESPONSE_TEMPLATE",
    "ChannelMessageRequest",
    "DiscordMessageRequest",
    "EmailMessageRequest",
    "MessageResponse",
    "PersonMessageRequest",
    "SMSMessageRequest",
    "SlackMessageRequest",
    "TeamsMessageRequest",
    "TelegramMessageRequest",
    "WhatsAppMessageRequest",
]

DEFAULT_RESPONSE_TEMPLATE = "Human response: {{message}}"
DEFAULT_NO_RESPONSE_TEMPLATE = "Human did not respond. Continue where you left off."


class _MessageRequest(Addressed, FallsBack):
    model_config = ConfigDict(json_schema_extra={**RECIPIENT_SCHEMA, **FALLBACK_SCHEMA})

    fallback_after: FallbackAfter | None = None
    """With ``person``: seconds after which, nobody having answered, the service asks on
    the person's next confirmed address (and again after as many more, address by
    address); an answer on any of them answers this one interaction. No next address, or
    the request's window closing first: nothing moves (docs/people.md)."""
    person: PersonInsteadOfTo = None
    """In place of ``to``: the person's first confirmed address on this channel."""
    message: str = Field(min_length=1)
    wait_time: WaitTime | None = None
    follow_up_time: FollowUpTime | None = None
    metadata: Metadata | None = None


class SMSMessageRequest(_MessageRequest):
    """``POST /messages/sms``. ``from`` defaults to the account's reserved number."""

    to: E164OrPerson = None
    from_: E164 | None = Field(default=None, alias="from")


class WhatsAppMessageRequest(_MessageRequest):
    """``POST /messages/whatsapp`` from the shared account (the service wraps the text)."""

    to: E164OrPerson = None


class SlackMessageRequest(_MessageRequest):
    """``POST /messages/slack``. The human must reply in the message's thread."""

    to: SlackIdOrPerson = None
    from_: SlackWorkspaceId | None = Field(default=None, alias="from")


class TelegramMessageRequest(_MessageRequest):
    """``POST /messages/telegram``: to a chat with the bot (the person wrote to it first:
    a bot cannot start a chat). A reply to the message, or the next message in the chat,
    is the answer."""

    to: TelegramChatIdOrPerson = None
    message: str = Field(min_length=1, max_length=4096)
    """At most 4,096 characters: Telegram's limit of one message."""


class DiscordMessageRequest(_MessageRequest):
    """``POST /messages/discord``: a DM to a user id (the person shares a server with the
    app) or a post to a channel id. The message carries a Reply button; the text the
    person types in the form it opens is the answer."""

    to: DiscordIdOrPerson = None
    message: str = Field(min_length=1, max_length=2000)
    """At most 2,000 characters: Discord's limit of one message."""


class TeamsMessageRequest(_MessageRequest):
    """``POST /messages/teams``: a message from the operator's bot in a person's personal
    chat with it (the app installed for them: the install gave the service their
    conversation); the next message they write there is the answer."""

    to: TeamsIdOrPerson = None
    message: str = Field(min_length=1, max_length=4000)
    """At most 4,000 characters (Teams takes a message of about 28 KB)."""


class EmailMessageRequest(_MessageRequest):
    """``POST /messages/email``. Without ``subject`` the service makes one from the
    message; a reply to the message (its per-interaction reply address) is the answer."""

    to: EmailAddressOrPerson = None
    subject: EmailSubject | None = None


class PersonMessageRequest(FallsBack):
    """``POST /messages/person``: to a person of the people directory, on the first of
    their confirmed addresses in their order, whatever its channel (that channel's
    message rules apply: Telegram's 4,096 characters, say)."""

    fallback_after: FallbackAfter | None = None
    """With ``person``: seconds after which, nobody having answered, the service asks on
    the person's next confirmed address (and again after as many more, address by
    address); an answer on any of them answers this one interaction. No next address, or
    the request's window closing first: nothing moves (docs/people.md)."""
    person: PersonId
    message: str = Field(min_length=1)
    wait_time: WaitTime | None = None
    follow_up_time: FollowUpTime | None = None
    metadata: Metadata | None = None


class ChannelMessageRequest(RequestModel):
    """``POST /messages/{channel_id}``: the card supplies recipient, windows, templates."""

    message: str = Field(min_length=1)
    metadata: Metadata | None = None
    """Merged over the card's own metadata (this send's keys win)."""


class MessageResponse(ResponseModel):
    """What a message request returns.

    Without ``waitTime``: ``interaction_id`` and ``status`` only. With it: ``responded``
    tells whether the human answered inside the window; ``response`` is the text for the
    agent (the response template applied, or the no-response text); ``reply`` is the
    human's raw text. A timeout is a normal result, never an exception.
    """

    interaction_id: str
    status: Literal["pending", "ended"]
    responded: bool | None = None
    response: str | None = None
    reply: str | None = None
    delivery_status: DeliveryStatus | None = None
    metadata: dict[str, str] | None = None

    @property
    def text(self) -> str:
        """The text as the agent should see it."""
        if self.response is not None:
            return self.response
        return f"Message sent; interaction {self.interaction_id} is {self.status}."
