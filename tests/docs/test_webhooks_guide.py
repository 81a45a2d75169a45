"""The Webhooks guide's code runs as written (docs/guides/webhooks.md): the registration,
and the receiver's ``parse_event`` on a real delivery of a late reply."""

from __future__ import annotations

import pytest

from docs_support import blocks, page
from humanwire import HumanWire
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
    opening = page("guides/webhooks.md").split("\n## ", 1)[0]
    register, receive = blocks(opening, "python")
    assert '"http://127.0.0.1:8000/hooks"' in register
    namespace: dict[str, object] = {}
    # The guide's receiver address, this test's receiver.
    code = register.replace('"http://127.0.0.1:8000/hooks"', repr(webhook_receiver.url))
    exec(compile(code, "webhooks-register", "exec"), namespace)
    exec(compile(receive, "webhooks-receive", "exec"), namespace)
    # Nobody holds the send: the reply is late, and goes to the webhooks.
    reply = human.reply("yes")
    with HumanWire(api_key=humanwire_api_key, base_url=humanwire_service.base_url) as client:
        asked = client.messages.sms(to="+12025550100", message="Ship it?", follow_up_time=60)
    reply.wait(10)
    webhook_receiver.wait_for("message.received", timeout=10)
    received = next(d for d in webhook_receiver.deliveries if d.accepted)
    namespace["receive"](  # type: ignore[operator]
        received.body,
        {"Humanwire-Signature": received.headers["humanwire-signature"]},
        namespace["secret"],
    )
    assert capsys.readouterr().out.strip() == f"message.received {asked.interaction_id}"
