"""Forms end to end: the link goes out, the human fills it through ``formUrl`` as a
browser would (JSON ``{"values": ...}``), the values come back or go to the webhooks."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from e2e_support import HUMAN, NO_RESPONSE, SLACK_HUMAN

from humanwire import AsyncHumanWire, HumanWire
from humanwire.errors import InvalidRequestError
from humanwire.testing import ScriptedHuman, WebhookReceiver
from humanwire.types import FormReceivedEvent

FIELDS: list[dict[str, Any]] = [
    {"id": "name", "label": "Name", "type": "text", "required": True},
    {"id": "email", "label": "Email", "type": "email"},
    {
        "id": "plan",
        "label": "Plan",
        "type": "select",
        "options": [{"label": "Pro plan", "value": "pro"}, {"label": "Free", "value": "free"}],
    },
    {"id": "agree", "label": "Agree", "type": "checkbox"},
]


def test_form_submitted_inside_the_window(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    action = human.fill_form(
        {"name": "Ada", "email": "ada@example.com", "plan": "pro", "agree": True}
    )
    result = humanwire_client.forms.sms(
        to=HUMAN, title="Sign up", fields=FIELDS, wait_time=5, message="Form: {{url}} thanks"
    )
    assert result.responded is True
    assert result.status == "ended"
    assert result.values == {
        "name": "Ada",
        "email": "ada@example.com",
        "plan": "pro",
        "agree": "true",
    }
    assert result.content == "Name: Ada\nEmail: ada@example.com\nPlan: Pro plan\nAgree: Yes"
    assert result.form_url is not None
    delivery = action.wait()
    assert delivery.text == f"Form: {result.form_url} thanks"
    assert delivery.form_url == result.form_url
    status = humanwire_client.interactions.status(result.interaction_id)
    assert (status.kind, status.status) == ("form", "ended")
    assert isinstance(status.result, FormReceivedEvent)
    assert status.result.payload.values["name"] == "Ada"


async def test_slack_form_async(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    action = human.fill_form({"name": "Grace"}, channel="slack")
    result = await async_humanwire_client.forms.slack(
        to=SLACK_HUMAN, title="Name?", fields=FIELDS[:1], wait_time=5
    )
    assert result.values == {"name": "Grace"}
    delivery = await action.async_wait()
    assert delivery.text == f"Please fill out this form: {result.form_url}"


def test_whatsapp_form_fixed_text(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    action = human.fill_form({"name": "Linus"}, channel="whatsapp")
    result = humanwire_client.forms.whatsapp(
        to=HUMAN, title="Name?", fields=FIELDS[:1], wait_time=5
    )
    assert result.values == {"name": "Linus"}
    delivery = action.wait()
    assert delivery.channel == "whatsapp"
    assert result.form_url is not None and result.form_url in delivery.text


def test_form_submitted_after_the_window_goes_to_the_webhooks(
    humanwire_client: HumanWire, human: ScriptedHuman, webhook_receiver: WebhookReceiver
) -> None:
    webhook_receiver.register(humanwire_client, ["form.received"])
    human.fill_form({"name": "Late Larry"}, delay=1.5)
    result = humanwire_client.forms.sms(
        to=HUMAN, title="Name?", fields=FIELDS[:1], wait_time=1, follow_up_time=60
    )
    assert result.responded is False
    assert result.response == NO_RESPONSE
    assert result.status == "pending"
    [event] = webhook_receiver.wait_for("form.received")
    assert event.payload.interaction_id == result.interaction_id
    assert event.payload.values == {"name": "Late Larry"}
    assert humanwire_client.interactions.wait(result.interaction_id, timeout=10).ended


def test_only_follow_up_time_returns_at_once_with_the_link(humanwire_client: HumanWire) -> None:
    started = time.monotonic()
    result = humanwire_client.forms.sms(
        to=HUMAN, title="Later", fields=FIELDS[:1], follow_up_time=60
    )
    assert time.monotonic() - started < 5
    assert result.status == "pending"
    assert result.form_url is not None
    assert result.responded is None
    # The page is served without a key: the unguessable token is the credential.
    page = httpx.get(result.form_url)
    assert page.status_code == 200
    assert "Later" in page.text
    token = result.form_url.rsplit("/", 1)[1]
    assert len(token) >= 43  # 32 random bytes, URL-safe


def test_expired_and_twice_submitted_forms(humanwire_client: HumanWire) -> None:
    expiring = humanwire_client.forms.sms(
        to=HUMAN, title="Quick", fields=FIELDS[:1], wait_time=1, follow_up_time=1
    )
    done = humanwire_client.forms.sms(to=HUMAN, title="Once", fields=FIELDS[:1], follow_up_time=60)
    assert expiring.form_url is not None and done.form_url is not None
    first = httpx.post(done.form_url, json={"values": {"name": "Ada"}})
    assert first.status_code == 200, first.text
    second = httpx.post(done.form_url, json={"values": {"name": "Eve"}})
    assert second.status_code == 409
    assert second.json()["error"]["code"] == "conflict"
    status = humanwire_client.interactions.status(done.interaction_id)
    assert isinstance(status.result, FormReceivedEvent)
    assert status.result.payload.values == {"name": "Ada"}

    deadline = time.monotonic() + 10
    while humanwire_client.interactions.status(expiring.interaction_id).status != "ended":
        assert time.monotonic() < deadline
        humanwire_client.interactions.status(expiring.interaction_id, wait=1)
    late = httpx.post(expiring.form_url, json={"values": {"name": "Too late"}})
    assert late.status_code == 410
    assert late.json()["error"]["code"] == "gone"
    assert httpx.get(expiring.form_url).status_code == 410


def test_invalid_submission_is_refused_and_the_form_stays_open(
    humanwire_client: HumanWire,
) -> None:
    result = humanwire_client.forms.sms(to=HUMAN, title="Sign up", fields=FIELDS, follow_up_time=60)
    assert result.form_url is not None
    missing = httpx.post(result.form_url, json={"values": {"email": "ada@example.com"}})
    assert missing.status_code == 400
    assert missing.json()["error"]["field"] == "name"
    bad_email = httpx.post(result.form_url, json={"values": {"name": "A", "email": "nope"}})
    assert (bad_email.status_code, bad_email.json()["error"]["field"]) == (400, "email")
    ok = httpx.post(result.form_url, json={"values": {"name": "A", "plan": "free"}})
    assert ok.status_code == 200
    assert humanwire_client.interactions.status(result.interaction_id).status == "ended"


def test_invalid_form_definitions_never_send(humanwire_client: HumanWire) -> None:
    bad_pattern = [{**FIELDS[0], "validations": [{"title": "t", "pattern": "(["}]}]
    with pytest.raises(InvalidRequestError) as raised:
        humanwire_client.forms.sms(to=HUMAN, title="T", fields=bad_pattern, wait_time=1)
    assert raised.value.field == "fields[0].validations[0].pattern"
    with pytest.raises(InvalidRequestError):
        humanwire_client.forms.sms(to=HUMAN, title="T", fields=FIELDS)  # no window at all
    assert humanwire_client.sandbox.deliveries() == []
