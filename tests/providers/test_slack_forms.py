"""Forms in Slack: a link button to the form page; an approval form (as
``humanwire.approval.build_approval_form`` builds it, sent as a form) also gets Approve /
Reject buttons whose click is the form's submission, decided once, shown in the message.
(Approval requests, ``POST /approvals``, have their own Slack tests:
``test_slack_approval_requests.py``.)"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from slack_support import SlackLive
from twilio_support import in_background

from humanwire.approval import ApprovalRequest, build_approval_form
from humanwire.testing.receiver import WebhookReceiver
from humanwire.testing.slack import FakeSlackMessage
from humanwire.types import FormResponse


def _actions(message: FakeSlackMessage) -> list[dict[str, Any]]:
    return [
        element
        for block in message.blocks or []
        if block["type"] == "actions"
        for element in block["elements"]
    ]


def _text_of(message: FakeSlackMessage) -> str:
    parts = [message.text or ""]
    for block in message.blocks or []:
        if "text" in block and isinstance(block["text"], dict):
            parts.append(block["text"]["text"])
        for element in block.get("elements", []):
            if isinstance(element, dict) and "text" in element:
                text = element["text"]
                parts.append(text["text"] if isinstance(text, dict) else str(text))
    return "\n".join(parts)


def test_a_form_goes_out_with_a_button_to_its_page(slack_live: SlackLive) -> None:
    live = slack_live
    sent = live.client.forms.slack(
        to=live.member,
        title="Lunch",
        fields=[{"id": "dish", "label": "Dish", "type": "text", "required": True}],
        follow_up_time=60,
    )
    posted = live.posted(live.member)
    [button] = _actions(posted)
    assert button["url"] == sent.form_url
    assert sent.form_url in posted.text  # the default message carries the link too
    page = httpx.get(sent.form_url)
    assert page.status_code == 200 and "Lunch" in page.text
    assert live.fake.violations == []


def _send_approval_form(live: SlackLive, request: ApprovalRequest, **windows: Any) -> FormResponse:
    title, fields = build_approval_form(request)
    return live.client.forms.slack(to=live.member, title=title, fields=fields, **windows)


def test_approve_in_slack_is_the_held_forms_answer(slack_live: SlackLive) -> None:
    live = slack_live

    def click() -> None:
        message = live.posted(live.member)
        labels = [button["text"]["text"] for button in _actions(message)]
        assert labels == ["Approve", "Reject", "Open the form"]
        response = live.fake.click(message, "humanwire_approve", live.member)
        assert response.status_code == 200

    clicked = in_background(click)
    answered = _send_approval_form(live, ApprovalRequest("deploy", {"env": "prod"}), wait_time=20)
    clicked()
    assert answered.responded and answered.values is not None
    assert answered.values["decision"] == "approve"
    message = live.posted(live.member)
    live.fake.wait_for(lambda: bool(message.updates))
    assert _actions(message) == []  # the buttons are gone
    shown = _text_of(message)
    assert f"Approved* by <@{live.member}>" in shown and "<!date^" in shown
    assert "env: prod" in shown
    assert live.fake.violations == []


def test_a_double_click_decides_once(slack_live: SlackLive) -> None:
    live = slack_live
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        sent = _send_approval_form(live, ApprovalRequest("restart"), wait_time=1, follow_up_time=60)
        assert sent.responded is False
        message = live.posted(live.member)
        first = live.fake.click(message, "humanwire_reject", live.member)
        second = live.fake.click(message, "humanwire_approve", live.member)
        assert first.status_code == second.status_code == 200
        [event] = receiver.wait_for("form.received")
        live.fake.wait_for(lambda: len(live.fake.ephemerals) == 1)
        time.sleep(0.3)
        assert len(receiver.events) == 1
    assert event.payload.values["decision"] == "reject"
    [notice] = live.fake.ephemerals
    assert notice.user == live.member and "already rejected" in notice.text
    assert "Rejected* by" in _text_of(message)


def test_an_expired_approvals_buttons_say_so(slack_live: SlackLive) -> None:
    live = slack_live
    sent = _send_approval_form(live, ApprovalRequest("drop table"), wait_time=1, follow_up_time=1)
    assert sent.responded is False
    time.sleep(2.2)
    message = live.posted(live.member)
    live.fake.click(message, "humanwire_approve", live.member)
    live.fake.wait_for(lambda: len(live.fake.ephemerals) == 1)
    assert "expired" in live.fake.ephemerals[0].text
    live.fake.wait_for(lambda: bool(message.updates))
    assert _actions(message) == []
    status = live.client.interactions.status(sent.interaction_id)
    assert (status.status, status.result) == ("ended", None)


def test_a_click_from_a_forged_request_is_403(slack_live: SlackLive) -> None:
    live = slack_live
    sent = _send_approval_form(live, ApprovalRequest("restart"), wait_time=1, follow_up_time=60)
    body = b"payload=%7B%22type%22%3A%22block_actions%22%7D"
    response = live.fake.post_signed(
        f"{live.base_url}/providers/slack/interactions",
        body,
        content_type="application/x-www-form-urlencoded",
        signature="v0=" + "f" * 64,
    )
    assert response.status_code == 403
    status = live.client.interactions.status(sent.interaction_id)
    assert (status.status, status.result) == ("pending", None)


def test_a_form_with_other_required_fields_gets_no_decision_buttons(
    slack_live: SlackLive,
) -> None:
    live = slack_live
    title, fields = build_approval_form(ApprovalRequest("pay", {"amount": 3}))
    fields = [*fields, {"id": "why", "label": "Why", "type": "text", "required": True}]
    live.client.forms.slack(to=live.member, title=title, fields=fields, follow_up_time=60)
    labels = [button["text"]["text"] for button in _actions(live.posted(live.member))]
    assert labels == ["Open the form"]


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_the_web_form_and_the_buttons_agree(slack_live: SlackLive, decision: str) -> None:
    """Answered on the page first, a click afterwards is told it was already answered."""
    live = slack_live
    sent = _send_approval_form(live, ApprovalRequest("x"), wait_time=1, follow_up_time=60)
    answered = httpx.post(sent.form_url, json={"values": {"decision": decision}})
    assert answered.status_code == 200
    message = live.posted(live.member)
    live.fake.click(message, "humanwire_approve", live.member)
    live.fake.wait_for(lambda: len(live.fake.ephemerals) == 1)
    assert "already answered" in live.fake.ephemerals[0].text
