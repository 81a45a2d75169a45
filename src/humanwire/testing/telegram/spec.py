"""Telegram's Bot API as published (``telegram_bot_api.subset.json``: a subset of
PaulSonOfLars/telegram-bot-api-spec, scraped from core.telegram.org/bots/api; MIT, licence
beside it), used to refuse what Telegram would refuse and to hold the fake's own updates
to it.

The description is not OpenAPI: ``methods`` and ``types``, each with ``fields`` of
``{name, types, required, description}``, types written as ``Integer``, ``String``,
``Boolean``, ``Float``, ``True``, ``Array of X`` or a type's name (types it references
but does not list, ``x-opaque-types``, are taken as any object). A request's parameters
(query, form body or JSON body) must be ones the method declares, required ones present,
each of a declared type; a form body carries objects and arrays as JSON text, parsed
here. What the description states only in prose is written out below (``PROSE_LIMITS``):
``callback_data`` 1–64 **bytes**, a message's text 1–4096 characters, a callback answer's
text at most 200, a webhook's ``secret_token`` 1–256 of ``A-Za-z0-9_-``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = ["BotApiSpec", "SpecViolation", "load_spec"]

SPEC_FILE = "telegram_bot_api.subset.json"

_SECRET_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,256}")


class SpecViolation(Exception):
    """A request Telegram would refuse: ``status`` and ``description`` as the Bot API
    answers (``{"ok": false, "error_code": 400, "description": "Bad Request: …"}``)."""

    def __init__(self, description: str, *, status: int = 400) -> None:
        super().__init__(description)
        self.description = description
        self.status = status


def _text_length(low: int, high: int) -> Callable[[str, Any], str | None]:
    def check(name: str, value: Any) -> str | None:
        if isinstance(value, str) and not low <= len(value) <= high:
            return f"{name} must be {low}-{high} characters (got {len(value)})"
        return None

    return check


def _bytes_length(low: int, high: int) -> Callable[[str, Any], str | None]:
    def check(name: str, value: Any) -> str | None:
        if isinstance(value, str) and not low <= len(value.encode()) <= high:
            return f"{name} must be {low}-{high} bytes (got {len(value.encode())})"
        return None

    return check


def _secret_token(name: str, value: Any) -> str | None:
    if isinstance(value, str) and not _SECRET_TOKEN.fullmatch(value):
        return f"{name} must be 1-256 characters of A-Z, a-z, 0-9, _ and -"
    return None


PROSE_LIMITS: Mapping[tuple[str, str], Callable[[str, Any], str | None]] = {
    ("sendMessage", "text"): _text_length(1, 4096),
    ("editMessageText", "text"): _text_length(1, 4096),
    ("answerCallbackQuery", "text"): _text_length(0, 200),
    ("setWebhook", "secret_token"): _secret_token,
    ("InlineKeyboardButton", "callback_data"): _bytes_length(1, 64),
    ("InlineKeyboardButton", "text"): _text_length(1, 4096),
}
"""Rules the description writes only in its fields' descriptions, by (method or type,
field)."""

_SCALARS: Mapping[str, Callable[[Any], bool]] = {
    "Integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "String": lambda v: isinstance(v, str),
    "Boolean": lambda v: isinstance(v, bool),
    "True": lambda v: v is True,
    "Float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}


@dataclass(frozen=True)
class BotApiSpec:
    """The description, loaded: ``check_params`` for requests, ``check_object`` for the
    fake's own updates and answers."""

    methods: Mapping[str, Mapping[str, Any]]
    types: Mapping[str, Mapping[str, Any]]
    opaque: frozenset[str]
    version: str

    def method(self, name: str) -> Mapping[str, Any]:
        found = self.methods.get(name)
        if found is None:
            raise SpecViolation("Not Found", status=404)
        return found

    # -- requests -----------------------------------------------------------------------
    def check_params(self, name: str, values: Mapping[str, Any], *, form: bool) -> dict[str, Any]:
        """``values`` as the method takes them (a form's JSON-text objects parsed,
        its numbers and booleans read), or ``SpecViolation``."""
        method = self.method(name)
        fields = {f["name"]: f for f in method.get("fields", ())}
        unknown = sorted(set(values) - set(fields))
        if unknown:
            raise SpecViolation(f"Bad Request: {name} takes no parameter {unknown[0]!r}")
        params: dict[str, Any] = {}
        for field_name, spec in fields.items():
            if field_name not in values:
                if spec["required"]:
                    raise SpecViolation(f"Bad Request: {field_name} is empty")
                continue
            value = values[field_name]
            if form:
                value = _from_form(value, spec["types"])
            problem = self._problem(field_name, value, spec["types"])
            if problem is None:
                limit = PROSE_LIMITS.get((name, field_name))
                problem = limit(field_name, value) if limit else None
            if problem is not None:
                raise SpecViolation(f"Bad Request: {problem}")
            params[field_name] = value
        return params

    # -- objects ------------------------------------------------------------------------
    def check_object(self, type_name: str, value: Any, where: str = "") -> list[str]:
        """What is wrong with ``value`` as a ``type_name`` (empty: nothing)."""
        problem = self._problem(where or type_name, value, [type_name])
        return [problem] if problem else []

    def _problem(self, where: str, value: Any, types: list[str]) -> str | None:
        problems = [self._one(where, value, declared) for declared in types]
        if any(problem is None for problem in problems):
            return None
        return problems[0]

    def _one(self, where: str, value: Any, declared: str) -> str | None:
        if declared.startswith("Array of "):
            if not isinstance(value, list):
                return f"{where} must be an array"
            inner = declared.removeprefix("Array of ")
            for i, item in enumerate(value):
                problem = self._one(f"{where}[{i}]", item, inner)
                if problem is not None:
                    return problem
            return None
        scalar = _SCALARS.get(declared)
        if scalar is not None:
            return None if scalar(value) else f"{where} must be of type {declared}"
        if declared == "InputFile" or declared in self.opaque:
            return None if isinstance(value, (dict, str)) else f"{where} must be {declared}"
        described = self.types.get(declared)
        if described is None:
            return f"{where}: {declared} is no type of the description"
        if described.get("subtypes"):
            found = [self._one(where, value, sub) for sub in described["subtypes"]]
            return None if any(p is None for p in found) else found[0]
        if not isinstance(value, dict):
            return f"{where} must be a {declared} object"
        fields = {f["name"]: f for f in described.get("fields", ())}
        unknown = sorted(set(value) - set(fields))
        if unknown:
            return f"{where}: {declared} has no field {unknown[0]!r}"
        for field_name, spec in fields.items():
            if field_name not in value:
                if spec["required"]:
                    return f"{where}: {declared}.{field_name} is required"
                continue
            problem = self._problem(f"{where}.{field_name}", value[field_name], spec["types"])
            if problem is None:
                limit = PROSE_LIMITS.get((declared, field_name))
                problem = limit(f"{where}.{field_name}", value[field_name]) if limit else None
            if problem is not None:
                return problem
        return None


def _from_form(value: Any, types: list[str]) -> Any:
    """A form field's text as the Bot API reads it: JSON for objects and arrays, numbers
    and booleans by their declared type, anything else as the string it is."""
    if not isinstance(value, str):
        return value
    if any(t not in ("String", "Integer", "Float", "Boolean", "True", "InputFile") for t in types):
        try:
            return json.loads(value)
        except ValueError:
            return value
    if "Integer" in types and re.fullmatch(r"-?[0-9]{1,19}", value):
        return int(value)
    if "Float" in types:
        try:
            return float(value)
        except ValueError:
            return value
    if "Boolean" in types or "True" in types:
        lowered = value.lower()
        if lowered in ("true", "1"):
            return True
        if lowered in ("false", "0"):
            return False
    return value


@lru_cache(maxsize=1)
def load_spec() -> BotApiSpec:
    raw = json.loads(resources.files(__package__).joinpath(SPEC_FILE).read_text("utf-8"))
    return BotApiSpec(
        methods=raw["methods"],
        types=raw["types"],
        opaque=frozenset(raw.get("x-opaque-types", ())),
        version=str(raw.get("version", "")),
    )
