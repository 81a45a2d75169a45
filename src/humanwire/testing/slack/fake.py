"""``FakeSlack``: Slack's side, played locally — one Slack app installed in workspaces,
their members and conversations. Its parts, moto-style: the records (``records``), the
state, the test's controls and the members' side here, the Web API over HTTP
(``responses.SlackResponses``), what is signed and posted to the app (``events.SlackEvents``),
served by ``server.SlackFakeServer``.

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

Deliveries run on the serving loop (``_fake_server.FakeBackground``); the test-facing methods
are thread-safe and return once the change is made (the delivery goes on: ``wait_idle``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import string
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import httpx
from starlette.applications import Starlette

from .._fake_server import FakeBackground, poll_until
from .events import SlackEvents
from .records import (
    ACK_TIMEOUT,
    DEFAULT_SCOPES,
    RETRY_DELAYS,
    Failure,
    FakeAttempt,
    FakeAuthorization,
    FakeChannel,
    FakeEphemeral,
    FakeEventDelivery,
    FakeInteraction,
    FakeMember,
    FakeRequest,
    FakeSlackMessage,
    FakeWorkspace,
    Violation,
    new_id,
    slug,
)
from .responses import SlackResponses
from .spec import SlackSpec, load_spec

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
        self.app_id = new_id("A")
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
        self.background = FakeBackground("fake Slack", "SlackFakeServer", self.lock, self.error)
        self.responses = SlackResponses(self)
        self.events = SlackEvents(self)
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
            self._failures: list[Failure] = []
            self._delay = 0.0
            self._last_ts = 0.0
            self.workspace = self.add_workspace(self.team_name, installed=True)

    # -- the world, from the test -----------------------------------------------------------
    def add_workspace(
        self, name: str, *, installed: bool = False, scopes: Iterable[str] = DEFAULT_SCOPES
    ) -> FakeWorkspace:
        """A workspace (the app installed in it only if ``installed``: else through OAuth)."""
        with self.lock:
            team_id = new_id("T")
            workspace = FakeWorkspace(
                team_id=team_id,
                name=name,
                bot_token=self._new_token(),
                bot_user_id=new_id("U"),
                bot_id=new_id("B"),
                installed=installed,
                scopes=tuple(scopes),
            )
            self.workspaces[team_id] = workspace
            self.members[workspace.bot_user_id] = FakeMember(
                workspace.bot_user_id, "humanwire", team_id, is_bot=True
            )
            workspace.admin = self.add_member(f"{slug(name)}-admin", team=team_id)
            return workspace

    def add_member(self, name: str, team: str | None = None) -> str:
        """A person in ``team`` (the shared workspace by default); returns the id."""
        with self.lock:
            team = team or self.workspace.team_id
            self._workspace(team)
            member = FakeMember(new_id("U"), name, team)
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
            channel = FakeChannel(new_id("C"), name, team, people, is_private=private)
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
            self._failures.append(Failure(method, "ratelimited", 429, retry_after, times))

    def fail_next(self, method: str, error: str = "fatal_error", times: int = 1) -> None:
        """The next ``times`` calls of ``method`` answer ``{"ok": false, "error": error}``."""
        with self.lock:
            self._failures.append(Failure(method, error, 200, None, times))

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
        self.wait_for(lambda: self.background.idle, timeout)

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
            self.events.send_event(channel, event)
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
            self.events.send_event(channel, event)
            return message

    def bot_post(self, channel: str, text: str, thread_ts: str | None = None) -> FakeSlackMessage:
        """Another app's bot posts in ``channel`` (a ``bot_message``)."""
        with self.lock:
            conversation = self._channel_of(channel)
            message = self._add_message(
                conversation, text, bot_id=new_id("B"), subtype="bot_message", thread_ts=thread_ts
            )
            event = self._message_event(conversation, message)
            event["username"] = "another bot"
            self.events.send_event(conversation, event)
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
                self.events.deliver(self.events.envelope(workspace, event))

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
        return self.background.run(self.events.interact(payload), timeout=timeout)

    def _button(self, message: FakeSlackMessage, action_id: str) -> tuple[dict[str, Any], str]:
        # The member's client may still show the posted buttons (a double click races
        # the update), so those count too.
        for content in (message.blocks, message.posted_blocks):
            for block in content or ():
                for element in block.get("elements", ()) if block.get("type") == "actions" else ():
                    if element.get("action_id") == action_id:
                        return element, str(block.get("block_id") or new_id("b", 5))
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
            self.events.events_url(), json.dumps(body).encode(), content_type="application/json"
        )
        try:
            echoed = response.json().get("challenge")
        except ValueError:
            echoed = None
        if echoed != challenge:
            self.error("url_verification: the challenge was not echoed")
        return response

    def redeliver(self, delivery: FakeEventDelivery) -> FakeEventDelivery:
        """Sends ``delivery`` again as Slack's next retry (``X-Slack-Retry-Num``)."""
        retry = len(delivery.attempts)
        self.background.run(self.events.attempt(delivery, retry, "http_timeout"))
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
        signed = self.events.signed_headers(body, content_type, signature, timestamp)
        with httpx.Client(timeout=10) as client:
            return client.post(url, content=body, headers={**signed, **(headers or {})})

    def authorize(self, url: str) -> str:
        """An admin allows the app on Slack's consent page at ``url``; returns where Slack
        sends the browser back (``redirect_uri?code=…&state=…``)."""
        response = httpx.get(url, follow_redirects=False, timeout=10)
        if response.status_code != 302:
            raise RuntimeError(f"Slack refused the consent: {response.status_code} {response.text}")
        return response.headers["location"]

    def error(self, problem: str) -> None:
        """Records one of the fake's own problems (``errors``)."""
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
            new_id("D"), user, workspace.team_id, {user, workspace.bot_user_id}, is_im=True
        )
        self.channels[channel.id] = channel
        return channel, False

    # -- serving -------------------------------------------------------------------------------
    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The serving loop (None while not served)."""
        return self.background.loop

    def app(self) -> Starlette:
        """The Web API, the consent page and ``response_url`` as an ASGI app; its
        lifespan binds the fake to the serving loop."""

        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            async with self.background.serving():
                yield

        return Starlette(routes=self.responses.routes(), lifespan=lifespan)
