"""The Bot Framework Connector's published description (microsoft/botbuilder-dotnet
``libraries/Swagger/ConnectorAPI.json``, MIT, licence beside it), used to refuse what the
Connector would refuse and to hold the fake's own answers to it.

``botframework_connector_v3.subset.json`` (Swagger 2.0) keeps the operations a bot calls
to send (create a conversation, send to it, reply, update, delete) and every definition
they reference, unmodified. A request must be an operation it lists and carry
``Authorization: Bearer <token>``; its JSON body is held to the operation's body schema
(JSON Schema draft 4).

**Strict for known objects.** The description sets no ``additionalProperties: false``,
and the Connector ignores a field it does not know, so a misspelt ``is_group`` or
``service_url`` would go unnoticed and do nothing. The fake refuses a property a known
definition (one with ``properties``) does not list: a typo is a test failure, not a
silent no-op. Free-form objects (``channelData``, ``value``, an attachment's
``content``) stay free.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from .._schema import SchemaCheck

__all__ = ["ConnectorSpec", "Operation", "SpecViolation", "load_spec"]

SPEC_FILE = "botframework_connector_v3.subset.json"


class SpecViolation(Exception):
    """A request the Connector refuses: HTTP ``status`` and an ``ErrorResponse`` code."""

    def __init__(self, message: str, *, code: str = "BadSyntax", status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status

    def body(self) -> dict[str, Any]:
        """The description's ``ErrorResponse``."""
        return {"error": {"code": self.code, "message": self.message}}


@dataclass(frozen=True)
class Operation:
    operation_id: str
    method: str
    template: str
    pattern: re.Pattern[str]
    spec: dict[str, Any]

    def body_schema(self) -> dict[str, Any] | None:
        for parameter in self.spec.get("parameters", ()):
            if parameter.get("in") == "body":
                schema = parameter.get("schema")
                return schema if isinstance(schema, dict) else None
        return None

    def response_schema(self, status: int) -> dict[str, Any] | None:
        answer = self.spec.get("responses", {}).get(str(status)) or {}
        schema = answer.get("schema")
        return schema if isinstance(schema, dict) else None


def _path_pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[A-Za-z_]+\})", template)
    regex = "".join(
        f"(?P<{part[1:-1]}>[^/]+)" if part.startswith("{") else re.escape(part) for part in parts
    )
    return re.compile(f"^{regex}$")


def _strict(definitions: dict[str, Any]) -> dict[str, Any]:
    """The definitions with ``additionalProperties: false`` on each that lists its
    properties (the module's note)."""
    strict = copy.deepcopy(definitions)
    for schema in strict.values():
        if isinstance(schema, dict) and "properties" in schema:
            schema.setdefault("additionalProperties", False)
    return strict


class ConnectorSpec:
    """The description's operations, and checks of requests and answers against it."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.definitions = _strict(document["definitions"])
        self._checks = SchemaCheck(self._new_validator)
        from .cards import CardCheck

        self.cards = CardCheck()
        self.operations = [
            Operation(spec["operationId"], method.upper(), template, _path_pattern(template), spec)
            for template, item in document["paths"].items()
            for method, spec in item.items()
            if isinstance(spec, dict) and "operationId" in spec
        ]

    def operation(self, method: str, path: str) -> tuple[Operation, dict[str, str]]:
        """The operation ``method path`` (below the service URL) is, and its path values."""
        found_path = False
        for operation in self.operations:
            match = operation.pattern.match(path)
            if match is None:
                continue
            found_path = True
            if operation.method == method.upper():
                return operation, match.groupdict()
        if found_path:
            raise SpecViolation("The requested resource does not support the method", status=405)
        raise SpecViolation("No route matches the request", code="NotFound", status=404)

    def check_body(self, operation: Operation, body: Any) -> dict[str, Any]:
        schema = operation.body_schema()
        if schema is None:
            return {}
        if not isinstance(body, dict):
            raise SpecViolation("the body must be a JSON object")
        problem = self.problem(schema, body)
        if problem is not None:
            raise SpecViolation(problem)
        return body

    def check_response(self, operation: Operation, status: int, body: Any) -> str | None:
        schema = operation.response_schema(status)
        return None if schema is None else self.problem(schema, body)

    def check_cards(self, body: Any) -> str | None:
        """Why an Adaptive Card attached to an activity the bot sends is not one Teams
        renders as sent (``cards.CardCheck``), else ``None``."""
        from .cards import CARD_CONTENT_TYPE

        attachments = body.get("attachments") if isinstance(body, dict) else None
        for index, attachment in enumerate(attachments or ()):
            if isinstance(attachment, dict) and attachment.get("contentType") == CARD_CONTENT_TYPE:
                problem = self.cards.problem(attachment.get("content"))
                if problem is not None:
                    return f"attachments/{index}: {problem}"
        return None

    def check_activity(self, activity: Any) -> str | None:
        """Why ``activity`` (one the fake sends the bot) is not an ``Activity``."""
        return self.problem({"$ref": "#/definitions/Activity"}, activity)

    def problem(self, schema: dict[str, Any], value: Any) -> str | None:
        return self._checks.problem(schema, value)

    def _new_validator(self, schema: dict[str, Any]) -> Any:
        """A draft-4 validator whose ``#/definitions/...`` references resolve in the description."""
        from jsonschema import Draft4Validator

        return Draft4Validator({**schema, "definitions": self.definitions})


@lru_cache(maxsize=1)
def load_spec() -> ConnectorSpec:
    text = resources.files(__package__).joinpath(SPEC_FILE).read_text(encoding="utf-8")
    return ConnectorSpec(json.loads(text))
