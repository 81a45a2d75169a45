"""``GET /openapi.json``: a valid OpenAPI 3.1 document of every endpoint, built from the
wire models, that real answers of the service conform to."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema  # type: ignore[import-untyped,unused-ignore]
import pytest
from http_support import HUMAN, AppUnderTest, svc_fixture
from openapi_spec_validator import validate
from pydantic import ValidationError

from humanwire.server.http.openapi import build_openapi
from humanwire.server.routes import api_operations
from humanwire.server.routes._api import IDEMPOTENCY_HEADER as IDEMPOTENCY

__all__ = ["svc_fixture"]

DOCUMENT = build_openapi(api_operations(sandbox_enabled=True), "http://127.0.0.1:8765")


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


def _resolve(document: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), ref
    node: Any = document
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def response_schema(path: str, method: str, status: int) -> dict[str, Any]:
    """The documented schema of one answer, with the components it refers to."""
    response = DOCUMENT["paths"][path][method.lower()]["responses"][str(status)]
    if "$ref" in response:
        response = _resolve(DOCUMENT, response["$ref"])
    schema = response["content"]["application/json"]["schema"]
    return {**schema, "components": DOCUMENT["components"]}


def assert_conforms(response: httpx.Response, path: str) -> None:
    schema = response_schema(path, response.request.method, response.status_code)
    jsonschema.Draft202012Validator(schema).validate(response.json())


def test_the_document_is_valid_openapi_3_1() -> None:
    assert DOCUMENT["openapi"] == "3.1.0"
    assert DOCUMENT["info"]["version"] == "1.0.0"
    validate(DOCUMENT)  # raises on any violation of the OpenAPI 3.1 schema


def test_every_reference_resolves() -> None:
    refs = set(_refs(DOCUMENT))
    assert refs
    for ref in refs:
        assert _resolve(DOCUMENT, ref) is not None


def test_every_operation_is_documented_with_its_bodies_and_errors() -> None:
    operations = api_operations(sandbox_enabled=True)
    documented = {
        (method.upper(), path) for path, item in DOCUMENT["paths"].items() for method in item
    }
    assert documented == {(op.method, op.path) for op in operations}
    expected = {
        ("POST", "/messages/sms"),
        ("POST", "/messages/{channel_id}"),
        ("POST", "/forms/whatsapp"),
        ("POST", "/calls"),
        ("POST", "/phone/call"),
        ("GET", "/interactions/{interactionId}/status"),
        ("GET", "/numbers/available"),
        ("DELETE", "/numbers/{number_id}"),
        ("DELETE", "/webhooks/{webhook_id}"),
        ("GET", "/channels/{channel_id}"),
        ("GET", "/sandbox/messages"),
        ("POST", "/sandbox/inbound-calls"),
        ("GET", "/healthz"),
        ("GET", "/readyz"),
    }
    assert expected <= documented
    for op in operations:
        entry = DOCUMENT["paths"][op.path][op.method.lower()]
        responses = entry["responses"]
        assert str(op.status) in responses
        # Any request may meet a stopping service: 503 `unavailable`, retry after it
        # (/readyz answers its own 503 body, naming the failing check).
        if op.unavailable_body is None:
            assert responses["503"] == {"$ref": "#/components/responses/Error503"}
        else:
            assert "Retry-After" in responses["503"]["headers"]
            assert responses["503"]["content"]["application/json"]["schema"]
        if op.body is not None:
            body = entry["requestBody"]["content"]["application/json"]["schema"]
            assert body, op.operation_id
            assert "413" in responses
        if op.auth:
            assert {"400", "401", "403", "429"} <= set(responses)
            assert "security" not in entry  # the document-wide bearer scheme applies
        else:
            assert entry["security"] == []
        for param in op.path_params:
            assert any(p["name"] == param.name and p["in"] == "path" for p in entry["parameters"])
    assert DOCUMENT["security"] == [{"bearerAuth": []}]
    assert DOCUMENT["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "Authorization: Bearer <API_KEY>",
    }
    unavailable = DOCUMENT["components"]["responses"]["Error503"]
    assert "Retry-After" in unavailable["headers"]
    phone_call = DOCUMENT["paths"]["/phone/call"]["post"]["responses"]
    assert phone_call["504"] == {"$ref": "#/components/responses/Error504"}


def test_request_schemas_are_closed_and_carry_the_bounds() -> None:
    schemas = DOCUMENT["components"]["schemas"]
    for name in ("SMSMessageRequest", "SMSFormRequest", "CallRequest", "FormField"):
        assert schemas[name]["additionalProperties"] is False, name
    wait_time = schemas["SMSMessageRequest"]["properties"]["waitTime"]["anyOf"][0]
    assert (wait_time["minimum"], wait_time["maximum"]) == (1, 600)
    whatsapp = DOCUMENT["paths"]["/forms/whatsapp"]["post"]["requestBody"]
    variants = whatsapp["content"]["application/json"]["schema"]["oneOf"]
    assert {v["$ref"].rsplit("/", 1)[1] for v in variants} == {
        "WhatsAppSharedFormRequest",
        "WhatsAppOwnNumberFormRequest",
    }
    assert "template" in schemas["WhatsAppOwnNumberFormRequest"]["required"]
    error = schemas["ErrorBody"]
    assert error["required"] == ["error"]


def _object_schemas(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [found for value in node for found in _object_schemas(value)]
    if not isinstance(node, dict):
        return []
    here = [node] if isinstance(node.get("properties"), dict) else []
    return here + [found for value in node.values() for found in _object_schemas(value)]


def test_no_schema_has_its_properties_beside_a_union() -> None:
    """Generators read a top-level ``anyOf``/``oneOf`` as a union of its branches and drop
    the properties beside it (openapi-python-client made ``POST /approvals`` a body of
    ``waitTime`` alone): a rule between fields goes inside ``allOf``."""
    schemas = _object_schemas(DOCUMENT)
    assert len(schemas) > 50
    beside = [
        sorted(schema["properties"]) for schema in schemas if "anyOf" in schema or "oneOf" in schema
    ]
    assert beside == []
    for name in ("ApprovalRequest", "SMSFormRequest", "WhatsAppOwnNumberFormRequest"):
        assert DOCUMENT["components"]["schemas"][name]["allOf"], name


def test_webhook_header_rules_are_in_the_schema() -> None:
    """Names must be tokens and values visible ASCII, as the service checks (the reserved
    names are in the description: JSON Schema has no case-insensitive pattern)."""
    schema = {"$ref": "#/components/schemas/WebhookCreateRequest", **DOCUMENT}
    validator = jsonschema.Draft202012Validator(schema)
    base = {"url": "https://agent.test/hook", "eventTypes": ["message.received"]}
    assert validator.is_valid({**base, "headers": {"Authorization": "Bearer t", "X-A.b_c": "~"}})
    for headers in [{"X A": "1"}, {"": "1"}, {"é": "1"}, {"X-A": "a\r\nb"}, {"X-A": "é"}]:
        assert not validator.is_valid({**base, "headers": headers}), headers
    headers = DOCUMENT["components"]["schemas"]["WebhookCreateRequest"]["properties"]["headers"]
    assert "Transfer-Encoding" in headers["anyOf"][0]["description"]


async def test_served_without_a_key_and_matches_the_built_document(svc: AppUnderTest) -> None:
    async with svc.anonymous() as anonymous:
        response = await anonymous.get("/openapi.json")
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        served = response.json()
    assert served["paths"] == DOCUMENT["paths"]
    assert served["components"] == DOCUMENT["components"]
    assert served["servers"] == [{"url": svc.config.public_url}]


async def test_real_answers_conform_to_the_document(svc: AppUnderTest) -> None:
    client = svc.client
    sent = await client.post("/messages/sms", json={"message": "hello", "to": HUMAN})
    assert sent.status_code == 200
    assert_conforms(sent, "/messages/sms")
    interaction_id = sent.json()["interactionId"]
    status = await client.get(f"/interactions/{interaction_id}/status")
    assert_conforms(status, "/interactions/{interactionId}/status")
    available = await client.get("/numbers/available", params={"country": "US"})
    assert available.json()
    assert_conforms(available, "/numbers/available")
    webhook = await client.post(
        "/webhooks", json={"url": "http://127.0.0.1:9/h", "eventTypes": ["form.received"]}
    )
    assert_conforms(webhook, "/webhooks")
    deliveries = await client.get("/sandbox/messages")
    assert_conforms(deliveries, "/sandbox/messages")
    for bad in [
        await client.post("/messages/sms", json={"message": "x", "to": "+1"}),
        await client.get("/interactions/nope/status"),
    ]:
        assert bad.status_code in (400, 404)
        assert_conforms(
            bad,
            "/messages/sms" if bad.status_code == 400 else "/interactions/{interactionId}/status",
        )
    async with svc.anonymous() as anonymous:
        health = await anonymous.get("/healthz")
    assert health.json() == {"status": "ok"}
    assert_conforms(health, "/healthz")
    async with svc.anonymous() as anonymous:
        ready = await anonymous.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    assert_conforms(ready, "/readyz")


@pytest.mark.parametrize(
    ("path", "method"), [("/messages/sms", "post"), ("/interactions/{interactionId}/status", "get")]
)
def test_documented_error_body_is_the_design_shape(path: str, method: str) -> None:
    schema = response_schema(path, method, 401)
    body = {"error": {"code": "unauthorized", "message": "invalid API key", "field": None}}
    jsonschema.Draft202012Validator(schema).validate(body)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate({"detail": "Not Found"})


def request_schema(path: str) -> dict[str, Any]:
    body = DOCUMENT["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    return {**body["schema"], "components": DOCUMENT["components"]}


def parameter_schema(path: str, method: str, name: str) -> dict[str, Any]:
    (found,) = [p for p in DOCUMENT["paths"][path][method]["parameters"] if p["name"] == name]
    schema: dict[str, Any] = found["schema"]
    return schema


BODIES = {op.path: op.body for op in api_operations(sandbox_enabled=True) if op.body is not None}
_TEXT = {"id": "name", "label": "Name", "type": "text"}
_FORM = {"title": "T", "to": "+12025550100", "waitTime": 5, "fields": [_TEXT]}
_CARD = {"type": "sms", "to": "+12025550100", "waitTime": 5}
_APPROVAL = {"title": "T", "approvers": [{"channel": "link", "to": "Ada"}], "waitTime": 5}

# What the service refuses (400) and the document now says: each beside a body it takes.
REFUSED_BODIES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("/forms/sms", _FORM, {**_FORM, "fields": [{**_TEXT, "id": ""}]}),
    ("/forms/sms", _FORM, {**_FORM, "fields": [{**_TEXT, "id": "first name"}]}),
    (
        "/forms/sms",
        {
            **_FORM,
            "fields": [{**_TEXT, "type": "select", "options": [{"label": "A", "value": "a"}]}],
        },
        {**_FORM, "fields": [{**_TEXT, "type": "select"}]},
    ),
    ("/forms/sms", _FORM, {**_FORM, "fields": [{**_TEXT, "type": "select", "options": []}]}),
    (
        "/forms/sms",
        _FORM,
        {**_FORM, "fields": [{**_TEXT, "options": [{"label": "A", "value": "a"}]}]},
    ),
    (
        "/forms/sms",
        {**_FORM, "fields": [{**_TEXT, "validations": [{"title": "t", "pattern": "^a$"}]}]},
        {**_FORM, "fields": [{**_TEXT, "type": "checkbox", "validations": []}]},
    ),
    ("/forms/sms", {**_FORM, "waitTime": None, "followUpTime": 60}, {**_FORM, "waitTime": None}),
    ("/approvals", _APPROVAL, {**_APPROVAL, "waitTime": None}),
    (
        "/approvals",
        {**_APPROVAL, "waitTime": None, "followUpTime": 60},
        {**_APPROVAL, "waitTime": None, "followUpTime": None},
    ),
    (
        "/webhooks",
        {"url": "https://example.com/h", "eventTypes": ["form.received", "message.received"]},
        {"url": "https://example.com/h", "eventTypes": ["form.received", "form.received"]},
    ),
    ("/channels", _CARD, {**_CARD, "to": "U0HUMAN0001"}),
    ("/channels", {**_CARD, "type": "slack", "to": "U0HUMAN0001"}, {**_CARD, "type": "slack"}),
    ("/channels", {"type": "call", "to": "+12025550100"}, {"type": "sms", "to": "+12025550100"}),
    ("/channels", _CARD, {**_CARD, "waitTime": None}),
    ("/channels", {**_CARD, "type": "call"}, {**_CARD, "type": "call", "replyLink": True}),
    (
        "/channels",
        {**_CARD, "messageTemplate": "Ops: {{message}}"},
        {**_CARD, "messageTemplate": "Ops: {{msg}}"},
    ),
    (
        "/calls",
        {"prompt": "p", "to": "+12025550100", "language": "pt-BR"},
        {"prompt": "p", "to": "+12025550100", "language": "portuguese"},
    ),
    (
        "/messages/slack",
        {"message": "m", "to": "U0HUMAN0001", "from": "T0SHARED01"},
        {"message": "m", "to": "U0HUMAN0001", "from": "my workspace"},
    ),
    (
        "/batch",
        {"requests": [{"path": "/messages/sms", "body": {}, "idempotencyKey": "k-1"}]},
        {"requests": [{"path": "/messages/sms", "body": {}, "idempotencyKey": "k 1 "}]},
    ),
]


@pytest.mark.parametrize(("path", "taken", "refused"), REFUSED_BODIES)
def test_the_document_refuses_what_the_service_refuses(
    path: str, taken: dict[str, Any], refused: dict[str, Any]
) -> None:
    validator = jsonschema.Draft202012Validator(request_schema(path))
    validator.validate(taken)
    assert not validator.is_valid(refused)
    # The service's own model agrees (a batch item's key is checked by its route).
    model = BODIES[path]
    model.validate_python(taken)
    if path != "/batch":
        with pytest.raises(ValidationError):
            model.validate_python(refused)


def test_parameters_carry_the_formats_the_service_checks() -> None:
    key = jsonschema.Draft202012Validator(parameter_schema("/messages/sms", "post", IDEMPOTENCY))
    assert key.is_valid("order-42/retry:1")
    for refused in ("", " k", "k ", "a\tb", "é", "k" * 256):
        assert not key.is_valid(refused), refused
    for path, where in (("/events", "after"), ("/events/stream", "after")):
        cursor = jsonschema.Draft202012Validator(parameter_schema(path, "get", where))
        assert cursor.is_valid("0") and cursor.is_valid("1" * 18)
        for refused in ("", "abc", "²", "-1", "1" * 19):
            assert not cursor.is_valid(refused), (path, refused)
    resume = parameter_schema("/events/stream", "get", "Last-Event-ID")
    assert resume == parameter_schema("/events", "get", "after")
    prefer = [p["name"] for p in DOCUMENT["paths"]["/messages/sms"]["post"]["parameters"]]
    assert "Prefer" in prefer


def test_the_approval_list_parameters_refuse_what_the_service_refuses() -> None:
    def check(name: str) -> jsonschema.Draft202012Validator:
        return jsonschema.Draft202012Validator(parameter_schema("/approvals", "get", name))

    after = check("after")
    assert after.is_valid("0") and after.is_valid("9" * 18)
    for refused in ("", "-1", "1 OR 1=1", "²", "9" * 19):
        assert not after.is_valid(refused), refused
    assert check("status").is_valid("pending") and not check("status").is_valid("open")
    assert check("decision").is_valid("rejected") and not check("decision").is_valid("reject")
    assert check("limit").is_valid(500) and not check("limit").is_valid(501)
    assert check("personId").is_valid("per_abc") and not check("personId").is_valid("per_")
    assert not check("actionName").is_valid("") and not check("actionName").is_valid("x" * 201)
    listed = DOCUMENT["paths"]["/approvals"]["get"]
    assert listed["operationId"] == "listApprovals" and "400" in listed["responses"]


async def test_an_approval_list_conforms_to_the_document(svc: AppUnderTest) -> None:
    asked = await svc.client.post(
        "/approvals", json={**_APPROVAL, "waitTime": None, "followUpTime": 60}
    )
    assert asked.status_code == 200, asked.text
    listed = await svc.client.get("/approvals", params={"status": "pending", "limit": 5})
    assert [a["interactionId"] for a in listed.json()["approvals"]] == [
        asked.json()["interactionId"]
    ]
    assert_conforms(listed, "/approvals")
    refused = await svc.client.get("/approvals", params={"limit": "0"})
    assert refused.status_code == 400
    assert_conforms(refused, "/approvals")
