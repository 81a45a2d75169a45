"""The fake Discord's world and records, apart from its HTTP handling (as moto keeps a
service's backend apart from its responses): the app and its bot, users, guilds,
channels, messages and the interactions handed to the app. Every change goes through
:class:`DiscordState`'s methods under its lock; the HTTP layer (``responses.py``) and the
people acting (``people.py``) only call them.
"""

from __future__ import annotations

import itertools
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = [
    "DiscordError",
    "DiscordState",
    "FakeChannel",
    "FakeDiscordMessage",
    "FakeGuild",
    "FakeInteraction",
    "FakeUser",
]

_EPOCH_MS = 1420070400000
"""Discord's epoch (2015-01-01): a snowflake's top bits are milliseconds since it."""

INITIAL_RESPONSE_SECONDS = 3.0
"""An interaction must be answered within 3 s, or its token is invalid."""
TOKEN_SECONDS = 15 * 60.0
"""After the answer, the interaction token edits and follows up for 15 minutes."""


def numbered(components: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``components`` as Discord stores them: each numbered (``id``, in order, rows and
    their children alike) unless the app numbered it."""
    counter = itertools.count(1)
    out: list[dict[str, Any]] = []
    for row in components:
        row = {**row, "id": row.get("id", next(counter))}
        children = [
            {**child, "id": child.get("id", next(counter))} for child in row.get("components", ())
        ]
        out.append({**row, "components": children})
    return out


class DiscordError(Exception):
    """What Discord answers a request it refuses: HTTP ``status`` and JSON ``code``."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def body(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message}


@dataclass
class FakeUser:
    id: str
    username: str
    bot: bool = False
    accepts_dms: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "username": self.username,
            "avatar": None,
            "discriminator": "0",
            "public_flags": 0,
            "flags": 0,
            "bot": self.bot,
            "global_name": self.username,
            "primary_guild": None,
        }


@dataclass
class FakeGuild:
    id: str
    name: str
    members: set[str] = field(default_factory=set)


@dataclass
class FakeChannel:
    id: str
    type: int
    """0: a guild text channel; 1: a DM."""
    guild_id: str | None = None
    recipient: str | None = None
    """The user of a DM."""


@dataclass
class FakeDiscordMessage:
    id: str
    channel_id: str
    author: str
    content: str
    components: list[dict[str, Any]]
    timestamp: str
    edits: list[dict[str, Any]] = field(default_factory=list)
    """Every edit's body, in order (the message shows the last)."""
    interaction_id: str | None = None
    """The interaction whose answer made it (a response or followup), if any."""

    def custom_ids(self) -> list[str]:
        return [
            str(child["custom_id"])
            for row in self.components
            for child in row.get("components", ())
            if "custom_id" in child
        ]


@dataclass
class FakeInteraction:
    """One interaction handed to the app: what was sent, how it was answered."""

    id: str
    token: str
    type: int
    user: str
    payload: dict[str, Any]
    sent_at: float
    status: int | None = None
    answer: Any = None
    answered_at: float | None = None
    elapsed: float | None = None
    original_message_id: str | None = None

    @property
    def acknowledged(self) -> bool:
        return self.answer is not None


class DiscordState:
    """The fake Discord's state: one application with its bot, and what was done."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._ids = itertools.count(1)
        self.application_id = self.new_id()
        self.bot_token = f"fake-discord-bot.{secrets.token_urlsafe(24)}"
        # Discord signs what it sends the app; the app holds only the public key.
        self.signing_key = Ed25519PrivateKey.generate()
        self.public_key_hex = self.signing_key.public_key().public_bytes_raw().hex()
        self.bot = FakeUser(self.new_id(), "humanwire", bot=True)
        self.users: dict[str, FakeUser] = {self.bot.id: self.bot}
        self.guilds: dict[str, FakeGuild] = {}
        self.channels: dict[str, FakeChannel] = {}
        self.messages: list[FakeDiscordMessage] = []
        self.interactions: list[FakeInteraction] = []
        self.requests: list[tuple[str, str, Any]] = []
        """Every REST request the app made: (method, path, JSON body)."""
        self.violations: list[str] = []
        """Requests Discord's description refuses (the code under test's fault)."""
        self.errors: list[str] = []
        """The fake's own answers the description refuses (the fake's fault)."""
        self.guild = self.add_guild("humanwire")

    # -- ids and time ------------------------------------------------------------------
    def new_id(self) -> str:
        """A snowflake: milliseconds since Discord's epoch, then a counter."""
        millis = int(time.time() * 1000) - _EPOCH_MS
        return str((millis << 22) | (next(self._ids) & 0x3FFFFF))

    @staticmethod
    def now_iso() -> str:
        return datetime.now(timezone.utc).isoformat()

    # -- the world ---------------------------------------------------------------------
    def add_guild(self, name: str) -> FakeGuild:
        with self.lock:
            guild = FakeGuild(self.new_id(), name, {self.bot.id})
            self.guilds[guild.id] = guild
            return guild

    def add_user(self, username: str, *, guild: FakeGuild | None = None) -> FakeUser:
        """A user; a member of ``guild`` (default: the app's guild), ``None`` for none."""
        with self.lock:
            user = FakeUser(self.new_id(), username)
            self.users[user.id] = user
            if guild is not None:
                guild.members.add(user.id)
            return user

    def add_channel(self, name: str, guild: FakeGuild | None = None) -> FakeChannel:
        with self.lock:
            guild = guild or self.guild
            channel = FakeChannel(self.new_id(), 0, guild_id=guild.id)
            self.channels[channel.id] = channel
            return channel

    def shares_guild(self, user_id: str) -> bool:
        return any(
            user_id in guild.members and self.bot.id in guild.members
            for guild in self.guilds.values()
        )

    # -- REST operations ---------------------------------------------------------------
    def user(self, user_id: str) -> FakeUser:
        with self.lock:
            user = self.users.get(user_id)
            if user is None:
                raise DiscordError(404, 10013, "Unknown User")
            return user

    def open_dm(self, recipient_id: str) -> FakeChannel:
        with self.lock:
            self.user(recipient_id)
            for channel in self.channels.values():
                if channel.type == 1 and channel.recipient == recipient_id:
                    return channel
            channel = FakeChannel(self.new_id(), 1, recipient=recipient_id)
            self.channels[channel.id] = channel
            return channel

    def channel(self, channel_id: str) -> FakeChannel:
        channel = self.channels.get(channel_id)
        if channel is None:
            raise DiscordError(404, 10003, "Unknown Channel")
        return channel

    def create_message(
        self, channel_id: str, body: dict[str, Any], *, author: str | None = None
    ) -> FakeDiscordMessage:
        with self.lock:
            channel = self.channel(channel_id)
            if channel.type == 1 and channel.recipient is not None:
                if not self.shares_guild(channel.recipient):
                    raise DiscordError(
                        400,
                        50278,
                        "Cannot send messages to this user due to having no mutual guilds",
                    )
                if not self.users[channel.recipient].accepts_dms:
                    raise DiscordError(403, 50007, "Cannot send messages to this user")
            elif (
                channel.guild_id is not None
                and self.bot.id not in self.guilds[channel.guild_id].members
            ):
                raise DiscordError(403, 50001, "Missing Access")
            content = body.get("content") or ""
            components = numbered(body.get("components") or [])
            if not content and not components and not body.get("embeds"):
                raise DiscordError(400, 50006, "Cannot send an empty message")
            message = FakeDiscordMessage(
                self.new_id(),
                channel.id,
                author or self.bot.id,
                content,
                components,
                self.now_iso(),
            )
            self.messages.append(message)
            return message

    def message(self, channel_id: str, message_id: str) -> FakeDiscordMessage:
        with self.lock:
            for message in self.messages:
                if message.id == message_id and message.channel_id == channel_id:
                    return message
            raise DiscordError(404, 10008, "Unknown Message")

    def edit_message(self, message: FakeDiscordMessage, body: dict[str, Any]) -> FakeDiscordMessage:
        with self.lock:
            if message.author != self.bot.id:
                raise DiscordError(403, 50005, "Cannot edit a message authored by another user")
            if "content" in body:
                message.content = body["content"] or ""
            if "components" in body:
                message.components = numbered(body["components"] or [])
            message.edits.append(body)
            return message

    # -- interactions ------------------------------------------------------------------
    def new_interaction(self, type_: int, user: str, payload: dict[str, Any]) -> FakeInteraction:
        with self.lock:
            interaction = FakeInteraction(
                payload["id"], payload["token"], type_, user, payload, time.monotonic()
            )
            self.interactions.append(interaction)
            return interaction

    def interaction(self, interaction_id: str, token: str) -> FakeInteraction:
        with self.lock:
            for interaction in self.interactions:
                if interaction.id == interaction_id and secrets.compare_digest(
                    interaction.token, token
                ):
                    return interaction
            raise DiscordError(404, 10062, "Unknown interaction")

    def by_token(self, application_id: str, token: str) -> FakeInteraction:
        """The interaction a webhook route's token names, while the token is valid."""
        with self.lock:
            if application_id != self.application_id:
                raise DiscordError(404, 10015, "Unknown Webhook")
            for interaction in self.interactions:
                if secrets.compare_digest(interaction.token, token):
                    if interaction.answered_at is None or (
                        time.monotonic() - interaction.answered_at > TOKEN_SECONDS
                    ):
                        raise DiscordError(401, 50027, "Invalid Webhook Token")
                    return interaction
            raise DiscordError(404, 10015, "Unknown Webhook")

    def answer(self, interaction: FakeInteraction, status: int, answer: Any) -> None:
        """Records the app's answer (the HTTP response, or a later callback) and applies
        it: a new message (type 4), the message edited (type 7)."""
        with self.lock:
            if interaction.acknowledged:
                raise DiscordError(400, 40060, "Interaction has already been acknowledged")
            elapsed = time.monotonic() - interaction.sent_at
            if elapsed > INITIAL_RESPONSE_SECONDS:
                raise DiscordError(404, 10062, "Unknown interaction")
            interaction.status = status
            interaction.answer = answer
            interaction.answered_at = time.monotonic()
            interaction.elapsed = elapsed
            if not isinstance(answer, dict):
                return
            data = answer.get("data") or {}
            channel_id = str(interaction.payload.get("channel_id") or "")
            if answer.get("type") == 4 and channel_id:
                created = self.create_message(channel_id, data)
                created.interaction_id = interaction.id
                interaction.original_message_id = created.id
            elif answer.get("type") == 7:
                source = interaction.payload.get("message") or {}
                target = self.message(channel_id, str(source.get("id")))
                self.edit_message(target, data)
                interaction.original_message_id = target.id
