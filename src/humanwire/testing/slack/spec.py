"""Slack's published API descriptions (slack-api-specs, MIT licence beside them), used to
refuse what Slack would refuse and to hold the fake's own answers and events to them.

- ``slack_web_openapi_v2.subset.json`` (Swagger 2.0): the Web API methods the service
  calls. A request's parameters (query, form body or JSON body together) must be ones the
  method declares, required ones present, each of its declared type; ``blocks`` /
  ``attachments`` are declared as strings (form encoding carries JSON text) and arrive as
  arrays in a JSON body, both are parsed and held to the ``blocks`` definition. The
  method's ``security`` names the scopes of which the token needs one. Answers are checked
  against the method's response schemas (``check_response``).
- ``slack_common_event_wrapper_schema.json`` and ``slack_events_api_async_v1.json``
  (AsyncAPI): every Events API envelope the fake sends is held to the wrapper schema,
  and its event to a topic the description lists (``check_event``).

This module knows the descriptions only; which Slack error a refusal gets is decided
here (``SpecViolation.error``), which ones are the caller's fault is the fake's business.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = ["CHANNEL_TOPICS", "GENERIC_ERRORS", "SlackSpec", "SpecViolation", "load_spec"]

WEB_FILE = "slack_web_openapi_v2.subset.json"
WRAPPER_FILE = "slack_common_event_wrapper_schema.json"
EVENTS_FILE = "slack_events_api_async_v1.json"

GENERIC_ERRORS = frozenset(
    {
        "ratelimited",
        "missing_scope",
        "invalid_arguments",
        "invalid_blocks",
        "not_allowed_token_type",
        "token_revoked",
        "user_not_in_channel",
        "bad_redirect_uri",
        "invalid_code",
        "code_already_used",
        "invalid_client_id",
        "bad_client_secret",
        "unknown_method",
    }
)
"""Errors Slack's documentation lists for every method (or for OAuth) that the
description's per-method enums leave out."""

_JSON_STRING_PARAMS = ("blocks", "attachments")


class SpecViolation(Exception):
    """A request Slack would refuse: ``error`` is the code Slack answers
    (``invalid_arg_name``, ``invalid_arguments``, ``invalid_blocks``…), ``status`` the
    HTTP status (Slack answers 200 with ``ok: false`` for nearly everything)."""

    def __init__(self, error: str, message: str, *, status: int = 200) -> None:
        super().__init__(message)
        self.error = error
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Method:
    name: str
    http_methods: tuple[str, ...]
    spec: dict[str, Any]

    @property
    def parameters(self) -> dict[str, dict[str, Any]]:
        return {p["name"]: p for p in self.spec.get("parameters", ())}

    @property
    def scopes(self) -> tuple[str, ...]:
        """Scopes of which the token needs one (empty: none needed)."""
        found: list[str] = []
        for requirement in self.spec.get("security", ()):
            found.extend(requirement.get("slackAuth", ()))
        return tuple(scope for scope in found if scope != "none")


class SlackSpec:
    def __init__(
        self, web: dict[str, Any], wrapper: dict[str, Any], events: dict[str, Any]
    ) -> None:
        self.web = web
        self.wrapper = wrapper
        self.events = events
        self.known_scopes = frozenset(web["securityDefinitions"]["slackAuth"]["scopes"])
        self.topics = frozenset(events["topics"])

    # -- requests -----------------------------------------------------------------------
    def method(self, name: str) -> Method:
        item = self.web["paths"].get(f"/{name}")
        if item is None:
            raise SpecViolation("unknown_method", f"{name} is not a Web API method", status=404)
        [(verb, spec)] = list(item.items())
        # Slack takes GET or POST for every method (api.slack.com/web "Basics").
        return Method(name, ("GET", "POST") if verb in ("get", "post") else (verb,), spec)

    def check_params(
        self, method: Method, values: dict[str, Any], *, json_body: bool
    ) -> dict[str, Any]:
        """``values`` (the token already taken out) turned into their declared types;
        refuses unknown, missing and ill-typed parameters."""
        declared = method.parameters
        out: dict[str, Any] = {}
        for name, value in values.items():
            parameter = declared.get(name)
            if parameter is None or name == "token":
                raise SpecViolation("invalid_arg_name", f"{method.name} takes no {name!r}")
            out[name] = self._typed(method, parameter, value, json_body=json_body)
        for name, parameter in declared.items():
            if parameter.get("required") and name != "token" and name not in out:
                raise SpecViolation("invalid_arguments", f"{method.name} needs {name!r}")
        return out

    def _typed(
        self, method: Method, parameter: dict[str, Any], value: Any, *, json_body: bool
    ) -> Any:
        name, kind = parameter["name"], parameter.get("type", "string")
        bad = SpecViolation("invalid_arguments", f"{method.name}: {name!r} must be a {kind}")
        if name in _JSON_STRING_PARAMS:
            return self._json_array(method, name, value)
        if kind == "boolean":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
                return value.lower() in ("true", "1")
            raise bad
        if kind in ("integer", "number"):
            if isinstance(value, bool):
                raise bad
            if isinstance(value, (int, float)) and json_body:
                return value
            try:
                return int(value) if kind == "integer" else float(value)
            except (TypeError, ValueError):
                raise bad from None
        if not isinstance(value, str):
            raise bad
        return value

    def _json_array(self, method: Method, name: str, value: Any) -> list[Any]:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise SpecViolation("invalid_arguments", f"{name} is not JSON") from None
        if not isinstance(value, list):
            raise SpecViolation("invalid_arguments", f"{method.name}: {name} must be an array")
        if name == "blocks":
            errors = self._errors({"$ref": "#/definitions/blocks"}, value)
            if errors:
                raise SpecViolation("invalid_blocks", f"blocks: {errors[0]}")
        return value

    # -- answers and events ------------------------------------------------------------
    def check_response(self, name: str, body: dict[str, Any]) -> list[str]:
        """What is wrong with an answer of ``name`` (nothing: an empty list)."""
        item = self.web["paths"].get(f"/{name}")
        if item is None:
            return [] if body == {"ok": False, "error": "unknown_method"} else ["unknown method"]
        [(_, spec)] = list(item.items())
        responses = spec["responses"]
        if body.get("ok") is True:
            return self._errors(responses["200"]["schema"], body)
        schema = dict(responses["default"]["schema"])
        error = body.get("error")
        enum = schema.get("properties", {}).get("error", {}).get("enum")
        if enum is not None and error in GENERIC_ERRORS:
            schema["properties"] = {**schema["properties"], "error": {"type": "string"}}
        if body.get("needed") is not None or body.get("response_metadata") is not None:
            schema["additionalProperties"] = True  # missing_scope's needed / provided
        return self._errors(schema, body)

    def check_event(self, envelope: dict[str, Any]) -> list[str]:
        """What is wrong with an Events API envelope (nothing: an empty list)."""
        import jsonschema

        validator = jsonschema.Draft7Validator(self.wrapper)
        problems = [error.message for error in validator.iter_errors(envelope)]
        event = envelope.get("event") or {}
        topic = str(event.get("type", "")).replace("_", ".")
        if event.get("type") == "message" and event.get("channel_type"):
            topic = f"message.{CHANNEL_TOPICS.get(event['channel_type'], '?')}"
        if topic not in self.topics:
            problems.append(f"no Events API topic {topic!r}")
        return problems

    def _errors(self, schema: dict[str, Any], value: Any) -> list[str]:
        import jsonschema

        document = {**schema, "definitions": self.web["definitions"]}
        validator = jsonschema.Draft4Validator(document)
        return [
            f"{'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}"
            for error in validator.iter_errors(value)
        ]


CHANNEL_TOPICS = {"im": "im", "channel": "channels", "group": "groups", "mpim": "mpim"}


def _load(name: str) -> dict[str, Any]:
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@lru_cache(maxsize=1)
def load_spec() -> SlackSpec:
    return SlackSpec(_load(WEB_FILE), _load(WRAPPER_FILE), _load(EVENTS_FILE))
