"""Garbage to every provider route (what Slack and Twilio call, and Slack's install
pages), over loopback with both providers configured against their contract fakes: what
cannot be verified is 403, what is verified but cannot be read is 400 (the documented
error body, ``field`` naming the culprit), anything else the route's own answer — never
a 500, never a traceback or an error in the log — and nothing is sent or changed.

The routes come from the running app (every route under ``/providers/``), so a provider
added later is swept too, and fails here until ``SIGNERS`` knows how it signs."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import itertools
import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, quote, urlencode

import httpx
import pytest
from discord_support import discord_config
from meta_support import meta_config
from slack_support import SlackLive, install
from starlette.routing import Route, WebSocketRoute
from teams_support import teams_config
from twilio.request_validator import RequestValidator  # type: ignore[import-untyped]
from twilio_support import HUMAN, POOL, SMS_FROM, WHATSAPP_FROM

from humanwire import HumanWire
from humanwire.approval import ApprovalRequest, Approver
from humanwire.server.config import SlackConfig, TelegramConfig, TelnyxConfig, TwilioConfig
from humanwire.server.delivery.provider_routes import ProviderRoute, ProviderWebSocketRoute
from humanwire.server.delivery.slack.provider import REF_WAIT
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.discord import DiscordFakeServer, FakeDiscord
from humanwire.testing.service import fast_config
from humanwire.testing.slack import FakeSlackMessage, FakeWorkspace, SlackFakeServer
from humanwire.testing.teams import FakeTeams, TeamsFakeServer
from humanwire.testing.telegram import FakeBot, FakeTelegram, TelegramFakeServer
from humanwire.testing.telnyx import FakeTelnyx, TelnyxFakeServer
from humanwire.testing.twilio import FakeTwilio, TwilioFakeServer
from humanwire.testing.whatsapp_meta import FakeMetaWhatsApp, MetaWhatsAppFakeServer

KNOWN_SIGNED = {
    "/providers/slack/events",
    "/providers/slack/interactions",
    "/providers/twilio/messages",
    "/providers/twilio/message-status",
    "/providers/twilio/voice",
    "/providers/twilio/call-status",
    "/providers/telnyx/messages",
    "/providers/telnyx/voice",
    "/providers/telnyx/call-status",
    "/providers/telegram/updates",
    "/providers/telegram/bots/{bot_id}/updates",
    "/providers/discord/interactions",
    "/providers/meta/whatsapp",
    "/providers/teams/messages",
}
UNAUTHORIZED = {"discord", "teams"}
"""Providers whose routes answer what they cannot verify 401 (Discord requires it; the Bot
Framework's SDKs answer so), not 403."""
TELEGRAM_SECRET = "telegram-webhook-secret_1"
DISCORD_SECRET = "discord-test-signing-seed"
TEAMS_SECRET = "teams-fake-signing-key"
"""Names the Teams fake's own key (``sign_teams``): any other secret signs with a key the
service does not trust."""
TEAMS_FAKES: list[FakeTeams] = []
"""The sweep's Teams fake, whose key ``sign_teams`` signs with."""
TELNYX_SECRET = "telnyx-test-signing-seed"
"""The Telnyx fake's key pair is derived from it (``telnyx_key``), so the sweep signs as
Telnyx does with the same ``SIGNERS`` call as the others."""
KNOWN_PAGES = {"/providers/slack/install", "/providers/slack/oauth"}
KNOWN_SOCKETS = {"/providers/twilio/relay", "/providers/telnyx/relay"}


@dataclass
class Providers:
    """The service with Slack and Twilio, an account with state worth guarding: its own
    workspace installed, a text waiting for a reply, an approval waiting in Slack."""

    slack: SlackLive
    twilio: FakeTwilio
    telnyx: FakeTelnyx
    telegram: FakeTelegram
    discord: FakeDiscord
    meta: FakeMetaWhatsApp
    teams: FakeTeams
    own: FakeWorkspace
    account_id: str
    sms_id: str
    approval_id: str
    approval_message: FakeSlackMessage
    telegram_bot: FakeBot
    """The account's own Telegram bot: its route's ``{bot_id}`` is swept as its id."""

    @property
    def runner(self) -> ServiceRunner:
        return self.slack.runner

    @property
    def base_url(self) -> str:
        return self.slack.base_url

    def routes(self) -> list[Route]:
        return [
            route
            for route in self.runner.app.routes
            if isinstance(route, Route) and route.path.startswith("/providers/")
        ]

    def signed_routes(self) -> list[tuple[str, str]]:
        """(provider, path) of every route a provider POSTs to (an own bot's route at
        the account's bot)."""
        return [
            (
                route.path.split("/")[2],
                route.path.replace("{bot_id}", str(self.telegram_bot.bot_id)),
            )
            for route in self.routes()
            if "POST" in (route.methods or ())
        ]

    def secret(self, provider: str, path: str = "") -> str:
        if path.startswith("/providers/telegram/bots/"):
            return str(self.telegram_bot.secret_token)  # an own bot's webhook: its own
        return {
            "slack": self.slack.fake.signing_secret,
            "twilio": self.twilio.auth_token,
            "telnyx": TELNYX_SECRET,
            "telegram": TELEGRAM_SECRET,
            "discord": DISCORD_SECRET,
            "meta": self.meta.app_secret,
            "teams": TEAMS_SECRET,
        }[provider]

    def sign(self, provider: str, path: str, body: bytes) -> dict[str, str]:
        """Headers signing ``body`` to ``path`` as ``provider`` does."""
        return SIGNERS[provider](self.secret(provider, path), self.base_url + path, body)

    def state(self) -> dict[str, Any]:
        """Everything a refused request must leave as it was."""
        store = self.runner.engine.store
        client = self.slack.client
        sms = client.interactions.status(self.sms_id)
        approval = client.interactions.status(self.approval_id)
        return {
            "slack calls": [request.method for request in self.slack.fake.requests],
            "slack notices": len(self.slack.fake.ephemerals),
            "approval message updates": len(self.approval_message.updates),
            "twilio requests": [(r.method, r.path) for r in self.twilio.requests],
            "telnyx requests": [(r.method, r.path) for r in self.telnyx.requests],
            "telegram requests": [name for name, _ in self.telegram.requests],
            "discord requests": [(m, p) for m, p, _ in self.discord.state.requests],
            "meta requests": [(m, p) for m, p, _ in self.meta.state.requests],
            "teams requests": [(m, p) for m, p, _ in self.teams.state.requests],
            "teams references": self.runner.call(store.provider_states, "teams-reference"),
            "installs": sorted(
                key for key, _ in self.runner.call(store.provider_states, "slack-install")
            ),
            "sms": (sms.status, sms.result),
            "approval": (approval.status, approval.result),
            "inbound": len(self.runner.call(store.list_inbound, self.account_id, 100)),
            "events": len(self.runner.call(store.list_events, self.account_id, 100)),
            "interactions": len(self.runner.call(store.list_interactions, self.account_id, 100)),
        }


@pytest.fixture
def providers(
    database: str,
    fake_slack: SlackFakeServer,
    fake_twilio: TwilioFakeServer,
    caplog: pytest.LogCaptureFixture,
) -> Iterator[Providers]:
    telnyx_fake = FakeTelnyx(signing_seed=telnyx_key(TELNYX_SECRET))
    telnyx_fake.add_number("+13125550142")
    telnyx_server = TelnyxFakeServer(telnyx_fake).start()
    telegram_server = TelegramFakeServer().start()
    telegram_fake = telegram_server.fake
    discord_fake = FakeDiscord()
    discord_fake.state.signing_key = discord_key(DISCORD_SECRET)
    discord_fake.state.public_key_hex = (
        discord_fake.state.signing_key.public_key().public_bytes_raw().hex()
    )
    discord_server = DiscordFakeServer(discord_fake).start()
    meta_server = MetaWhatsAppFakeServer(FakeMetaWhatsApp(statuses=False)).start()
    teams_server = TeamsFakeServer().start()
    teams_fake = teams_server.fake
    TEAMS_FAKES[:] = [teams_fake]
    telegram = TelegramConfig(
        bot_token=telegram_fake.token,
        webhook_secret=TELEGRAM_SECRET,
        api_base=telegram_server.api_base,
    )
    slack_fake, twilio_fake = fake_slack.fake, fake_twilio.fake
    slack = SlackConfig(
        bot_token=slack_fake.workspace.bot_token,
        signing_secret=slack_fake.signing_secret,
        api_base=fake_slack.api_base,
        client_id=slack_fake.client_id,
        client_secret=slack_fake.client_secret,
    )
    twilio = TwilioConfig(
        account_sid=twilio_fake.account_sid,
        auth_token=twilio_fake.auth_token,
        api_base=fake_twilio.base_url,
        sms_from=SMS_FROM,
        whatsapp_from=WHATSAPP_FROM,
        numbers=POOL,
    )
    telnyx = TelnyxConfig(
        api_key=telnyx_fake.api_key,
        public_key=telnyx_fake.public_key,
        api_base=telnyx_server.api_base,
        sms_from="+13125550142",
        connection_id=telnyx_fake.connection_id,
        account_sid=telnyx_fake.account_sid,
    )
    runner = ServiceRunner(
        replace(
            fast_config(database),
            slack=slack,
            twilio=twilio,
            telnyx=telnyx,
            telegram=telegram,
            discord=discord_config(discord_server),
            whatsapp_meta=meta_config(meta_server),
            teams=teams_config(teams_server),
        )
    )
    runner.start()
    slack_fake.events_url = f"{runner.base_url}/providers/slack/events"
    slack_fake.interactions_url = f"{runner.base_url}/providers/slack/interactions"
    key = runner.create_account("tester")
    client = HumanWire(api_key=key, base_url=runner.base_url, max_retries=0)
    member = slack_fake.add_member("ada")
    channel = slack_fake.add_channel("deploys", members=[member])
    live = SlackLive(slack_fake, fake_slack, runner, client, key, member, channel)
    try:
        own = slack_fake.add_workspace("Acme")
        assert install(live, key, own).status_code == 200
        # Windows far longer than any test, so "nothing changed" cannot be their end.
        sms = client.messages.sms(to=HUMAN, message="Still on?", follow_up_time=3600)
        approver = Approver(client, to=member, channel="slack", wait_time=1, follow_up_time=3600)
        approval = approver.send(ApprovalRequest("restart"))
        account = runner.call(runner.engine.accounts.authenticate, key)
        assert account is not None
        telegram_bot = telegram_fake.add_bot("sweep_own_bot")
        registered = httpx.post(
            f"{runner.base_url}/telegram/bots",
            json={"token": telegram_bot.token},
            headers={"Authorization": f"Bearer {key}"},
        )
        assert registered.status_code == 201, registered.text
        twilio_fake.wait_idle()
        state = Providers(
            live,
            twilio_fake,
            telnyx_fake,
            telegram_fake,
            discord_fake,
            meta_server.fake,
            teams_fake,
            own,
            account.id,
            sms.interaction_id,
            approval.interaction_id,
            live.posted(member),
            telegram_bot,
        )
        before = state.state()
        assert before["sms"] == ("pending", None) and before["approval"] == ("pending", None)
        assert before["installs"] == [own.team_id]
        caplog.clear()
        caplog.set_level(logging.DEBUG, logger="humanwire")
        yield state
        time.sleep(0.5)  # what an acknowledged event started in the background
        assert state.state() == before
        assert slack_fake.errors == [] and twilio_fake.errors == [] and telnyx_fake.errors == []
        assert telegram_fake.errors == [] and telegram_fake.violations == []
        assert discord_fake.errors == [] and discord_fake.violations == []
        assert meta_server.fake.errors == [] and meta_server.fake.violations == []
        assert teams_fake.errors == [] and teams_fake.violations == []
        logged = [r for r in caplog.records if r.name.startswith("humanwire")]
        assert [r.getMessage() for r in logged if r.exc_info or r.levelno >= logging.WARNING] == []
    finally:
        client.close()
        runner.stop()
        telnyx_server.stop()
        telegram_server.stop()
        discord_server.stop()
        meta_server.stop()
        teams_server.stop()
        TEAMS_FAKES.clear()


# -- signing as each provider does ---------------------------------------------------------
_STAMPS = itertools.count()


def fresh_stamp() -> str:
    """A timestamp of its own for each signature (a second further back, within the
    tolerances): Slack's and Telnyx's signatures cover a timestamp and the body, and the
    same body signed in the same second twice is a replay."""
    return str(int(time.time()) - next(_STAMPS) % 240)


def sign_slack(secret: str, url: str, body: bytes, *, at: float | None = None) -> dict[str, str]:
    stamp = fresh_stamp() if at is None else str(int(at))
    digest = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256)
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": "v0=" + digest.hexdigest()}


def sign_twilio(secret: str, url: str, body: bytes) -> dict[str, str]:
    try:
        params = dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
    except UnicodeDecodeError:
        params = {}  # Twilio signs UTF-8 parameters: there is no right signature
    return {"X-Twilio-Signature": RequestValidator(secret).compute_signature(url, params)}


def telnyx_key(secret: str) -> bytes:
    """The 32-byte Ed25519 seed of ``secret``."""
    return hashlib.sha256(secret.encode()).digest()


def sign_telnyx(secret: str, url: str, body: bytes) -> dict[str, str]:
    """Ed25519 over ``"{timestamp}|{body}"`` with the key of ``secret``, at a
    ``fresh_stamp`` (Ed25519 is deterministic)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    stamp = fresh_stamp()
    key = Ed25519PrivateKey.from_private_bytes(telnyx_key(secret))
    signature = key.sign(stamp.encode() + b"|" + body)
    return {
        "telnyx-timestamp": stamp,
        "telnyx-signature-ed25519": base64.b64encode(signature).decode(),
    }


def sign_telegram(secret: str, url: str, body: bytes) -> dict[str, str]:
    """Telegram signs nothing: it echoes the webhook's secret token."""
    return {"X-Telegram-Bot-Api-Secret-Token": secret}


def discord_key(secret: str) -> Any:
    """The Ed25519 key of ``secret`` (its SHA-256 as the seed): the sweep signs as Discord
    does, with the same ``SIGNERS`` call as the others."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.from_private_bytes(hashlib.sha256(secret.encode()).digest())


def sign_discord(secret: str, url: str, body: bytes) -> dict[str, str]:
    """Ed25519 over timestamp + body, hex, at a ``fresh_stamp``."""
    stamp = fresh_stamp()
    signature = discord_key(secret).sign(stamp.encode() + body).hex()
    return {"X-Signature-Timestamp": stamp, "X-Signature-Ed25519": signature}


def sign_meta(secret: str, url: str, body: bytes) -> dict[str, str]:
    """HMAC-SHA256 of the raw body with the app secret, hex."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"X-Hub-Signature-256": "sha256=" + digest}


def sign_teams(secret: str, url: str, body: bytes) -> dict[str, str]:
    """A Bot Framework token for the body's ``serviceUrl`` (the fake's when the body names
    none), by the fake's key; another secret: by a key of nobody's, under the fake's kid."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    fake = TEAMS_FAKES[0]
    try:
        named = json.loads(body).get("serviceUrl")
    except (ValueError, UnicodeDecodeError, AttributeError, RecursionError):
        named = None
    service_url = named if isinstance(named, str) else fake.service_url
    key = None if secret == TEAMS_SECRET else rsa.generate_private_key(65537, 2048)
    return {"Authorization": f"Bearer {fake.token(service_url, key=key)}"}


SIGNERS: dict[str, Callable[[str, str, bytes], dict[str, str]]] = {
    "slack": sign_slack,
    "twilio": sign_twilio,
    "telnyx": sign_telnyx,
    "telegram": sign_telegram,
    "discord": sign_discord,
    "meta": sign_meta,
    "teams": sign_teams,
}


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "field"}
    assert body["error"]["code"] == code and body["error"]["message"]
    return dict(body["error"])


def test_every_provider_route_is_guarded(providers: Providers) -> None:
    routes = providers.routes()
    assert {route.path for route in routes} >= KNOWN_SIGNED | KNOWN_PAGES
    for route in routes:
        assert isinstance(route, ProviderRoute), f"{route.path} is not built by signed_route"
        assert route.path.startswith(f"/providers/{route.provider}/")
        if "POST" in (route.methods or ()):
            assert route.verifier is not None, f"{route.path} verifies nothing"
            assert route.provider in SIGNERS, f"add how {route.provider} signs to SIGNERS"
    others = [r for r in providers.runner.app.routes if isinstance(r, ProviderRoute)]
    assert {r.path for r in others} == {r.path for r in routes}


def test_every_provider_websocket_refuses_an_unsigned_handshake(providers: Providers) -> None:
    """Every WebSocket under /providers/ is built by ``signed_websocket_route`` and
    answers a handshake without a valid signature 403, before anything is read."""
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    sockets = [
        route
        for route in providers.runner.app.routes
        if isinstance(route, WebSocketRoute) and route.path.startswith("/providers/")
    ]
    assert {route.path for route in sockets} >= KNOWN_SOCKETS
    base = providers.base_url.replace("http://", "ws://", 1)
    for route in sockets:
        assert isinstance(route, ProviderWebSocketRoute), f"{route.path} is not signed"
        assert route.provider in SIGNERS, f"add how {route.provider} signs to SIGNERS"
        url = base + route.path
        forged = SIGNERS[route.provider](providers.secret(route.provider), url + "?x=1", b"")
        for headers in (
            {},
            {"X-Twilio-Signature": "bad"},
            {"X-Twilio-Signature": "x" * 5000},
            forged,
        ):
            for query in ("", "?interaction=x", "?interaction=x&token=bad", "?token=" + "x" * 5000):
                with pytest.raises(InvalidStatus) as refused:
                    connect(url + query, additional_headers=headers, open_timeout=5).close()
                assert refused.value.response.status_code == 403, (route.path, query, headers)


def unverifiable() -> list[dict[bytes, bytes]]:
    """Headers no provider's signature check can pass."""
    now = str(int(time.time())).encode()
    zeros = b"v0=" + b"0" * 64
    stamps = [
        b"abc",
        b"1e9",
        b"9" * 5000,
        b"-1",
        b"",
        b"0x10",
        now + b".5",
        "١٧٠٠٠٠٠٠٠٠".encode(),  # digits int() takes, but not Slack's
    ]
    signatures = [
        "v0=é".encode() + b"0" * 62,
        b"v0=\xe9" + b"0" * 63,
        b"v0=" + b"F" * 64,
        b"v1=" + b"0" * 64,
        b"",
        b"x" * 5000,
        zeros,
    ]
    twilio = [b"bad", b"\xff\xfe", "é".encode(), b"=" * 5000, b"", b"bm90IHNpZ25lZA=="]
    near = TELEGRAM_SECRET.encode()
    telegram = [b"", b"x" * 5000, near[:-1], near + b"x", near.upper(), b"\xff" + near[1:]]
    telnyx_signatures = [*twilio, base64.b64encode(b"\0" * 64), b"A" * 88]
    discord_signatures = [b"", b"00" * 64, b"zz" * 64, b"0" * 5000, b"\xff" * 128, b"AB" * 63]
    meta = [b"", b"sha256=", b"sha256=" + b"0" * 64, b"sha256=" + b"G" * 64, b"sha1=" + b"0" * 40]
    meta += [b"sha256=" + b"0" * 5000, b"sha256=\xe9" + b"0" * 63, b"0" * 64]
    teams_tokens = [
        b"Bearer",
        b"Bearer x.y.z",
        b"Bearer " + b"a" * 20_000,
        b"Bearer \xff\xfe",
        b"Basic dXNlcjpwYXNz",
        b"Bearer eyJhbGciOiJub25lIn0.eyJhdWQiOiJ4In0.",  # alg none
    ]
    telnyx_stamps = [*stamps, str(int(time.time()) - 301).encode(), b"+" + now, b"0" + now]
    return [
        {},
        *({b"X-Slack-Request-Timestamp": stamp, b"X-Slack-Signature": zeros} for stamp in stamps),
        *({b"X-Slack-Request-Timestamp": now, b"X-Slack-Signature": sig} for sig in signatures),
        *({b"X-Twilio-Signature": signature} for signature in twilio),
        *({b"X-Telegram-Bot-Api-Secret-Token": secret} for secret in telegram),
        *({b"X-Hub-Signature-256": signature} for signature in meta),
        *(
            {b"telnyx-timestamp": now, b"telnyx-signature-ed25519": signature}
            for signature in telnyx_signatures
        ),
        *(
            {b"telnyx-timestamp": stamp, b"telnyx-signature-ed25519": b"A" * 86 + b"=="}
            for stamp in telnyx_stamps
        ),
        *(
            {b"X-Signature-Timestamp": now, b"X-Signature-Ed25519": signature}
            for signature in discord_signatures
        ),
        *(
            {b"X-Signature-Timestamp": stamp, b"X-Signature-Ed25519": b"00" * 64}
            for stamp in telnyx_stamps
        ),
        *({b"Authorization": token} for token in teams_tokens),
    ]


UNSIGNED_BODIES = [
    b"",
    b"{}",
    b"\xff\xfe{}",
    b"[" * 50_000,
    b"payload=%7B%22type%22%3A%22block_actions%22%7D",
    b"MessageSid=SM1&From=%2B12025550100&To=%2B14155550142&Body=forged",
]


class Post(NamedTuple):
    path: str
    body: bytes
    headers: Mapping[bytes, bytes] | Mapping[str, str]


async def post_all(base_url: str, posts: list[Post]) -> list[httpx.Response]:
    """Each request, a few at a time (one at a time, a thousand take a minute here)."""
    slots = asyncio.Semaphore(8)
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:

        async def post(request: Post) -> httpx.Response:
            async with slots:
                return await client.post(
                    request.path, content=request.body, headers=request.headers
                )

        return await asyncio.gather(*(post(request) for request in posts))


async def test_what_cannot_be_verified_is_403(
    providers: Providers, caplog: pytest.LogCaptureFixture
) -> None:
    posts: list[Post] = []
    for provider, path in providers.signed_routes():
        url = providers.base_url + path
        for headers in unverifiable():
            posts += [Post(path, body, headers) for body in UNSIGNED_BODIES]
        for body in UNSIGNED_BODIES[:2]:
            # Signed as the provider signs, with another secret.
            posts.append(Post(path, body, SIGNERS[provider]("another-secret", url, body)))
        if provider == "slack":
            stale = sign_slack(providers.secret("slack"), url, b"{}", at=time.time() - 3600)
            posts.append(Post(path, b"{}", stale))
        if provider == "telnyx":
            stale = providers.telnyx.sign(b"{}", int(time.time()) - 3600)
            posts.append(Post(path, b"{}", stale))
        if provider == "teams":
            fake = providers.teams
            for token in (
                fake.token(exp=int(time.time()) - 3600),
                fake.token(iss="https://evil.example"),
                fake.token(aud="another-app"),
                fake.token(kid="rolled"),
            ):
                posts.append(Post(path, b"{}", {"Authorization": f"Bearer {token}"}))
        if provider == "discord":
            old = str(int(time.time()) - 3600)
            signature = discord_key(DISCORD_SECRET).sign(old.encode() + b"{}").hex()
            stale = {"X-Signature-Timestamp": old, "X-Signature-Ed25519": signature}
            posts.append(Post(path, b"{}", stale))
    for post, response in zip(posts, await post_all(providers.base_url, posts), strict=True):
        try:
            if post.path.split("/")[2] in UNAUTHORIZED:
                assert_error(response, 401, "unauthorized")
            else:
                assert_error(response, 403, "forbidden")
        except AssertionError:
            raise AssertionError((post.path, post.body[:40], dict(post.headers))) from None
    # One line each, no traceback (the fixture checks nothing worse was logged).
    refusals = [r for r in caplog.records if r.name == "humanwire.providers"]
    assert len(refusals) == len(posts)
    assert {(r.levelno, r.exc_info) for r in refusals} == {(logging.INFO, None)}


SIGNED_GARBAGE: list[bytes] = [
    b"",
    b"{bad",
    b"null",
    b"[]",
    b'"text"',
    b"123",
    b"{}",
    b"[" * 50_000,
    b'{"a":' * 20_000,
    b'{"type": "\\ud800"}',
    b"%zz=%%",
    b"a&&&=&==",
    b"payload=",
    b"payload=" + quote("[" * 50_000).encode(),
    b"payload=null",
    b"payload=%7B%7D",
    b"payload=%7B%22type%22%3A5%7D",
    b"MessageSid=SM%00&SmsSid=%00&From=%00&To=%00&Body=%00&NumMedia=abc&CallSid=%00"
    b"&CallStatus=completed&MessageStatus=delivered&Direction=inbound&AnsweredBy=%00",
    b"NumMedia=99999999999999999999&MediaUrl0=%00&MessageSid=" + b"S" * 5000,
    b'{"type": "event_callback", "event_id": "Ev\\u0000", "team_id": "T\\u0000",'
    b' "event": {"type": "message", "user": "U\\u0000", "text": "\\u0000", "channel": "D1"}}',
]
NOT_UTF8 = [b"\xff\xfe{}", b"payload=\xff", b"Body=\xe9t\xe9"]


async def test_signed_garbage_is_400_or_answered_never_500(providers: Providers) -> None:
    posts: list[Post] = []
    for provider, path in providers.signed_routes():
        for content_type in ["application/json", "application/x-www-form-urlencoded", None]:
            type_header = {"Content-Type": content_type} if content_type else {}
            for body in [*SIGNED_GARBAGE, *NOT_UTF8]:
                posts.append(
                    Post(path, body, {**type_header, **providers.sign(provider, path, body)})
                )
    for post, response in zip(posts, await post_all(providers.base_url, posts), strict=True):
        where = (post.path, post.body[:40])
        # A signature over a body that is not UTF-8 cannot check out; Telegram's secret and
        # Teams' token cover no body, Discord's signature and Meta's HMAC the raw bytes, so
        # their routes read the body and refuse it (400).
        raw = post.path.startswith(
            ("/providers/telegram/", "/providers/discord/", "/providers/meta/", "/providers/teams/")
        )
        if post.body in NOT_UTF8 and not raw:
            assert response.status_code == 403, where  # there is no signature to check
            assert_error(response, 403, "forbidden")
        elif response.status_code >= 400:
            assert response.status_code == 400, where
            assert_error(response, 400, "invalid_request")
        else:
            assert response.status_code in (200, 204), where


def _event(providers: Providers, event: Any, **envelope: Any) -> dict[str, Any]:
    return {
        "type": "event_callback",
        "team_id": providers.own.team_id,
        "event_id": f"Ev{time.monotonic_ns()}",
        "event": event,
        **envelope,
    }


def _click(providers: Providers, **changes: Any) -> dict[str, Any]:
    """A click on the waiting approval's Approve, as Slack sends it, with ``changes``."""
    message = providers.approval_message
    team = providers.slack.fake.workspace.team_id
    return {
        "type": "block_actions",
        "team": {"id": team},
        "user": {"id": providers.slack.member},
        "container": {"type": "message", "channel_id": message.channel, "message_ts": message.ts},
        "channel": {"id": message.channel},
        "message": {"ts": message.ts},
        "actions": [{"action_id": "humanwire_approve", "type": "button"}],
        **changes,
    }


def test_signed_bodies_of_the_wrong_shape_are_400_naming_the_field(
    providers: Providers,
) -> None:
    """What reached the handlers (a 500 each), or their background work (an error in the
    log, the install kept or not by accident)."""
    team = providers.own.team_id
    events: list[tuple[Any, str | None]] = [
        (b"[" * 50_000, None),
        ({"type": 5}, "type"),
        ({}, "type"),
        ({"type": "url_verification", "challenge": {"x": 1}}, "challenge"),
        ({"type": "url_verification"}, "challenge"),
        ({"type": "event_callback"}, "event"),
        ({"type": "event_callback", "event": "x"}, "event"),
        (_event(providers, {"type": "message"}, event_id=5), "event_id"),
        (_event(providers, {"type": "message"}, team_id=[team]), "team_id"),
        (_event(providers, {}), "event.type"),
        (_event(providers, {"type": ["message"]}), "event.type"),
        (_event(providers, {"type": "tokens_revoked", "tokens": "x"}), "event.tokens"),
        (
            _event(providers, {"type": "tokens_revoked", "tokens": {"bot": "U1"}}),
            "event.tokens.bot",
        ),
        (_event(providers, {"type": "app_uninstalled", "team": 5}), "event.team"),
        (_event(providers, {"type": "message", "subtype": 5}), "event.subtype"),
        (_event(providers, {"type": "message", "user": {"id": "U1"}}), "event.user"),
        (_event(providers, {"type": "message", "user": "U1", "text": 5}), "event.text"),
        (_event(providers, {"type": "message", "user": "U1", "thread_ts": 1.5}), "event.thread_ts"),
        (_event(providers, {"type": "message", "user": "U1", "channel": {}}), "event.channel"),
    ]
    clicks: list[tuple[Any, str | None]] = [
        (b"a=1", "payload"),
        (b"payload=%7Bbad", "payload"),
        (b"payload=" + quote("[" * 50_000).encode(), "payload"),
        (None, "payload"),
        ([], "payload"),
        ({}, "payload.type"),
        ({"type": 5}, "payload.type"),
        (_click(providers, actions=5), "payload.actions"),
        (_click(providers, actions=[5]), "payload.actions[0]"),
        (_click(providers, actions=[{}]), "payload.actions[0].action_id"),
        (_click(providers, actions=[{"action_id": 5}]), "payload.actions[0].action_id"),
        ({k: v for k, v in _click(providers).items() if k != "actions"}, "payload.actions"),
        ({k: v for k, v in _click(providers).items() if k != "user"}, "payload.user"),
        (_click(providers, user=5), "payload.user"),
        (_click(providers, user={"id": 5}), "payload.user.id"),
        (_click(providers, team="x"), "payload.team"),
        (_click(providers, container=5), "payload.container"),
        (_click(providers, container={"channel_id": ["C1"]}), "payload.container.channel_id"),
        (_click(providers, channel="C1"), "payload.channel"),
        (_click(providers, message={"ts": 1.5}), "payload.message.ts"),
    ]
    with httpx.Client(base_url=providers.base_url, timeout=10) as client:
        for event, field in events:
            body = event if isinstance(event, bytes) else json.dumps(event).encode()
            path = "/providers/slack/events"
            headers = providers.sign("slack", path, body)
            response = client.post(path, content=body, headers=headers)
            assert assert_error(response, 400, "invalid_request")["field"] == field, event
        for payload, field in clicks:
            if isinstance(payload, bytes):
                body = payload
            else:
                body = urlencode({"payload": json.dumps(payload)}).encode()
            path = "/providers/slack/interactions"
            headers = providers.sign("slack", path, body)
            response = client.post(path, content=body, headers=headers)
            assert assert_error(response, 400, "invalid_request")["field"] == field, payload


def test_what_slack_sends_that_is_not_acted_on_is_still_acknowledged(
    providers: Providers,
) -> None:
    """The shapes are checked only where they are read: an event or interaction of
    another kind, however its fields look, is a 200 that does nothing."""
    message = providers.approval_message
    events = [
        {"type": "app_rate_limited", "minute_rate_limited": 1},
        _event(providers, {"type": "user_change", "user": {"id": "U1", "name": "x"}}),
        _event(providers, {"type": "channel_created", "channel": {"id": "C1"}}),
        _event(
            providers,
            {"type": "message", "subtype": "message_changed", "message": {"user": "U1"}},
        ),
        _event(providers, {"type": "reaction_added", "user": "U1", "item": {"ts": 1}}),
    ]
    clicks = [
        {"type": "view_submission", "view": {"state": {}}, "user": {"id": "U1"}},
        {"type": "shortcut", "callback_id": 5},
        _click(providers, actions=[{"action_id": "humanwire_open", "url": "x"}]),
        # Approve, but on no message of ours: ignored at once, not waited for.
        _click(providers, container={"type": "view", "view_id": "V1"}, channel=None, message=None),
        _click(providers, team=None, container={"channel_id": message.channel}),
    ]
    with httpx.Client(base_url=providers.base_url, timeout=10) as client:
        for event in events:
            body = json.dumps(event).encode()
            path = "/providers/slack/events"
            response = client.post(path, content=body, headers=providers.sign("slack", path, body))
            assert response.status_code == 200, (event, response.text)
        for payload in clicks:
            body = urlencode({"payload": json.dumps(payload)}).encode()
            started = time.monotonic()
            path = "/providers/slack/interactions"
            response = client.post(path, content=body, headers=providers.sign("slack", path, body))
            assert response.status_code == 200, (payload, response.text)
            assert time.monotonic() - started < REF_WAIT - 1, payload


def test_the_install_pages_answer_garbage_with_a_page(providers: Providers) -> None:
    queries = [
        "",
        "state=",
        "state=nope",
        "state=%00",
        "state=" + "x" * 5000,
        "state=%ff%fe",
        "state=a&state=b",
        "code=x",
        "state=nope&code=x",
        "state=nope&error=access_denied",
        "error=%3Cscript%3E",
    ]
    authorizations = ["", "Bearer nope", "Bearer " + "k" * 5000, "Basic x"]
    with httpx.Client(base_url=providers.base_url, timeout=10) as client:
        for route in providers.routes():
            if "POST" in (route.methods or ()):
                continue
            for query in queries:
                for authorization in authorizations:
                    headers = {"Authorization": authorization} if authorization else {}
                    response = client.get(f"{route.path}?{query}", headers=headers)
                    assert response.status_code in (400, 401, 404), (route.path, query)
                    assert response.headers["content-type"].startswith("text/html")
