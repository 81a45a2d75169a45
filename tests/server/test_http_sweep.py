"""Garbage to every route: each answer is the documented status and error body, never a
500, and nothing is sent or lost because of it.

The routes come from the app's own operation table, so a new endpoint is swept too (and
fails here until it has a valid sample body below to mutate)."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from http_support import BASE_URL, HUMAN, SLACK_HUMAN, AppUnderTest, assert_error, svc_fixture

from humanwire.server.routes import Operation, api_operations

__all__ = ["svc_fixture"]

OPERATIONS = api_operations(sandbox_enabled=True)

_FIELDS = [{"id": "name", "label": "Name", "type": "text"}]
VALID_BODIES: dict[str, dict[str, Any]] = {
    "sendSms": {"message": "hi", "to": HUMAN},
    "sendWhatsApp": {"message": "hi", "to": HUMAN},
    "sendSlack": {"message": "hi", "to": SLACK_HUMAN},
    "sendEmail": {"message": "hi", "to": "human@example.com", "subject": "Hello"},
    "sendThroughChannel": {"message": "hi"},
    "sendSmsForm": {"title": "T", "fields": _FIELDS, "to": HUMAN, "waitTime": 1},
    "sendSlackForm": {"title": "T", "fields": _FIELDS, "to": SLACK_HUMAN, "waitTime": 1},
    "sendTelegram": {"message": "hi", "to": "5550001"},
    "sendToPerson": {"message": "hi", "person": "per_nobody"},
    "sendTelegramForm": {"title": "T", "fields": _FIELDS, "to": "5550001", "waitTime": 1},
    "sendDiscord": {"message": "hi", "to": "1100000000000000005"},
    "sendDiscordForm": {
        "title": "T",
        "fields": _FIELDS,
        "to": "1100000000000000005",
        "waitTime": 1,
    },
    "sendTeams": {"message": "hi", "to": "29:1ada-teams-user"},
    "sendTeamsForm": {"title": "T", "fields": _FIELDS, "to": "29:1ada-teams-user", "waitTime": 1},
    "sendEmailForm": {"title": "T", "fields": _FIELDS, "to": "human@example.com", "waitTime": 1},
    "sendWhatsAppForm": {"title": "T", "fields": _FIELDS, "to": HUMAN, "waitTime": 1},
    "placeCall": {"prompt": "Ask about the invoice.", "to": HUMAN},
    "phoneSms": {"message": "hi", "to": HUMAN},
    "phoneCall": {"message": "Ask about the invoice.", "to": HUMAN},
    "reserveNumber": {"phoneNumber": "+12125550142"},
    "createWebhook": {"url": "http://127.0.0.1:9/hook", "eventTypes": ["message.received"]},
    "createChannel": {"type": "sms", "to": HUMAN, "waitTime": 1},
    "sandboxReply": {"channel": "sms", "from": HUMAN, "to": "+12025550199", "body": "yes"},
    "sandboxEndCall": {"outcome": "completed", "summary": "done"},
    "sandboxInboundCall": {"from": HUMAN, "to": "+12125550142", "summary": "call me"},
    "requestApproval": {
        "title": "T",
        "approvers": [{"channel": "link", "to": "Ada"}],
        "waitTime": 1,
    },
    "createPerson": {"name": "Ada", "addresses": [{"channel": "sms", "to": HUMAN}]},
    "updatePerson": {"name": "Ada L."},
    "confirmPerson": {"channel": "sms"},
    "consumeApproval": {"actionDigest": "sha256:" + "0" * 64},
    "createGrant": {
        "actionName": "deploy",
        "match": {"service": "payments-api"},
        "expiresAt": "2100-01-01T00:00:00Z",
        "grantedBy": "per_nobody",
    },
    "registerTelegramBot": {"token": "123456789:" + "A" * 35},
    "createDelegation": {"delegate": "per_" + "b" * 24, "endsAt": "2100-01-01T00:00:00Z"},
    "sendBatch": {"requests": [{"path": "/messages/sms", "body": {"message": "hi", "to": HUMAN}}]},
}

# Each is invalid for every property type of the request models: a string, a number, a
# boolean, a list and a string map alike.
WRONG_VALUES: list[Any] = [{"x": [1]}, [{"x": 1}]]

BAD_JSON_BODIES: list[bytes] = [
    b"{bad",
    b"null",
    b"[]",
    b'"text"',
    b"123",
    b"\xff\xfe{}",
    b"[" * 5000,
    b'{"a": 1}{',
    b'{"message": "\\ud800"}',
]

# Ids no resource has, as a client or an attacker might send them (percent-encoded).
BAD_IDS = ["nope", "%00", "..%2F..%2Fetc", "x" * 2000, "%C3%BC", "' OR 1=1 --", "ch_"]


@pytest.fixture(name="sweep")
async def sweep_fixture(svc: AppUnderTest) -> AsyncIterator[AppUnderTest]:
    """The app with a webhook and a channel card in it: the sweep must not lose them."""
    webhook = await svc.client.post("/webhooks", json=VALID_BODIES["createWebhook"])
    assert webhook.status_code == 201, webhook.text
    channel = await svc.client.post("/channels", json=VALID_BODIES["createChannel"])
    assert channel.status_code == 201, channel.text
    yield svc
    # Nothing rejected was sent, nothing stored was lost.
    assert await svc.deliveries() == []
    webhooks = await svc.client.get("/webhooks")
    assert [w["id"] for w in webhooks.json()] == [webhook.json()["id"]]
    channels = await svc.client.get("/channels")
    assert [c["id"] for c in channels.json()] == [channel.json()["id"]]


def _path(op: Operation, value: str | None = None) -> str:
    def fill(match: re.Match[str]) -> str:
        if value is not None:
            return value
        if match.group(1) == "channel_id":
            return "ch_" + "a" * 24
        if match.group(1) == "personId":
            return "per_" + "a" * 24
        if match.group(1) == "delegationId":
            return "dlg_" + "a" * 16
        return str(uuid.uuid4())

    return re.sub(r"\{(\w+)\}", fill, op.path)


def _ids(op: Operation) -> str:
    return f"{op.method} {op.path}"


def test_every_body_operation_has_a_sample() -> None:
    with_body = {op.operation_id for op in OPERATIONS if op.body is not None}
    assert with_body == set(VALID_BODIES)


async def _send(
    client: httpx.AsyncClient,
    op: Operation,
    *,
    path: str | None = None,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    params: dict[str, str] | None = None,
) -> httpx.Response:
    return await client.request(
        op.method, path or _path(op), content=body, headers=headers, params=params
    )


@pytest.mark.parametrize("op", [op for op in OPERATIONS if op.auth], ids=_ids)
async def test_every_api_route_refuses_a_missing_or_wrong_key(
    sweep: AppUnderTest, op: Operation
) -> None:
    sample = VALID_BODIES.get(op.operation_id)
    body = httpx.Request("POST", "/", json=sample).content if sample is not None else None
    json_type = {"Content-Type": "application/json"}
    async with sweep.anonymous() as anonymous:
        for authorization in [
            None,
            "Bearer wrong-key",
            f"Basic {sweep.api_key}",
            "Bearer",
            "Bearer " + "k" * 5000,
            sweep.api_key,
        ]:
            headers = dict(json_type)
            if authorization is not None:
                headers["Authorization"] = authorization
            response = await _send(anonymous, op, body=body, headers=headers)
            assert_error(response, 401, "unauthorized", None)
            assert response.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize("op", [op for op in OPERATIONS if op.body is not None], ids=_ids)
async def test_every_body_refuses_garbage(sweep: AppUnderTest, op: Operation) -> None:
    client = sweep.client
    json_type = {"Content-Type": "application/json"}
    for raw in BAD_JSON_BODIES:
        assert_error(await _send(client, op, body=raw, headers=json_type), 400, "invalid_request")
    assert_error(await _send(client, op, body=b"", headers=json_type), 400, "invalid_request")
    sample = VALID_BODIES[op.operation_id]
    valid = httpx.Request("POST", "/", json=sample).content
    for content_type in [None, "text/plain", "application/x-www-form-urlencoded"]:
        headers = {"Content-Type": content_type} if content_type else {}
        response = await _send(client, op, body=valid, headers=headers)
        assert_error(response, 400, "invalid_request")

    unknown = await client.request(op.method, _path(op), json={**sample, "bogus": 1})
    assert_error(unknown, 400, "invalid_request", "bogus")
    for name in sample:
        for wrong in WRONG_VALUES:
            response = await client.request(op.method, _path(op), json={**sample, name: wrong})
            error = assert_error(response, 400, response.json()["error"]["code"])
            assert error["code"] in ("invalid_request", "invalid_to_number")
            assert error["field"] and error["field"].split(".")[0].split("[")[0] == name, error
    schema = op.body.json_schema() if op.body is not None else {}
    required = schema.get("required", [])
    for name in required:
        partial = {key: value for key, value in sample.items() if key != name}
        response = await client.request(op.method, _path(op), json=partial)
        assert_error(response, 400, "invalid_request", name)


@pytest.mark.parametrize("op", [op for op in OPERATIONS if op.auth], ids=_ids)
async def test_every_route_refuses_oversized_bodies(sweep: AppUnderTest, op: Operation) -> None:
    limit = sweep.config.max_body_bytes
    assert limit == 1 << 20  # docs/design.md: 1 MiB
    padding = "x" * (limit + 1 - len('{"message":""}'))
    oversized = ('{"message":"' + padding + '"}').encode()
    assert len(oversized) == limit + 1
    headers = {"Content-Type": "application/json"}
    response = await _send(sweep.client, op, body=oversized, headers=headers)
    assert_error(response, 413, "payload_too_large")

    async def chunks() -> AsyncIterator[bytes]:
        # No Content-Length: the limit must be enforced on the bytes as they stream.
        for _ in range(5):
            yield b" " * (limit // 4)
        yield b"{}"

    streamed = await sweep.client.request(op.method, _path(op), content=chunks(), headers=headers)
    if op.body is None:
        # Nothing reads a body on a GET or DELETE, so nothing is refused for it.
        assert streamed.status_code < 500
    else:
        assert_error(streamed, 413, "payload_too_large")


@pytest.mark.parametrize("op", OPERATIONS, ids=_ids)
async def test_every_route_refuses_unknown_and_repeated_query_parameters(
    sweep: AppUnderTest, op: Operation
) -> None:
    response = await _send(sweep.client, op, params={"bogus": "1"}, **_valid(op))
    assert_error(response, 400, "invalid_request", "bogus")
    for param in op.query:
        url = f"{_path(op)}?{param.name}=1&{param.name}=2"
        response = await sweep.client.request(op.method, url, **_valid(op))
        assert_error(response, 400, "invalid_request", param.name)


def _valid(op: Operation) -> dict[str, Any]:
    sample = VALID_BODIES.get(op.operation_id)
    if sample is None:
        return {}
    return {
        "body": httpx.Request("POST", "/", json=sample).content,
        "headers": {"Content-Type": "application/json"},
    }


@pytest.mark.parametrize("op", [op for op in OPERATIONS if op.query], ids=_ids)
async def test_query_values_out_of_bounds(sweep: AppUnderTest, op: Operation) -> None:
    bad_values = {
        "wait": ["abc", "-0.5", "-1", "61", "nan", "inf", "1e309", ""],
        "country": ["FR", "usa", "", "U S"],
        "areaCode": ["abc", "12a", "", "1234567", "٣٣٣"],
        "channel": ["sms ", "fax", ""],
    }
    for param in op.query:
        for value in bad_values.get(param.name, []):
            response = await sweep.client.get(_path(op), params={param.name: value})
            assert_error(response, 400, "invalid_request", param.name)


@pytest.mark.parametrize("op", [op for op in OPERATIONS if op.path_params], ids=_ids)
async def test_unknown_or_malformed_ids_are_not_found(sweep: AppUnderTest, op: Operation) -> None:
    for bad_id in BAD_IDS:
        response = await _send(sweep.client, op, path=_path(op, bad_id), **_valid(op))
        assert_error(response, 404, "not_found")
    # A well-formed id nobody has.
    response = await _send(sweep.client, op, **_valid(op))
    assert_error(response, 404, "not_found")


@pytest.mark.parametrize(
    "op", [op for op in OPERATIONS if op.method == "POST" and op.auth], ids=_ids
)
async def test_malformed_idempotency_keys(sweep: AppUnderTest, op: Operation) -> None:
    keys: list[str | bytes] = ["", " ", "k" * 256, "é".encode(), b"a\x7fb"]
    for key in keys:
        valid = _valid(op)
        headers = {**valid.get("headers", {}), "Idempotency-Key": key}
        response = await sweep.client.request(
            op.method, _path(op), content=valid.get("body"), headers=headers
        )
        assert_error(response, 400, "invalid_request", "Idempotency-Key")


async def test_unknown_paths_and_methods(sweep: AppUnderTest) -> None:
    for path in [
        "/",
        "/nope",
        "/messages",
        "/messages/sms/extra",
        "/webhooks/",
        "/v1/messages/sms",
    ]:
        for method in ["GET", "POST", "DELETE"]:
            response = await sweep.client.request(method, path)
            assert response.status_code in (404, 405), (method, path, response.text)
            if response.status_code == 404:
                assert_error(response, 404, "not_found", None)
            else:
                assert_error(response, 405, "method_not_allowed", None)
    paths = {op.path for op in OPERATIONS}
    for path_template in paths:
        allowed = {op.method for op in OPERATIONS if op.path == path_template}
        path = _path(next(op for op in OPERATIONS if op.path == path_template))
        for method in {"GET", "POST", "DELETE", "PUT", "PATCH"} - allowed - {"HEAD"}:
            response = await sweep.client.request(method, path)
            if response.status_code == 404:
                # Another template with the same shape may take the path and method
                # (DELETE /numbers/available is DELETE /numbers/{number_id}).
                assert_error(response, 404, "not_found")
                continue
            assert_error(response, 405, "method_not_allowed", None)
            assert set(response.headers["allow"].split(", ")) >= allowed


async def test_webhook_headers_that_cannot_be_sent_are_refused(sweep: AppUnderTest) -> None:
    """Framing, hop-by-hop and the service's own headers, and names or values no HTTP
    request can carry, are refused at registration naming the header (they used to be
    stored, then fail or subvert every delivery)."""
    refused: list[tuple[dict[str, str], str]] = [
        ({"Transfer-Encoding": "chunked"}, "headers.Transfer-Encoding"),
        ({"host": "internal.example"}, "headers.host"),
        ({"Content-Length": "0"}, "headers.Content-Length"),
        ({"Proxy-Authorization": "Basic eA=="}, "headers.Proxy-Authorization"),
        ({"Humanwire-Signature": "t=1,v1=0"}, "headers.Humanwire-Signature"),
        ({"X-Token": "a\r\nX-Injected: 1"}, "headers.X-Token"),
        ({"X-Token": "café"}, "headers.X-Token"),
        ({"X Token": "1"}, "headers.X Token"),
        ({"X-Token": "1", "x-token": "2"}, "headers.x-token"),
    ]
    for headers, field in refused:
        body = {**VALID_BODIES["createWebhook"], "headers": headers}
        response = await sweep.client.post("/webhooks", json=body)
        assert_error(response, 400, "invalid_request", field)


async def test_form_links_refuse_garbage_and_stay_open(svc: AppUnderTest) -> None:
    """The form route is the one write without a key: garbage there is refused too, and
    the form can still be submitted afterwards."""
    body = {**VALID_BODIES["sendSmsForm"], "followUpTime": 60}
    body["fields"] = [{"id": "name", "label": "Name", "type": "text", "required": True}]
    del body["waitTime"]
    sent = await svc.client.post("/forms/sms", json=body)
    assert sent.status_code == 200, sent.text
    form_url = sent.json()["formUrl"]
    assert form_url.startswith(BASE_URL + "/f/")
    path = form_url.removeprefix(BASE_URL)
    json_type = {"Content-Type": "application/json"}
    async with svc.anonymous() as browser:
        for raw in [*BAD_JSON_BODIES, b'{"values": [1]}', b'{"values": {"name": {"x": 1}}}']:
            response = await browser.post(path, content=raw, headers=json_type)
            assert response.status_code == 400, (raw[:20], response.status_code, response.text)
        unknown_field = await browser.post(path, json={"values": {"nope": "x"}})
        assert unknown_field.status_code == 400
        oversized = b"name=" + b"x" * svc.config.max_body_bytes
        form_type = {"Content-Type": "application/x-www-form-urlencoded"}
        response = await browser.post(path, content=oversized, headers=form_type)
        assert_error(response, 413, "payload_too_large")
        for garbage in [b"%zz=%%", b"\xff\xfe", b"a&&&=&==", b"name"]:
            response = await browser.post(path, content=garbage, headers=form_type)
            assert response.status_code == 400, (garbage, response.status_code)
        unknown = await browser.post(path + "x", json={"values": {"name": "Ada"}})
        assert unknown.status_code == 404
        accepted = await browser.post(path, json={"values": {"name": "Ada"}})
        assert accepted.status_code == 200, accepted.text
    status = await svc.client.get(f"/interactions/{sent.json()['interactionId']}/status")
    assert status.json()["result"]["payload"]["values"] == {"name": "Ada"}
    assert len(await svc.deliveries()) == 1  # the link, sent once


async def test_reply_links_refuse_garbage_and_stay_open(svc: AppUnderTest) -> None:
    card = await svc.client.post(
        "/channels",
        json={"type": "sms", "to": HUMAN, "waitTime": 1, "followUpTime": 60, "replyLink": True},
    )
    assert card.status_code == 201, card.text
    sent = await svc.client.post(f"/messages/{card.json()['id']}", json={"message": "Ok?"})
    assert sent.status_code == 200, sent.text
    [delivery] = await svc.deliveries()
    link = re.search(re.escape(BASE_URL) + r"(/r/\S+)", delivery["text"])
    assert link is not None, delivery["text"]
    path = link.group(1)
    json_type = {"Content-Type": "application/json"}
    async with svc.anonymous() as browser:
        for raw in [*BAD_JSON_BODIES, b'{"body": 1}', b'{"body": "x", "extra": 1}']:
            response = await browser.post(path, content=raw, headers=json_type)
            assert response.status_code == 400, (raw[:20], response.status_code, response.text)
        oversized = b"body=" + b"x" * svc.config.max_body_bytes
        form_type = {"Content-Type": "application/x-www-form-urlencoded"}
        response = await browser.post(path, content=oversized, headers=form_type)
        assert_error(response, 413, "payload_too_large")
        assert (await browser.post(path + "x", json={"body": "hi"})).status_code == 404
        accepted = await browser.post(path, json={"body": "yes, via the link"})
        assert accepted.status_code == 200, accepted.text
    status = await svc.client.get(f"/interactions/{sent.json()['interactionId']}/status")
    assert status.json()["result"]["payload"]["body"] == "yes, via the link"
