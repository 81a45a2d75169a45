"""The sandbox beside a real provider, end to end on both stores: with Twilio carrying sms
and whatsapp (the contract fake), neither the sandbox API nor the inbox's human side
answers as the people Twilio reaches (403 ``live_channel``, nothing decided); the
channels still on the sandbox keep working; an operator who turns
``sandbox_live_channels`` on gets the answers recorded ``via: sandbox`` / ``inbox``,
never as a text's own ``sms_reply``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
from twilio_support import HUMAN, SMS_FROM, WHATSAPP_FROM, Live, running_live

from humanwire import LiveChannelError
from humanwire.server.config import startup_lines
from humanwire.testing.twilio import TwilioFakeServer

SLACK_HUMAN = "U0HUMAN0001"


def _api(live: Live) -> httpx.Client:
    return httpx.Client(
        base_url=live.base_url, headers={"Authorization": f"Bearer {live.key}"}, timeout=30
    )


def _ask(api: httpx.Client, *approvers: dict[str, str]) -> str:
    """An approval request every approver must approve (any one rejection rejects)."""
    asked = api.post(
        "/approvals",
        json={
            "title": "Wire $4,200",
            "action": {"name": "wire_money", "arguments": {"amount": 4200}},
            "approvers": list(approvers),
            "quorum": len(approvers),
            "followUpTime": 120,
        },
    )
    assert asked.status_code == 200, asked.text
    iid: str = asked.json()["interactionId"]
    return iid


def _decisions(api: httpx.Client, iid: str) -> list[tuple[str, str, str]]:
    view = api.get(f"/approvals/{iid}").json()
    return [(d["approver"]["channel"], d["decision"], d["via"]) for d in view["decisions"]]


def test_the_sandbox_cannot_answer_as_a_person_twilio_reaches(live: Live) -> None:
    with _api(live) as api:
        iid = _ask(api, {"channel": "sms", "to": HUMAN})
        live.fake.wait_for(lambda: len(live.fake.sent_to(HUMAN)) == 1)
        for channel, sender in (("sms", SMS_FROM), ("whatsapp", WHATSAPP_FROM)):
            refused = api.post(
                "/sandbox/replies",
                json={"channel": channel, "from": HUMAN, "to": sender, "body": "YES"},
            )
            assert refused.status_code == 403, refused.text
            error = refused.json()["error"]
            assert (error["code"], error["field"]) == ("live_channel", "channel")
            assert error["message"].startswith(f"{channel} is carried by Twilio")
        # The client names it too.
        with pytest.raises(LiveChannelError):
            live.client.sandbox.reply(channel="sms", from_=HUMAN, to=SMS_FROM, body="YES")
        assert _decisions(api, iid) == []
        assert api.get(f"/approvals/{iid}").json()["status"] == "pending"
        # The person's own text, through Twilio, decides: recorded as what it is.
        live.fake.send_inbound(HUMAN, SMS_FROM, "YES")
        live.fake.wait_for(lambda: _decisions(api, iid) != [], timeout=10)
        assert _decisions(api, iid) == [("sms", "approve", "sms_reply")]


def test_the_channels_still_on_the_sandbox_keep_working(live: Live) -> None:
    with _api(live) as api:
        # Slack has no provider here: its message lands in the sandbox and takes a reply.
        sent = api.post(
            "/messages/slack",
            json={"to": SLACK_HUMAN, "message": "Which region?", "followUpTime": 60},
        )
        assert sent.status_code == 200, sent.text
        iid = sent.json()["interactionId"]
        [delivery] = api.get("/sandbox/messages", params={"interactionId": iid}).json()
        replied = api.post(
            "/sandbox/replies",
            json={
                "channel": "slack",
                "from": SLACK_HUMAN,
                "to": delivery["from"],
                "body": "eu-west",
                "interactionId": iid,
            },
        )
        assert replied.status_code == 204, replied.text
        status = api.get(f"/interactions/{iid}/status").json()
        assert status["status"] == "ended"
        assert status["result"]["payload"]["body"] == "eu-west"


def _csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found is not None
    return found.group(1)


def test_the_inbox_decides_only_as_approvers_the_sandbox_reaches(live: Live) -> None:
    with _api(live) as api:
        iid = _ask(api, {"channel": "sms", "to": HUMAN}, {"channel": "link", "to": "Ada"})
        with httpx.Client(base_url=live.base_url, follow_redirects=True, timeout=30) as inbox:
            page = inbox.get(f"/inbox?key={live.key}").text
            csrf = _csrf_of(page)
            item = page[page.index(f'data-approval="{iid}"') :]
            assert '<option value="1">Ada (Link)</option>' in item
            assert f"{HUMAN} (SMS)</option>" not in item  # not offered
            # Posted anyway (a session or the bearer key): refused, naming the channel.
            target = f"/inbox/approvals/{iid}"
            refused = inbox.post(
                target, data={"csrf": csrf, "approver": "0", "decision": "approve"}
            )
            assert refused.status_code == 403 and "sms is carried by Twilio" in refused.text
            by_key = httpx.post(
                f"{live.base_url}{target}",
                data={"approver": "0", "decision": "approve"},
                headers={"Authorization": f"Bearer {live.key}"},
            )
            assert by_key.status_code == 403 and "sms is carried by Twilio" in by_key.text
            # Nor through its "write to the agent" form.
            texted = inbox.post(
                "/inbox/text",
                data={"csrf": csrf, "channel": "sms", "from": HUMAN, "to": SMS_FROM, "body": "YES"},
            )
            assert texted.status_code == 403 and "sms is carried by Twilio" in texted.text
            assert _decisions(api, iid) == []
            # A link approver has no carrier: the inbox may decide as them.
            decided = inbox.post(target, data={"csrf": csrf, "approver": "1", "decision": "reject"})
            assert decided.status_code == 200 and "Rejected as Ada (Link)." in decided.text
        assert _decisions(api, iid) == [("link", "reject", "inbox")]


@pytest.fixture
def lenient(database: str, fake_twilio: TwilioFakeServer) -> Iterator[Live]:
    """The service wired to the fake with ``sandbox_live_channels`` on."""
    with running_live(database, fake_twilio, sandbox_live_channels=True) as running:
        yield running


def test_allowed_answers_are_recorded_with_their_true_origin(lenient: Live) -> None:
    with _api(lenient) as api:
        iid = _ask(
            api,
            {"channel": "sms", "to": HUMAN},
            {"channel": "whatsapp", "to": "+13125550177"},
        )
        body = {"channel": "sms", "from": HUMAN, "to": SMS_FROM, "body": "YES fine"}
        assert api.post("/sandbox/replies", json=body).status_code == 204
        with httpx.Client(base_url=lenient.base_url, follow_redirects=True, timeout=30) as inbox:
            csrf = _csrf_of(inbox.get(f"/inbox?key={lenient.key}").text)
            texted = inbox.post(
                "/inbox/text",
                data={
                    "csrf": csrf,
                    "channel": "whatsapp",
                    "from": "+13125550177",
                    "to": WHATSAPP_FROM,
                    "body": "NO",
                },
            )
            assert texted.status_code == 200, texted.text
        assert _decisions(api, iid) == [
            ("sms", "approve", "sandbox"),
            ("whatsapp", "reject", "inbox"),
        ]
        audit = api.get("/audit").json()
        vias = [e["data"]["via"] for e in audit["entries"] if e["type"] == "approval.decision"]
        assert vias == ["sandbox", "inbox"]


def _lines(live: Live, **changes: Any) -> list[str]:
    return [
        " ".join(line.split()) for line in startup_lines(replace(live.runner.config, **changes))
    ]


def test_the_start_up_lines_say_where_the_sandbox_answers(live: Live) -> None:
    [sandbox] = [line for line in _lines(live) if line.startswith("sandbox")]
    assert sandbox == (
        "sandbox on (the sandbox API and the inbox's human side), not for sms, whatsapp: "
        "a real provider carries them"
    )
    assert not [line for line in _lines(live) if line.startswith("warning")]
    [warning] = [
        line for line in _lines(live, sandbox_live_channels=True) if line.startswith("warning")
    ]
    assert warning.startswith(
        "warning sandbox_live_channels is on: anyone with an account's key can answer sms, "
        "whatsapp as its recipients"
    )
