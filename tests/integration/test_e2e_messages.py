"""Messages over sms, whatsapp, slack and channel cards, end to end: the core client
against the real service on loopback, the scripted human on the other side."""

from __future__ import annotations

import time

import httpx
import pytest
from e2e_support import HUMAN, NO_RESPONSE, SLACK_HUMAN

from humanwire import AsyncHumanWire, HumanWire
from humanwire.errors import InvalidToNumberError, NotFoundError
from humanwire.server.config import (
    DEFAULT_HUMAN_EMAIL,
    SHARED_EMAIL_ADDRESS,
    SHARED_SLACK_WORKSPACE,
    SHARED_SMS_NUMBER,
)
from humanwire.testing import RunningService, ScriptedHuman, WebhookReceiver
from humanwire.types import MessageReceivedEvent


def test_sms_reply_inside_the_window(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    action = human.reply("yes, ship it")
    result = humanwire_client.messages.sms(message="Ship v2?", to=HUMAN, wait_time=5)
    assert result.responded is True
    assert result.status == "ended"
    assert result.response == "Human response: yes, ship it"
    delivery = action.wait()
    assert delivery.text == "Ship v2?"
    assert delivery.from_ == SHARED_SMS_NUMBER
    assert delivery.interaction_id == result.interaction_id
    status = humanwire_client.interactions.status(result.interaction_id)
    assert (status.status, status.kind, status.channel) == ("ended", "message", "sms")
    assert isinstance(status.result, MessageReceivedEvent)
    assert status.result.payload.body == "yes, ship it"
    assert status.result.payload.interaction_id == result.interaction_id


async def test_whatsapp_reply_inside_the_window_async(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    action = human.reply("go ahead", channel="whatsapp")
    result = await async_humanwire_client.messages.whatsapp(
        message="Deploy now", to=HUMAN, wait_time=5
    )
    assert (result.responded, result.response) == (True, "Human response: go ahead")
    delivery = await action.async_wait()
    assert delivery.channel == "whatsapp"
    assert delivery.text == (
        "Your AI agent is requesting your input. Message from agent: Deploy now. Please "
        "review and reply with your guidance. If no response is received within 5 seconds, "
        "the request will be automatically closed."
    )


def test_slack_reply_in_the_thread(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    action = human.reply("approved", channel="slack")
    result = humanwire_client.messages.slack(message="Approve PR 12?", to=SLACK_HUMAN, wait_time=5)
    assert result.response == "Human response: approved"
    assert action.wait().from_ == SHARED_SLACK_WORKSPACE


def test_no_reply_is_a_normal_result_then_the_late_reply_reaches_the_webhook(
    humanwire_client: HumanWire, human: ScriptedHuman, webhook_receiver: WebhookReceiver
) -> None:
    webhook_receiver.register(humanwire_client)
    human.reply_late("sorry, yes", after=1.5)
    result = humanwire_client.messages.sms(
        message="Still there?", to=HUMAN, wait_time=1, follow_up_time=60
    )
    assert result.responded is False
    assert result.response == NO_RESPONSE
    assert result.status == "pending"  # the follow-up window still listens
    [event] = webhook_receiver.wait_for("message.received")
    assert event.payload.interaction_id == result.interaction_id
    assert (event.payload.body, event.payload.from_) == ("sorry, yes", HUMAN)
    status = humanwire_client.interactions.wait(result.interaction_id, timeout=10)
    assert status.status == "ended"
    assert isinstance(status.result, MessageReceivedEvent)
    assert status.result.payload.body == "sorry, yes"
    assert all(d.signature_valid for d in webhook_receiver.deliveries)


def test_without_wait_time_only_the_interaction_comes_back(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    silent = human.stay_silent()
    result = humanwire_client.messages.sms(message="FYI: deploy done", to=HUMAN)
    assert result.status == "ended"
    assert (result.responded, result.response) == (None, None)
    assert silent.wait().text == "FYI: deploy done"
    # The agent-skill text endpoint sends the same way.
    sent = humanwire_client.phone.sms(message="Heads up", to=HUMAN)
    assert sent.interaction_id != result.interaction_id
    texts = [d.text for d in humanwire_client.sandbox.deliveries(to=HUMAN)]
    assert texts == ["Heads up", "FYI: deploy done"]


def test_unsolicited_text_is_a_message_received_without_interaction(
    humanwire_client: HumanWire, human: ScriptedHuman, webhook_receiver: WebhookReceiver
) -> None:
    webhook_receiver.register(humanwire_client, ["message.received"])
    humanwire_client.sandbox.reply(
        channel="sms", from_=HUMAN, to=SHARED_SMS_NUMBER, body="hello?", media_urls=["http://x/1"]
    )
    [event] = webhook_receiver.wait_for("message.received")
    assert event.payload.interaction_id is None
    assert (event.payload.body, event.payload.media_urls) == ("hello?", ["http://x/1"])


def test_channel_card_applies_its_templates(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    card = humanwire_client.channels.create(
        type="sms",
        to=HUMAN,
        wait_time=5,
        message_template="[ops] {{message}} (answer within {{waitTime}}s)",
        response_template="Ops said: {{message}}",
        no_response_template="Ops is away.",
    )
    assert card.id.startswith("ch_")
    assert humanwire_client.channels.get(card.id) == card
    assert [c.id for c in humanwire_client.channels.list()] == [card.id]
    action = human.reply("restart it")
    result = humanwire_client.messages.channel(card.id, message="Disk full on db-1")
    assert result.response == "Ops said: restart it"
    assert action.wait().text == "[ops] Disk full on db-1 (answer within 5s)"

    quick = humanwire_client.channels.create(
        type="slack", to=SLACK_HUMAN, wait_time=1, no_response_template="Nobody home."
    )
    assert humanwire_client.messages.channel(quick.id, message="anyone?").response == (
        "Nobody home."
    )
    humanwire_client.channels.delete(quick.id)
    with pytest.raises(NotFoundError):
        humanwire_client.messages.channel(quick.id, message="anyone?")


def test_bad_recipient_is_refused_by_client_and_service(
    humanwire_client: HumanWire, humanwire_service: RunningService, humanwire_api_key: str
) -> None:
    with pytest.raises(InvalidToNumberError):
        humanwire_client.messages.sms(message="x", to="+15555550100")
    # The service refuses it too, for clients that skip the check.
    response = httpx.post(
        f"{humanwire_service.base_url}/messages/sms",
        json={"message": "x", "to": "+15555550100"},
        headers={"Authorization": f"Bearer {humanwire_api_key}"},
    )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "invalid_to_number",
        "message": "invalid to number",
        "field": "to",
    }
    assert humanwire_client.sandbox.deliveries() == []


async def test_status_long_poll_returns_when_the_reply_lands(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    sent = await async_humanwire_client.messages.sms(
        message="Reply when you can", to=HUMAN, follow_up_time=60
    )
    assert sent.status == "pending"
    human.reply("done", interaction_id=sent.interaction_id, delay=0.5)
    status = await async_humanwire_client.interactions.status(sent.interaction_id, wait=10)
    assert status.status == "ended"
    assert status.result is not None
    assert status.result.payload.interaction_id == sent.interaction_id


def test_wait_with_no_time_left_looks_once(humanwire_client: HumanWire) -> None:
    sent = humanwire_client.messages.sms(message="later", to=HUMAN, follow_up_time=60)
    status = humanwire_client.interactions.wait(sent.interaction_id, timeout=0)
    assert (status.interaction_id, status.status) == (sent.interaction_id, "pending")


def test_a_reply_after_the_agent_hung_up_reaches_the_webhook(
    humanwire_client: HumanWire, webhook_receiver: WebhookReceiver
) -> None:
    """The engine's rule: a reply that no request holds goes to the webhooks. An agent
    that gave up on its held request (its connection closed inside ``waitTime``) holds
    nothing: the reply must not be handed to the dead request and lost."""
    webhook_receiver.register(humanwire_client, ["message.received"])
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            f"{humanwire_client.base_url}/messages/sms",
            json={"message": "Approve?", "to": HUMAN, "waitTime": 30, "followUpTime": 60},
            headers={"Authorization": f"Bearer {humanwire_client.api_key}"},
            timeout=0.5,
            trust_env=False,
        )
    [sent] = humanwire_client.sandbox.deliveries(to=HUMAN)
    time.sleep(0.2)  # the service notices the closed connection
    humanwire_client.sandbox.reply(channel="sms", from_=HUMAN, to=SHARED_SMS_NUMBER, body="ok")
    [event] = webhook_receiver.wait_for("message.received")
    assert event.payload.interaction_id == sent.interaction_id
    assert event.payload.body == "ok"


def test_a_retry_that_joined_keeps_the_hold_when_the_first_request_hangs_up(
    humanwire_client: HumanWire, webhook_receiver: WebhookReceiver
) -> None:
    """Same ``Idempotency-Key``: the hold lets go only when every request waiting on it
    has gone; a retry still connected gets the reply, and no webhook is sent."""
    import threading

    webhook_receiver.register(humanwire_client, ["message.received"])
    url = f"{humanwire_client.base_url}/messages/sms"
    body = {"message": "Merge?", "to": HUMAN, "waitTime": 30, "followUpTime": 60}
    headers = {"Authorization": f"Bearer {humanwire_client.api_key}", "Idempotency-Key": "join"}
    answers: list[httpx.Response] = []
    retry = threading.Thread(
        target=lambda: answers.append(
            httpx.post(url, json=body, headers=headers, timeout=20, trust_env=False)
        ),
        daemon=True,
    )
    with pytest.raises(httpx.ReadTimeout), httpx.Client(timeout=1.0, trust_env=False) as first:
        threading.Timer(0.3, retry.start).start()  # joins while the first still waits
        first.post(url, json=body, headers=headers)
    time.sleep(0.2)
    humanwire_client.sandbox.reply(channel="sms", from_=HUMAN, to=SHARED_SMS_NUMBER, body="yes")
    retry.join(10)
    [answer] = answers
    assert answer.status_code == 200, answer.text
    assert answer.json()["response"] == "Human response: yes"
    assert len(humanwire_client.sandbox.deliveries(to=HUMAN)) == 1
    time.sleep(0.3)
    assert webhook_receiver.deliveries == []


def test_email_on_the_sandbox_the_scripted_human_replies(
    humanwire_client: HumanWire, human: ScriptedHuman, webhook_receiver: WebhookReceiver
) -> None:
    # No [email]: emails land in the sandbox (the inbox shows them) and the scripted
    # human answers the email itself, not merely the newest one from the sender.
    webhook_receiver.register(humanwire_client, ["message.received"])
    first = humanwire_client.messages.email(
        to=DEFAULT_HUMAN_EMAIL, message="Old question", follow_up_time=60
    )
    action = human.reply("Friday works.", channel="email", interaction_id=first.interaction_id)
    late = human.reply("Yes, ship it.", channel="email")
    result = humanwire_client.messages.email(
        to=DEFAULT_HUMAN_EMAIL, subject="Release", message="Ship it on Friday?", wait_time=5
    )
    assert (result.responded, result.reply) == (True, "Yes, ship it.")
    delivery = late.wait()
    assert (delivery.channel, delivery.from_) == ("email", SHARED_EMAIL_ADDRESS)
    assert delivery.text == "Ship it on Friday?"
    action.wait()
    [event] = webhook_receiver.wait_for("message.received")
    assert event.payload.interaction_id == first.interaction_id
    assert (event.payload.medium, event.payload.body) == ("email", "Friday works.")
    card = humanwire_client.channels.create(
        type="email", to="Ops@Example.com", wait_time=1, no_response_template="Ops is away."
    )
    assert card.to == "Ops@example.com"
    assert humanwire_client.messages.channel(card.id, message="anyone?").response == (
        "Ops is away."
    )
    [sent] = humanwire_client.sandbox.deliveries(to="Ops@example.com")
    assert (sent.channel, sent.text) == ("email", "anyone?")
    # The sandbox lists email deliveries by channel too.
    emails = humanwire_client.sandbox.deliveries(channel="email")
    assert [d.text for d in emails] == ["anyone?", "Ship it on Friday?", "Old question"]
