"""The Slack contract fake holds requests to Slack's published description, answers as the
description says Slack answers, and delivers signed events with Slack's retries. Driven
here with ``slack_sdk``'s own clients over loopback HTTP, and a small receiver standing
in for an app."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import SignatureVerifier
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from humanwire.testing._fake_server import FakeServer
from humanwire.testing.slack import FakeSlack, SlackFakeServer, load_spec, slack_fake


class Receiver:
    """An app's request URLs: records what arrives, answers the scripted statuses (then
    200), sleeping ``slow`` seconds first while it is set."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.statuses: list[int] = []
        self.slow = 0.0

    def app(self) -> Starlette:
        async def handle(request: Request) -> Response:
            self.received.append((dict(request.headers), await request.body()))
            if self.slow:
                await asyncio.sleep(self.slow)
            status = self.statuses.pop(0) if self.statuses else 200
            return Response(status_code=status)

        return Starlette(routes=[Route("/{path:path}", handle, methods=["POST"])])


@pytest.fixture
def slack() -> Iterator[SlackFakeServer]:
    with slack_fake(FakeSlack(retry_delays=(0.05, 0.05, 0.05), ack_timeout=0.5)) as server:
        yield server


@pytest.fixture
def receiver(slack: SlackFakeServer) -> Iterator[Receiver]:
    app = Receiver()
    with FakeServer(app) as served:
        slack.fake.events_url = f"{served.base_url}/events"
        slack.fake.interactions_url = f"{served.base_url}/interactions"
        yield app


def web(slack: SlackFakeServer, token: str | None = None) -> WebClient:
    return WebClient(token=token or slack.fake.workspace.bot_token, base_url=slack.api_base)


def refused(call: Any, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(SlackApiError) as caught:
        call(**kwargs)
    return caught.value.response.status_code, dict(caught.value.response.data)


def test_the_methods_the_service_uses_answer_as_described(slack: SlackFakeServer) -> None:
    fake = slack.fake
    ada = fake.add_member("ada")
    client = web(slack)
    me = client.auth_test()
    assert (me["team_id"], me["user_id"]) == (fake.workspace.team_id, fake.workspace.bot_user_id)
    dm = client.conversations_open(users=ada)["channel"]["id"]
    assert dm.startswith("D") and client.conversations_open(users=ada)["channel"]["id"] == dm
    blocks = [
        {"type": "section", "text": {"type": "mrkdwn", "text": "Deploy?"}},
        {
            "type": "actions",
            "elements": [
                {
                    "type": "button",
                    "action_id": "go",
                    "text": {"type": "plain_text", "text": "Go"},
                    "value": "go",
                    "style": "primary",
                }
            ],
        },
    ]
    posted = client.chat_postMessage(channel=dm, text="Deploy?", blocks=blocks)
    assert posted["channel"] == dm and posted["message"]["blocks"] == blocks
    message = fake.message(dm, posted["ts"])
    assert fake.posted_to(ada) == [message] and message.blocks == blocks
    updated = client.chat_update(channel=dm, ts=posted["ts"], text="Done", blocks=[])
    assert updated["text"] == "Done" and message.text == "Done" and message.blocks is None
    assert message.updates == [{"text": "Done", "blocks": []}]
    client.chat_postEphemeral(channel=dm, user=ada, text="only you")
    assert [(e.user, e.text) for e in fake.ephemerals] == [(ada, "only you")]
    # Form-encoded, with the token as a parameter, as older clients send.
    answer = httpx.post(
        f"{slack.api_base}chat.postMessage",
        data={"token": fake.workspace.bot_token, "channel": dm, "text": "hi", "mrkdwn": "true"},
    )
    assert answer.json()["ok"] is True
    assert [r.method for r in fake.requests][:2] == ["auth.test", "conversations.open"]
    assert fake.violations == [] and fake.errors == []


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"channel": "C1", "text": "x", "colour": "red"}, "invalid_arg_name"),
        ({"text": "no channel"}, "invalid_arguments"),
        ({"channel": "CHANNEL"}, "no_text"),
        ({"channel": "CHANNEL", "text": "x", "unfurl_links": "perhaps"}, "invalid_arguments"),
        ({"channel": "CHANNEL", "text": "x" * 40_001}, "msg_too_long"),
        ({"channel": "CHANNEL", "blocks": [{"text": "no type"}]}, "invalid_blocks"),
        ({"channel": "CHANNEL", "blocks": [{"type": "carousel"}]}, "invalid_blocks"),
        (
            {
                "channel": "CHANNEL",
                "blocks": [
                    {
                        "type": "actions",
                        "elements": [
                            {"type": "button", "text": {"type": "plain_text", "text": "y" * 76}}
                        ],
                    }
                ],
            },
            "invalid_blocks",
        ),
        (
            {
                "channel": "CHANNEL",
                "blocks": [
                    {
                        "type": "actions",
                        "elements": [
                            {
                                "type": "button",
                                "action_id": "a",
                                "text": {"type": "plain_text", "text": label},
                            }
                            for label in ("one", "two")
                        ],
                    }
                ],
            },
            "invalid_blocks",
        ),
    ],
)
def test_malformed_requests_are_refused_and_recorded(
    slack: SlackFakeServer, params: dict[str, Any], error: str
) -> None:
    fake = slack.fake
    channel = fake.add_channel("general")
    params = {k: (channel if v == "CHANNEL" else v) for k, v in params.items()}
    answer = httpx.post(
        f"{slack.api_base}chat.postMessage",
        json=params,
        headers={"Authorization": f"Bearer {fake.workspace.bot_token}"},
    )
    assert answer.json() == {"ok": False, "error": error}
    assert [v.error for v in fake.violations] == [error]
    assert fake.messages == [] and fake.errors == []


def test_credentials_and_scopes(slack: SlackFakeServer) -> None:
    fake = slack.fake
    channel = fake.add_channel("general")
    assert httpx.post(f"{slack.api_base}auth.test").json()["error"] == "not_authed"
    _, body = refused(web(slack, "xoxb-made-up").auth_test)
    assert body["error"] == "invalid_auth"
    narrow = fake.add_workspace("Narrow", installed=True, scopes=["users:read"])
    _, body = refused(web(slack, narrow.bot_token).chat_postMessage, channel=channel, text="x")
    assert body["error"] == "missing_scope" and "chat:write" in body["needed"]
    unknown = httpx.post(f"{slack.api_base}files.upload")
    assert unknown.json() == {"ok": False, "error": "unknown_method"}
    assert [v.error for v in fake.violations] == [
        "not_authed",
        "invalid_auth",
        "missing_scope",
        "unknown_method",
    ]
    assert fake.errors == []


def test_answers_about_the_world_are_not_violations(slack: SlackFakeServer) -> None:
    fake = slack.fake
    ada = fake.add_member("ada")
    outside = fake.add_channel("secret", members=[ada], bot_in_channel=False)
    client = web(slack)
    assert refused(client.conversations_open, users="U0NOBODY01")[1]["error"] == "user_not_found"
    assert refused(client.chat_postMessage, channel="C0NOWHERE1", text="x")[1]["error"] == (
        "channel_not_found"
    )
    assert refused(client.chat_postMessage, channel=outside, text="x")[1]["error"] == (
        "not_in_channel"
    )
    fake.fail_next("chat.postMessage", "fatal_error")
    assert refused(client.chat_postMessage, channel=ada, text="x")[1]["error"] == "fatal_error"
    assert fake.violations == [] and fake.errors == []


def test_a_rate_limit_is_a_429_with_retry_after(slack: SlackFakeServer) -> None:
    fake = slack.fake
    ada = fake.add_member("ada")
    fake.rate_limit("chat.postMessage", times=2, retry_after=7)
    for _ in range(2):
        with pytest.raises(SlackApiError) as caught:
            web(slack).chat_postMessage(channel=ada, text="x")
        assert caught.value.response.status_code == 429
        assert caught.value.response.headers["retry-after"] in ("7", ["7"])
        assert caught.value.response["error"] == "ratelimited"
    assert web(slack).chat_postMessage(channel=ada, text="x")["ok"] is True
    assert fake.violations == []


def test_events_are_signed_valid_and_retried_with_slacks_headers(
    slack: SlackFakeServer, receiver: Receiver
) -> None:
    fake = slack.fake
    ada = fake.add_member("ada")
    general = fake.add_channel("general", members=[ada])
    posted = web(slack).chat_postMessage(channel=general, text="Question?")
    fake.wait_idle()
    receiver.received.clear()
    receiver.statuses = [500]  # the first try fails: Slack retries
    reply = fake.reply(fake.message(general, posted["ts"]), ada, "Answer")
    fake.wait_idle()
    assert len(receiver.received) == 2
    verifier = SignatureVerifier(fake.signing_secret)
    for headers, body in receiver.received:
        assert verifier.is_valid_request(body, headers)
        envelope = json.loads(body)
        assert load_spec().check_event(envelope) == []
        assert envelope["event"]["thread_ts"] == posted["ts"]
        assert envelope["event"]["parent_user_id"] == fake.workspace.bot_user_id
        assert (envelope["event"]["user"], envelope["event"]["ts"]) == (ada, reply.ts)
    first, second = (headers for headers, _ in receiver.received)
    assert "x-slack-retry-num" not in first
    assert (second["x-slack-retry-num"], second["x-slack-retry-reason"]) == ("1", "http_error")
    [delivery] = fake.event_deliveries[-1:]
    assert [a.status for a in delivery.attempts] == [500, 200] and delivery.acknowledged
    # The same event id both times: an app de-duplicates by it.
    assert len({json.loads(body)["event_id"] for _, body in receiver.received}) == 1
    assert fake.errors == []


def test_a_slow_app_gets_the_event_again_after_the_ack_timeout(
    slack: SlackFakeServer, receiver: Receiver
) -> None:
    fake = slack.fake
    ada = fake.add_member("ada")
    general = fake.add_channel("general", members=[ada])
    receiver.slow = 1.0  # past the 0.5 s ack timeout of this fake
    fake.post(general, ada, "hello")
    fake.wait_for(lambda: len(fake.event_deliveries[0].attempts) >= 2, timeout=5)
    receiver.slow = 0
    fake.wait_idle()
    attempts = fake.event_deliveries[0].attempts
    assert attempts[0].status == 0 and attempts[0].elapsed >= 0.5
    assert attempts[1].reason == "http_timeout" and attempts[-1].status == 200


def test_what_the_app_hears(slack: SlackFakeServer, receiver: Receiver) -> None:
    fake = slack.fake
    ada = fake.add_member("ada")
    heard = fake.add_channel("heard", members=[ada])
    unheard = fake.add_channel("unheard", members=[ada], bot_in_channel=False)
    fake.post(unheard, ada, "the bot is not here")
    message = fake.post(heard, ada, "hi")
    fake.edit(message, "hi, edited")
    fake.bot_post(heard, "beep")
    fake.wait_idle()
    # One event each (Slack, like the fake, does not promise their order).
    events = {
        json.loads(body)["event"].get("subtype"): json.loads(body)["event"]
        for _, body in receiver.received
    }
    assert len(receiver.received) == 3 and set(events) == {None, "message_changed", "bot_message"}
    assert events[None]["text"] == "hi"
    assert events["message_changed"]["message"]["text"] == "hi, edited"
    assert events["message_changed"]["previous_message"]["text"] == "hi"
    assert "user" not in events["bot_message"] and events["bot_message"]["bot_id"]
    assert all(load_spec().check_event(json.loads(b)) == [] for _, b in receiver.received)
    with pytest.raises(ValueError):
        fake.post(heard, "U0STRANGER", "who am I")


def test_a_click_is_a_signed_block_actions_payload(
    slack: SlackFakeServer, receiver: Receiver
) -> None:
    fake = slack.fake
    ada = fake.add_member("ada")
    button = {
        "type": "button",
        "action_id": "humanwire_approve",
        "text": {"type": "plain_text", "text": "Approve"},
        "value": "approve",
    }
    posted = web(slack).chat_postMessage(
        channel=ada, text="ok?", blocks=[{"type": "actions", "elements": [button]}]
    )
    message = fake.message(posted["channel"], posted["ts"])
    assert fake.click(message, "humanwire_approve", ada).status_code == 200
    headers, body = receiver.received[-1]
    assert SignatureVerifier(fake.signing_secret).is_valid_request(body, headers)
    payload = json.loads(parse_qs(body.decode())["payload"][0])
    assert payload["type"] == "block_actions"
    assert payload["container"] == {
        "type": "message",
        "message_ts": message.ts,
        "channel_id": message.channel,
        "is_ephemeral": False,
    }
    [action] = payload["actions"]
    assert (action["action_id"], action["value"]) == ("humanwire_approve", "approve")
    assert payload["user"]["id"] == ada and payload["team"]["id"] == fake.workspace.team_id
    answered = httpx.post(payload["response_url"], json={"text": "thanks"})
    assert answered.status_code == 200 and fake.action_responses == [{"text": "thanks"}]
    with pytest.raises(ValueError):
        fake.click(message, "no_such_button", ada)


def test_oauth_v2_install_and_uninstall(slack: SlackFakeServer, receiver: Receiver) -> None:
    fake = slack.fake
    acme = fake.add_workspace("Acme")
    fake.next_install_team = acme.team_id
    redirect = "https://app.example.com/oauth"
    consent = (
        f"{slack.base_url}/oauth/v2/authorize?client_id={fake.client_id}"
        f"&scope=chat:write,im:history&redirect_uri={redirect}&state=s1"
    )
    back = urlparse(fake.authorize(consent))
    query = parse_qs(back.query)
    assert f"{back.scheme}://{back.netloc}{back.path}" == redirect and query["state"] == ["s1"]
    code = query["code"][0]
    oauth = WebClient(base_url=slack.api_base)
    bad = refused(
        oauth.oauth_v2_access,
        client_id=fake.client_id,
        client_secret="wrong",
        code=code,
        redirect_uri=redirect,
    )
    assert bad[1]["error"] == "bad_client_secret"
    granted = oauth.oauth_v2_access(
        client_id=fake.client_id, client_secret=fake.client_secret, code=code, redirect_uri=redirect
    )
    assert (granted["team"]["id"], granted["access_token"]) == (acme.team_id, acme.bot_token)
    assert granted["scope"] == "chat:write,im:history" and acme.installed
    again = refused(
        oauth.oauth_v2_access,
        client_id=fake.client_id,
        client_secret=fake.client_secret,
        code=code,
        redirect_uri=redirect,
    )
    assert again[1]["error"] == "invalid_code"  # a code is used once
    assert web(slack, acme.bot_token).auth_test()["team_id"] == acme.team_id
    fake.uninstall(acme.team_id)
    fake.wait_idle()
    assert refused(web(slack, acme.bot_token).auth_test)[1]["error"] == "token_revoked"
    kinds = [json.loads(body)["event"]["type"] for _, body in receiver.received]
    assert sorted(kinds) == ["app_uninstalled", "tokens_revoked"]
    assert [v.error for v in fake.violations] == ["bad_client_secret"]
    assert fake.errors == []


def test_a_consent_for_unknown_scopes_or_client_is_refused(slack: SlackFakeServer) -> None:
    fake = slack.fake
    for query in (
        f"client_id={fake.client_id}&scope=chat:write,launch:rockets&redirect_uri=https://x.io",
        "client_id=123.456&scope=chat:write&redirect_uri=https://x.io",
    ):
        page = httpx.get(f"{slack.base_url}/oauth/v2/authorize?{query}")
        assert page.status_code == 400
    assert [v.error for v in fake.violations] == ["invalid_scope", "invalid_client_id"]


def test_url_verification_must_echo_the_challenge(
    slack: SlackFakeServer, receiver: Receiver
) -> None:
    response = slack.fake.url_verification()  # the receiver answers 200 with no body
    assert response.status_code == 200
    assert slack.fake.errors == ["url_verification: the challenge was not echoed"]


def test_reset_forgets_the_world(slack: SlackFakeServer) -> None:
    fake = slack.fake
    old = fake.workspace
    fake.add_member("ada")
    web(slack).auth_test()
    fake.reset()
    assert fake.requests == [] and fake.workspace.team_id != old.team_id
    assert refused(web(slack, old.bot_token).auth_test)[1]["error"] == "invalid_auth"
