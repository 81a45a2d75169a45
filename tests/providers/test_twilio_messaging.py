"""SMS and WhatsApp through Twilio, end to end: the service on loopback talks to the
contract fake, which checks every request against Twilio's published description and
plays the person's phone (replies, delivery reports, failures)."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from twilio_support import (
    HUMAN,
    OTHER_HUMAN,
    POOL,
    SMS_FROM,
    TEMPLATES,
    WHATSAPP_FROM,
    Live,
    in_background,
    reply_when_sent,
)

from humanwire import InvalidToNumberError, NotFoundError, ProviderError
from humanwire.testing.receiver import WebhookReceiver
from humanwire.types import UNDELIVERED_TEXT


def test_an_sms_goes_out_through_twilio_and_the_reply_comes_back(live: Live) -> None:
    replied = reply_when_sent(live.fake, HUMAN, "Ship it")
    result = live.client.messages.sms(to=HUMAN, message="Deploy to prod?", wait_time=10)
    replied()
    assert (result.responded, result.response) == (True, "Human response: Ship it")
    [sent] = live.fake.sent_to(HUMAN)
    assert (sent.from_, sent.body) == (SMS_FROM, "Deploy to prod?")
    assert sent.params["StatusCallback"] == f"{live.base_url}/providers/twilio/message-status"
    assert live.fake.violations == []
    # The status callbacks arrive: sent, then delivered.
    live.fake.wait_for(lambda: sent.statuses == ["sent", "delivered"])
    status = live.client.interactions.status(result.interaction_id)
    assert status.delivery_status == "delivered"
    assert live.client.sandbox.deliveries(to=HUMAN) == []  # nothing went to the inbox


def test_a_late_reply_with_media_reaches_the_webhook(live: Live) -> None:
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        result = live.client.messages.sms(
            to=HUMAN, message="Photo of the receipt?", wait_time=1, follow_up_time=60
        )
        assert result.responded is False and result.status == "pending"
        live.fake.send_inbound(HUMAN, SMS_FROM, "here", media_urls=["https://media.example/r.jpg"])
        [event] = receiver.wait_for("message.received")
    assert event.payload.interaction_id == result.interaction_id
    assert (event.payload.body, event.payload.media_urls) == (
        "here",
        ["https://media.example/r.jpg"],
    )
    assert (event.payload.from_, event.payload.to, event.payload.medium) == (HUMAN, SMS_FROM, "sms")


def test_a_replayed_inbound_message_is_counted_once(live: Live) -> None:
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        live.client.messages.sms(to=HUMAN, message="Still on?", follow_up_time=60)
        first = live.fake.send_inbound(HUMAN, SMS_FROM, "yes", message_sid="SM" + "a" * 32)
        again = live.fake.send_inbound(HUMAN, SMS_FROM, "yes", message_sid="SM" + "a" * 32)
        assert first.status_code == again.status_code == 200
        receiver.wait_for("message.received")
        time.sleep(0.3)
        assert len(receiver.events) == 1


def test_a_reply_to_the_shared_number_answers_the_account_that_asked(live: Live) -> None:
    other = live.account("other")
    replied = reply_when_sent(live.fake, OTHER_HUMAN, "B")
    answer = other.messages.sms(to=OTHER_HUMAN, message="Question B?", wait_time=10)
    replied()
    assert answer.reply == "B"
    # The first account asked nobody: no event of it carries the reply.
    with pytest.raises(NotFoundError):  # not this account's interaction
        live.client.interactions.status(answer.interaction_id)


def test_requests_without_a_valid_signature_are_refused_and_change_nothing(live: Live) -> None:
    result = live.client.messages.sms(to=HUMAN, message="Signed?", follow_up_time=60)
    url = f"{live.base_url}/providers/twilio/messages"
    params = {
        "MessageSid": "SM" + "b" * 32,
        "AccountSid": live.fake.account_sid,
        "From": HUMAN,
        "To": SMS_FROM,
        "Body": "forged",
        "NumMedia": "0",
    }
    assert live.fake.post_signed(url, params, signature="bm90IGEgc2lnbmF0dXJl").status_code == 403
    unsigned = httpx.post(url, data=params)
    assert unsigned.status_code == 403
    assert unsigned.json()["error"]["code"] == "forbidden"
    forged_status = httpx.post(
        f"{live.base_url}/providers/twilio/message-status",
        data={"MessageSid": "SMx", "MessageStatus": "failed"},
    )
    assert forged_status.status_code == 403
    status = live.client.interactions.status(result.interaction_id)
    assert status.status == "pending" and status.result is None


def test_callbacks_about_unknown_messages_are_answered_harmlessly(live: Live) -> None:
    response = live.fake.post_signed(
        f"{live.base_url}/providers/twilio/message-status",
        {
            "MessageSid": "SM" + "c" * 32,
            "MessageStatus": "delivered",
            "AccountSid": live.fake.account_sid,
        },
    )
    assert response.status_code == 204
    nobody = live.fake.send_inbound(OTHER_HUMAN, SMS_FROM, "who is this?")
    assert nobody.status_code == 200 and "<Response" in nobody.text


def test_a_failed_delivery_ends_the_held_wait_with_the_undelivered_text(live: Live) -> None:
    live.fake.fail_delivery(HUMAN, "undelivered", 30003)
    started = time.monotonic()
    result = live.client.messages.sms(to=HUMAN, message="Anyone there?", wait_time=30)
    assert time.monotonic() - started < 10  # at once, not after waitTime
    assert (result.responded, result.response) == (False, UNDELIVERED_TEXT)
    assert result.delivery_status == "failed"
    status = live.client.interactions.status(result.interaction_id)
    assert (status.status, status.delivery_status) == ("ended", "undelivered")


def test_the_langchain_tool_returns_the_undelivered_text_as_a_normal_result(live: Live) -> None:
    from humanwire.langchain import AskHumanSMS

    live.fake.fail_delivery(HUMAN, "failed", 30006)
    tool = AskHumanSMS(client=live.client, to=HUMAN, wait_time=30)
    message = tool.invoke(
        {"type": "tool_call", "id": "call-1", "name": tool.name, "args": {"message": "Ok?"}}
    )
    assert message.status == "success"
    assert UNDELIVERED_TEXT in message.content


def test_an_unreachable_number_is_invalid_to_number_and_nothing_is_sent(live: Live) -> None:
    live.fake.refuse(OTHER_HUMAN, code=21614)
    with pytest.raises(InvalidToNumberError) as caught:
        live.client.messages.sms(to=OTHER_HUMAN, message="Landline?", wait_time=5)
    assert caught.value.field == "to"
    assert live.fake.sent_to(OTHER_HUMAN) == []


def test_a_failing_twilio_is_a_provider_error_and_the_retry_sends_once(live: Live) -> None:
    live.fake.fail_next(500, times=1)
    with pytest.raises(ProviderError) as caught:
        live.client.messages.sms(
            to=HUMAN, message="Retry me", follow_up_time=60, idempotency_key="k-1"
        )
    assert caught.value.status_code == 502 and caught.value.retry_after is not None
    assert live.fake.sent_to(HUMAN) == []
    sent = live.client.messages.sms(
        to=HUMAN, message="Retry me", follow_up_time=60, idempotency_key="k-1"
    )
    again = live.client.messages.sms(
        to=HUMAN, message="Retry me", follow_up_time=60, idempotency_key="k-1"
    )
    assert sent.interaction_id == again.interaction_id
    assert len(live.fake.sent_to(HUMAN)) == 1


def test_twilio_saying_too_many_requests_is_retried_within_the_send(live: Live) -> None:
    live.fake.fail_next(429, times=1, retry_after=None)
    sent = live.client.messages.sms(to=HUMAN, message="Busy?", follow_up_time=60)
    assert sent.delivery_status == "queued"
    assert len(live.fake.sent_to(HUMAN)) == 1


def test_whatsapp_outside_the_window_sends_the_template_inside_it_the_text(live: Live) -> None:
    first = live.client.messages.whatsapp(
        to=HUMAN, message="Approve the invoice?", follow_up_time=60
    )
    [template] = live.fake.sent_to(HUMAN)
    assert template.to == f"whatsapp:{HUMAN}" and template.from_ == f"whatsapp:{WHATSAPP_FROM}"
    assert template.params["ContentSid"] == TEMPLATES["notification"]
    assert json.loads(template.params["ContentVariables"]) == {"1": "Approve the invoice?"}
    assert "Body" not in template.params
    # The person writes back: the 24-hour window opens, and the reply is matched.
    live.fake.send_inbound(HUMAN, WHATSAPP_FROM, "approved", channel="whatsapp")
    status = live.client.interactions.status(first.interaction_id)
    assert status.status == "ended"
    assert status.result is not None and status.result.payload.body == "approved"  # type: ignore[union-attr]
    replied = reply_when_sent(
        live.fake, HUMAN, "yes", sender=WHATSAPP_FROM, count=2, channel="whatsapp"
    )
    answer = live.client.messages.whatsapp(to=HUMAN, message="And the next one?", wait_time=10)
    replied()
    text = live.fake.sent_to(HUMAN)[1]
    assert "ContentSid" not in text.params
    assert "And the next one?" in (text.body or "")
    assert answer.reply == "yes"
    assert live.fake.violations == []


def test_a_whatsapp_form_outside_the_window_goes_as_the_form_template(live: Live) -> None:
    form = live.client.forms.whatsapp(
        to=HUMAN,
        title="Expense",
        fields=[{"id": "ok", "label": "Approve?", "type": "checkbox"}],
        follow_up_time=60,
    )
    [sent] = live.fake.sent_to(HUMAN)
    assert sent.params["ContentSid"] == TEMPLATES["form"]
    assert json.loads(sent.params["ContentVariables"]) == {"1": form.form_url}


def test_an_unsolicited_text_to_a_reserved_number_goes_to_its_account(live: Live) -> None:
    [offer, *_] = live.client.numbers.available()
    assert offer.phone_number in POOL
    live.client.numbers.reserve(offer.phone_number)
    number = live.fake.number(offer.phone_number)
    assert number is not None
    assert number.sms_url == f"{live.base_url}/providers/twilio/messages"
    assert number.voice_url == f"{live.base_url}/providers/twilio/voice"
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        live.fake.send_inbound(OTHER_HUMAN, offer.phone_number, "is the flat free?")
        [event] = receiver.wait_for("message.received")
    assert event.payload.interaction_id is None
    assert (event.payload.from_, event.payload.to) == (OTHER_HUMAN, offer.phone_number)
    # Texts from the account now go out from its number, and replies to it are matched.
    replied = reply_when_sent(live.fake, HUMAN, "sure", sender=offer.phone_number)
    answer = live.client.messages.sms(to=HUMAN, message="Viewing at 5?", wait_time=10)
    replied()
    assert live.fake.sent_to(HUMAN)[0].from_ == offer.phone_number
    assert answer.reply == "sure"


def test_a_slow_twilio_is_a_provider_error_in_bounded_time(live: Live) -> None:
    live.fake.delay(12)
    started = time.monotonic()
    with pytest.raises(ProviderError):
        live.client.messages.sms(to=HUMAN, message="Slow?", follow_up_time=60)
    assert time.monotonic() - started < 12
    live.fake.delay(0)


def test_one_accounts_burst_does_not_hold_up_another(live: Live) -> None:
    """Twilio slow for everyone: an account with many sends in flight takes its share
    of connections, not all of them; another account's send goes straight through.
    Told by the order the fake received the sends in, not by a clock (a loaded machine
    slows every send alike)."""
    live.fake.delay(1.0)
    busy = live.account("busy")
    joins = [
        in_background(
            lambda i=i: busy.messages.sms(to=HUMAN, message=f"burst {i}", follow_up_time=60)
        )
        for i in range(24)
    ]

    def sends_to(to: str) -> list[int]:
        """Where, among the message creates the fake received, those to ``to`` came."""
        with live.fake.lock:
            creates = [r for r in live.fake.requests if r.path.endswith("/Messages.json")]
        return [n for n, r in enumerate(creates) if ("To", to) in r.params]

    # The burst's first share is in flight (each held a second by the slow fake).
    deadline = time.monotonic() + 30
    while len(sends_to(HUMAN)) < 8 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(sends_to(HUMAN)) >= 8
    live.client.messages.sms(to=OTHER_HUMAN, message="me too", follow_up_time=60)
    for join in joins:
        join()
    live.fake.delay(0)
    # 24 sends at 8 in flight per account go in three rounds; the other account's send
    # went out beside the first rounds, not queued behind the whole burst.
    [other] = sends_to(OTHER_HUMAN)
    before = [n for n in sends_to(HUMAN) if n < other]
    assert len(before) < 24, before
    assert len(live.fake.sent_to(HUMAN)) == 24
