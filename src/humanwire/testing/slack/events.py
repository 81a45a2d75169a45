"""What the fake Slack sends the app: Events API envelopes (to ``events_url``, retried
as Slack retries an envelope not acknowledged with a 2xx within 3 seconds, with
``X-Slack-Retry-Num`` / ``X-Slack-Retry-Reason``) and ``block_actions`` interactions (to
``interactions_url``), each signed as Slack signs (``X-Slack-Signature``, computed with
``slack_sdk``'s ``SignatureVerifier``). The deliveries run on the serving loop
(``FakeBackground``); what they did is recorded on the fake."""

from __future__ import annotations

import asyncio
import json
import math
import secrets
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import httpx

from .records import (
    FakeAttempt,
    FakeChannel,
    FakeEventDelivery,
    FakeInteraction,
    FakeWorkspace,
    new_id,
)
from .spec import CHANNEL_TOPICS

if TYPE_CHECKING:
    from .fake import FakeSlack

__all__ = ["SlackEvents"]


class SlackEvents:
    """Signs and delivers what ``fake`` sends the app."""

    def __init__(self, fake: FakeSlack) -> None:
        self.fake = fake

    def signed_headers(
        self, body: bytes, content_type: str, signature: str | None, timestamp: int | None
    ) -> dict[str, str]:
        from slack_sdk.signature import SignatureVerifier

        stamp = str(timestamp if timestamp is not None else int(time.time()))
        if signature is None:
            verifier = SignatureVerifier(self.fake.signing_secret)
            signature = verifier.generate_signature(timestamp=stamp, body=body.decode())
        return {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": signature or "",
            "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
        }

    def events_url(self) -> str:
        if not self.fake.events_url:
            raise RuntimeError("set fake.events_url (the app's Event Subscriptions URL)")
        return self.fake.events_url

    def envelope(self, workspace: FakeWorkspace, event: dict[str, Any]) -> dict[str, Any]:
        envelope = {
            "token": self.fake.verification_token,
            "team_id": workspace.team_id,
            "api_app_id": self.fake.app_id,
            "event": event,
            "type": "event_callback",
            "event_id": new_id("Ev0"),
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
        for problem in self.fake.spec.check_event(envelope):
            self.fake.error(f"event {event.get('type')}: {problem}")
        return envelope

    def send_event(self, channel: FakeChannel, event: dict[str, Any]) -> None:
        """Sends a message event if the app hears it: installed in the workspace, in the
        conversation, with the topic's scope."""
        workspace = self.fake.workspaces[channel.team]
        topic = f"message.{CHANNEL_TOPICS[channel.channel_type]}"
        needed = self.fake.spec.events["topics"][topic]["subscribe"].get("x-scopes-required", ())
        if not workspace.installed or workspace.bot_user_id not in channel.members:
            return
        if needed and not set(needed) & set(workspace.scopes):
            return
        self.deliver(self.envelope(workspace, event))

    def deliver(self, envelope: dict[str, Any]) -> None:
        if not self.fake.events_url:
            return
        delivery = FakeEventDelivery(envelope)
        with self.fake.lock:
            self.fake.event_deliveries.append(delivery)
        self.fake.background.spawn(self._dispatch(delivery), "event delivery")

    async def _dispatch(self, delivery: FakeEventDelivery) -> None:
        reason: str | None = None
        for retry in range(len(self.fake.retry_delays) + 1):
            if retry:
                await asyncio.sleep(self.fake.retry_delays[retry - 1])
            reason = await self.attempt(delivery, retry, reason)
            if reason is None:
                return
        self.fake.error(f"event {delivery.envelope['event_id']} was never acknowledged")

    async def attempt(
        self, delivery: FakeEventDelivery, retry: int, reason: str | None
    ) -> str | None:
        """One POST of ``delivery``; returns why it failed (None: acknowledged)."""
        body = json.dumps(delivery.envelope).encode()
        # Slack retries once the attempt before had its 3 s to be acknowledged, signed
        # afresh: never the same timestamp (and signature) as that attempt's.
        stamp = int(time.time())
        if retry:
            stamp = max(stamp, delivery.signed_at + math.ceil(self.fake.ack_timeout))
        delivery.signed_at = stamp
        headers = self.signed_headers(body, "application/json", None, stamp)
        if retry:
            headers["X-Slack-Retry-Num"] = str(retry)
            headers["X-Slack-Retry-Reason"] = reason or "http_error"
        started = time.monotonic()
        status, failure = 0, None
        try:
            response = await self.fake.background.http.post(
                self.events_url(), content=body, headers=headers, timeout=self.fake.ack_timeout
            )
            status = response.status_code
            failure = None if 200 <= status < 300 else "http_error"
        except httpx.TimeoutException:
            failure = "http_timeout"
        except httpx.HTTPError:
            failure = "connection_failed"
        with self.fake.lock:
            delivery.attempts.append(
                FakeAttempt(status, time.monotonic() - started, retry, reason if retry else None)
            )
        return failure

    async def interact(self, payload: dict[str, Any]) -> httpx.Response:
        if not self.fake.interactions_url:
            raise RuntimeError("set fake.interactions_url (the app's Interactivity URL)")
        body = urlencode({"payload": json.dumps(payload)}).encode()
        headers = self.signed_headers(body, "application/x-www-form-urlencoded", None, None)
        started = time.monotonic()
        response = await self.fake.background.http.post(
            self.fake.interactions_url, content=body, headers=headers, timeout=10
        )
        elapsed = time.monotonic() - started
        with self.fake.lock:
            self.fake.interactions.append(FakeInteraction(payload, response.status_code, elapsed))
        if response.status_code == 200 and elapsed > self.fake.ack_timeout:
            self.fake.error(
                f"a click was acknowledged after {elapsed:.1f} s (Slack shows an error)"
            )
        return response
