"""Twilio's published API description (``twilio_api_v2010.subset.json``, a subset of
twilio-oai, MIT licence beside it), used to refuse what Twilio would refuse.

Form bodies and queries arrive as strings; each value is turned into the type its schema
names (boolean, integer, number, array of repeated keys) and then checked with
``jsonschema``; unknown parameters and missing required ones are refused. Formats the
description uses and ``jsonschema`` does not know are checked here (``uri``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any
from urllib.parse import urlparse

__all__ = ["Operation", "SpecViolation", "TwilioSpec", "load_spec"]

SPEC_FILE = "twilio_api_v2010.subset.json"


class SpecViolation(Exception):
    """A request the description refuses; ``code`` is the Twilio error code sent back."""

    def __init__(self, message: str, *, code: int = 20001, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    path_params: dict[str, str]
    spec: dict[str, Any]

    @property
    def key(self) -> str:
        """``POST /Messages.json`` (the part after the account)."""
        return f"{self.method} {self.template.split('{AccountSid}', 1)[-1]}"


class TwilioSpec:
    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self._routes = [
            (re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", path) + "$"), path)
            for path in document["paths"]
        ]

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            schema = self.document["components"]["schemas"][name]
        return schema

    def operation(self, method: str, path: str) -> Operation:
        for pattern, template in self._routes:
            match = pattern.match(path)
            if match is None:
                continue
            item = self.document["paths"][template]
            spec = item.get(method.lower())
            if spec is None:
                raise SpecViolation(f"{method} is not allowed on {template}", status=405)
            operation = Operation(method.upper(), template, match.groupdict(), spec)
            for parameter in spec.get("parameters", []):
                if parameter["in"] == "path":
                    value = operation.path_params.get(parameter["name"], "")
                    self._check(parameter["name"], value, self.resolve(parameter["schema"]))
            return operation
        raise SpecViolation(f"the resource {path} was not found", code=20404, status=404)

    def check_query(self, operation: Operation, items: Sequence[tuple[str, str]]) -> dict[str, Any]:
        schemas = {
            p["name"]: self.resolve(p["schema"])
            for p in operation.spec.get("parameters", [])
            if p["in"] == "query"
        }
        return self._check_all(items, schemas, required=())

    def check_body(self, operation: Operation, items: Sequence[tuple[str, str]]) -> dict[str, Any]:
        body = operation.spec.get("requestBody")
        if body is None:
            if items:
                raise SpecViolation(f"{operation.key} takes no parameters")
            return {}
        content = body["content"].get("application/x-www-form-urlencoded")
        if content is None:
            raise SpecViolation(f"{operation.key} takes no form body")
        schema = self.resolve(content["schema"])
        properties = {k: self.resolve(v) for k, v in schema.get("properties", {}).items()}
        return self._check_all(items, properties, required=schema.get("required", ()))

    def _check_all(
        self,
        items: Sequence[tuple[str, str]],
        schemas: dict[str, dict[str, Any]],
        required: Sequence[str],
    ) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for name, raw in items:
            schema = schemas.get(name)
            if schema is None:
                raise SpecViolation(f"unknown parameter {name!r}")
            if schema.get("type") == "array":
                values.setdefault(name, []).append(raw)
            elif name in values:
                raise SpecViolation(f"parameter {name!r} given more than once")
            else:
                values[name] = raw
        for name in required:
            if name not in values:
                code = 21604 if name == "To" else 21603 if name == "From" else 20001
                raise SpecViolation(f"A '{name}' parameter is required", code=code)
        for name, raw in values.items():
            values[name] = self._check(name, raw, schemas[name])
        return values

    def _check(self, name: str, raw: Any, schema: dict[str, Any]) -> Any:
        value = self._coerce(name, raw, schema)
        import jsonschema

        plain = {k: v for k, v in schema.items() if k not in ("nullable", "format", "description")}
        if plain.get("type") == "array" and isinstance(plain.get("items"), dict):
            plain["items"] = {
                k: v
                for k, v in self.resolve(plain["items"]).items()
                if k not in ("nullable", "format", "description")
            }
        try:
            jsonschema.validate(value, plain)
        except jsonschema.ValidationError as exc:
            raise SpecViolation(f"invalid {name!r}: {exc.message}") from None
        if schema.get("format") == "uri" and isinstance(value, str) and value:
            parsed = urlparse(value)
            if parsed.scheme not in ("http", "https") or not parsed.netloc:
                raise SpecViolation(f"invalid {name!r}: not a URL", code=21609)
            if "_" in (parsed.hostname or ""):
                raise SpecViolation(f"invalid {name!r}: underscores are not allowed in hosts")
        return value

    def _coerce(self, name: str, raw: Any, schema: dict[str, Any]) -> Any:
        kind = schema.get("type")
        if kind == "array":
            items = self.resolve(schema.get("items", {}))
            return [self._coerce(name, one, items) for one in raw]
        if kind == "boolean":
            if str(raw).lower() in ("true", "false"):
                return str(raw).lower() == "true"
            raise SpecViolation(f"invalid {name!r}: expected true or false")
        if kind == "integer":
            try:
                return int(raw)
            except ValueError:
                raise SpecViolation(f"invalid {name!r}: expected an integer") from None
        if kind == "number":
            try:
                return float(raw)
            except ValueError:
                raise SpecViolation(f"invalid {name!r}: expected a number") from None
        return raw

    def check_response(self, operation: Operation, status: int, body: Any) -> None:
        """The fake's own answers, held to the description (its tests call this)."""
        import jsonschema

        response = operation.spec["responses"].get(str(status))
        if response is None:
            raise SpecViolation(f"{operation.key} does not answer {status}")
        content = response.get("content", {}).get("application/json")
        if content is None:
            return
        schema = self._plain(content["schema"])
        jsonschema.validate(body, schema)

    def _plain(self, schema: Any) -> Any:
        """A schema with ``$ref`` resolved and OpenAPI's ``nullable`` made JSON Schema."""
        if isinstance(schema, list):
            return [self._plain(s) for s in schema]
        if not isinstance(schema, dict):
            return schema
        schema = self.resolve(schema)
        out = {k: self._plain(v) for k, v in schema.items() if k not in ("format", "description")}
        out.pop("nullable", None)
        if schema.get("nullable") and "type" in out:
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
        return out


@lru_cache(maxsize=1)
def load_spec() -> TwilioSpec:
    text = resources.files(__package__).joinpath(SPEC_FILE).read_text(encoding="utf-8")
    return TwilioSpec(json.loads(text))
