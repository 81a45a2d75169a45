"""The fake Slack's records: the world (workspaces and the app's install in them,
members, conversations, messages) and what the fake saw and did (requests, violations,
event deliveries and their attempts, clicks, consents), as plain data. No behaviour but
small properties; ``FakeSlack`` keeps them, ``responses`` and ``events`` read them."""

from __future__ import annotations

import re
import secrets
import string
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = [
    "ACK_TIMEOUT",
    "DEFAULT_SCOPES",
    "MAX_TEXT",
    "RETRY_DELAYS",
    "SIGNATURE_VERSION",
    "Failure",
    "FakeAttempt",
    "FakeAuthorization",
    "FakeChannel",
    "FakeEphemeral",
    "FakeEventDelivery",
    "FakeInteraction",
    "FakeMember",
    "FakeRequest",
    "FakeSlackMessage",
    "FakeWorkspace",
    "Refused",
    "Violation",
    "new_id",
    "slug",
]

DEFAULT_SCOPES: tuple[str, ...] = (
    "chat:write",
    "im:write",
    "im:history",
    "channels:history",
    "groups:history",
    "mpim:history",
    "users:read",
)
"""The scopes of the shared workspace's install: what humanwire's app manifest
(docs/going-live/slack.md) asks for. Written out, not imported from the implementation:
the fake stands for Slack, and a test checks that the two agree."""
ACK_TIMEOUT = 3.0
"""Slack wants a 2xx within 3 seconds, or it retries (events) / shows an error (clicks)."""
RETRY_DELAYS = (0.2, 0.5, 1.0)
"""Slack retries an event 3 times: at once, after 1 minute, after 5; here in seconds."""
SIGNATURE_VERSION = "v0"
MAX_TEXT = 40_000

_ALNUM = string.ascii_uppercase + string.digits


def new_id(prefix: str, length: int = 10) -> str:
    return prefix + "".join(secrets.choice(_ALNUM) for _ in range(length))


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "team"


# -- the world ------------------------------------------------------------------------------------
@dataclass
class FakeWorkspace:
    """A Slack workspace (team) and the app's install in it."""

    team_id: str
    name: str
    bot_token: str
    bot_user_id: str
    bot_id: str
    installed: bool
    scopes: tuple[str, ...] = DEFAULT_SCOPES
    admin: str = ""
    """The member who installs the app (OAuth's ``authed_user``)."""
    revoked_tokens: set[str] = field(default_factory=set)

    @property
    def domain(self) -> str:
        return slug(self.name)


@dataclass
class FakeMember:
    id: str
    name: str
    team: str
    is_bot: bool = False
    deleted: bool = False


@dataclass
class FakeChannel:
    id: str
    name: str
    team: str
    members: set[str]
    is_im: bool = False
    is_private: bool = False
    archived: bool = False

    @property
    def channel_type(self) -> str:
        """The Events API's ``channel_type``."""
        return "im" if self.is_im else ("group" if self.is_private else "channel")


@dataclass
class FakeSlackMessage:
    """A message in a conversation. ``updates`` lists each ``chat.update`` (and
    ``edit``) as ``{"text", "blocks"}``; ``text`` / ``blocks`` are the current content."""

    team: str
    channel: str
    ts: str
    text: str | None
    blocks: list[dict[str, Any]] | None
    thread_ts: str | None = None
    user: str | None = None
    bot_id: str | None = None
    subtype: str | None = None
    updates: list[dict[str, Any]] = field(default_factory=list)
    posted_blocks: list[dict[str, Any]] | None = None
    """The blocks as first posted (what a member's client may still show)."""


class FakeRequest(NamedTuple):
    """A Web API request (``method``: ``chat.postMessage``…; ``params`` as received,
    without the token)."""

    method: str
    params: dict[str, Any]
    token: str | None
    http_method: str
    content_type: str


@dataclass
class Violation:
    """A request the fake refused because Slack would have: it was malformed."""

    method: str
    params: dict[str, Any]
    error: str
    message: str


class FakeEphemeral(NamedTuple):
    """A ``chat.postEphemeral``: a notice only ``user`` sees."""

    team: str
    channel: str
    user: str
    text: str | None
    blocks: list[dict[str, Any]] | None


class FakeAuthorization(NamedTuple):
    """A consent given on ``/oauth/v2/authorize``."""

    team: str
    scopes: tuple[str, ...]
    redirect_uri: str
    state: str
    code: str


class FakeAttempt(NamedTuple):
    """One POST of a delivery: ``status`` 0 when no answer came in time (or at all)."""

    status: int
    elapsed: float
    retry_num: int
    reason: str | None


@dataclass
class FakeEventDelivery:
    envelope: dict[str, Any]
    attempts: list[FakeAttempt] = field(default_factory=list)
    signed_at: int = 0
    """The ``X-Slack-Request-Timestamp`` of the last attempt."""

    @property
    def event(self) -> dict[str, Any]:
        event: dict[str, Any] = self.envelope["event"]
        return event

    @property
    def acknowledged(self) -> bool:
        return any(200 <= attempt.status < 300 for attempt in self.attempts)


@dataclass
class FakeInteraction:
    payload: dict[str, Any]
    status: int
    elapsed: float


@dataclass
class Failure:
    """A failure ``rate_limit`` / ``fail_next`` asked for."""

    method: str
    error: str
    status: int
    retry_after: float | None
    times: int


class Refused(Exception):
    """An answer about the world (not the request's form): not a violation unless
    ``violation``."""

    def __init__(self, error: str, *, violation: bool = False, **extra: Any) -> None:
        super().__init__(error)
        self.error = error
        self.violation = violation
        self.extra = extra
