"""Signing and verifying webhook deliveries, and parsing their events."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from humanwire import (
    CallConversationEndedEvent,
    FormReceivedEvent,
    InvalidSignatureError,
    MessageReceivedEvent,
    UnknownEventError,
    WebhookVerificationError,
)
from humanwire.webhooks import (
    EVENT_ID_HEADER,
    SIGNATURE_HEADER,
    parse_event,
    sign,
    verify,
)

SECRET = "whsec_test"
T = 1_767_268_800  # 2026-01-01T12:00:00Z
BODY = json.dumps(
    {
        "eventType": "form.received",
        "payload": {"interactionId": "i1", "values": {"approve": "true"}},
    }
).encode()


def test_header_names() -> None:
    assert SIGNATURE_HEADER == "Humanwire-Signature"
    assert EVENT_ID_HEADER == "Humanwire-Event-Id"


def test_sign_is_hmac_sha256_of_timestamp_dot_body() -> None:
    expected = hmac.new(SECRET.encode(), f"{T}.".encode() + BODY, hashlib.sha256).hexdigest()
    assert sign(SECRET, BODY, T) == f"t={T},v1={expected}"


def test_verify_accepts_a_fresh_signature() -> None:
    verify(BODY, sign(SECRET, BODY, T), SECRET, now=T + 10)
    verify(BODY, sign(SECRET, BODY, T), SECRET, now=T - 10)  # small clock skew


def test_verify_rejects_a_tampered_body() -> None:
    header = sign(SECRET, BODY, T)
    with pytest.raises(InvalidSignatureError, match="does not match"):
        verify(BODY.replace(b"true", b"false"), header, SECRET, now=T)


def test_verify_rejects_another_secret() -> None:
    with pytest.raises(InvalidSignatureError):
        verify(BODY, sign("whsec_other", BODY, T), SECRET, now=T)


def test_verify_rejects_a_changed_timestamp() -> None:
    signature = sign(SECRET, BODY, T).split(",v1=")[1]
    with pytest.raises(InvalidSignatureError, match="does not match"):
        verify(BODY, f"t={T + 1},v1={signature}", SECRET, now=T)


def test_verify_enforces_the_tolerance() -> None:
    header = sign(SECRET, BODY, T)
    verify(BODY, header, SECRET, now=T + 300)
    with pytest.raises(InvalidSignatureError, match="tolerance"):
        verify(BODY, header, SECRET, now=T + 301)
    with pytest.raises(InvalidSignatureError, match="tolerance"):
        verify(BODY, header, SECRET, now=T - 301)
    verify(BODY, header, SECRET, now=T + 3000, tolerance=3600)


def test_verify_accepts_any_of_several_v1_entries() -> None:
    good = sign(SECRET, BODY, T).split(",v1=")[1]
    verify(BODY, f"t={T},v1={'0' * 64},v1={good}", SECRET, now=T)
    verify(BODY, f"v1={good}, t={T}", SECRET, now=T)  # order and spaces do not matter
    with pytest.raises(InvalidSignatureError):
        verify(BODY, f"t={T},v1={'0' * 64},v1={'1' * 64}", SECRET, now=T)


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("", "missing"),
        ("v1=abc", "no timestamp"),
        (f"t={T}", "no v1"),
        ("t=soon,v1=abc", "whole number"),
        ("garbage", "no timestamp"),
    ],
)
def test_verify_rejects_malformed_headers(header: str, message: str) -> None:
    with pytest.raises(InvalidSignatureError, match=message):
        verify(BODY, header, SECRET, now=T)


def test_verify_needs_a_secret() -> None:
    with pytest.raises(InvalidSignatureError):
        verify(BODY, sign("", BODY, T), "", now=T)


def test_parse_event_verifies_with_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.time", lambda: float(T))
    event = parse_event(BODY, signature=sign(SECRET, BODY, T), secret=SECRET)
    assert isinstance(event, FormReceivedEvent)
    assert event.payload.values == {"approve": "true"}
    with pytest.raises(InvalidSignatureError):
        parse_event(BODY, signature=sign("whsec_other", BODY, T), secret=SECRET)
    with pytest.raises(InvalidSignatureError):
        parse_event(BODY, secret=SECRET)  # secret given, signature missing


def test_parse_event_refuses_a_signature_it_cannot_check() -> None:
    with pytest.raises(InvalidSignatureError, match="no secret"):
        parse_event(BODY, signature=sign(SECRET, BODY, T))


def test_parse_event_without_verification_accepts_str_and_bytes() -> None:
    message = {
        "eventType": "message.received",
        "payload": {
            "medium": "whatsapp",
            "from": "+12025550100",
            "to": "+12025550199",
            "body": "hi",
        },
    }
    event = parse_event(json.dumps(message))
    assert isinstance(event, MessageReceivedEvent)
    assert event.payload.interaction_id is None and event.payload.media_urls == []
    assert event.payload.from_ == "+12025550100"
    call = {
        "eventType": "call.conversation.ended",
        "payload": {"interactionId": "c1", "summary": "Left a message", "from": "+1", "to": "+2"},
    }
    assert isinstance(parse_event(json.dumps(call).encode()), CallConversationEndedEvent)


def test_unknown_event_type_is_a_clear_error() -> None:
    body = json.dumps({"eventType": "sms.sent", "payload": {}})
    with pytest.raises(UnknownEventError, match=r"'sms\.sent'.*message\.received"):
        parse_event(body)
    with pytest.raises(UnknownEventError, match="None"):
        parse_event(json.dumps({"payload": {}}))


def test_malformed_bodies() -> None:
    with pytest.raises(WebhookVerificationError, match="not JSON"):
        parse_event(b"{nope")
    with pytest.raises(WebhookVerificationError, match="not a JSON object"):
        parse_event(b"[1, 2]")
    body = json.dumps({"eventType": "form.received", "payload": {"values": {}}})
    with pytest.raises(WebhookVerificationError, match="interactionId") as info:
        parse_event(body)
    assert not isinstance(info.value, UnknownEventError)


def test_the_service_signs_what_the_client_verifies() -> None:
    # The outbox computes the header itself; both sides must agree byte for byte.
    from humanwire.server.background.outbox import event_body, signature_header

    body = event_body(json.loads(BODY))
    header = signature_header(SECRET, body, T)
    assert header == sign(SECRET, body, T)
    verify(body, header, SECRET, now=T)
