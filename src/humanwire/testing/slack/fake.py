"""``FakeSlack``: Slack's side, played locally — one Slack app installed in workspaces,
their members and conversations, state and rules in one object, apart from the HTTP
serving (``server.SlackFakeServer``), moto-style.

**The Web API** (``/api/<method>``, GET or POST; parameters from the query, a form body
or a JSON body; the token as ``Authorization: Bearer`` or a ``token`` parameter, the
client's credentials as HTTP Basic for ``oauth.v2.access``). Every request is checked
against the published description (``spec``: known method, declared parameters of the
declared types, required ones present, ``blocks`` held to its definition) and against
what Slack's documentation states in prose: the token must be live and carry one of the
method's scopes (``missing_scope``), a message needs ``text`` or ``blocks`` (40,000
characters at most), Block Kit's limits (50 blocks, 25 elements an actions block, button
text 75 characters, unique ``action_id``…), a bot posts only where it is a member
(``not_in_channel``) and updates only its own messages. Requests refused for being
malformed are recorded in ``violations`` (a test asserts the service never sent Slack a
bad request); answers about the world (``channel_not_found``, ``user_not_found``,
``not_in_channel``, ``token_revoked``) and failures a test asked for (``rate_limit``,
``fail_next``) are answered the same way but are not violations. The fake's own answers
and events are held to the description too (``errors``).

Methods played: ``auth.test``, ``conversations.open``, ``chat.postMessage``,
``chat.update``, ``chat.postEphemeral``, ``oauth.v2.access`` (and the consent page
``/oauth/v2/authorize``). The description's other methods answer ``unknown_method`` and
are noted in ``errors``.

**The members' side.** ``reply`` / ``post`` / ``edit`` / ``bot_post`` change a
conversation and send the Events API envelope Slack would (``message``,
``message_changed``, another app's ``bot_message``; the app's own posts too) to
``events_url``, signed (``X-Slack-Signature``, computed with ``slack_sdk``'s
``SignatureVerifier``). An envelope not acknowledged with a 2xx within 3 seconds is
retried as Slack does, with ``X-Slack-Retry-Num`` / ``X-Slack-Retry-Reason`` (after
``retry_delays``, seconds here instead of Slack's minutes). ``click`` presses a button
of a posted message (a signed ``block_actions`` interaction to ``interactions_url``);
``uninstall`` sends ``app_uninstalled`` and ``tokens_revoked`` and kills the tokens.

Deliveries run on the serving loop with ``httpx.AsyncClient``; the test-facing methods
are thread-safe and return once the change is made (the delivery goes on: ``wait_idle``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import math
import re
import secrets
import string
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar
from urllib.parse import parse_qsl, urlencode, urlparse

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from .._fake_server import poll_until
from .spec import CHANNEL_TOPICS, Method, SlackSpec, SpecViolation, load_spec

__all__ = [
    "DEFAULT_SCOPES",
    "FakeAttempt",
    "FakeAuthorization",
    "FakeChannel",
    "FakeEphemeral",
    "FakeEventDelivery",
    "FakeInteraction",
    "FakeMember",
    "FakeRequest",
    "FakeSlack",
    "FakeSlackMessage",
    "FakeWorkspace",
    "Violation",
]

T = TypeVar("T")

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
_ROUTE = re.compile(r"^/api/(?P<method>[A-Za-z0-9_.]+)$")
_IMPLEMENTED = (
    "auth.test",
    "conversations.open",
    "chat.postMessage",
    "chat.update",
    "chat.postEphemeral",
    "oauth.v2.access",
)
_SCOPE_ALIASES = {"chat:write:bot": "chat:write", "chat:write:user": "chat:write"}
_BLOCK_TYPES = {
    "section",
    "actions",
    "context",
    "divider",
    "header",
    "image",
    "input",
    "rich_text",
    "file",
    "video",
}


def _id(prefix: str, length: int = 10) -> str:
    return prefix + "".join(secrets.choice(_ALNUM) for _ in range(length))


def _slug(name: str) -> str:
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
        return _slug(self.name)


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
class _Failure:
    method: str
    error: str
    status: int
    retry_after: float | None
    times: int


class _Refused(Exception):
    """An answer about the world (not the request's form): not a violation unless
    ``violation``."""

    def __init__(self, error: str, *, violation: bool = False, **extra: Any) -> None:
        super().__init__(error)
        self.error = error
        self.violation = violation
        self.extra = extra


# -- the fake -------------------------------------------------------------------------------------
class FakeSlack:
    """One Slack app (its signing secret, client id and secret, event and interactivity
    URLs) and the workspaces it is installed in; ``workspace`` is the shared one, installed
    from the start. Serve it with ``SlackFakeServer``."""

    def __init__(
        self,
        *,
        spec: SlackSpec | None = None,
        signing_secret: str | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        team_name: str = "Humanwire HQ",
        retry_delays: Sequence[float] = RETRY_DELAYS,
        ack_timeout: float = ACK_TIMEOUT,
    ) -> None:
        self.spec = spec or load_spec()
        self.signing_secret = signing_secret or secrets.token_hex(16)
        self.client_id = client_id or f"{secrets.randbelow(10**10)}.{secrets.randbelow(10**12)}"
        self.client_secret = client_secret or secrets.token_hex(16)
        self.verification_token = secrets.token_urlsafe(18)
        self.app_id = _id("A")
        self.team_name = team_name
        self.retry_delays = tuple(retry_delays)
        self.ack_timeout = ack_timeout
        self.events_url: str | None = None
        """The app's Event Subscriptions Request URL (None: no events are sent)."""
        self.interactions_url: str | None = None
        """The app's Interactivity Request URL."""
        self.base_url = ""
        """Where the fake is served (set by ``SlackFakeServer``): ``response_url`` lives here."""
        self.lock = threading.RLock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._http: httpx.AsyncClient | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._pending = 0
        self.reset()

    def reset(self) -> None:
        """Forgets every workspace but a new shared one, every conversation, record and
        injected failure (the app's URLs and secrets stay)."""
        with self.lock:
            self.workspaces: dict[str, FakeWorkspace] = {}
            self.members: dict[str, FakeMember] = {}
            self.channels: dict[str, FakeChannel] = {}
            self.messages: list[FakeSlackMessage] = []
            self.requests: list[FakeRequest] = []
            self.violations: list[Violation] = []
            self.errors: list[str] = []
            """The fake's own problems: answers or events off the description,
            deliveries that failed, methods it does not play."""
            self.ephemerals: list[FakeEphemeral] = []
            self.event_deliveries: list[FakeEventDelivery] = []
            self.interactions: list[FakeInteraction] = []
            self.action_responses: list[dict[str, Any]] = []
            """What was posted to a click's ``response_url``."""
            self.authorizations: list[FakeAuthorization] = []
            self.next_install_team: str | None = None
            """The workspace the next OAuth consent installs into (None: a new one)."""
            self._codes: dict[str, FakeAuthorization] = {}
            self._failures: list[_Failure] = []
            self._delay = 0.0
            self._last_ts = 0.0
            self.workspace = self.add_workspace(self.team_name, installed=True)

    # -- the world, from the test -----------------------------------------------------------
    def add_workspace(
        self, name: str, *, installed: bool = False, scopes: Iterable[str] = DEFAULT_SCOPES
    ) -> FakeWorkspace:
        """A workspace (the app installed in it only if ``installed``: else through OAuth)."""
        with self.lock:
            team_id = _id("T")
            workspace = FakeWorkspace(
                team_id=team_id,
                name=name,
                bot_token=self._new_token(),
                bot_user_id=_id("U"),
                bot_id=_id("B"),
                installed=installed,
                scopes=tuple(scopes),
            )
            self.workspaces[team_id] = workspace
            self.members[workspace.bot_user_id] = FakeMember(
                workspace.bot_user_id, "humanwire", team_id, is_bot=True
            )
            workspace.admin = self.add_member(f"{_slug(name)}-admin", team=team_id)
            return workspace

    def add_member(self, name: str, team: str | None = None) -> str:
        """A person in ``team`` (the shared workspace by default); returns the id."""
        with self.lock:
            team = team or self.workspace.team_id
            self._workspace(team)
            member = FakeMember(_id("U"), name, team)
            self.members[member.id] = member
            return member.id

    def add_channel(
        self,
        name: str,
        members: Iterable[str] = (),
        *,
        bot_in_channel: bool = True,
        team: str | None = None,
        private: bool = False,
    ) -> str:
        """A channel of ``members`` (the bot too, unless ``bot_in_channel`` is False)."""
        with self.lock:
            team = team or self.workspace.team_id
            workspace = self._workspace(team)
            people = set(members)
            if bot_in_channel:
                people.add(workspace.bot_user_id)
            channel = FakeChannel(_id("C"), name, team, people, is_private=private)
            self.channels[channel.id] = channel
            return channel.id

    def _workspace(self, team: str) -> FakeWorkspace:
        try:
            return self.workspaces[team]
        except KeyError:
            raise ValueError(f"no workspace {team}") from None

    def _new_token(self) -> str:
        return f"xoxb-{secrets.randbelow(10**10):010d}-{secrets.randbelow(10**13):013d}-" + "".join(
            secrets.choice(string.ascii_letters + string.digits) for _ in range(24)
        )

    # -- reading -------------------------------------------------------------------------------
    def message(self, channel: str, ts: str) -> FakeSlackMessage:
        with self.lock:
            for message in self.messages:
                if message.channel == channel and message.ts == ts:
                    return message
        raise KeyError(f"no message {ts} in {channel}")

    def posted_to(self, to: str) -> list[FakeSlackMessage]:
        """What the app's bot posted in channel ``to``, or in its DM with member ``to``."""
        with self.lock:
            member = self.members.get(to)
            if member is not None:
                wanted = {c.id for c in self.channels.values() if c.is_im and to in c.members}
            else:
                wanted = {to}
            bots = {w.bot_user_id for w in self.workspaces.values()}
            return [m for m in self.messages if m.channel in wanted and m.user in bots]

    # -- failures ------------------------------------------------------------------------------
    def rate_limit(self, method: str, times: int = 1, retry_after: float = 1) -> None:
        """The next ``times`` calls of ``method`` answer 429 ``ratelimited`` with
        ``Retry-After: retry_after``."""
        with self.lock:
            self._failures.append(_Failure(method, "ratelimited", 429, retry_after, times))

    def fail_next(self, method: str, error: str = "fatal_error", times: int = 1) -> None:
        """The next ``times`` calls of ``method`` answer ``{"ok": false, "error": error}``."""
        with self.lock:
            self._failures.append(_Failure(method, error, 200, None, times))

    def delay(self, seconds: float) -> None:
        """Every Web API answer takes ``seconds`` longer (a slow Slack); 0 ends it."""
        with self.lock:
            self._delay = seconds

    # -- waiting -------------------------------------------------------------------------------
    def wait_for(self, predicate: Callable[[], T], timeout: float = 5.0) -> T:
        """Polls ``predicate`` (under the fake's lock) until it is truthy; returns it."""
        return poll_until(predicate, self.lock, timeout, "fake Slack")

    def wait_idle(self, timeout: float = 10.0) -> None:
        """Until every delivery the fake started (with its retries) is over."""
        self.wait_for(lambda: self._pending == 0, timeout)

    # -- the members' side ---------------------------------------------------------------------
    def post(self, channel: str, user: str, text: str, team: str | None = None) -> FakeSlackMessage:
        """``user`` writes ``text`` in ``channel`` (a channel or DM id), outside any thread."""
        return self._human_message(channel, user, text, None, team)

    def reply(self, message: FakeSlackMessage, user: str, text: str) -> FakeSlackMessage:
        """``user`` answers ``text`` in ``message``'s thread."""
        return self._human_message(
            message.channel, user, text, message.thread_ts or message.ts, message.team
        )

    def _human_message(
        self, channel_id: str, user: str, text: str, thread_ts: str | None, team: str | None
    ) -> FakeSlackMessage:
        with self.lock:
            channel = self._channel_of(channel_id)
            if team is not None and channel.team != team:
                raise ValueError(f"{channel_id} is not in workspace {team}")
            member = self.members.get(user)
            if member is None or member.is_bot or user not in channel.members:
                raise ValueError(f"{user} is not a person in {channel_id}")
            message = self._add_message(channel, text, user=user, thread_ts=thread_ts)
            event = self._message_event(channel, message)
            event["client_msg_id"] = str(uuid.uuid4())
            self._send_event(channel, event)
            return message

    def edit(self, message: FakeSlackMessage, text: str) -> FakeSlackMessage:
        """The author edits ``message`` (a ``message_changed`` event)."""
        with self.lock:
            channel = self._channel_of(message.channel)
            previous = self._message_event(channel, message)
            message.text = text
            message.updates.append({"text": text, "blocks": message.blocks})
            current = self._message_event(channel, message)
            current["edited"] = {"user": message.user or "", "ts": self._ts()}
            for inner in (previous, current):
                for key in ("channel", "channel_type", "event_ts"):
                    inner.pop(key, None)
            ts = self._ts()
            event = {
                "type": "message",
                "subtype": "message_changed",
                "hidden": True,
                "channel": channel.id,
                "channel_type": channel.channel_type,
                "ts": ts,
                "event_ts": ts,
                "message": current,
                "previous_message": previous,
            }
            self._send_event(channel, event)
            return message

    def bot_post(self, channel: str, text: str, thread_ts: str | None = None) -> FakeSlackMessage:
        """Another app's bot posts in ``channel`` (a ``bot_message``)."""
        with self.lock:
            conversation = self._channel_of(channel)
            message = self._add_message(
                conversation, text, bot_id=_id("B"), subtype="bot_message", thread_ts=thread_ts
            )
            event = self._message_event(conversation, message)
            event["username"] = "another bot"
            self._send_event(conversation, event)
            return message

    def uninstall(self, team: str) -> None:
        """The workspace removes the app: its token dies; ``app_uninstalled`` and
        ``tokens_revoked`` are sent."""
        with self.lock:
            workspace = self._workspace(team)
            workspace.installed = False
            workspace.revoked_tokens.add(workspace.bot_token)
            now = self._ts()
            revoked = {"oauth": [], "bot": [workspace.bot_user_id]}
            for event in (
                {"type": "tokens_revoked", "tokens": revoked, "event_ts": now},
                {"type": "app_uninstalled", "event_ts": now},
            ):
                self._deliver(self._envelope(workspace, event))

    def click(
        self, message: FakeSlackMessage, action_id: str, user: str, *, timeout: float = 10.0
    ) -> httpx.Response:
        """``user`` presses the button ``action_id`` of ``message``: the signed
        ``block_actions`` interaction goes to ``interactions_url``; returns the answer."""
        with self.lock:
            channel = self._channel_of(message.channel)
            if user not in channel.members:
                raise ValueError(f"{user} cannot see {message.channel}")
            button, block_id = self._button(message, action_id)
            workspace = self._workspace(message.team)
            member = self.members[user]
            payload: dict[str, Any] = {
                "type": "block_actions",
                "user": {
                    "id": user,
                    "username": member.name,
                    "name": member.name,
                    "team_id": workspace.team_id,
                },
                "api_app_id": self.app_id,
                "token": self.verification_token,
                "container": {
                    "type": "message",
                    "message_ts": message.ts,
                    "channel_id": channel.id,
                    "is_ephemeral": False,
                },
                "trigger_id": f"{secrets.randbelow(10**10)}.{secrets.token_hex(16)}",
                "team": {"id": workspace.team_id, "domain": workspace.domain},
                "enterprise": None,
                "is_enterprise_install": False,
                "channel": {"id": channel.id, "name": channel.name},
                "message": {
                    "type": "message",
                    "user": message.user,
                    "bot_id": message.bot_id,
                    "text": message.text,
                    "ts": message.ts,
                    "blocks": message.blocks,
                },
                "state": {"values": {}},
                "response_url": f"{self.base_url}/actions/{secrets.token_hex(12)}",
                "actions": [
                    {
                        "type": button.get("type", "button"),
                        "action_id": action_id,
                        "block_id": block_id,
                        "text": button.get("text"),
                        **({"value": button["value"]} if "value" in button else {}),
                        **({"style": button["style"]} if "style" in button else {}),
                        "action_ts": f"{time.time():.6f}",
                    }
                ],
            }
        return self._run(self._interact(payload), timeout=timeout)

    def _button(self, message: FakeSlackMessage, action_id: str) -> tuple[dict[str, Any], str]:
        # The member's client may still show the posted buttons (a double click races
        # the update), so those count too.
        for content in (message.blocks, message.posted_blocks):
            for block in content or ():
                for element in block.get("elements", ()) if block.get("type") == "actions" else ():
                    if element.get("action_id") == action_id:
                        return element, str(block.get("block_id") or _id("b", 5))
        raise ValueError(f"{message.ts} has no button {action_id!r}")

    def url_verification(self) -> httpx.Response:
        """What Slack sends when the events URL is saved; the answer must echo the
        challenge (``errors`` says so otherwise)."""
        challenge = secrets.token_urlsafe(24)
        body = {
            "token": self.verification_token,
            "challenge": challenge,
            "type": "url_verification",
        }
        response = self.post_signed(
            self._events_url(), json.dumps(body).encode(), content_type="application/json"
        )
        try:
            echoed = response.json().get("challenge")
        except ValueError:
            echoed = None
        if echoed != challenge:
            self._error("url_verification: the challenge was not echoed")
        return response

    def redeliver(self, delivery: FakeEventDelivery) -> FakeEventDelivery:
        """Sends ``delivery`` again as Slack's next retry (``X-Slack-Retry-Num``)."""
        retry = len(delivery.attempts)
        self._run(self._attempt(delivery, retry, "http_timeout"))
        return delivery

    def post_signed(
        self,
        url: str,
        body: bytes,
        *,
        content_type: str,
        signature: str | None = None,
        timestamp: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """Posts ``body`` to ``url`` signed as Slack signs, or with ``signature`` /
        ``timestamp`` as given (security tests)."""
        signed = self._signed_headers(body, content_type, signature, timestamp)
        with httpx.Client(timeout=10) as client:
            return client.post(url, content=body, headers={**signed, **(headers or {})})

    def authorize(self, url: str) -> str:
        """An admin allows the app on Slack's consent page at ``url``; returns where Slack
        sends the browser back (``redirect_uri?code=…&state=…``)."""
        response = httpx.get(url, follow_redirects=False, timeout=10)
        if response.status_code != 302:
            raise RuntimeError(f"Slack refused the consent: {response.status_code} {response.text}")
        return response.headers["location"]

    # -- signing and delivering ----------------------------------------------------------------
    def _signed_headers(
        self, body: bytes, content_type: str, signature: str | None, timestamp: int | None
    ) -> dict[str, str]:
        from slack_sdk.signature import SignatureVerifier

        stamp = str(timestamp if timestamp is not None else int(time.time()))
        if signature is None:
            verifier = SignatureVerifier(self.signing_secret)
            signature = verifier.generate_signature(timestamp=stamp, body=body.decode())
        return {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": signature or "",
            "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
        }

    def _events_url(self) -> str:
        if not self.events_url:
            raise RuntimeError("set fake.events_url (the app's Event Subscriptions URL)")
        return self.events_url

    def _envelope(self, workspace: FakeWorkspace, event: dict[str, Any]) -> dict[str, Any]:
        envelope = {
            "token": self.verification_token,
            "team_id": workspace.team_id,
            "api_app_id": self.app_id,
            "event": event,
            "type": "event_callback",
            "event_id": _id("Ev0"),
            "event_time": int(time.time()),
            "authed_users": [workspace.bot_user_id],
            "authorizations": [
                {
                    "enterprise_id": None,
                    "team_id": workspace.team_id,
                    "user_id": workspace.bot_user_id,
                    "is_bot": True,
                    "is_enterprise_install": False,
                }
            ],
            "is_ext_shared_channel": False,
            "event_context": "4-" + secrets.token_urlsafe(24),
        }
        for problem in self.spec.check_event(envelope):
            self._error(f"event {event.get('type')}: {problem}")
        return envelope

    def _send_event(self, channel: FakeChannel, event: dict[str, Any]) -> None:
        """Sends a message event if the app hears it: installed in the workspace, in the
        conversation, with the topic's scope."""
        workspace = self.workspaces[channel.team]
        topic = f"message.{CHANNEL_TOPICS[channel.channel_type]}"
        needed = self.spec.events["topics"][topic]["subscribe"].get("x-scopes-required", ())
        if not workspace.installed or workspace.bot_user_id not in channel.members:
            return
        if needed and not set(needed) & set(workspace.scopes):
            return
        self._deliver(self._envelope(workspace, event))

    def _deliver(self, envelope: dict[str, Any]) -> None:
        if not self.events_url:
            return
        delivery = FakeEventDelivery(envelope)
        with self.lock:
            self.event_deliveries.append(delivery)
        self._schedule(lambda: self._dispatch(delivery), "event delivery")

    async def _dispatch(self, delivery: FakeEventDelivery) -> None:
        reason: str | None = None
        for retry in range(len(self.retry_delays) + 1):
            if retry:
                await asyncio.sleep(self.retry_delays[retry - 1])
            reason = await self._attempt(delivery, retry, reason)
            if reason is None:
                return
        self._error(f"event {delivery.envelope['event_id']} was never acknowledged")

    async def _attempt(
        self, delivery: FakeEventDelivery, retry: int, reason: str | None
    ) -> str | None:
        """One POST of ``delivery``; returns why it failed (None: acknowledged)."""
        body = json.dumps(delivery.envelope).encode()
        # Slack retries once the attempt before had its 3 s to be acknowledged, signed
        # afresh: never the same timestamp (and signature) as that attempt's.
        stamp = int(time.time())
        if retry:
            stamp = max(stamp, delivery.signed_at + math.ceil(self.ack_timeout))
        delivery.signed_at = stamp
        headers = self._signed_headers(body, "application/json", None, stamp)
        if retry:
            headers["X-Slack-Retry-Num"] = str(retry)
            headers["X-Slack-Retry-Reason"] = reason or "http_error"
        started = time.monotonic()
        status, failure = 0, None
        try:
            response = await self._client().post(
                self._events_url(), content=body, headers=headers, timeout=self.ack_timeout
            )
            status = response.status_code
            failure = None if 200 <= status < 300 else "http_error"
        except httpx.TimeoutException:
            failure = "http_timeout"
        except httpx.HTTPError:
            failure = "connection_failed"
        with self.lock:
            delivery.attempts.append(
                FakeAttempt(status, time.monotonic() - started, retry, reason if retry else None)
            )
        return failure

    async def _interact(self, payload: dict[str, Any]) -> httpx.Response:
        if not self.interactions_url:
            raise RuntimeError("set fake.interactions_url (the app's Interactivity URL)")
        body = urlencode({"payload": json.dumps(payload)}).encode()
        headers = self._signed_headers(body, "application/x-www-form-urlencoded", None, None)
        started = time.monotonic()
        response = await self._client().post(
            self.interactions_url, content=body, headers=headers, timeout=10
        )
        elapsed = time.monotonic() - started
        with self.lock:
            self.interactions.append(FakeInteraction(payload, response.status_code, elapsed))
        if response.status_code == 200 and elapsed > self.ack_timeout:
            self._error(f"a click was acknowledged after {elapsed:.1f} s (Slack shows an error)")
        return response

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            raise RuntimeError("the fake Slack is not being served (SlackFakeServer)")
        return self._http

    def _schedule(self, make: Callable[[], Coroutine[Any, Any, Any]], what: str) -> None:
        """Runs ``make()`` on the serving loop in the background (from any thread)."""
        loop = self.loop
        if loop is None:
            raise RuntimeError("the fake Slack is not being served (SlackFakeServer)")
        with self.lock:
            self._pending += 1

        def start() -> None:
            task = loop.create_task(make())
            self._tasks.add(task)

            def done(task: asyncio.Task[Any]) -> None:
                self._tasks.discard(task)
                with self.lock:
                    self._pending -= 1
                if not task.cancelled() and task.exception() is not None:
                    self._error(f"{what}: {task.exception()!r}")

            task.add_done_callback(done)

        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            start()
        else:
            loop.call_soon_threadsafe(start)

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        loop = self.loop
        if loop is None:
            coro.close()
            raise RuntimeError("the fake Slack is not being served (SlackFakeServer)")
        with contextlib.suppress(RuntimeError):
            if asyncio.get_running_loop() is loop:
                coro.close()
                raise RuntimeError("called on the fake's own loop")
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

    def _error(self, problem: str) -> None:
        with self.lock:
            self.errors.append(problem)

    # -- conversations --------------------------------------------------------------------------
    def _ts(self) -> str:
        with self.lock:
            now = max(time.time(), self._last_ts + 0.000001)
            self._last_ts = now
            return f"{now:.6f}"

    def _channel_of(self, channel_id: str) -> FakeChannel:
        try:
            return self.channels[channel_id]
        except KeyError:
            raise ValueError(f"no conversation {channel_id}") from None

    def _add_message(
        self,
        channel: FakeChannel,
        text: str | None,
        *,
        user: str | None = None,
        blocks: list[dict[str, Any]] | None = None,
        thread_ts: str | None = None,
        bot_id: str | None = None,
        subtype: str | None = None,
    ) -> FakeSlackMessage:
        message = FakeSlackMessage(
            team=channel.team,
            channel=channel.id,
            ts=self._ts(),
            text=text,
            blocks=blocks,
            thread_ts=thread_ts,
            user=user,
            bot_id=bot_id,
            subtype=subtype,
            posted_blocks=blocks,
        )
        self.messages.append(message)
        return message

    def _message_event(self, channel: FakeChannel, message: FakeSlackMessage) -> dict[str, Any]:
        event: dict[str, Any] = {
            "type": "message",
            "channel": channel.id,
            "text": message.text or "",
            "ts": message.ts,
            "event_ts": message.ts,
            "channel_type": channel.channel_type,
            "team": channel.team,
        }
        if message.user:
            event["user"] = message.user
        if message.bot_id:
            event["bot_id"] = message.bot_id
        if message.subtype:
            event["subtype"] = message.subtype
        if message.blocks:
            event["blocks"] = message.blocks
        if message.thread_ts:
            event["thread_ts"] = message.thread_ts
            parent = next(
                (m for m in self.messages if m.channel == channel.id and m.ts == message.thread_ts),
                None,
            )
            if parent is not None and parent.user:
                event["parent_user_id"] = parent.user
        return event

    def _dm(self, workspace: FakeWorkspace, user: str) -> tuple[FakeChannel, bool]:
        for channel in self.channels.values():
            if channel.is_im and channel.members == {user, workspace.bot_user_id}:
                return channel, True
        channel = FakeChannel(
            _id("D"), user, workspace.team_id, {user, workspace.bot_user_id}, is_im=True
        )
        self.channels[channel.id] = channel
        return channel, False

    def _conversation(self, workspace: FakeWorkspace, target: str) -> FakeChannel:
        """The conversation a bot posts in: a channel id or ``#name``, a DM id, or a
        member id (the DM with them)."""
        member = self.members.get(target)
        if member is not None and member.team == workspace.team_id and not member.is_bot:
            return self._dm(workspace, target)[0]
        for channel in self.channels.values():
            if channel.team == workspace.team_id and (
                channel.id == target or (target.startswith("#") and channel.name == target[1:])
            ):
                if channel.is_im and workspace.bot_user_id not in channel.members:
                    break
                return channel
        raise _Refused("channel_not_found")

    # -- serving -------------------------------------------------------------------------------
    def app(self) -> Starlette:
        """The Web API, the consent page and ``response_url`` as an ASGI app; its
        lifespan binds the fake to the serving loop."""

        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            self.loop = asyncio.get_running_loop()
            self._http = httpx.AsyncClient(timeout=10)
            try:
                yield
            finally:
                for task in list(self._tasks):
                    task.cancel()
                if self._tasks:
                    await asyncio.wait(list(self._tasks), timeout=2.0)
                await self._http.aclose()
                self._http = None
                self.loop = None

        return Starlette(
            routes=[
                Route("/api/{method}", self._api, methods=["GET", "POST"]),
                Route("/oauth/v2/authorize", self._consent, methods=["GET"]),
                Route("/actions/{id}", self._action_response, methods=["POST"]),
            ],
            lifespan=lifespan,
        )

    async def _api(self, request: Request) -> Response:
        name = request.path_params["method"]
        raw = await request.body()
        with self.lock:
            delay = self._delay
        if delay:
            await asyncio.sleep(delay)
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        values: dict[str, Any] = dict(request.query_params)
        json_body = content_type == "application/json"
        token, client = self._credentials(request)
        try:
            if raw:
                values.update(self._body(raw, content_type))
            if not json_body and "token" in values:
                token = token or str(values.get("token"))
            values.pop("token", None)
            with self.lock:
                self.requests.append(
                    FakeRequest(name, dict(values), token, request.method, content_type)
                )
            method = self.spec.method(name)
            if request.method not in method.http_methods:
                raise SpecViolation("invalid_post_type", f"{request.method} {name}")
            failure = self._take_failure(name)
            if failure is not None:
                headers = {}
                if failure.retry_after is not None:
                    headers["Retry-After"] = str(int(failure.retry_after))
                body = {"ok": False, "error": failure.error}
                return JSONResponse(body, failure.status, headers=headers)
            params = self.spec.check_params(method, values, json_body=json_body)
            with self.lock:
                answer = self._operate(method, token, client, params)
        except SpecViolation as exc:
            self._violate(name, values, exc.error, exc.message)
            answer = {"ok": False, "error": exc.error}
        except _Refused as exc:
            if exc.violation:
                self._violate(name, values, exc.error, str(exc.extra.pop("why", exc.error)))
            answer = {"ok": False, "error": exc.error, **exc.extra}
        for problem in self.spec.check_response(name, answer):
            self._error(f"answer of {name}: {problem}")
        return JSONResponse(answer)

    @staticmethod
    def _body(raw: bytes, content_type: str) -> dict[str, Any]:
        if content_type == "application/json":
            try:
                body = json.loads(raw)
            except ValueError:
                raise SpecViolation("invalid_json", "the body is not JSON") from None
            if not isinstance(body, dict):
                raise SpecViolation("json_not_object", "the JSON body is not an object")
            return body
        if content_type == "application/x-www-form-urlencoded":
            return dict(parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True))
        if not content_type:
            raise SpecViolation("missing_post_type", "a body without a Content-Type")
        raise SpecViolation("invalid_post_type", f"a {content_type} body")

    @staticmethod
    def _credentials(request: Request) -> tuple[str | None, tuple[str, str] | None]:
        header = request.headers.get("authorization", "")
        if header.startswith("Bearer "):
            return header[7:].strip() or None, None
        if header.startswith("Basic "):
            try:
                decoded = base64.b64decode(header[6:], validate=True).decode()
            except (ValueError, UnicodeDecodeError):
                return None, None
            user, _, password = decoded.partition(":")
            return None, (user, password)
        return None, None

    def _take_failure(self, name: str) -> _Failure | None:
        with self.lock:
            for failure in self._failures:
                if failure.method == name and failure.times > 0:
                    failure.times -= 1
                    if failure.times == 0:
                        self._failures.remove(failure)
                    return failure
        return None

    def _violate(self, name: str, values: dict[str, Any], error: str, message: str) -> None:
        with self.lock:
            self.violations.append(Violation(name, dict(values), error, message))

    def _operate(
        self,
        method: Method,
        token: str | None,
        client: tuple[str, str] | None,
        params: dict[str, Any],
    ) -> dict[str, Any]:
        if method.name == "oauth.v2.access":
            return self._oauth_access(client, params)
        workspace = self._authenticate(method, token)
        if method.name == "auth.test":
            return {
                "ok": True,
                "url": f"https://{workspace.domain}.slack.com/",
                "team": workspace.name,
                "user": "humanwire",
                "team_id": workspace.team_id,
                "user_id": workspace.bot_user_id,
                "bot_id": workspace.bot_id,
                "is_enterprise_install": False,
            }
        if method.name == "conversations.open":
            return self._open(workspace, params)
        if method.name == "chat.postMessage":
            return self._post_message(workspace, params)
        if method.name == "chat.update":
            return self._update(workspace, params)
        if method.name == "chat.postEphemeral":
            return self._ephemeral(workspace, params)
        self._error(f"{method.name} is not played by the fake")
        raise _Refused("unknown_method")

    def _authenticate(self, method: Method, token: str | None) -> FakeWorkspace:
        if not token:
            raise _Refused("not_authed", violation=True, why="no token")
        for workspace in self.workspaces.values():
            if token in workspace.revoked_tokens:
                raise _Refused("token_revoked")
            if workspace.installed and secrets.compare_digest(token, workspace.bot_token):
                break
        else:
            raise _Refused("invalid_auth", violation=True, why="an unknown token")
        needed = {_SCOPE_ALIASES.get(scope, scope) for scope in method.scopes}
        if needed and not needed & set(workspace.scopes):
            raise _Refused(
                "missing_scope",
                violation=True,
                why=f"{method.name} needs one of {sorted(needed)}",
                needed=",".join(sorted(needed)),
                provided=",".join(workspace.scopes),
            )
        return workspace

    def _open(self, workspace: FakeWorkspace, params: dict[str, Any]) -> dict[str, Any]:
        users = [u for u in str(params.get("users") or "").split(",") if u]
        if not users:
            raise _Refused("users_list_not_supplied", violation=True)
        if len(users) > 1:
            raise _Refused("too_many_users")  # group DMs are not played
        member = self.members.get(users[0])
        if member is None or member.team != workspace.team_id:
            raise _Refused("user_not_found")
        if member.deleted:
            raise _Refused("user_disabled")
        if member.is_bot:
            raise _Refused("cannot_dm_bot")
        channel, existed = self._dm(workspace, member.id)
        return {
            "ok": True,
            "no_op": existed,
            "already_open": existed,
            "channel": {"id": channel.id},
        }

    def _content(self, params: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        text, blocks = params.get("text"), params.get("blocks")
        if not text and not blocks:
            raise _Refused("no_text", violation=True, why="neither text nor blocks")
        if text and len(text) > MAX_TEXT:
            raise _Refused("msg_too_long", violation=True)
        if blocks:
            _check_blocks(blocks)
        return text, blocks

    def _post_message(self, workspace: FakeWorkspace, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._conversation(workspace, str(params["channel"]))
        if workspace.bot_user_id not in channel.members:
            raise _Refused("not_in_channel")
        if channel.archived:
            raise _Refused("is_archived")
        text, blocks = self._content(params)
        message = self._add_message(
            channel,
            text,
            user=workspace.bot_user_id,
            blocks=blocks,
            thread_ts=params.get("thread_ts"),
            bot_id=workspace.bot_id,
        )
        shown: dict[str, Any] = {
            "type": "message",
            "text": text or "",
            "user": workspace.bot_user_id,
            "bot_id": workspace.bot_id,
            "ts": message.ts,
            "team": workspace.team_id,
        }
        if blocks:
            shown["blocks"] = blocks
        if message.thread_ts:
            shown["thread_ts"] = message.thread_ts
        event = self._message_event(channel, message)
        event["app_id"] = self.app_id
        self._send_event(channel, event)
        return {"ok": True, "channel": channel.id, "ts": message.ts, "message": shown}

    def _update(self, workspace: FakeWorkspace, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._conversation(workspace, str(params["channel"]))
        try:
            message = self.message(channel.id, str(params["ts"]))
        except KeyError:
            raise _Refused("message_not_found") from None
        if message.user != workspace.bot_user_id:
            raise _Refused("cant_update_message", violation=True, why="not the bot's message")
        text, blocks = self._content(params)
        if text is not None:
            message.text = text
        if "blocks" in params:
            message.blocks = blocks or None
        message.updates.append({"text": text, "blocks": blocks})
        return {
            "ok": True,
            "channel": channel.id,
            "ts": message.ts,
            "text": message.text or "",
            "message": {"text": message.text or ""},
        }

    def _ephemeral(self, workspace: FakeWorkspace, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._conversation(workspace, str(params["channel"]))
        user = str(params["user"])
        if user not in channel.members:
            raise _Refused("user_not_in_channel")
        if workspace.bot_user_id not in channel.members:
            raise _Refused("channel_not_found")
        text, blocks = self._content(params)
        self.ephemerals.append(FakeEphemeral(workspace.team_id, channel.id, user, text, blocks))
        return {"ok": True, "message_ts": self._ts()}

    def _oauth_access(
        self, client: tuple[str, str] | None, params: dict[str, Any]
    ) -> dict[str, Any]:
        client_id, client_secret = client or (
            str(params.get("client_id") or ""),
            str(params.get("client_secret") or ""),
        )
        if client_id != self.client_id:
            raise _Refused("invalid_client_id", violation=True)
        if not secrets.compare_digest(client_secret, self.client_secret):
            raise _Refused("bad_client_secret", violation=True)
        grant = self._codes.pop(str(params["code"]), None)
        if grant is None:
            raise _Refused("invalid_code")
        redirect_uri = params.get("redirect_uri")
        if grant.redirect_uri and redirect_uri != grant.redirect_uri:
            raise _Refused("bad_redirect_uri", violation=True, why="not the consent's redirect_uri")
        workspace = self.workspaces[grant.team]
        if workspace.bot_token in workspace.revoked_tokens:
            workspace.bot_token = self._new_token()
        workspace.installed = True
        workspace.scopes = grant.scopes
        return {
            "ok": True,
            "app_id": self.app_id,
            "authed_user": {"id": workspace.admin},
            "scope": ",".join(grant.scopes),
            "token_type": "bot",
            "access_token": workspace.bot_token,
            "bot_user_id": workspace.bot_user_id,
            "team": {"id": workspace.team_id, "name": workspace.name},
            "enterprise": None,
            "is_enterprise_install": False,
        }

    async def _consent(self, request: Request) -> Response:
        """Slack's "allow this app" page, allowed at once."""
        query = request.query_params

        def refuse(error: str) -> Response:
            self._violate("oauth/v2/authorize", dict(query), error, error)
            return HTMLResponse(f"<h1>Something went wrong</h1><p>{error}</p>", 400)

        if query.get("client_id") != self.client_id:
            return refuse("invalid_client_id")
        scopes = tuple(s for s in (query.get("scope") or "").split(",") if s)
        if not scopes or any(s not in self.spec.known_scopes for s in scopes):
            return refuse("invalid_scope")
        redirect_uri = query.get("redirect_uri") or ""
        if urlparse(redirect_uri).scheme not in ("http", "https"):
            return refuse("bad_redirect_uri")
        with self.lock:
            team = self.next_install_team
            self.next_install_team = None
            if team is None:
                team = self.add_workspace(f"Workspace {len(self.workspaces) + 1}").team_id
            code = f"{secrets.randbelow(10**12)}.{secrets.token_hex(20)}"
            grant = FakeAuthorization(team, scopes, redirect_uri, query.get("state") or "", code)
            self._codes[code] = grant
            self.authorizations.append(grant)
        back = {"code": code, **({"state": grant.state} if grant.state else {})}
        separator = "&" if "?" in redirect_uri else "?"
        return RedirectResponse(f"{redirect_uri}{separator}{urlencode(back)}", 302)

    async def _action_response(self, request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError:
            return JSONResponse({"ok": False, "error": "invalid_json"}, 400)
        with self.lock:
            self.action_responses.append(body)
        return JSONResponse({"ok": True})


def _check_blocks(blocks: list[dict[str, Any]]) -> None:
    """Block Kit's limits (api.slack.com/reference/block-kit): what the loose ``blocks``
    definition of the description does not say."""

    def refuse(why: str) -> _Refused:
        return _Refused("invalid_blocks", violation=True, why=why)

    if len(blocks) > 50:
        raise refuse("more than 50 blocks")
    action_ids: set[str] = set()
    block_ids: set[str] = set()
    for index, block in enumerate(blocks):
        kind = block.get("type")
        if kind not in _BLOCK_TYPES:
            raise refuse(f"block {index}: unknown type {kind!r}")
        block_id = block.get("block_id")
        if block_id is not None:
            if not isinstance(block_id, str) or len(block_id) > 255 or block_id in block_ids:
                raise refuse(f"block {index}: bad or repeated block_id")
            block_ids.add(block_id)
        text = block.get("text")
        if kind in ("section", "header") and text is None and not block.get("fields"):
            raise refuse(f"block {index}: a {kind} needs text")
        if text is not None:
            _check_text(text, 3000 if kind == "section" else 150, refuse, index)
        elements = block.get("elements")
        if kind in ("actions", "context"):
            if not isinstance(elements, list) or not elements:
                raise refuse(f"block {index}: {kind} needs elements")
            if len(elements) > (25 if kind == "actions" else 10):
                raise refuse(f"block {index}: too many elements")
            for element in elements:
                if kind == "context" and element.get("type") in ("plain_text", "mrkdwn"):
                    _check_text(element, 3000, refuse, index)
                    continue
                if element.get("type") == "button":
                    _check_button(element, refuse, index)
                action_id = element.get("action_id")
                if action_id is not None:
                    if len(str(action_id)) > 255 or action_id in action_ids:
                        raise refuse(f"block {index}: bad or repeated action_id")
                    action_ids.add(action_id)


def _check_text(text: Any, limit: int, refuse: Callable[[str], _Refused], index: int) -> None:
    if not isinstance(text, dict) or text.get("type") not in ("plain_text", "mrkdwn"):
        raise refuse(f"block {index}: text must be a plain_text or mrkdwn object")
    value = text.get("text")
    if not isinstance(value, str) or not value or len(value) > limit:
        raise refuse(f"block {index}: text must be 1 to {limit} characters")


def _check_button(button: dict[str, Any], refuse: Callable[[str], _Refused], index: int) -> None:
    text = button.get("text")
    if not isinstance(text, dict) or text.get("type") != "plain_text":
        raise refuse(f"block {index}: a button's text is plain_text")
    if not isinstance(text.get("text"), str) or not 0 < len(text["text"]) <= 75:
        raise refuse(f"block {index}: a button's text is 1 to 75 characters")
    if "url" in button and (
        not isinstance(button["url"], str)
        or len(button["url"]) > 3000
        or urlparse(button["url"]).scheme not in ("http", "https")
    ):
        raise refuse(f"block {index}: a button's url")
    if "value" in button and len(str(button["value"])) > 2000:
        raise refuse(f"block {index}: a button's value is 2000 characters at most")
    if button.get("style") not in (None, "primary", "danger"):
        raise refuse(f"block {index}: a button's style is primary or danger")
