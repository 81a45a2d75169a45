"""Discord's published REST description (discord/discord-api-spec, MIT, licence beside it),
used to refuse what Discord would refuse and to hold the fake's own answers to it.

``discord_openapi.subset.json`` (OpenAPI 3.1) keeps the operations a humanwire deployment
calls and every schema they reference, unmodified. A request must be an operation it
lists; its JSON body is held to the operation's request schema (JSON Schema 2020-12).
Two things the description does not say are added here:

- **Snowflakes as integers.** discord.py sends ids such as ``recipient_id`` as JSON
  integers; the description types snowflakes as strings, and Discord takes both. Integers
  are turned into strings before a body is checked (the description's known defect).
- **Limits written only in prose** (discord-api-docs, "Message Components", "Create
  Message"): content up to 2,000 characters; at most 5 action rows of at most 5 buttons;
  a ``custom_id`` of 1 to 100 characters, unique in its message; a button label up to 80;
  a modal's title up to 45 and at most 5 text inputs.

The interaction Discord POSTs to an app is not in the description (it covers REST only):
the fake builds those from the documentation, and holds the app's *answers* to them to
the schema of the interaction callback, as Discord does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from .._schema import SchemaCheck

__all__ = ["DiscordSpec", "Operation", "SpecViolation", "load_spec"]

SPEC_FILE = "discord_openapi.subset.json"

MAX_CONTENT = 2000
MAX_ROWS = 5
MAX_ROW_COMPONENTS = 5
MAX_CUSTOM_ID = 100
MAX_LABEL = 80
MAX_MODAL_TITLE = 45
MAX_MODAL_INPUTS = 5

_SNOWFLAKE_FLOOR = 2**32
"""Integers from here up are ids, not counts or flags (snowflakes are ~2**60)."""


class SpecViolation(Exception):
    """A request Discord refuses: ``code`` is Discord's JSON error code (50035 "Invalid
    Form Body", 0 for routing errors), ``status`` the HTTP status."""

    def __init__(self, message: str, *, code: int = 50035, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status

    def body(self) -> dict[str, Any]:
        """Discord's error object (``{"code", "message"}``)."""
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class Operation:
    """One operation of the description: its id, HTTP method, path template and spec."""

    operation_id: str
    method: str
    template: str
    pattern: re.Pattern[str]
    spec: dict[str, Any]

    @property
    def bot_token(self) -> bool:
        """Whether the operation needs ``Authorization: Bot <token>``: an empty
        requirement (``{}``) among its ``security`` means it may go without (webhook and
        interaction-callback routes are authorised by the token in their path)."""
        security = self.spec.get("security", ())
        return bool(security) and all(item for item in security)

    def request_schema(self) -> dict[str, Any] | None:
        body = self.spec.get("requestBody") or {}
        schema = body.get("content", {}).get("application/json", {}).get("schema")
        return schema if isinstance(schema, dict) else None

    def response_schema(self, status: int) -> dict[str, Any] | None:
        answer = self.spec.get("responses", {}).get(str(status)) or {}
        schema = answer.get("content", {}).get("application/json", {}).get("schema")
        return schema if isinstance(schema, dict) else None


def _path_pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[a-z_]+\})", template)
    regex = "".join(
        f"(?P<{part[1:-1]}>[^/]+)" if part.startswith("{") else re.escape(part) for part in parts
    )
    return re.compile(f"^{regex}$")


def snowflakes_as_strings(value: Any) -> Any:
    """``value`` with every integer id turned into its string (see the module's note)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value >= _SNOWFLAKE_FLOOR:
        return str(value)
    if isinstance(value, list):
        return [snowflakes_as_strings(item) for item in value]
    if isinstance(value, dict):
        return {key: snowflakes_as_strings(item) for key, item in value.items()}
    return value


class DiscordSpec:
    """The description's operations, and checks of requests and answers against it."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self._checks = SchemaCheck(self._new_validator)
        self.operations: list[Operation] = []
        for template, item in document["paths"].items():
            for method, spec in item.items():
                if isinstance(spec, dict) and "operationId" in spec:
                    self.operations.append(
                        Operation(
                            spec["operationId"],
                            method.upper(),
                            template,
                            _path_pattern(template),
                            spec,
                        )
                    )
        # "/users/@me" before "/users/{user_id}": a literal segment wins, as in Discord.
        self.operations.sort(key=lambda op: op.template.count("{"))

    # -- requests -----------------------------------------------------------------------
    def operation(self, method: str, path: str) -> tuple[Operation, dict[str, str]]:
        """The operation ``method path`` (under ``/api/v10``) is, and its path values."""
        found_path = False
        for operation in self.operations:
            match = operation.pattern.match(path)
            if match is None:
                continue
            found_path = True
            if operation.method == method.upper():
                return operation, match.groupdict()
        if found_path:
            raise SpecViolation("405: Method Not Allowed", code=0, status=405)
        raise SpecViolation("404: Not Found", code=0, status=404)

    def check_body(self, operation: Operation, body: Any) -> dict[str, Any]:
        """``body`` (ids as strings) if the operation's request schema takes it."""
        schema = operation.request_schema()
        if schema is None:
            return {}
        if not isinstance(body, dict):
            raise SpecViolation("Invalid Form Body: the body must be a JSON object")
        checked: dict[str, Any] = snowflakes_as_strings(body)
        problem = self.problem(schema, checked) or prose_limits(checked)
        if problem is not None:
            raise SpecViolation(f"Invalid Form Body: {problem}")
        return checked

    # -- answers ------------------------------------------------------------------------
    def check_response(self, operation: Operation, status: int, body: Any) -> str | None:
        """Why the fake's own answer does not fit the description (``None``: it does)."""
        schema = operation.response_schema(status)
        if schema is None:
            return None
        return self.problem(schema, body)

    def check_callback(self, body: Any) -> str | None:
        """Why an app's answer to an interaction is not an interaction callback Discord
        takes (``None``: it is one)."""
        operation = next(
            op for op in self.operations if op.operation_id == "create_interaction_response"
        )
        schema = operation.request_schema()
        assert schema is not None
        if not isinstance(body, dict):
            return "an interaction's answer must be a JSON object"
        body = snowflakes_as_strings(body)
        return self.problem(schema, body) or prose_limits(body.get("data") or {})

    def problem(self, schema: dict[str, Any], value: Any) -> str | None:
        return self._checks.problem(schema, value)

    def _new_validator(self, schema: dict[str, Any]) -> Any:
        """A 2020-12 validator whose ``#/components/...`` references resolve in the description."""
        from jsonschema import Draft202012Validator

        return Draft202012Validator({**schema, "components": self.document["components"]})


def prose_limits(body: dict[str, Any]) -> str | None:
    """The first documented limit ``body`` (a message or a modal) breaks, else ``None``."""
    content = body.get("content")
    if isinstance(content, str) and len(content) > MAX_CONTENT:
        return f"content: at most {MAX_CONTENT} characters"
    rows = body.get("components")
    if not isinstance(rows, list):
        return None
    is_modal = "title" in body
    if is_modal and len(str(body["title"])) > MAX_MODAL_TITLE:
        return f"title: at most {MAX_MODAL_TITLE} characters"
    if len(rows) > (MAX_MODAL_INPUTS if is_modal else MAX_ROWS):
        return f"components: at most {MAX_MODAL_INPUTS if is_modal else MAX_ROWS} rows"
    seen: set[str] = set()
    for row in rows:
        children = row.get("components", []) if isinstance(row, dict) else []
        if len(children) > MAX_ROW_COMPONENTS:
            return f"components: at most {MAX_ROW_COMPONENTS} in an action row"
        for child in children:
            if not isinstance(child, dict):
                continue
            custom_id = child.get("custom_id")
            if custom_id is not None:
                if not 1 <= len(str(custom_id)) <= MAX_CUSTOM_ID:
                    return f"custom_id: 1 to {MAX_CUSTOM_ID} characters"
                if custom_id in seen:
                    return f"custom_id {custom_id!r} is not unique in the message"
                seen.add(str(custom_id))
            label = child.get("label")
            if isinstance(label, str) and len(label) > MAX_LABEL:
                return f"label: at most {MAX_LABEL} characters"
    return None


@lru_cache(maxsize=1)
def load_spec() -> DiscordSpec:
    text = resources.files(__package__).joinpath(SPEC_FILE).read_text(encoding="utf-8")
    return DiscordSpec(json.loads(text))
