"""``/readyz`` reports what each real provider made of its credentials at start, against
the contract fakes over loopback: accepted, refused (not ready, naming the provider), or
unverified when the provider could not be reached (still ready: the sandbox, forms and
the other provider work, and sends say what fails)."""

from __future__ import annotations

import socket

import httpx
from slack_support import start_slack_live
from telnyx_support import start_telnyx
from twilio_support import start_live

from humanwire.testing.slack import SlackFakeServer
from humanwire.testing.telnyx import TelnyxFakeServer
from humanwire.testing.twilio import TwilioFakeServer


def _readyz(base_url: str) -> httpx.Response:
    return httpx.get(f"{base_url}/readyz", trust_env=False, timeout=20)


def test_twilio_credentials_accepted(database: str, fake_twilio: TwilioFakeServer) -> None:
    runner, _key = start_live(database, fake_twilio)
    try:
        response = _readyz(runner.base_url)
    finally:
        runner.stop()
    assert response.status_code == 200, response.text
    assert response.json()["checks"]["twilio"] == {
        "ok": True,
        "detail": "twilio credentials accepted",
    }
    # One authenticated read, within Twilio's published description.
    assert any(
        method == "GET" and path.endswith("/IncomingPhoneNumbers.json")
        for method, path, _params in fake_twilio.fake.requests
    )
    assert fake_twilio.fake.violations == []


def test_a_wrong_twilio_token_is_not_ready(database: str, fake_twilio: TwilioFakeServer) -> None:
    wrong = "0" * 32
    runner, _key = start_live(database, fake_twilio, twilio={"auth_token": wrong})
    try:
        response = _readyz(runner.base_url)
    finally:
        runner.stop()
    assert response.status_code == 503, response.text
    body = response.json()
    assert body["status"] == "not_ready"
    twilio = body["checks"]["twilio"]
    assert twilio["ok"] is False
    assert twilio["detail"].startswith("twilio.account_sid and twilio.auth_token refused")
    assert "20003" in twilio["detail"]
    assert wrong not in response.text
    assert body["checks"]["database"]["ok"] is True


def test_an_unreachable_twilio_is_unverified_but_ready(
    database: str, fake_twilio: TwilioFakeServer
) -> None:
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}"
    runner, _key = start_live(database, fake_twilio, twilio={"api_base": dead})
    try:
        response = _readyz(runner.base_url)
    finally:
        runner.stop()
    assert response.status_code == 200, response.text
    twilio = response.json()["checks"]["twilio"]
    assert twilio["ok"] is True
    assert twilio["detail"].startswith("Twilio could not be reached at start")


def test_slack_token_accepted_or_refused(database: str, fake_slack: SlackFakeServer) -> None:
    runner, _key = start_slack_live(database, fake_slack)
    try:
        accepted = _readyz(runner.base_url)
    finally:
        runner.stop()
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["checks"]["slack"] == {
        "ok": True,
        "detail": "slack.bot_token accepted by auth.test",
    }

    revoked = "xoxb-0-0-not-a-token-the-fake-knows"
    runner, _key = start_slack_live(database, fake_slack, slack={"bot_token": revoked})
    try:
        refused = _readyz(runner.base_url)
    finally:
        runner.stop()
    assert refused.status_code == 503, refused.text
    slack = refused.json()["checks"]["slack"]
    assert slack == {"ok": False, "detail": "slack.bot_token refused by auth.test (invalid_auth)"}
    assert revoked not in refused.text


def test_telnyx_credentials_accepted_and_a_wrong_key_is_not_ready(
    database: str, fake_telnyx: TelnyxFakeServer
) -> None:
    runner, _key = start_telnyx(database, fake_telnyx)
    try:
        response = _readyz(runner.base_url)
    finally:
        runner.stop()
    assert response.status_code == 200, response.text
    assert response.json()["checks"]["telnyx"] == {
        "ok": True,
        "detail": "telnyx credentials accepted",
    }
    assert [r.operation for r in fake_telnyx.fake.requests] == ["numbers.list"]
    wrong = "KEY" + "0" * 32
    runner, _key = start_telnyx(database, fake_telnyx, telnyx={"api_key": wrong})
    try:
        response = _readyz(runner.base_url)
    finally:
        runner.stop()
    assert response.status_code == 503, response.text
    telnyx = response.json()["checks"]["telnyx"]
    assert telnyx["ok"] is False and telnyx["detail"].startswith("telnyx.api_key refused")
    assert "10009" in telnyx["detail"] and wrong not in response.text
    assert fake_telnyx.fake.violations == []
