"""The OpenAPI 3.1 document of the API, generated from the same operation table and wire
models the app validates and serializes with, so it cannot drift from the service."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter
from pydantic.json_schema import JsonSchemaMode

from humanwire.types import ErrorBody
from humanwire.types.rules import IDEMPOTENCY_KEY, schema_pattern

from ..routes import IDEMPOTENCY_HEADER, REPLAYED_HEADER, Operation

__all__ = ["API_VERSION", "build_openapi"]

API_VERSION = "1.0.0"
_REF = "#/components/schemas/{model}"

_ERROR_TEXT = {
    400: "Invalid input (`invalid_request`, or `invalid_to_number` for a bad recipient).",
    401: "Missing or wrong bearer key (`unauthorized`).",
    403: "The account was suspended (`account_suspended`).",
    404: "Unknown resource, or one of another account (`not_found`).",
    409: "Conflict, or an `Idempotency-Key` reused with another body (`conflict`).",
    413: "Body over the size limit (`payload_too_large`).",
    429: "Rate limited (`rate_limited`); see `Retry-After`.",
    503: "The service is stopping (`unavailable`); retry after `Retry-After` with the same "
    "`Idempotency-Key`: a held request re-attaches to its interaction.",
    502: "The provider (Twilio, Slack) failed or refused (`provider_error`); nothing was "
    "sent. Retry after `Retry-After` with the same `Idempotency-Key`.",
    504: "The call exceeded the 5-minute limit (`timeout`).",
}
_SEND_TAGS = frozenset({"messages", "forms", "calls", "phone"})
_SUCCESS_TEXT = {200: "OK", 201: "Created", 204: "Deleted or accepted; no body"}


def _schemas(
    operations: Sequence[Operation],
) -> tuple[dict[tuple[str, JsonSchemaMode], Any], dict[str, Any]]:
    inputs: list[tuple[str, JsonSchemaMode, TypeAdapter[Any]]] = [
        ("error", "serialization", TypeAdapter(ErrorBody))
    ]
    for op in operations:
        if op.body is not None:
            inputs.append((op.operation_id, "validation", op.body))
        if op.response is not None:
            inputs.append((op.operation_id, "serialization", op.response))
        if op.unavailable_body is not None:
            inputs.append((f"{op.operation_id}:503", "serialization", op.unavailable_body))
    keyed, definitions = TypeAdapter.json_schemas(inputs, ref_template=_REF)
    components: dict[str, Any] = definitions.get("$defs", {})
    return dict(keyed), components


def _parameters(op: Operation) -> list[dict[str, Any]]:
    parameters: list[dict[str, Any]] = [
        {
            "name": param.name,
            "in": "path",
            "required": True,
            "description": param.description,
            "schema": {
                "type": "string",
                **({"pattern": f"^{param.pattern}$"} if param.pattern else {}),
            },
        }
        for param in op.path_params
    ]
    parameters += [
        {
            "name": q.name,
            "in": "query",
            "required": False,
            "description": q.description,
            "schema": q.schema,
            **({"style": "deepObject", "explode": True} if q.deep_object else {}),
        }
        for q in op.query
    ]
    parameters += [
        {
            "name": h.name,
            "in": "header",
            "required": False,
            "description": h.description,
            "schema": h.schema,
        }
        for h in op.headers
    ]
    if op.method == "POST" and op.auth:
        parameters.append(
            {
                "name": IDEMPOTENCY_HEADER,
                "in": "header",
                "required": False,
                "description": "The same key and body within 24 h returns the first response "
                "instead of running again (with the header `Idempotent-Replayed: true`). "
                "1 to 255 printable ASCII characters, no space at either end.",
                "schema": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 255,
                    "pattern": schema_pattern(IDEMPOTENCY_KEY),
                },
            }
        )
    if _holds(op):
        parameters.append(
            {
                "name": "Prefer",
                "in": "header",
                "required": False,
                "description": "`respond-async` (RFC 7240): a send that holds for a reply "
                "answers 202 at once; its answer comes as a `wait.ended` event "
                "(`GET /events`). Other preferences are ignored.",
                "schema": {"type": "string"},
            }
        )
    return parameters


def _holds(op: Operation) -> bool:
    """A send that may hold for its answer: it takes ``Prefer: respond-async``."""
    return op.method == "POST" and op.tag in _SEND_TAGS and op.response is not None


def _error_statuses(op: Operation) -> list[int]:
    statuses = set(op.errors) | {503}
    if op.method == "POST" and op.tag in _SEND_TAGS:
        statuses.add(502)
    if op.auth:
        statuses |= {400, 401, 403, 429}
    if op.query or op.body is not None:
        statuses.add(400)
    if op.body is not None:
        statuses.add(413)
    if op.method == "POST" and op.auth:
        statuses.add(409)
    return sorted(statuses)


def _operation(op: Operation, keyed: dict[tuple[str, JsonSchemaMode], Any]) -> dict[str, Any]:
    success: dict[str, Any] = {"description": _SUCCESS_TEXT.get(op.status, "OK")}
    if op.stream:
        success["content"] = {"text/event-stream": {"schema": {"type": "string"}}}
    elif op.response is not None:
        schema = keyed[(op.operation_id, "serialization")]
        success["content"] = {"application/json": {"schema": schema}}
    if op.method == "POST" and op.auth:
        success["headers"] = {
            REPLAYED_HEADER: {
                "description": "`true` when this is the stored response of an earlier "
                "request with the same `Idempotency-Key`.",
                "schema": {"type": "string", "enum": ["true"]},
            }
        }
    responses: dict[str, Any] = {str(op.status): success}
    if _holds(op):
        responses["202"] = {
            "description": "With `Prefer: respond-async` and a wait: accepted (the body of a "
            "send without wait); the held answer arrives as a `wait.ended` event "
            "(`GET /events`).",
            "content": success.get("content", {}),
        }
    for status in _error_statuses(op):
        responses[str(status)] = {"$ref": f"#/components/responses/Error{status}"}
    if op.unavailable_body is not None:
        responses["503"] = {
            "description": "Not ready (also while the service stops): the body names the "
            "failing check; retry after `Retry-After`.",
            "headers": {
                "Retry-After": {"description": "Seconds to wait.", "schema": {"type": "integer"}}
            },
            "content": {
                "application/json": {"schema": keyed[(f"{op.operation_id}:503", "serialization")]}
            },
        }
    responses["default"] = {"$ref": "#/components/responses/Error"}
    document: dict[str, Any] = {
        "operationId": op.operation_id,
        "summary": op.summary,
        "tags": [op.tag],
        "responses": responses,
    }
    if op.description:
        document["description"] = op.description
    parameters = _parameters(op)
    if parameters:
        document["parameters"] = parameters
    if op.body is not None:
        document["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": keyed[(op.operation_id, "validation")]}},
        }
    if not op.auth:
        document["security"] = []
    return document


def _error_response(description: str, status: int | None, schema: Any) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": description,
        "content": {"application/json": {"schema": schema}},
    }
    if status == 401:
        response["headers"] = {"WWW-Authenticate": {"schema": {"type": "string"}}}
    if status in (429, 502, 503):
        response["headers"] = {
            "Retry-After": {"description": "Seconds to wait.", "schema": {"type": "integer"}}
        }
    return response


def build_openapi(operations: Sequence[Operation], base_url: str) -> dict[str, Any]:
    keyed, components = _schemas(operations)
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op, keyed)
    error_schema = keyed[("error", "serialization")]
    responses = {
        f"Error{status}": _error_response(text, status, error_schema)
        for status, text in _ERROR_TEXT.items()
    }
    responses["Error"] = _error_response("Any other error, in the same shape.", None, error_schema)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "humanwire",
            "version": API_VERSION,
            "description": "Reach humans over SMS, WhatsApp, Slack, web forms and voice "
            "calls, and wait for the answer. Every error body is "
            '`{"error": {"code", "message", "field"}}`. Request bodies are closed '
            "(unknown properties are refused) and so are query strings (unknown or "
            "repeated parameters are a 400), and no string may hold a NUL character "
            "(U+0000). A POST with an `Idempotency-Key` runs once.",
        },
        "servers": [{"url": base_url}],
        "security": [{"bearerAuth": []}],
        "paths": paths,
        "components": {
            "schemas": components,
            "responses": responses,
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "Authorization: Bearer <API_KEY>",
                }
            },
        },
    }
