"""``FakeDiscord``: the test's handle on a fake Discord, its state (``state.py``), its
REST API (``responses.py``) and the people acting in it (``people.py``), joined."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import httpx
from starlette.applications import Starlette

from .._fake_server import poll_until
from .people import FakeModal, InteractionSender
from .responses import DiscordResponses
from .spec import load_spec
from .state import DiscordState, FakeChannel, FakeDiscordMessage, FakeGuild, FakeUser

__all__ = ["FakeDiscord"]

T = TypeVar("T")


class FakeDiscord:
    """One Discord application with its bot, a guild it is in, and the test's controls.

    Point the code under test at it: the REST base ``<server>/api/v10``, ``bot_token``,
    ``application_id`` and ``public_key`` (hex, to verify interactions); and set
    ``interactions_url`` to the app's interactions endpoint.
    """

    def __init__(self) -> None:
        self.spec = load_spec()
        self.state = DiscordState()
        self.responses = DiscordResponses(self.state, self.spec)
        self.sender = InteractionSender(self.state, self.spec)

    # -- what the app is given ---------------------------------------------------------
    @property
    def bot_token(self) -> str:
        return self.state.bot_token

    @property
    def application_id(self) -> str:
        return self.state.application_id

    @property
    def public_key(self) -> str:
        return self.state.public_key_hex

    @property
    def guild(self) -> FakeGuild:
        return self.state.guild

    @property
    def interactions_url(self) -> str | None:
        return self.sender.interactions_url

    @interactions_url.setter
    def interactions_url(self, url: str | None) -> None:
        self.sender.interactions_url = url

    # -- the world ---------------------------------------------------------------------
    def add_user(self, username: str, *, in_guild: bool = True) -> FakeUser:
        """A user; ``in_guild=False``: one who shares no server with the app (a DM fails
        with 50278)."""
        return self.state.add_user(username, guild=self.state.guild if in_guild else None)

    def add_channel(self, name: str) -> FakeChannel:
        """A text channel of the app's guild."""
        return self.state.add_channel(name)

    # -- records -----------------------------------------------------------------------
    @property
    def violations(self) -> list[str]:
        with self.state.lock:
            return list(self.state.violations)

    @property
    def errors(self) -> list[str]:
        with self.state.lock:
            return list(self.state.errors)

    @property
    def modals(self) -> list[FakeModal]:
        with self.state.lock:
            return list(self.sender.modals)

    def posted_to(self, target: FakeUser | FakeChannel) -> list[FakeDiscordMessage]:
        """The bot's messages in ``target`` (a channel, or a user's DM), oldest first."""
        with self.state.lock:
            if isinstance(target, FakeUser):
                channels = {c.id for c in self.state.channels.values() if c.recipient == target.id}
            else:
                channels = {target.id}
            return [
                m
                for m in self.state.messages
                if m.channel_id in channels and m.author == self.state.bot.id
            ]

    def wait_for(self, predicate: Callable[[], T], timeout: float = 5.0) -> T:
        return poll_until(predicate, self.state.lock, timeout, "fake Discord")

    # -- what people do ----------------------------------------------------------------
    def click(self, message: FakeDiscordMessage, custom_id: str, user: FakeUser) -> httpx.Response:
        return self.sender.click(message, custom_id, user)

    async def aclick(
        self, message: FakeDiscordMessage, custom_id: str, user: FakeUser
    ) -> httpx.Response:
        return await self.sender.aclick(message, custom_id, user)

    def submit(self, modal: FakeModal, values: dict[str, str], user: FakeUser) -> httpx.Response:
        return self.sender.submit(modal, values, user)

    async def asubmit(
        self, modal: FakeModal, values: dict[str, str], user: FakeUser
    ) -> httpx.Response:
        return await self.sender.asubmit(modal, values, user)

    def ping(self) -> httpx.Response:
        return self.sender.ping()

    def post_signed(
        self, body: bytes, *, signature: str | None = None, timestamp: str | None = None
    ) -> httpx.Response:
        return self.sender.post_signed(body, signature=signature, timestamp=timestamp)

    def app(self) -> Starlette:
        return self.responses.app()
