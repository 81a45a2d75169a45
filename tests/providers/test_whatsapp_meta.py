"""The whatsapp channel through Meta's Cloud API (``[whatsapp] provider = "meta"``)
against the Meta contract fake, on loopback and on both stores: an ask answered by the
person's next message or by a reply quoting it, delivery statuses from the webhook,
templates outside the 24-hour window, approvals with reply buttons (the outcome as a
reply), a person's WhatsApp address as an approver counted across channels, forms, and
the webhook refusing what it cannot verify, taking each message once."""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any

import httpx
import pytest
from meta_support import MetaLive

from humanwire.server.config import SHARED_SMS_NUMBER
from humanwire.testing import ScriptedHuman
from humanwire.testing.whatsapp_meta import FakeMetaWhatsApp, SpecViolation, load_spec

pytest.importorskip("jsonschema")


def _held(live: MetaLive, path: str, **body: Any) -> tuple[threading.Thread, dict[str, Any]]:
    answer: dict[str, Any] = {}

    def ask() -> None:
        sent = live.http.post(path, json=body)
        answer.update(sent.json(), status_code=sent.status_code)

    thread = threading.Thread(target=ask)
    thread.start()
    return thread, answer


def _until(check: Any, timeout: float = 10) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    return value


def _status(live: MetaLive, interaction_id: str) -> dict[str, Any]:
    body: dict[str, Any] = live.http.get(f"/interactions/{interaction_id}/status").json()
    return body


# -- the fake's own contract ------------------------------------------------------------
def _interactive(title: str, **extra: Any) -> dict[str, Any]:
    return {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": "16505551234",
        "type": "interactive",
        "interactive": {
            "type": "button",
            "body": {"text": "Approve?"},
            "action": {"buttons": [{"type": "reply", "reply": {"id": "hw:x:a", "title": title}}]},
        },
        **extra,
    }


def test_the_description_patched_takes_real_sends_and_refuses_what_meta_refuses() -> None:
    spec = load_spec()
    spec.check_send(_interactive("Approve"))  # refused by the unpatched description
    for bad in (_interactive("x" * 21), _interactive("Approve", surprise=1)):
        with pytest.raises(SpecViolation):
            spec.check_send(bad)
    four = _interactive("a")
    four["interactive"]["action"]["buttons"] *= 4
    with pytest.raises(SpecViolation):
        spec.check_send(four)
    examples = spec.document["paths"]["/whatsapp/webhooks"]["post"]["requestBody"]["content"]
    for name, example in examples["application/json"]["examples"].items():
        if name != "Unsupported Message":  # the one the description's own schema refuses
            assert spec.check_webhook(example["value"]) is None, name


def test_the_fakes_webhooks_carry_business_scoped_ids_and_fit_the_description() -> None:
    fake = FakeMetaWhatsApp()
    ada = fake.add_person("Ada")
    payload = fake.message_payload(ada, {"type": "text", "text": {"body": "hi"}})
    value = payload["entry"][0]["changes"][0]["value"]
    assert value["contacts"][0]["user_id"] == ada.user_id and ada.user_id.startswith("US.")
    assert value["messages"][0]["from_user_id"] == ada.user_id
    assert fake.errors == []


# -- through the service --------------------------------------------------------------
def test_an_ask_is_answered_by_the_next_message_with_delivery_statuses(
    meta_live: MetaLive,
) -> None:
    live = meta_live
    asking, answer = _held(
        live, "/messages/whatsapp", to=live.ada.address, message="Ship it?", waitTime=30
    )
    asked = live.sent(live.ada)
    assert asked.type == "text" and "Ship it?" in asked.text
    live.fake.wait_idle()  # sent, then delivered
    live.fake.say(live.ada, "yes, ship")
    asking.join(30)
    assert answer["status_code"] == 200, answer
    assert (answer["responded"], answer["reply"]) == (True, "yes, ship")
    assert answer["deliveryStatus"] == "delivered"
    assert live.fake.violations == [] and live.fake.errors == []


def test_a_reply_quoting_an_older_message_answers_that_one(meta_live: MetaLive) -> None:
    live = meta_live
    to = live.ada.address
    first = live.http.post(
        "/messages/whatsapp", json={"to": to, "message": "First?", "followUpTime": 60}
    ).json()
    second = live.http.post(
        "/messages/whatsapp", json={"to": to, "message": "Second?", "followUpTime": 60}
    ).json()
    older = live.sent(live.ada, 1)
    live.fake.say(live.ada, "about the first", reply_to=older)
    _until(lambda: _status(live, first["interactionId"])["status"] == "ended")
    assert _status(live, second["interactionId"])["status"] == "pending"
    live.fake.status(live.sent(live.ada, 2), "read")
    _until(lambda: _status(live, second["interactionId"])["deliveryStatus"] == "read")


def test_outside_the_window_the_ask_goes_as_its_template(meta_live: MetaLive) -> None:
    live = meta_live
    bob = live.fake.add_person("Bob")  # never wrote: no window
    sent = live.http.post(
        "/messages/whatsapp", json={"to": bob.address, "message": "Ship it?", "waitTime": 1}
    )
    assert sent.status_code == 200, sent.text
    asked = live.sent(bob)
    assert asked.type == "template" and asked.body["template"]["name"] == "hw_request"
    assert "Ship it?" in asked.text
    live.fake.wait_idle()
    assert asked.statuses == ["sent", "delivered"]  # a template is not failed with 131047
    assert live.fake.violations == []


def test_a_free_text_outside_the_window_is_failed_as_meta_fails_it(meta_live: MetaLive) -> None:
    """Without a template for it, the text goes and Meta fails it (131047): the
    interaction says so."""
    live = meta_live
    carol = live.fake.add_person("Carol")
    live.runner.stop()
    from dataclasses import replace

    config = live.runner.config
    assert config.whatsapp_meta is not None
    untemplated = replace(config, whatsapp_meta=replace(config.whatsapp_meta, templates={}))
    from humanwire.server.runtime.runner import ServiceRunner

    runner = ServiceRunner(untemplated).start()
    try:
        live.fake.webhook_url = f"{runner.base_url}/providers/meta/whatsapp"
        key = runner.create_account("other")
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=runner.base_url, headers=headers, timeout=30) as http:
            sent = http.post("/messages/whatsapp", json={"to": carol.address, "message": "Hi?"})
            assert sent.status_code == 200, sent.text
            interaction = sent.json()["interactionId"]
            status = lambda: http.get(f"/interactions/{interaction}/status").json()  # noqa: E731
            _until(lambda: status()["deliveryStatus"] == "failed")
        assert live.sent(carol).statuses == ["failed"]
    finally:
        runner.stop()


def test_an_unknown_number_is_refused_naming_to(meta_live: MetaLive) -> None:
    refused = meta_live.http.post(
        "/messages/whatsapp", json={"to": "+16505559999", "message": "hi"}
    )
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == "invalid_to_number"


def test_an_approval_goes_with_reply_buttons_and_a_press_decides_it(meta_live: MetaLive) -> None:
    live = meta_live
    asked = live.http.post(
        "/approvals",
        json={
            "title": "Deploy v2",
            "approvers": [{"channel": "whatsapp", "to": live.ada.address}],
            "followUpTime": 60,
        },
    )
    assert asked.status_code == 200, asked.text
    approval = asked.json()["interactionId"]
    message = live.sent(live.ada, 1)
    assert message.type == "interactive" and "Deploy v2" in message.text
    assert [title for _, title in message.buttons] == ["Approve", "Reject"]
    assert all(len(ident) <= 256 and ident.startswith("hw:") for ident, _ in message.buttons)
    live.fake.press(live.ada, message, "Approve")
    view = _until(lambda: (v := live.http.get(f"/approvals/{approval}").json())["decision"] and v)
    assert view["decision"] == "approved"
    # The button path, as Telegram's, Discord's and Teams' presses: not a typed reply.
    assert [d["via"] for d in view["decisions"]] == ["whatsapp_button"]
    audit = live.http.get("/audit").json()["entries"]
    decided = [e for e in audit if e["type"] == "approval.decision"]
    assert [e["data"]["via"] for e in decided] == ["whatsapp_button"]
    outcome = live.sent(live.ada, 2)
    assert outcome.reply_to == message.id and "approved" in outcome.text
    assert live.fake.violations == [] and live.fake.errors == []


def test_a_typed_yes_to_the_buttons_is_a_whatsapp_reply(meta_live: MetaLive) -> None:
    live = meta_live
    asked = live.http.post(
        "/approvals",
        json={
            "title": "Deploy v3",
            "approvers": [{"channel": "whatsapp", "to": live.ada.address}],
            "followUpTime": 60,
        },
    )
    approval = asked.json()["interactionId"]
    assert live.sent(live.ada, 1).buttons
    live.fake.say(live.ada, "NO")
    view = _until(lambda: (v := live.http.get(f"/approvals/{approval}").json())["decision"] and v)
    assert view["decision"] == "rejected"
    assert [d["via"] for d in view["decisions"]] == ["whatsapp_reply"]


def test_a_press_delivered_twice_is_taken_once(meta_live: MetaLive) -> None:
    live = meta_live
    live.http.post(
        "/approvals",
        json={
            "title": "Rotate keys",
            "approvers": [{"channel": "whatsapp", "to": live.ada.address}],
            "followUpTime": 60,
        },
    )
    message = live.sent(live.ada, 1)
    ident = next(i for i, title in message.buttons if title == "Reject")
    press = {
        "type": "interactive",
        "context": {"from": live.fake.state.display_phone_number, "id": message.id},
        "interactive": {"type": "button_reply", "button_reply": {"id": ident, "title": "Reject"}},
    }
    payload = live.fake.message_payload(live.ada, press, message_id="wamid.PRESS1")
    assert live.fake.post(payload).status_code == 200
    assert live.fake.post(payload).status_code == 200  # Meta's retry
    live.sent(live.ada, 2)
    time.sleep(0.5)  # what a second taking would have sent
    assert len(live.fake.sent_to(live.ada)) == 2


def test_a_persons_whatsapp_address_is_an_approver_counted_across_channels(
    meta_live: MetaLive,
) -> None:
    live = meta_live
    made = live.http.post(
        "/people",
        json={"name": "Ada", "addresses": [{"channel": "whatsapp", "to": live.ada.address}]},
    )
    assert made.status_code == 201, made.text
    person = made.json()["personId"]
    confirm = live.http.post(f"/people/{person}/confirm", json={"channel": "whatsapp"})
    assert confirm.status_code == 200, confirm.text
    code = re.search(r"\b\d{6}\b", live.sent(live.ada, 1).text)
    assert code is not None
    live.fake.say(live.ada, code.group(0))
    _until(lambda: live.http.get(f"/people/{person}").json()["addresses"][0]["confirmed"])
    bob = "+12025550111"
    asked = live.http.post(
        "/approvals",
        json={
            "title": "Wire $5k",
            "approvers": [{"person": person}, {"channel": "sms", "to": bob}],
            "quorum": 2,
            "followUpTime": 60,
        },
    )
    assert asked.status_code == 200, asked.text
    approval = asked.json()["interactionId"]
    message = _until(lambda: [m for m in live.fake.sent_to(live.ada) if m.buttons])[-1]
    live.fake.press(live.ada, message, "Approve")
    _until(lambda: live.http.get(f"/approvals/{approval}").json()["decisions"])
    view = live.http.get(f"/approvals/{approval}").json()
    # Ada's press counts as Ada, the person: one of the two people the quorum needs.
    assert view["decision"] is None and person in json.dumps(view["decisions"][0])
    reply = live.http.post(
        "/sandbox/replies",
        json={"channel": "sms", "from": bob, "to": SHARED_SMS_NUMBER, "body": "yes"},
    )
    assert reply.status_code == 204, reply.text
    view = _until(lambda: (v := live.http.get(f"/approvals/{approval}").json())["decision"] and v)
    assert view["decision"] == "approved"


def test_a_form_goes_as_its_link(meta_live: MetaLive) -> None:
    live = meta_live
    sent = live.http.post(
        "/forms/whatsapp",
        json={
            "to": live.ada.address,
            "title": "Ship?",
            "followUpTime": 60,
            "fields": [{"id": "ok", "type": "text", "label": "OK?"}],
        },
    )
    assert sent.status_code == 200, sent.text
    message = live.sent(live.ada)
    assert message.type == "text" and "http" in message.text
    assert message.body["text"]["preview_url"] is True
    assert live.fake.violations == []


def test_the_webhook_refuses_what_it_cannot_verify_and_answers_the_handshake(
    meta_live: MetaLive,
) -> None:
    live = meta_live
    fake = live.fake
    body = json.dumps(fake.message_payload(live.ada, {"type": "text", "text": {"body": "x"}}))
    raw = body.encode()
    for signature in ("", "sha256=" + "0" * 64, fake.sign(raw + b" "), fake.sign(raw).upper()):
        refused = fake.post_signed(raw, signature=signature)
        assert refused.status_code == 403, (signature, refused.text)
        assert refused.json()["error"]["code"] == "forbidden"
    # The same JSON re-serialized is other bytes: signed over the raw body only.
    respaced = json.dumps(json.loads(body), indent=1).encode()
    assert fake.post_signed(respaced, signature=fake.sign(raw)).status_code == 403
    assert fake.post_signed(b'{"entry": 5}').status_code == 400
    shaken = fake.handshake(challenge="8412")
    assert (shaken.status_code, shaken.text) == (200, "8412")
    assert fake.handshake(verify_token="wrong").status_code == 403
    url = fake.webhook_url
    assert httpx.get(url, params={"hub.challenge": "1"}).status_code == 403


def test_a_message_with_only_a_business_scoped_id_finds_the_number_seen_with_it(
    meta_live: MetaLive,
) -> None:
    live = meta_live
    asking, answer = _held(
        live, "/messages/whatsapp", to=live.ada.address, message="Still on?", waitTime=30
    )
    live.sent(live.ada)
    payload = live.fake.message_payload(live.ada, {"type": "text", "text": {"body": "yes"}})
    value = payload["entry"][0]["changes"][0]["value"]
    del value["messages"][0]["from"]  # a username user: no phone number in the webhook
    value["contacts"][0].pop("wa_id")
    assert live.fake.post(payload).status_code == 200
    asking.join(30)
    assert (answer["responded"], answer["reply"]) == (True, "yes")


def test_the_pages_fake_example_runs_as_written() -> None:
    from docs_support import block

    exec(block("going-live/whatsapp-meta.md", "Testing against the fake", "python"), {})


# -- the sandbox and the inbox beside Meta, as beside Twilio -----------------------------
def _csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found is not None
    return found.group(1)


def _ask_ada(live: MetaLive, title: str) -> str:
    asked = live.http.post(
        "/approvals",
        json={
            "title": title,
            "approvers": [{"channel": "whatsapp", "to": live.ada.address}],
            "followUpTime": 60,
        },
    )
    assert asked.status_code == 200, asked.text
    approval: str = asked.json()["interactionId"]
    live.sent(live.ada, 1)
    return approval


def _decisions(live: MetaLive, approval: str) -> list[tuple[str, str]]:
    view = live.http.get(f"/approvals/{approval}").json()
    return [(d["decision"], d["via"]) for d in view["decisions"]]


def test_the_sandbox_and_the_inbox_cannot_answer_as_a_person_meta_reaches(
    meta_live: MetaLive,
) -> None:
    live = meta_live
    approval = _ask_ada(live, "Drop the table")
    sender = live.fake.sender
    body = {"channel": "whatsapp", "from": live.ada.address, "to": sender, "body": "YES"}
    refused = live.http.post("/sandbox/replies", json=body)
    assert refused.status_code == 403, refused.text
    error = refused.json()["error"]
    assert (error["code"], error["field"]) == ("live_channel", "channel")
    assert error["message"].startswith("whatsapp is carried by Meta's WhatsApp Cloud API")
    with httpx.Client(base_url=live.base_url, follow_redirects=True, timeout=30) as inbox:
        csrf = _csrf_of(inbox.get(f"/inbox?key={live.key}").text)
        texted = inbox.post("/inbox/text", data={"csrf": csrf, **body})
        assert texted.status_code == 403, texted.text
    assert _decisions(live, approval) == []
    # Ada's own press, through Meta, decides: recorded as what it is.
    live.fake.press(live.ada, live.sent(live.ada, 1), "Reject")
    assert _until(lambda: _decisions(live, approval)) == [("reject", "whatsapp_button")]


def test_with_sandbox_live_channels_their_answers_are_recorded_as_theirs(
    database: str, fake_meta: Any
) -> None:
    from meta_support import running_meta

    with running_meta(database, fake_meta, sandbox_live_channels=True) as live:
        approval = _ask_ada(live, "Rotate the keys")
        body = {
            "channel": "whatsapp",
            "from": live.ada.address,
            "to": live.fake.sender,
            "body": "YES",
        }
        assert live.http.post("/sandbox/replies", json=body).status_code == 204
        assert _decisions(live, approval) == [("approve", "sandbox")]
        second = live.http.post(
            "/approvals",
            json={
                "title": "Ship v4",
                "approvers": [{"channel": "whatsapp", "to": live.ada.address}],
                "followUpTime": 60,
            },
        ).json()["interactionId"]
        with httpx.Client(base_url=live.base_url, follow_redirects=True, timeout=30) as inbox:
            csrf = _csrf_of(inbox.get(f"/inbox?key={live.key}").text)
            texted = inbox.post("/inbox/text", data={"csrf": csrf, **body, "body": "NO"})
            assert texted.status_code == 200, texted.text
        assert _decisions(live, second) == [("reject", "inbox")]


# -- the scripted human on the fake's phones ---------------------------------------------
def _human(live: MetaLive) -> ScriptedHuman:
    return ScriptedHuman(live.base_url, live.key, phone=live.ada.address, meta_whatsapp=live.fake)


def test_the_scripted_human_replies_on_whatsapp_through_meta(meta_live: MetaLive) -> None:
    live = meta_live
    with _human(live) as human:
        replied = human.reply("yes, ship", channel="whatsapp")
        asked = live.http.post(
            "/messages/whatsapp",
            json={"to": live.ada.address, "message": "Ship it?", "waitTime": 30},
        )
        assert asked.status_code == 200, asked.text
        assert (asked.json()["responded"], asked.json()["reply"]) == (True, "yes, ship")
        delivery = replied.wait()
        assert (delivery.channel, delivery.to) == ("whatsapp", live.ada.address)
        assert "Ship it?" in delivery.text
        [sent] = [m for m in live.fake.sent_to(live.ada) if "Ship it?" in m.text]
        assert delivery.id == sent.id
        silent = human.stay_silent(channel="whatsapp")
        live.http.post("/messages/whatsapp", json={"to": live.ada.address, "message": "Anyone?"})
        assert "Anyone?" in silent.wait().text
        answered = live.http.post(
            "/messages/whatsapp",
            json={"to": live.ada.address, "message": "Which region?", "followUpTime": 60},
        ).json()["interactionId"]
        live.sent(live.ada, 3)
        human.send_text("eu-west", channel="whatsapp")
        status = _until(lambda: (s := _status(live, answered))["status"] == "ended" and s)
        assert status["result"]["payload"]["body"] == "eu-west"
    assert live.fake.violations == [] and live.fake.errors == []


def test_the_scripted_human_presses_an_approvals_button_on_meta(meta_live: MetaLive) -> None:
    live = meta_live
    with _human(live) as human:
        pressed = human.decide_approval("reject", channel="whatsapp")
        approval = _ask_ada(live, "Drop prod")
        delivery = pressed.wait()
        assert delivery.interaction_id == approval
        assert _until(lambda: _decisions(live, approval)) == [("reject", "whatsapp_button")]
        # With a comment the human decides on the page the request links to.
        commented = human.decide_approval("approve", "looks fine", channel="whatsapp")
        second = live.http.post(
            "/approvals",
            json={
                "title": "Ship v5",
                "approvers": [{"channel": "whatsapp", "to": live.ada.address}],
                "allowComment": True,
                "followUpTime": 60,
            },
        ).json()["interactionId"]
        assert commented.wait().interaction_id == second
        assert _until(lambda: _decisions(live, second)) == [("approve", "page")]
    assert live.fake.violations == [] and live.fake.errors == []


def test_the_scripted_human_fills_a_form_sent_through_meta(meta_live: MetaLive) -> None:
    live = meta_live
    with _human(live) as human:
        filled = human.fill_form({"region": "eu-west"}, channel="whatsapp")
        sent = live.http.post(
            "/forms/whatsapp",
            json={
                "to": live.ada.address,
                "title": "Where?",
                "waitTime": 30,
                "fields": [{"id": "region", "type": "text", "label": "Region"}],
            },
        )
        assert sent.status_code == 200, sent.text
        assert sent.json()["values"] == {"region": "eu-west"}
        delivery = filled.wait()
        assert delivery.kind == "form" and delivery.form_url and "/f/" in delivery.form_url
