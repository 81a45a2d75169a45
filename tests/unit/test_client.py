"""The client surface: configuration, what each method sends, client-side validation
(nothing half-valid leaves the machine), ``interactions.wait``. Sync and async."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import types
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from unit_support import MESSAGE_REPLY, Script, call, make_client, ok, raises

import humanwire
from humanwire import (
    AsyncHumanWire,
    CallResponse,
    FormField,
    FormResponse,
    HumanWire,
    HumanWireError,
    InteractionStatus,
    InvalidRequestError,
    InvalidToNumberError,
    MessageResponse,
)
from humanwire.types import ChannelCard, ReservedNumber, SandboxDelivery, Webhook

Client = HumanWire | AsyncHumanWire
TO = "+12025550100"
NOW = "2026-01-01T12:00:00Z"
CHANNEL_ID = "ch_abcdefghijklmnopqrstuvwx"
FIELD = {"id": "approve", "label": "Approve?", "type": "checkbox"}
FORM_PENDING = {"interactionId": "f1", "status": "pending", "formUrl": "http://127.0.0.1:9/f/t"}
CALL = {"interactionId": "c1", "status": "pending"}
STATUS = {
    "interactionId": "i1",
    "status": "pending",
    "createdAt": NOW,
    "kind": "message",
    "channel": "sms",
}
NUMBER = {"id": "n1", "phoneNumber": "+12025550142", "createdAt": NOW, "updatedAt": NOW}
WEBHOOK = {
    "id": "w1",
    "url": "http://127.0.0.1:9/hook",
    "eventTypes": ["form.received"],
    "headers": {},
    "createdAt": NOW,
    "secret": "whsec_x",
}
CARD = {
    "id": CHANNEL_ID,
    "type": "sms",
    "to": TO,
    "waitTime": 60,
    "responseTemplate": "Human response: {{message}}",
    "noResponseTemplate": "Human did not respond. Continue where you left off.",
    "createdAt": NOW,
}
DELIVERY = {
    "id": "d1",
    "interactionId": "i1",
    "channel": "sms",
    "kind": "message",
    "from": "+12025550199",
    "to": TO,
    "text": "hi",
    "createdAt": NOW,
}

# (call, answer, method, path, body or query, result type)
Case = tuple[Callable[[Client], Any], Any, str, str, Any, Any]
CASES: list[Case] = [
    (
        lambda c: c.messages.sms(
            to=TO, message="Ship?", wait_time=60, follow_up_time=600, from_="+12025550142"
        ),
        MESSAGE_REPLY,
        "POST",
        "/messages/sms",
        {"to": TO, "message": "Ship?", "waitTime": 60, "followUpTime": 600, "from": "+12025550142"},
        MessageResponse,
    ),
    (
        lambda c: c.messages.whatsapp(to=TO, message="Ship?"),
        MESSAGE_REPLY,
        "POST",
        "/messages/whatsapp",
        {"to": TO, "message": "Ship?"},
        MessageResponse,
    ),
    (
        lambda c: c.messages.slack(
            to="C0CHANNEL1", message="Ship?", wait_time=5.5, from_="T0WORKSPACE"
        ),
        MESSAGE_REPLY,
        "POST",
        "/messages/slack",
        {"to": "C0CHANNEL1", "message": "Ship?", "waitTime": 5.5, "from": "T0WORKSPACE"},
        MessageResponse,
    ),
    (
        lambda c: c.messages.telegram(
            to="123456789", message="Ship?", wait_time=5.5, metadata={"run": "7"}
        ),
        MESSAGE_REPLY,
        "POST",
        "/messages/telegram",
        {"to": "123456789", "message": "Ship?", "waitTime": 5.5, "metadata": {"run": "7"}},
        MessageResponse,
    ),
    (
        lambda c: c.messages.discord(
            to="80351110224678912", message="Ship?", wait_time=5.5, metadata={"run": "7"}
        ),
        MESSAGE_REPLY,
        "POST",
        "/messages/discord",
        {"to": "80351110224678912", "message": "Ship?", "waitTime": 5.5, "metadata": {"run": "7"}},
        MessageResponse,
    ),
    (
        lambda c: c.messages.discord(person="per_ada", message="Ship?", follow_up_time=60),
        MESSAGE_REPLY,
        "POST",
        "/messages/discord",
        {"person": "per_ada", "message": "Ship?", "followUpTime": 60},
        MessageResponse,
    ),
    (
        lambda c: c.messages.teams(
            to="29:1a2b3c-Ada_9", message="Ship?", wait_time=5.5, metadata={"run": "7"}
        ),
        MESSAGE_REPLY,
        "POST",
        "/messages/teams",
        {"to": "29:1a2b3c-Ada_9", "message": "Ship?", "waitTime": 5.5, "metadata": {"run": "7"}},
        MessageResponse,
    ),
    (
        lambda c: c.messages.teams(person="per_ada", message="Ship?", follow_up_time=60),
        MESSAGE_REPLY,
        "POST",
        "/messages/teams",
        {"person": "per_ada", "message": "Ship?", "followUpTime": 60},
        MessageResponse,
    ),
    (
        lambda c: c.messages.channel(CHANNEL_ID, message="Ship?"),
        MESSAGE_REPLY,
        "POST",
        f"/messages/{CHANNEL_ID}",
        {"message": "Ship?"},
        MessageResponse,
    ),
    (
        lambda c: c.forms.sms(
            to=TO,
            title="Expense",
            fields=[FIELD, FormField(id="why", label="Why", type="text")],
            message="Fill in {{url}}",
            description="d",
            brand_image_url="https://x/logo.png",
            submit_label="Send",
            wait_time=60,
            follow_up_time=90,
        ),
        FORM_PENDING,
        "POST",
        "/forms/sms",
        {
            "to": TO,
            "title": "Expense",
            "message": "Fill in {{url}}",
            "description": "d",
            "brandImageUrl": "https://x/logo.png",
            "submitLabel": "Send",
            "waitTime": 60,
            "followUpTime": 90,
            "fields": [
                {"id": "approve", "label": "Approve?", "type": "checkbox", "required": False},
                {"id": "why", "label": "Why", "type": "text", "required": False},
            ],
        },
        FormResponse,
    ),
    (
        lambda c: c.forms.slack(
            to="U0HUMAN0001", title="T", fields=[FIELD], follow_up_time=30, from_="T0WORKSPACE"
        ),
        FORM_PENDING,
        "POST",
        "/forms/slack",
        {
            "to": "U0HUMAN0001",
            "title": "T",
            "followUpTime": 30,
            "from": "T0WORKSPACE",
            "fields": [
                {"id": "approve", "label": "Approve?", "type": "checkbox", "required": False}
            ],
        },
        FormResponse,
    ),
    (
        lambda c: c.forms.telegram(to="-100200300", title="T", fields=[FIELD], wait_time=10),
        FORM_PENDING,
        "POST",
        "/forms/telegram",
        {
            "to": "-100200300",
            "title": "T",
            "waitTime": 10,
            "fields": [
                {"id": "approve", "label": "Approve?", "type": "checkbox", "required": False}
            ],
        },
        FormResponse,
    ),
    (
        lambda c: c.forms.discord(
            to="175928847299117063",
            title="T",
            fields=[FIELD],
            message="Fill {{url}}",
            submit_label="Send",
            wait_time=10,
        ),
        FORM_PENDING,
        "POST",
        "/forms/discord",
        {
            "to": "175928847299117063",
            "title": "T",
            "message": "Fill {{url}}",
            "submitLabel": "Send",
            "waitTime": 10,
            "fields": [
                {"id": "approve", "label": "Approve?", "type": "checkbox", "required": False}
            ],
        },
        FormResponse,
    ),
    (
        lambda c: c.forms.discord(person="per_ada", title="T", fields=[FIELD], follow_up_time=60),
        FORM_PENDING,
        "POST",
        "/forms/discord",
        {
            "person": "per_ada",
            "title": "T",
            "followUpTime": 60,
            "fields": [
                {"id": "approve", "label": "Approve?", "type": "checkbox", "required": False}
            ],
        },
        FormResponse,
    ),
    (
        lambda c: c.forms.teams(
            to="29:1a2b3c", title="T", fields=[FIELD], message="Fill {{url}}", wait_time=10
        ),
        FORM_PENDING,
        "POST",
        "/forms/teams",
        {
            "to": "29:1a2b3c",
            "title": "T",
            "message": "Fill {{url}}",
            "waitTime": 10,
            "fields": [
                {"id": "approve", "label": "Approve?", "type": "checkbox", "required": False}
            ],
        },
        FormResponse,
    ),
    (
        lambda c: c.forms.whatsapp(to=TO, title="T", fields=[FIELD], wait_time=10),
        FORM_PENDING,
        "POST",
        "/forms/whatsapp",
        {
            "to": TO,
            "title": "T",
            "waitTime": 10,
            "fields": [
                {"id": "approve", "label": "Approve?", "type": "checkbox", "required": False}
            ],
        },
        FormResponse,
    ),
    (
        lambda c: c.forms.whatsapp(
            to=TO,
            title="T",
            fields=[FIELD],
            wait_time=10,
            from_="+12025550142",
            template={"id": "tpl_1", "variables": {"name": "Ann"}},
        ),
        FORM_PENDING,
        "POST",
        "/forms/whatsapp",
        {
            "to": TO,
            "title": "T",
            "waitTime": 10,
            "from": "+12025550142",
            "template": {"id": "tpl_1", "variables": {"name": "Ann"}},
            "fields": [
                {"id": "approve", "label": "Approve?", "type": "checkbox", "required": False}
            ],
        },
        FormResponse,
    ),
    (
        lambda c: c.calls.create(
            to=TO,
            prompt="Confirm the order",
            transfer_to="+12025550143",
            language="fr-FR",
            voice="male",
        ),
        CALL,
        "POST",
        "/calls",
        {
            "to": TO,
            "prompt": "Confirm the order",
            "transferTo": "+12025550143",
            "language": "fr-FR",
            "voice": "male",
            "waitForCallEnd": False,
        },
        CallResponse,
    ),
    (
        lambda c: c.phone.sms(to=TO, message="hello"),
        {"interactionId": "i", "status": "ended"},
        "POST",
        "/phone/sms",
        {"to": TO, "message": "hello"},
        MessageResponse,
    ),
    (
        lambda c: c.phone.call(to=TO, message="prompt"),
        CALL,
        "POST",
        "/phone/call",
        {"to": TO, "message": "prompt"},
        CallResponse,
    ),
    (
        lambda c: c.interactions.status("i1"),
        STATUS,
        "GET",
        "/interactions/i1/status",
        {},
        InteractionStatus,
    ),
    (
        lambda c: c.interactions.status("i1", wait=15),
        STATUS,
        "GET",
        "/interactions/i1/status",
        {"wait": "15"},
        InteractionStatus,
    ),
    (
        lambda c: c.numbers.available(country="GB", area_code="20"),
        [{"phoneNumber": "+442079460001", "country": "GB", "areaCode": "20"}],
        "GET",
        "/numbers/available",
        {"country": "GB", "areaCode": "20"},
        list,
    ),
    (
        lambda c: c.numbers.reserve("+12025550142"),
        NUMBER,
        "POST",
        "/numbers/reserve",
        {"phoneNumber": "+12025550142"},
        ReservedNumber,
    ),
    (lambda c: c.numbers.list(), [NUMBER], "GET", "/numbers", {}, list),
    (lambda c: c.numbers.delete("n1"), None, "DELETE", "/numbers/n1", None, type(None)),
    (
        lambda c: c.webhooks.create(
            url="http://127.0.0.1:9/hook",
            event_types=["form.received"],
            headers={"Authorization": "Bearer agent"},
        ),
        WEBHOOK,
        "POST",
        "/webhooks",
        {
            "url": "http://127.0.0.1:9/hook",
            "eventTypes": ["form.received"],
            "headers": {"Authorization": "Bearer agent"},
        },
        Webhook,
    ),
    (lambda c: c.webhooks.list(), [WEBHOOK], "GET", "/webhooks", {}, list),
    (lambda c: c.webhooks.delete("w1"), None, "DELETE", "/webhooks/w1", None, type(None)),
    (
        lambda c: c.channels.create(
            type="sms", to=TO, wait_time=60, message_template="Agent: {{message}}", reply_link=True
        ),
        CARD,
        "POST",
        "/channels",
        {
            "type": "sms",
            "to": TO,
            "waitTime": 60,
            "messageTemplate": "Agent: {{message}}",
            "replyLink": True,
        },
        ChannelCard,
    ),
    (lambda c: c.channels.list(), [CARD], "GET", "/channels", {}, list),
    (lambda c: c.channels.get(CHANNEL_ID), CARD, "GET", f"/channels/{CHANNEL_ID}", {}, ChannelCard),
    (
        lambda c: c.channels.delete(CHANNEL_ID),
        None,
        "DELETE",
        f"/channels/{CHANNEL_ID}",
        None,
        type(None),
    ),
    (
        lambda c: c.sandbox.deliveries(
            to=TO, channel="sms", interaction_id="i1", after="d0", wait=2
        ),
        [DELIVERY],
        "GET",
        "/sandbox/messages",
        {"to": TO, "channel": "sms", "interactionId": "i1", "after": "d0", "wait": "2"},
        list,
    ),
    (
        lambda c: c.sandbox.reply(
            channel="sms", from_=TO, to="+12025550199", body="yes", media_urls=["http://x/a.png"]
        ),
        None,
        "POST",
        "/sandbox/replies",
        {
            "channel": "sms",
            "from": TO,
            "to": "+12025550199",
            "body": "yes",
            "mediaUrls": ["http://x/a.png"],
        },
        type(None),
    ),
    (
        lambda c: c.sandbox.end_call("c1", outcome="completed", summary="Agreed"),
        {**CALL, "status": "ended", "outcome": "completed", "summary": "Agreed"},
        "POST",
        "/sandbox/calls/c1",
        {"outcome": "completed", "summary": "Agreed"},
        CallResponse,
    ),
    (
        lambda c: c.sandbox.inbound_call(from_=TO, to="+12025550142", summary="Call me back"),
        None,
        "POST",
        "/sandbox/inbound-calls",
        {"from": TO, "to": "+12025550142", "summary": "Call me back"},
        type(None),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[2]} {c[3]}" for c in CASES])
async def test_each_method_sends_its_request(client: Client, script: Script, case: Case) -> None:
    make_call, answer, method, path, expected, result_type = case
    status = 204 if answer is None else 200
    script.reply(ok(answer, status=status))
    result = await call(make_call(client))
    request = script.last
    assert request.method == method
    assert request.url.path == path
    assert str(request.url).startswith("http://127.0.0.1:9/")
    if method == "POST":
        assert script.body() == expected
        assert request.headers["Content-Type"] == "application/json"
        assert request.headers["Idempotency-Key"]
    elif method == "GET":
        assert dict(request.url.params) == expected
    assert isinstance(result, result_type)
    if isinstance(result, list):
        assert len(result) == 1 and not isinstance(result[0], dict)


async def test_results_are_models(client: Client, script: Script) -> None:
    script.reply(ok([DELIVERY]))
    [delivery] = await call(client.sandbox.deliveries())
    assert isinstance(delivery, SandboxDelivery) and delivery.from_ == "+12025550199"
    assert script.last.url.query == b""  # nothing given, nothing sent


async def test_path_ids_are_escaped(client: Client, script: Script) -> None:
    script.reply(ok(STATUS))
    await call(client.interactions.status("../numbers"))
    assert script.last.url.raw_path == b"/interactions/..%2Fnumbers/status"


# -- client-side validation: typed errors, nothing sent -----------------------------------------

INVALID: list[tuple[Callable[[Client], Any], type[Exception], str | None]] = [
    (lambda c: c.messages.sms(to="+15555550100", message="x"), InvalidToNumberError, "to"),
    (lambda c: c.messages.sms(to="2025550100", message="x"), InvalidToNumberError, "to"),
    (lambda c: c.messages.sms(to=TO, message="x", from_="+1555"), InvalidToNumberError, "from"),
    (lambda c: c.messages.sms(to=TO, message=""), InvalidRequestError, "message"),
    (lambda c: c.messages.sms(to=TO, message="x", wait_time=0), InvalidRequestError, "waitTime"),
    (
        lambda c: c.messages.whatsapp(to=TO, message="x", wait_time=601),
        InvalidRequestError,
        "waitTime",
    ),
    (
        lambda c: c.messages.sms(to=TO, message="x", follow_up_time=60001),
        InvalidRequestError,
        "followUpTime",
    ),
    (lambda c: c.messages.slack(to="u123", message="x"), InvalidToNumberError, "to"),
    (lambda c: c.messages.telegram(to="@ada", message="x"), InvalidToNumberError, "to"),
    (lambda c: c.messages.discord(to="@ada", message="x"), InvalidToNumberError, "to"),
    (lambda c: c.messages.discord(to="12345", message="x"), InvalidToNumberError, "to"),
    (
        lambda c: c.messages.discord(to="12345678901234567890", message="x"),
        InvalidToNumberError,
        "to",
    ),
    (
        lambda c: c.messages.discord(to="080351110224678912", message="x"),
        InvalidToNumberError,
        "to",
    ),
    (
        lambda c: c.messages.discord(to="80351110224678912", message="x" * 2001),
        InvalidRequestError,
        "message",
    ),
    (
        lambda c: c.messages.discord(to="80351110224678912", person="per_ada", message="x"),
        InvalidRequestError,
        "person",
    ),
    (lambda c: c.messages.discord(message="x"), InvalidRequestError, "to"),
    (
        lambda c: c.forms.discord(to="29:ada", title="T", fields=[FIELD], wait_time=10),
        InvalidToNumberError,
        "to",
    ),
    (lambda c: c.messages.teams(to="ada@contoso.com", message="x"), InvalidToNumberError, "to"),
    (lambda c: c.messages.teams(to="29:", message="x"), InvalidToNumberError, "to"),
    (lambda c: c.messages.teams(to="29:a", message="x" * 4001), InvalidRequestError, "message"),
    (
        lambda c: c.messages.teams(to="29:a", person="per_ada", message="x"),
        InvalidRequestError,
        "person",
    ),
    (
        lambda c: c.forms.teams(to="8:orgid:1", title="T", fields=[FIELD], wait_time=10),
        InvalidToNumberError,
        "to",
    ),
    (
        lambda c: c.messages.slack(to="U0HUMAN0001", message="x", from_="U0HUMAN0001"),
        InvalidRequestError,
        "from",
    ),
    (lambda c: c.messages.channel("sms", message="x"), InvalidRequestError, "channelId"),
    (lambda c: c.forms.sms(to=TO, title="t", fields=[FIELD]), InvalidRequestError, "waitTime"),
    (
        lambda c: c.forms.sms(to=TO, title="t", fields=[], wait_time=5),
        InvalidRequestError,
        "fields",
    ),
    (
        lambda c: c.forms.sms(
            to=TO,
            title="t",
            wait_time=5,
            fields=[{**FIELD, "validations": [{"title": "t", "pattern": "^x$"}]}],
        ),
        InvalidRequestError,
        "fields[0].validations",
    ),
    (
        lambda c: c.forms.sms(
            to=TO,
            title="t",
            wait_time=5,
            fields=[
                {
                    "id": "a",
                    "label": "A",
                    "type": "text",
                    "validations": [{"title": "t", "pattern": "(["}],
                }
            ],
        ),
        InvalidRequestError,
        "fields[0].validations[0].pattern",
    ),
    (
        lambda c: c.forms.slack(to=TO, title="t", fields=[FIELD], wait_time=5),
        InvalidToNumberError,
        "to",
    ),
    (
        lambda c: c.forms.whatsapp(
            to=TO, title="t", fields=[FIELD], wait_time=5, from_="+12025550142"
        ),
        InvalidRequestError,
        "template",
    ),
    (
        lambda c: c.forms.whatsapp(
            to=TO, title="t", fields=[{**FIELD, "colour": "red"}], wait_time=5
        ),
        InvalidRequestError,
        "fields[0].colour",
    ),
    (lambda c: c.calls.create(to=TO, prompt="p", voice="robot"), InvalidRequestError, "voice"),
    (
        lambda c: c.calls.create(to=TO, prompt="p", language="not a tag"),
        InvalidRequestError,
        "language",
    ),
    (
        lambda c: c.calls.create(to=TO, prompt="p", transfer_to="+100"),
        InvalidToNumberError,
        "transferTo",
    ),
    (lambda c: c.phone.call(to="+15555550100", message="p"), InvalidToNumberError, "to"),
    (lambda c: c.interactions.status("i1", wait=61), InvalidRequestError, "wait"),
    (lambda c: c.interactions.status("i1", wait=-1), InvalidRequestError, "wait"),
    (lambda c: c.interactions.status(""), InvalidRequestError, "interactionId"),
    (lambda c: c.interactions.wait("i1", timeout=-5), InvalidRequestError, "timeout"),
    (lambda c: c.interactions.wait("", timeout=5), InvalidRequestError, "interactionId"),
    (lambda c: c.numbers.available(country="FR"), InvalidRequestError, "country"),
    (lambda c: c.numbers.reserve("+15555550100"), InvalidToNumberError, "phoneNumber"),
    (lambda c: c.numbers.delete(" "), InvalidRequestError, "numberId"),
    (
        lambda c: c.webhooks.create(url="ftp://x", event_types=["form.received"]),
        InvalidRequestError,
        "url",
    ),
    (
        lambda c: c.webhooks.create(url="http://x", event_types=[]),
        InvalidRequestError,
        "eventTypes",
    ),
    (
        lambda c: c.webhooks.create(url="http://x", event_types=["sms.sent"]),
        InvalidRequestError,
        "eventTypes[0]",
    ),
    (
        lambda c: c.webhooks.create(
            url="http://x", event_types=["form.received"], headers={"Transfer-Encoding": "chunked"}
        ),
        InvalidRequestError,
        "headers.Transfer-Encoding",
    ),
    (lambda c: c.channels.create(type="sms", to=TO), InvalidRequestError, "waitTime"),
    (lambda c: c.channels.create(type="fax", to=TO), InvalidRequestError, "type"),
    (lambda c: c.channels.get(""), InvalidRequestError, "channelId"),
    (lambda c: c.sandbox.deliveries(wait=0), InvalidRequestError, "wait"),
    (
        lambda c: c.sandbox.reply(channel="fax", from_=TO, to=TO, body="x"),
        InvalidRequestError,
        "channel",
    ),
    (lambda c: c.sandbox.end_call("c1", outcome="exploded"), InvalidRequestError, "outcome"),
]


@pytest.mark.parametrize(("make_call", "exc_type", "field"), INVALID)
async def test_invalid_arguments_raise_typed_errors_before_sending(
    client: Client,
    script: Script,
    make_call: Callable[[Client], Any],
    exc_type: type[Exception],
    field: str | None,
) -> None:
    exc = await raises(exc_type, lambda: make_call(client))
    assert script.requests == []  # nothing left the machine
    assert exc.status_code == 400 and exc.response is None
    assert exc.field == field
    assert exc.body == {"error": {"code": exc.code, "message": exc.message, "field": field}}
    if exc_type is InvalidToNumberError:
        assert exc.code == "invalid_to_number" and exc.message == "invalid to number"
    else:
        assert exc.code == "invalid_request"


async def test_async_validation_errors_surface_when_awaited(script: Script) -> None:
    client = make_client("async", script)
    assert isinstance(client, AsyncHumanWire)
    pending = client.messages.sms(to="+15555550100", message="x")  # no exception yet
    assert inspect.isawaitable(pending)
    with pytest.raises(InvalidToNumberError):
        await pending


async def test_form_fields_accept_models_dicts_and_both_spellings(
    client: Client, script: Script
) -> None:
    script.reply(ok(FORM_PENDING))
    fields: list[FormField | dict[str, Any]] = [
        FormField(id="phone", label="Phone", type="phone_number"),
        {"id": "phone2", "label": "Other", "type": "phoneNumber", "helperText": "optional"},
        {
            "id": "size",
            "label": "Size",
            "type": "select",
            "options": [{"label": "Small", "value": "s"}],
        },
    ]
    result = await call(client.forms.sms(to=TO, title="t", fields=fields, wait_time=5))
    assert isinstance(result, FormResponse) and result.form_url == "http://127.0.0.1:9/f/t"
    sent = script.body()["fields"]
    assert [f["type"] for f in sent] == ["phone_number", "phone_number", "select"]
    assert sent[1]["helperText"] == "optional"


# -- interactions.wait ---------------------------------------------------------------------------


class FakeClock:
    """Time that moves only when a long-poll holds or the client sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def long_poll(clock: FakeClock, statuses: list[str]) -> Callable[[httpx.Request], httpx.Response]:
    def answer(request: httpx.Request) -> httpx.Response:
        status = statuses.pop(0) if len(statuses) > 1 else statuses[0]
        if status == "pending":
            clock.now += float(request.url.params["wait"])  # held the whole wait
        else:
            clock.now += 1.0
        return httpx.Response(200, json={**STATUS, "status": status})

    return answer


def with_clock(client: Client, clock: FakeClock) -> None:
    client._options = client._options.copy(clock=clock)


async def test_wait_repeats_the_long_poll_until_ended(client: Client, script: Script) -> None:
    clock = FakeClock()
    with_clock(client, clock)
    script.reply(long_poll(clock, ["pending", "pending", "ended"]))
    result = await call(client.interactions.wait("i1"))
    assert result.status == "ended" and result.ended
    assert [r.url.params["wait"] for r in script.requests] == ["60", "60", "60"]
    assert script.sleeps == []


async def test_wait_past_600_seconds_returns_pending_at_the_timeout(
    client: Client, script: Script
) -> None:
    clock = FakeClock()
    with_clock(client, clock)
    script.reply(long_poll(clock, ["pending"]))
    result = await call(client.interactions.wait("i1", timeout=700))
    assert result.status == "pending"  # not an exception
    waits = [r.url.params["wait"] for r in script.requests]
    assert waits == ["60"] * 11 + ["40"]
    assert clock.now == 1700.0
    assert all(t == float(w) + 15.0 for t, w in zip(script.read_timeouts(), waits, strict=True))


async def test_wait_does_not_spin_on_a_server_answering_early(
    client: Client, script: Script
) -> None:
    clock = FakeClock()
    with_clock(client, clock)
    if isinstance(client, HumanWire):

        def sleep_sync(seconds: float) -> None:
            script.sleeps.append(seconds)
            clock.now += seconds

        client._driver.sleep = sleep_sync
    else:

        async def sleep(seconds: float) -> None:
            script.sleeps.append(seconds)
            clock.now += seconds

        client._driver.sleep = sleep
    script.reply(ok({**STATUS, "status": "pending"}))  # returns at once, time stands still
    result = await call(client.interactions.wait("i1", timeout=3))
    assert result.status == "pending"
    assert script.sleeps == [1.0, 1.0, 1.0]
    # one last look at the deadline, without holding
    assert [r.url.params["wait"] for r in script.requests] == ["3", "2", "1", "0"]


async def test_wait_zero_timeout_checks_once(client: Client, script: Script) -> None:
    script.reply(ok({**STATUS, "status": "pending"}))
    result = await call(client.interactions.wait("i1", timeout=0))
    assert result.status == "pending" and len(script.requests) == 1
    assert script.last.url.params["wait"] == "0"


async def test_wait_returns_result_of_an_ended_interaction(client: Client, script: Script) -> None:
    event = {
        "eventType": "message.received",
        "payload": {
            "interactionId": "i1",
            "medium": "sms",
            "from": TO,
            "to": "+12025550199",
            "body": "yes",
        },
    }
    script.reply(ok({**STATUS, "status": "ended", "result": event}))
    result = await call(client.interactions.wait("i1", timeout=30))
    assert result.result is not None and result.result.payload.body == "yes"
    assert script.last.url.params["wait"] == "30"


# -- configuration -------------------------------------------------------------------------------


def test_config_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUMANWIRE_BASE_URL", "http://127.0.0.1:8765/")
    monkeypatch.setenv("HUMANWIRE_API_KEY", "hw_env")
    with HumanWire() as client:
        assert client.base_url == "http://127.0.0.1:8765" and client.api_key == "hw_env"
        assert client.max_retries == 2
        assert client.timeout == httpx.Timeout(30.0, connect=5.0)
    with HumanWire(api_key="hw_arg", base_url="http://127.0.0.1:1") as client:
        assert client.base_url == "http://127.0.0.1:1" and client.api_key == "hw_arg"


def test_base_url_without_a_key_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HUMANWIRE_API_KEY", raising=False)
    monkeypatch.delenv("HUMANWIRE_BASE_URL", raising=False)
    with pytest.raises(HumanWireError, match="HUMANWIRE_API_KEY"):
        HumanWire(base_url="http://127.0.0.1:1")


def fake_embedded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    started: list[int] = []

    def ensure_embedded_service() -> Any:
        started.append(1)
        return types.SimpleNamespace(base_url="http://127.0.0.1:8766", api_key="hw_embedded")

    module = types.ModuleType("humanwire.server.runtime.embedded")
    module.ensure_embedded_service = ensure_embedded_service  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "humanwire.server.runtime.embedded", module)
    return started


@pytest.mark.parametrize("kind", [HumanWire, AsyncHumanWire])
async def test_no_base_url_uses_the_embedded_service_and_its_key(
    monkeypatch: pytest.MonkeyPatch, kind: type[Client]
) -> None:
    monkeypatch.delenv("HUMANWIRE_BASE_URL", raising=False)
    monkeypatch.setenv("HUMANWIRE_API_KEY", "hw_env_for_another_service")
    started = fake_embedded(monkeypatch)
    client = kind()
    assert started == [1]
    assert client.base_url == "http://127.0.0.1:8766" and client.api_key == "hw_embedded"
    if isinstance(client, HumanWire):
        client.close()
    else:
        await client.aclose()


def test_with_a_base_url_the_embedded_service_is_not_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started = fake_embedded(monkeypatch)
    HumanWire("k", "http://127.0.0.1:1").close()
    assert started == []


def test_repr_hides_the_key() -> None:
    client = HumanWire("hw_secret_value", "http://127.0.0.1:1")
    assert "hw_secret_value" not in repr(client) and "127.0.0.1:1" in repr(client)
    client.close()


async def test_http_client_of_the_wrong_kind_is_refused() -> None:
    async with httpx.AsyncClient() as async_http:
        with pytest.raises(TypeError, match=r"httpx\.Client"):
            HumanWire("k", "http://127.0.0.1:1", http_client=async_http)  # type: ignore[arg-type]
    with httpx.Client() as sync_http, pytest.raises(TypeError, match="AsyncClient"):
        AsyncHumanWire("k", "http://127.0.0.1:1", http_client=sync_http)  # type: ignore[arg-type]


def test_negative_max_retries_is_refused() -> None:
    with pytest.raises(ValueError):
        HumanWire("k", "http://127.0.0.1:1", max_retries=-1)


def test_with_options_copies(script: Script) -> None:
    client = make_client("sync", script)
    quick = client.with_options(timeout=3.0, max_retries=0)
    assert quick is not client and quick.messages is not client.messages
    assert quick.timeout == httpx.Timeout(3.0) and quick.max_retries == 0
    assert client.timeout == httpx.Timeout(30.0, connect=5.0) and client.max_retries == 2
    assert quick.base_url == client.base_url and quick.api_key == client.api_key
    same = client.with_options()
    assert same.timeout == client.timeout and same.max_retries == client.max_retries


def test_sync_context_manager_closes_only_its_own_http_client() -> None:
    with HumanWire("k", "http://127.0.0.1:1") as client:
        own = client._http
    assert own.is_closed
    mine = httpx.Client()
    with HumanWire("k", "http://127.0.0.1:1", http_client=mine) as client:
        copy = client.with_options(max_retries=0)
    copy.close()
    assert not mine.is_closed
    mine.close()


async def test_async_context_manager_closes_only_its_own_http_client() -> None:
    async with AsyncHumanWire("k", "http://127.0.0.1:1") as client:
        own = client._http
    assert own.is_closed
    mine = httpx.AsyncClient()
    async with AsyncHumanWire("k", "http://127.0.0.1:1", http_client=mine):
        pass
    assert not mine.is_closed
    await mine.aclose()


def test_both_clients_have_every_resource_and_method() -> None:
    sync = HumanWire("k", "http://127.0.0.1:1")
    async_ = AsyncHumanWire("k", "http://127.0.0.1:1")
    surface = {
        "messages": ["sms", "whatsapp", "slack", "telegram", "discord", "teams", "channel"],
        "forms": ["sms", "slack", "telegram", "discord", "teams", "whatsapp"],
        "calls": ["create"],
        "phone": ["sms", "call"],
        "interactions": ["status", "wait"],
        "numbers": ["available", "reserve", "list", "delete"],
        "webhooks": ["create", "list", "delete"],
        "channels": ["create", "list", "get", "delete"],
        "sandbox": ["deliveries", "reply", "end_call", "inbound_call"],
    }
    for resource, methods in surface.items():
        for name in methods:
            sync_method = getattr(getattr(sync, resource), name)
            async_method = getattr(getattr(async_, resource), name)
            assert not inspect.iscoroutinefunction(sync_method)
            assert inspect.iscoroutinefunction(async_method)
            # help() shows the call as made, without self, the same in both modes
            assert inspect.signature(sync_method) == inspect.signature(async_method)
            assert "self" not in inspect.signature(sync_method).parameters
            assert sync_method.__doc__ == async_method.__doc__
    assert str(inspect.signature(sync.messages.sms).return_annotation) == "MessageResponse"
    sync.close()


def test_import_humanwire_stays_light() -> None:
    code = (
        "import sys, humanwire, humanwire.webhooks;"
        "heavy = [m for m in sys.modules if m.split('.')[0] in "
        "('starlette', 'uvicorn', 'langchain', 'langchain_core', 'langgraph', 'llama_index',"
        " 'dbos', 'agno', 'agent_framework', 'claude_agent_sdk')"
        " or m.startswith('humanwire.server')];"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_prometheus_client_loads_only_with_a_service_engine() -> None:
    # The metrics extra is the engine's: importing the library, the server package or
    # the app module does not load it; building an engine does (when installed).
    code = (
        "import sys, humanwire, humanwire.server, humanwire.server.http.app, humanwire.webhooks\n"
        "print('prometheus_client' in sys.modules)\n"
        "from humanwire.server.config import ServiceConfig\n"
        "from humanwire.server.engine import Engine\n"
        "engine = Engine(ServiceConfig())\n"
        "print('prometheus_client' in sys.modules, engine.metrics.enabled)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["False", "True True"]


def test_import_humanwire_defers_what_it_does_not_need_yet() -> None:
    # phonenumbers loads with the first phone number checked, importlib.metadata with the
    # first read of __version__, asyncio with the first AsyncHumanWire; email_validator is
    # the service's (form answers). Each still works once it is needed.
    deferred = ("phonenumbers", "email_validator", "importlib.metadata", "asyncio")
    code = (
        "import sys, humanwire\n"
        f"deferred = {deferred!r}\n"
        "print([m for m in deferred if m in sys.modules])\n"
        "from humanwire.types import SMSMessageRequest\n"
        "from importlib.metadata import version\n"
        "request = SMSMessageRequest(to='+12025550100', message='x')\n"
        "assert request.to_wire() == {'to': '+12025550100', 'message': 'x'}, request.to_wire()\n"
        "try:\n"
        "    SMSMessageRequest(to='+15555550100', message='x')\n"
        "except ValueError as exc:\n"
        "    assert exc.errors()[0]['type'] == 'invalid_to_number', exc.errors()\n"
        "else:\n"
        "    raise AssertionError('+15555550100 accepted')\n"
        "assert humanwire.__version__ == version('humanwire')\n"
        "print(sorted(m for m in deferred if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[]", "['importlib.metadata', 'phonenumbers']"]


def test_public_names_load_on_first_use() -> None:
    # `import humanwire` defines no model; each public name, and the submodules it always
    # made attributes, load when first touched, as the very objects of their modules.
    code = (
        "import sys, humanwire\n"
        "print(sorted(m for m in sys.modules if m.startswith(('humanwire', 'pydantic.main'))))\n"
        "assert 'HumanWire' in dir(humanwire) and 'types' in dir(humanwire)\n"
        "assert humanwire.types.FormField is humanwire.FormField\n"
        "from humanwire.errors import InvalidToNumberError\n"
        "from humanwire import InvalidToNumberError as again\n"
        "assert again is InvalidToNumberError\n"
        "namespace = {}\n"
        "exec('from humanwire import *', namespace)\n"
        "assert set(humanwire.__all__) <= set(namespace)\n"
        "assert humanwire.HumanWire.__module__ == 'humanwire._client'\n"
        "try:\n"
        "    humanwire.NoSuchName\n"
        "except AttributeError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "['humanwire']",
        "module 'humanwire' has no attribute 'NoSuchName'",
    ]


def test_public_names() -> None:
    assert humanwire.__version__
    for name in humanwire.__all__:
        assert hasattr(humanwire, name), name
    assert issubclass(humanwire.InvalidToNumberError, humanwire.BadRequestError)
    assert issubclass(humanwire.APITimeoutError, humanwire.APIConnectionError)
    assert issubclass(humanwire.UnknownEventError, humanwire.WebhookVerificationError)
    assert json.dumps(humanwire.__all__)  # plain names only
