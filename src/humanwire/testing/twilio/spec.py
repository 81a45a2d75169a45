"""Twilio's published API description (``twilio_api_v2010.subset.json``, a subset of
twilio-oai, MIT licence beside it), used to refuse what Twilio would refuse.

Form bodies and queries arrive as strings; each value is turned into the type its schema
names (boolean ``true``/``false``, integer, number, arrays as repeated keys) and then
checked with ``jsonschema`` (enums, patterns, lengths, bounds); unknown parameters and
missing required ones are refused. The formats the description uses and ``jsonschema``
does not know are checked here: ``uri`` (absolute http(s) URL whose host has no
underscore, as the description's prose asks), ``twiml`` (a ``<Response>`` document),
``date-time`` (ISO 8601), ``iso-country-code``; items marked ``x-twilio.ignoreFormat``
are not format-checked. Answers are held to the response schemas with their
``date-time-rfc-2822`` dates (``check_response``).

This module knows the description only; which Twilio error code a refusal gets is the
fake's business (``SpecViolation.parameter`` / ``reason`` say what was wrong).
"""

from __future__ import annotations

import email.utils
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from importlib import resources
from typing import Any, Literal
from urllib.parse import urlparse

__all__ = ["Operation", "SpecViolation", "TwilioSpec", "load_spec"]

SPEC_FILE = "twilio_api_v2010.subset.json"

Reason = Literal["route", "method", "missing", "unknown", "repeated", "invalid", "format", "rule"]


class SpecViolation(Exception):
    """A request the description (or a rule Twilio states) refuses.

    ``code`` and ``status`` are what the fake answers (Twilio's error code and HTTP
    status); ``parameter`` names the parameter at fault and ``reason`` says how
    (``missing``, ``unknown``, ``invalid``, ``format``…), so the fake can pick the
    code Twilio uses for that parameter."""

    def __init__(
        self,
        message: str,
        *,
        code: int = 20001,
        status: int = 400,
        parameter: str | None = None,
        reason: Reason = "rule",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.parameter = parameter
        self.reason: Reason = reason


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

    @property
    def content_types(self) -> tuple[str, ...]:
        """The body encodings the operation takes (none: it takes no body)."""
        body = self.spec.get("requestBody")
        return tuple(body["content"]) if body else ()


_PLAIN_DROP = ("nullable", "format", "description", "x-twilio")


class TwilioSpec:
    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self._routes = [
            (re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", path) + "$"), path)
            for path in document["paths"]
        ]

    # -- lookups ------------------------------------------------------------------------
    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            schema = self.document["components"]["schemas"][name]
        return schema

    def operation(self, method: str, path: str) -> Operation:
        """The operation ``method path`` names, its path parameters checked; refuses an
        unknown path (404, 20404) and a method the path does not take (405, 20004)."""
        for pattern, template in self._routes:
            match = pattern.match(path)
            if match is None:
                continue
            item = self.document["paths"][template]
            spec = item.get(method.lower())
            if spec is None:
                raise SpecViolation(
                    f"{method} is not allowed on {template}",
                    code=20004,
                    status=405,
                    reason="method",
                )
            operation = Operation(method.upper(), template, match.groupdict(), spec)
            for parameter in spec.get("parameters", []):
                if parameter["in"] == "path":
                    value = operation.path_params.get(parameter["name"], "")
                    self._check(parameter["name"], value, self.resolve(parameter["schema"]))
            return operation
        raise SpecViolation(
            f"The requested resource {path} was not found",
            code=20404,
            status=404,
            reason="route",
        )

    def body_schema(self, operation: Operation) -> dict[str, Any] | None:
        body = operation.spec.get("requestBody")
        if body is None:
            return None
        content = body["content"].get("application/x-www-form-urlencoded")
        return None if content is None else self.resolve(content["schema"])

    # -- requests -------------------------------------------------------------------------
    def check_query(self, operation: Operation, items: Sequence[tuple[str, str]]) -> dict[str, Any]:
        """The query of a GET / DELETE: names, types, required ones; typed values back."""
        parameters = [p for p in operation.spec.get("parameters", []) if p["in"] == "query"]
        schemas = {p["name"]: self.resolve(p["schema"]) for p in parameters}
        required = [p["name"] for p in parameters if p.get("required")]
        return self._check_all(items, schemas, required)

    def check_body(self, operation: Operation, items: Sequence[tuple[str, str]]) -> dict[str, Any]:
        """A form body: names, types, required ones; typed values back (arrays as lists)."""
        schema = self.body_schema(operation)
        if schema is None:
            if items:
                raise SpecViolation(f"{operation.key} takes no parameters", reason="unknown")
            return {}
        properties = {k: self.resolve(v) for k, v in schema.get("properties", {}).items()}
        return self._check_all(items, properties, schema.get("required", ()))

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
                raise SpecViolation(f"Unknown parameter '{name}'", parameter=name, reason="unknown")
            if schema.get("type") == "array":
                values.setdefault(name, []).append(raw)
            elif name in values:
                raise SpecViolation(
                    f"Parameter '{name}' given more than once", parameter=name, reason="repeated"
                )
            else:
                values[name] = raw
        for name in required:
            if name not in values:
                raise SpecViolation(
                    f"A '{name}' parameter is required", parameter=name, reason="missing"
                )
        for name, raw in values.items():
            values[name] = self._check(name, raw, schemas[name])
        return values

    def _check(self, name: str, raw: Any, schema: dict[str, Any]) -> Any:
        import jsonschema  # the fake's extra: humanwire[twilio]

        value = self._coerce(name, raw, schema)
        plain = {k: v for k, v in schema.items() if k not in _PLAIN_DROP}
        items = self.resolve(plain["items"]) if isinstance(plain.get("items"), dict) else None
        if items is not None:
            plain["items"] = {k: v for k, v in items.items() if k not in _PLAIN_DROP}
        try:
            jsonschema.validate(value, plain)
        except jsonschema.ValidationError as exc:
            raise SpecViolation(
                f"Invalid '{name}': {exc.message}", parameter=name, reason="invalid"
            ) from None
        if isinstance(value, list) and items is not None:
            for one in value:
                self._check_format(name, one, items)
        else:
            self._check_format(name, value, schema)
        return value

    def _check_format(self, name: str, value: Any, schema: dict[str, Any]) -> None:
        fmt = schema.get("format")
        if not isinstance(value, str) or fmt is None:
            return
        if (schema.get("x-twilio") or {}).get("ignoreFormat"):
            return
        problem: str | None = None
        if fmt == "uri" and value:
            parsed = urlparse(value)
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                problem = "not an absolute http(s) URL"
            elif "_" in parsed.hostname:
                problem = "underscores are not allowed in the host name"
        elif fmt == "twiml":
            problem = twiml_problem(value)
        elif fmt == "date-time":
            try:
                datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                problem = "not an ISO 8601 date-time"
        elif fmt == "iso-country-code" and not re.fullmatch(r"[A-Z]{2}", value):
            problem = "not an ISO 3166-1 alpha-2 country code"
        if problem is not None:
            raise SpecViolation(f"Invalid '{name}': {problem}", parameter=name, reason="format")

    def _coerce(self, name: str, raw: Any, schema: dict[str, Any]) -> Any:
        kind = schema.get("type")
        if kind == "array":
            items = self.resolve(schema.get("items", {}))
            return [self._coerce(name, one, items) for one in raw]
        if kind == "boolean":
            if str(raw).lower() in ("true", "false"):
                return str(raw).lower() == "true"
            raise SpecViolation(
                f"Invalid '{name}': expected true or false", parameter=name, reason="invalid"
            )
        if kind == "integer":
            try:
                return int(raw)
            except ValueError:
                raise SpecViolation(
                    f"Invalid '{name}': expected an integer", parameter=name, reason="invalid"
                ) from None
        if kind == "number":
            try:
                return float(raw)
            except ValueError:
                raise SpecViolation(
                    f"Invalid '{name}': expected a number", parameter=name, reason="invalid"
                ) from None
        return raw

    # -- answers ---------------------------------------------------------------------------
    def check_response(self, operation: Operation, status: int, body: Any) -> None:
        """Holds an answer to the operation's response schema (the fake's own tests call
        this): types, enums, patterns, and RFC 2822 dates. Raises
        ``jsonschema.ValidationError``."""
        import jsonschema

        response = operation.spec["responses"].get(str(status))
        if response is None:
            raise SpecViolation(f"{operation.key} does not answer {status}")
        content = response.get("content", {}).get("application/json")
        if content is None:
            if body not in (None, b"", ""):
                raise SpecViolation(f"{operation.key} answers {status} without a body")
            return
        checker = jsonschema.FormatChecker(formats=())
        checker.checks("date-time-rfc-2822")(_is_rfc2822)
        jsonschema.validate(body, self._plain(content["schema"]), format_checker=checker)

    def _plain(self, schema: Any) -> Any:
        """A schema with ``$ref`` resolved and OpenAPI's ``nullable`` made JSON Schema."""
        if isinstance(schema, list):
            return [self._plain(s) for s in schema]
        if not isinstance(schema, dict):
            return schema
        schema = self.resolve(schema)
        out = {
            k: self._plain(v)
            for k, v in schema.items()
            if k not in ("description", "x-twilio", "nullable")
            and not (k == "format" and v != "date-time-rfc-2822")
        }
        if schema.get("nullable") and "type" in out:
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
        return out


def _is_rfc2822(value: object) -> bool:
    if not isinstance(value, str):
        return True
    try:
        return email.utils.parsedate_to_datetime(value) is not None
    except (TypeError, ValueError):
        return False


def twiml_problem(text: str) -> str | None:
    """Why ``text`` is not a TwiML document (None: it is one)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        return f"not well-formed XML ({exc})"
    if root.tag != "Response":
        return f"the root element is <{root.tag}>, not <Response>"
    return None


@lru_cache(maxsize=1)
def load_spec() -> TwilioSpec:
    """The description shipped beside this module, parsed once."""
    text = resources.files(__package__ or "humanwire.testing.twilio").joinpath(SPEC_FILE)
    return TwilioSpec(json.loads(text.read_text(encoding="utf-8")))
