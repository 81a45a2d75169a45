"""SMS through Telnyx, end to end: the service on loopback talks to the contract fake,
which checks every request against the telnyx package's published request types, signs
its webhooks with Ed25519 and plays the person's phone."""

from __future__ import annotations

import base64
import json
import re
import string
import time

import httpx
from telnyx_support import HUMAN, OTHER_HUMAN, TELNYX_FROM, TelnyxLive, reply_when_sent

from humanwire import InvalidToNumberError, ProviderError
from humanwire.testing.receiver import WebhookReceiver
from humanwire.types import UNDELIVERED_TEXT


def test_an_sms_goes_out_through_telnyx_and_the_reply_comes_back(telnyx_live: TelnyxLive) -> None:
    live = telnyx_live
    replied = reply_when_sent(live.fake, HUMAN, "Ship it")
    result = live.client.messages.sms(to=HUMAN, message="Deploy to prod?", wait_time=10)
    replied()
    assert (result.responded, result.response) == (True, "Human response: Ship it")
    [sent] = live.fake.sent_to(HUMAN)
    assert (sent.from_, sent.text) == (TELNYX_FROM, "Deploy to prod?")
    assert sent.params["webhook_url"] == f"{live.base_url}/providers/telnyx/messages"
    assert sent.params["messaging_profile_id"] == live.fake.messaging_profile_id
    live.fake.wait_for(lambda: sent.statuses == ["sent", "delivered"])
    live.fake.wait_idle()
    assert live.client.interactions.status(result.interaction_id).delivery_status == "delivered"
    assert live.fake.violations == [] and live.fake.errors == []
    assert live.client.sandbox.deliveries(to=HUMAN) == []


def test_a_late_reply_with_media_reaches_the_webhook(telnyx_live: TelnyxLive) -> None:
    live = telnyx_live
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        result = live.client.messages.sms(
            to=HUMAN, message="Photo of the receipt?", wait_time=1, follow_up_time=60
        )
        assert result.responded is False
        live.fake.send_inbound(HUMAN, TELNYX_FROM, "here", media_urls=["https://m.example/r.jpg"])
        [event] = receiver.wait_for("message.received")
    assert event.payload.interaction_id == result.interaction_id
    assert (event.payload.body, event.payload.media_urls) == ("here", ["https://m.example/r.jpg"])
    assert (event.payload.from_, event.payload.to, event.payload.medium) == (
        HUMAN,
        TELNYX_FROM,
        "sms",
    )


def test_a_redelivered_inbound_message_is_counted_once(telnyx_live: TelnyxLive) -> None:
    live = telnyx_live
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        live.client.messages.sms(to=HUMAN, message="Still on?", follow_up_time=60)
        first = live.fake.send_inbound(HUMAN, TELNYX_FROM, "yes", message_id="msg-1")
        again = live.fake.send_inbound(HUMAN, TELNYX_FROM, "yes", message_id="msg-1")
        assert first.status_code == again.status_code == 204
        receiver.wait_for("message.received")
        time.sleep(0.3)
        assert len(receiver.events) == 1


def test_a_failed_delivery_is_reported_and_answers_undelivered(telnyx_live: TelnyxLive) -> None:
    live = telnyx_live
    live.fake.fail_delivery(HUMAN, "delivery_failed")
    result = live.client.messages.sms(to=HUMAN, message="Hello?", wait_time=3)
    assert (result.responded, result.response) == (False, UNDELIVERED_TEXT)
    assert result.delivery_status == "failed"


def test_an_unreachable_recipient_is_invalid_to_number(telnyx_live: TelnyxLive) -> None:
    live = telnyx_live
    live.fake.refuse(OTHER_HUMAN, code="40300")  # the person replied STOP
    try:
        live.client.messages.sms(to=OTHER_HUMAN, message="Hi")
    except InvalidToNumberError as exc:
        assert "Telnyx 40300" in str(exc)
    else:
        raise AssertionError("expected invalid_to_number")


def test_telnyx_down_is_a_provider_error_and_nothing_is_sent(telnyx_live: TelnyxLive) -> None:
    live = telnyx_live
    live.fake.refuse(OTHER_HUMAN, code="10007", status=500)
    try:
        live.client.messages.sms(to=OTHER_HUMAN, message="Hi")
    except ProviderError as exc:
        assert exc.retry_after is not None
    else:
        raise AssertionError("expected provider_error")
    assert live.fake.sent_to(OTHER_HUMAN) == []


# -- hostile webhooks ------------------------------------------------------------------------
def _forged(live: TelnyxLive) -> bytes:
    return json.dumps(
        {
            "data": {
                "event_type": "message.received",
                "id": "ev-forged",
                "payload": {
                    "id": "msg-forged",
                    "from": {"phone_number": HUMAN},
                    "to": [{"phone_number": TELNYX_FROM}],
                    "text": "forged",
                },
            }
        }
    ).encode()


def test_unsigned_wrongly_signed_stale_or_replayed_webhooks_are_403_and_change_nothing(
    telnyx_live: TelnyxLive,
) -> None:
    from humanwire.testing.telnyx import FakeTelnyx

    live = telnyx_live
    result = live.client.messages.sms(to=HUMAN, message="Signed?", follow_up_time=60)
    url = f"{live.base_url}/providers/telnyx/messages"
    body = _forged(live)
    now = int(time.time())
    other = FakeTelnyx()  # another key pair: a signature Telnyx never made
    attempts = {
        "unsigned": {},
        "no timestamp": {
            "telnyx-signature-ed25519": live.fake.sign(body)["telnyx-signature-ed25519"]
        },
        "another key": other.sign(body),
        "another body": live.fake.sign(body + b" "),
        # A minute past the 300 s either way: the attempts before take time on a loaded
        # machine, and one second made "now + 301" fresh (a CI run saw it taken, 204).
        "stale": live.fake.sign(body, now - 360),
        "from the future": live.fake.sign(body, now + 360),
        "not base64": {**live.fake.sign(body), "telnyx-signature-ed25519": "not base64!"},
        "a short signature": {**live.fake.sign(body), "telnyx-signature-ed25519": "AAAA"},
        "a timestamp that is not digits": {**live.fake.sign(body), "telnyx-timestamp": "+1e9"},
    }
    for why, headers in attempts.items():
        response = live.fake.post_signed(url, body, headers=headers)
        assert response.status_code == 403, why
        assert response.json()["error"]["code"] == "forbidden", why
    status = live.client.interactions.status(result.interaction_id)
    assert status.status == "pending" and status.result is None
    assert live.runner.call(live.runner.engine.store.list_inbound, _account(live), 100) == []
    # Signed right: taken once; the same signed request again is a replay.
    signed = live.fake.sign(body)
    assert live.fake.post_signed(url, body, headers=signed).status_code == 204
    replay = live.fake.post_signed(url, body, headers=signed)
    assert replay.status_code == 403 and "replay" in replay.json()["error"]["message"]
    # Telnyx signs the timestamp and the body, not the URL: another query of the route
    # is the same request; so is the signature spelled otherwise (base64's last
    # character before the padding carries four bits nobody reads).
    spelled = _respelled(signed["telnyx-signature-ed25519"])
    for again, headers in (
        (f"{url}?again=1", signed),
        (f"{url}?interaction=int_x&token=t", signed),
        (url, {**signed, "telnyx-signature-ed25519": spelled}),
    ):
        replay = live.fake.post_signed(again, body, headers=headers)
        assert replay.status_code == 403 and "replay" in replay.json()["error"]["message"]
    status = live.client.interactions.status(result.interaction_id)
    assert status.status != "pending" and status.result is not None  # the signed one only
    inbound = live.runner.call(live.runner.engine.store.list_inbound, _account(live), 100)
    assert len(inbound) == 1


def _respelled(signature: str) -> str:
    """``signature`` (the base64 of 64 bytes) spelled otherwise: the same bytes."""
    alphabet = string.ascii_uppercase + string.ascii_lowercase + string.digits + "+/"
    last = alphabet[alphabet.index(signature[-3]) ^ 1]
    spelled = signature[:-3] + last + "=="
    assert spelled != signature and base64.b64decode(spelled) == base64.b64decode(signature)
    return spelled


def _account(live: TelnyxLive) -> str:
    account = live.runner.call(live.runner.engine.accounts.authenticate, live.key)
    assert account is not None
    return account.id


def test_webhooks_about_unknown_messages_are_answered_harmlessly(telnyx_live: TelnyxLive) -> None:
    live = telnyx_live
    url = f"{live.base_url}/providers/telnyx/messages"
    report = json.dumps(
        {
            "data": {
                "event_type": "message.finalized",
                "id": "ev-1",
                "payload": {
                    "id": "nobody-sent-this",
                    "to": [{"phone_number": HUMAN, "status": "delivered"}],
                },
            }
        }
    ).encode()
    assert live.fake.post_signed(url, report).status_code == 204
    other = json.dumps({"data": {"event_type": "number_order.complete", "id": "ev-2"}}).encode()
    assert live.fake.post_signed(url, other).status_code == 204
    nobody = live.fake.send_inbound(OTHER_HUMAN, TELNYX_FROM, "who is this?")
    assert nobody.status_code == 204


def test_signed_bodies_of_the_wrong_shape_are_400_naming_the_field(
    telnyx_live: TelnyxLive,
) -> None:
    live = telnyx_live
    url = f"{live.base_url}/providers/telnyx/messages"
    cases = [
        ({"data": 5}, "data"),
        ({"data": {}}, "data.event_type"),
        ({"data": {"event_type": "message.received"}}, "data.payload"),
        ({"data": {"event_type": "message.received", "payload": {}}}, "data.payload.id"),
        (
            {"data": {"event_type": "message.received", "payload": {"id": "m", "to": "x"}}},
            "data.payload.to",
        ),
        (
            {"data": {"event_type": "message.sent", "payload": {"id": "m", "from": 5}}},
            "data.payload.from",
        ),
    ]
    for document, field in cases:
        response = live.fake.post_signed(url, json.dumps(document).encode())
        assert response.status_code == 400, document
        assert response.json()["error"]["field"] == field, document
    assert httpx.post(url, content=b"{}").status_code == 403


def test_two_accounts_asks_on_the_shared_number_need_the_code(telnyx_live: TelnyxLive) -> None:
    """The shared-sender rule (tests/providers/test_twilio_shared_replies.py) through the
    other carrier: a reply naming no code answers neither account's ask."""
    live = telnyx_live
    other = live.account("other")
    first = live.client.messages.sms(to=HUMAN, message="Which colour?", follow_up_time=120)
    second = other.messages.sms(to=HUMAN, message="Which day?", follow_up_time=120)
    live.fake.send_inbound(HUMAN, TELNYX_FROM, "blue")
    live.fake.wait_for(lambda: len(live.fake.sent_to(HUMAN)) == 3, timeout=20)
    clarified = live.fake.sent_to(HUMAN)[2].text
    code = re.search(r'"Which day\?": reply (\d{4})', clarified)
    assert code is not None, clarified
    for client, asked in ((live.client, first), (other, second)):
        assert client.interactions.status(asked.interaction_id).status == "pending"
    live.fake.send_inbound(HUMAN, TELNYX_FROM, f"{code.group(1)} Tuesday")
    status = other.interactions.status(second.interaction_id, wait=20)
    assert status.result is not None and status.result.payload.body == "Tuesday"  # type: ignore[union-attr]
    assert live.client.interactions.status(first.interaction_id).status == "pending"
