"""The Webhooks guide's code runs as written (docs/guides/webhooks.md): the registration
and a send with a follow-up window, and the receiver's ``parse_event`` on the real
delivery of its late reply."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import pytest

from docs_support import blocks, section
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.testing.receiver import WebhookReceiver


def test_a_late_reply_reaches_the_guides_receiver(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    monkeypatch.setenv("HUMANWIRE_BASE_URL", humanwire_service.base_url)
    monkeypatch.setenv("HUMANWIRE_API_KEY", humanwire_api_key)
    # The page's opening, before its first section.
    register, receive = blocks(section("guides/webhooks.md", None), "python")
    assert '"http://127.0.0.1:8000/hooks"' in register
    namespace: dict[str, Any] = {}
    # Nobody holds the guide's send: the reply is late, and goes to the webhooks.
    reply = human.reply("yes")
    # The guide's receiver address, this test's receiver.
    code = register.replace('"http://127.0.0.1:8000/hooks"', repr(webhook_receiver.url))
    exec(compile(code, "webhooks-register", "exec"), namespace)
    exec(compile(receive, "webhooks-receive", "exec"), namespace)
    asked = namespace["sent"]
    assert asked.status == "pending" and asked.response is None
    reply.wait(10)
    webhook_receiver.wait_for("message.received", timeout=10)
    received = next(d for d in webhook_receiver.deliveries if d.accepted)
    namespace["receive"](
        received.body,
        {"Humanwire-Signature": received.headers["humanwire-signature"]},
        namespace["secret"],
    )
    assert capsys.readouterr().out.strip() == f"message.received {asked.interaction_id}"
    # The key is the secret as given, its prefix included (what the page says to a
    # receiver written in another language).
    secret = namespace["secret"]
    assert secret.startswith("whsec_")
    fields = dict(part.split("=", 1) for part in received.headers["humanwire-signature"].split(","))
    signed = fields["t"].encode() + b"." + received.body
    assert fields["v1"] == hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    stripped = secret.removeprefix("whsec_").encode()
    assert fields["v1"] != hmac.new(stripped, signed, hashlib.sha256).hexdigest()
