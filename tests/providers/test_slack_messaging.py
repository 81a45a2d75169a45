"""Slack through the contract fake, end to end: the service posts with the shared bot,
the fake checks every Web API request against Slack's published description and plays
the workspace's members (thread replies, edits, bots), signs and retries events as
Slack does."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from slack_support import SlackLive, reply_when_posted

from humanwire import InvalidRequestError, InvalidToNumberError, ProviderError
from humanwire.testing.receiver import WebhookReceiver


def test_a_dm_question_is_answered_in_its_thread(slack_live: SlackLive) -> None:
    live = slack_live
    replied = reply_when_posted(live, live.member, "Ship it")
    result = live.client.messages.slack(to=live.member, message="Deploy <prod>?", wait_time=10)
    replied()
    assert (result.responded, result.reply) == (True, "Ship it")
    assert result.delivery_status == "sent"
    [posted] = live.fake.posted_to(live.member)
    assert posted.channel.startswith("D")  # the bot opened a DM with the member
    assert posted.text == "Deploy &lt;prod&gt;?"  # escaped: no markup from the agent
    assert live.fake.violations == []
    assert live.client.sandbox.deliveries() == []  # nothing went to the inbox
    status = live.client.interactions.status(result.interaction_id)
    assert (status.status, status.delivery_status) == ("ended", "sent")


def test_a_channel_question_is_answered_in_its_thread(slack_live: SlackLive) -> None:
    live = slack_live
    replied = reply_when_posted(live, live.channel, "after lunch")
    result = live.client.messages.slack(to=live.channel, message="When?", wait_time=10)
    replied()
    assert result.reply == "after lunch"
    assert live.fake.posted_to(live.channel)[0].channel == live.channel


def test_only_a_human_reply_in_the_thread_counts(slack_live: SlackLive) -> None:
    live = slack_live
    fake = live.fake
    other = live.client.messages.slack(to=live.channel, message="Other question", follow_up_time=60)
    assert other.status == "pending"

    def act() -> None:
        asked = live.posted(live.channel, count=2)
        elsewhere = live.posted(live.channel, count=1)
        fake.bot_post(live.channel, "a bot talking", thread_ts=asked.ts)
        fake.post(live.channel, live.member, "outside the thread")
        reply_elsewhere = fake.reply(elsewhere, live.member, "wrong thread")
        fake.edit(reply_elsewhere, "wrong thread, edited")
        time.sleep(0.5)
        fake.reply(asked, live.member, "the real answer")

    from twilio_support import in_background

    done = in_background(act)
    result = live.client.messages.slack(to=live.channel, message="Which one?", wait_time=10)
    done()
    assert result.reply == "the real answer"
    # The reply in the other message's thread answered that one (it was still open);
    # its edit changed nothing.
    status = live.client.interactions.status(other.interaction_id)
    assert status.status == "ended" and status.result is not None
    assert status.result.payload.body == "wrong thread"


def test_a_late_reply_reaches_the_webhook(slack_live: SlackLive) -> None:
    live = slack_live
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        result = live.client.messages.slack(
            to=live.member, message="Anything else?", wait_time=1, follow_up_time=60
        )
        assert result.responded is False
        live.fake.reply(live.posted(live.member), live.member, "one more thing")
        [event] = receiver.wait_for("message.received")
    assert event.payload.interaction_id == result.interaction_id
    assert (event.payload.medium, event.payload.body) == ("slack", "one more thing")
    assert event.payload.from_ == live.member
    assert event.payload.to == live.fake.workspace.team_id


def test_an_unknown_member_or_channel_is_a_400_naming_to(slack_live: SlackLive) -> None:
    live = slack_live
    outside = live.fake.add_channel("private", members=[live.member], bot_in_channel=False)
    for to in ("U0NOBODY01", "C0NOWHERE1", outside):
        with pytest.raises(InvalidToNumberError) as caught:
            live.client.messages.slack(to=to, message="Hello?", wait_time=5)
        assert caught.value.field == "to", to
    assert live.fake.violations == []


def test_a_from_that_is_not_a_workspace_of_the_account_is_a_400(slack_live: SlackLive) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        slack_live.client.messages.slack(to=slack_live.member, message="Hi", from_="T0NOTMINE1")
    assert caught.value.field == "from"
    # The shared workspace named explicitly is fine.
    shared = slack_live.fake.workspace.team_id
    sent = slack_live.client.messages.slack(to=slack_live.member, message="Hi", from_=shared)
    assert sent.delivery_status == "sent"


def test_a_rate_limit_is_retried_after_slacks_retry_after(slack_live: SlackLive) -> None:
    live = slack_live
    live.fake.rate_limit("chat.postMessage", times=1, retry_after=1)
    started = time.monotonic()
    sent = live.client.messages.slack(to=live.channel, message="Busy?", wait_time=10)
    elapsed = time.monotonic() - started
    assert sent.responded is False  # nobody answered: the wait ran out normally
    assert len(live.fake.posted_to(live.channel)) == 1  # posted once, after the wait
    assert elapsed >= 1.0
    assert live.fake.violations == []


def test_a_rate_limit_past_the_wait_window_is_a_502_with_retry_after(
    slack_live: SlackLive,
) -> None:
    live = slack_live
    live.fake.rate_limit("chat.postMessage", times=1, retry_after=30)
    with pytest.raises(ProviderError) as caught:
        live.client.messages.slack(to=live.channel, message="Busy?", wait_time=2)
    assert caught.value.retry_after == pytest.approx(30, abs=1)
    assert live.fake.posted_to(live.channel) == []
    # Nothing was recorded as sent: the same key sends once when Slack is back.
    sent = live.client.messages.slack(to=live.channel, message="Busy?", idempotency_key="k1")
    again = live.client.messages.slack(to=live.channel, message="Busy?", idempotency_key="k1")
    assert sent.interaction_id == again.interaction_id
    assert len(live.fake.posted_to(live.channel)) == 1


def test_a_slack_channel_card_posts_through_slack(slack_live: SlackLive) -> None:
    live = slack_live
    card = live.client.channels.create(type="slack", to=live.channel, wait_time=10)
    replied = reply_when_posted(live, live.channel, "42")
    answer = live.client.messages.channel(card.id, message="How many?")
    replied()
    assert answer.reply == "42" and answer.response is not None and "42" in answer.response


# -- the Events API route ---------------------------------------------------------------
def test_url_verification_answers_the_challenge(slack_live: SlackLive) -> None:
    response = slack_live.fake.url_verification()
    assert response.status_code == 200
    assert set(response.json()) == {"challenge"}
    assert response.json()["challenge"]


@pytest.mark.parametrize("signature", ["v0=" + "0" * 64, None])
def test_an_event_without_a_valid_signature_is_403_and_changes_nothing(
    slack_live: SlackLive, signature: str | None
) -> None:
    live = slack_live
    result = live.client.messages.slack(to=live.member, message="Signed?", follow_up_time=60)
    posted = live.posted(live.member)
    envelope = {
        "token": "x",
        "team_id": live.fake.workspace.team_id,
        "api_app_id": "A0APP",
        "type": "event_callback",
        "event_id": "Ev0FORGED1",
        "event_time": int(time.time()),
        "authed_users": [],
        "event": {
            "type": "message",
            "user": live.member,
            "text": "forged",
            "ts": f"{time.time():.6f}",
            "thread_ts": posted.ts,
            "channel": posted.channel,
            "channel_type": "im",
            "event_ts": f"{time.time():.6f}",
        },
    }
    body = json.dumps(envelope).encode()
    url = f"{live.base_url}/providers/slack/events"
    if signature is None:
        response = httpx.post(url, content=body, headers={"Content-Type": "application/json"})
    else:
        response = live.fake.post_signed(
            url, body, content_type="application/json", signature=signature
        )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"
    time.sleep(0.3)
    status = live.client.interactions.status(result.interaction_id)
    assert (status.status, status.result) == ("pending", None)


@pytest.mark.parametrize("route", ["events", "interactions"])
def test_a_signed_request_sent_again_is_403_at_any_query(slack_live: SlackLive, route: str) -> None:
    """Slack signs ``v0:{timestamp}:{body}``, not the URL: within its five minutes a
    captured request sent again, to the same URL or another query of the route, is a
    replay (403); signed anew (Slack's own retry) it is taken."""
    live = slack_live
    if route == "events":
        body = json.dumps({"type": "url_verification", "challenge": "c", "token": "t"}).encode()
        content_type = "application/json"
    else:
        body = b"payload=%7B%22type%22%3A%22view_closed%22%7D"
        content_type = "application/x-www-form-urlencoded"
    url = f"{live.base_url}/providers/slack/{route}"
    stamp = int(time.time())

    def post(to: str, at: int = stamp) -> httpx.Response:
        return live.fake.post_signed(to, body, content_type=content_type, timestamp=at)

    assert post(url).status_code == 200
    for again in (url, f"{url}?again=1", f"{url}?team=T1&retry=1"):
        replay = post(again)
        assert replay.status_code == 403, again
        assert replay.json()["error"]["code"] == "forbidden"
        assert "replay" in replay.json()["error"]["message"]
    assert post(url, stamp - 1).status_code == 200


def test_an_old_timestamp_is_refused(slack_live: SlackLive) -> None:
    live = slack_live
    body = json.dumps({"type": "url_verification", "challenge": "c", "token": "t"}).encode()
    response = live.fake.post_signed(
        f"{live.base_url}/providers/slack/events",
        body,
        content_type="application/json",
        timestamp=int(time.time()) - 3600,
    )
    assert response.status_code == 403


def test_events_are_acknowledged_at_once_and_retries_are_taken_once(
    slack_live: SlackLive,
) -> None:
    live = slack_live
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        live.client.messages.slack(to=live.member, message="Still on?", follow_up_time=60)
        reply = live.fake.reply(live.posted(live.member), live.member, "yes")
        receiver.wait_for("message.received")
        [delivery] = [d for d in live.fake.event_deliveries if d.event["ts"] == reply.ts]
        # The webhook can arrive before the fake has written down the acknowledgement.
        live.fake.wait_for(lambda: delivery.attempts)
        assert delivery.attempts[0].status == 200
        assert delivery.attempts[0].elapsed < 3.0
        again = live.fake.redeliver(delivery)
        assert again.attempts[-1].status == 200
        live.fake.wait_idle()
        time.sleep(0.3)
        assert len(receiver.events) == 1
