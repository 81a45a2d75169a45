"""Standing approvals (``POST /approvals/grants``): "approve ``deploy`` where ``service`` =
``payments-api`` for 2 hours". A grant names one action and a match on its arguments; a
new approval request whose action it covers is approved at once (``via: "grant"``).

A match maps an argument's name to one of three forms:

- a JSON scalar (a string, number, boolean or null): the argument equals it exactly, as
  JSON (``1`` and ``1.0`` are equal, ``1`` and ``true`` are not); an argument holding an
  array or an object is never covered by a value;
- ``{"oneOf": [v1, v2, ...]}``: the argument equals one of these values (1 to
  ``MAX_ONE_OF``);
- ``{"prefix": "..."}``: the argument is a string that starts with it.

Every argument the match names must be present and match; arguments it does not name may
hold anything. Matching is linear in the match's size: no regular expression, ever.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import Field, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from ._base import RequestModel, ResponseModel, Timestamp

__all__ = [
    "GRANT_ID",
    "MATCH_SCHEMA",
    "MAX_GRANT_VALUE_CHARS",
    "MAX_MATCH_ENTRIES",
    "MAX_ONE_OF",
    "MAX_PREFIX",
    "Grant",
    "GrantCreateRequest",
    "GrantList",
    "canonical",
    "check_match",
    "covers",
]

MAX_MATCH_ENTRIES = 16
"""Arguments one grant's match names at most."""
MAX_ONE_OF = 32
"""Values one ``oneOf`` lists at most."""
MAX_PREFIX = 200
"""Characters of a ``prefix`` at most."""
MAX_GRANT_VALUE_CHARS = 2000
"""Characters of one exact value's canonical JSON at most."""
GRANT_ID = re.compile(r"grt_[A-Za-z0-9_-]{1,64}")
_PERSON = re.compile(r"per_[A-Za-z0-9_-]{1,64}")
_ARGUMENT = re.compile(r"[^\x00-\x1f\x7f]{1,200}")


_EXACT_SCHEMA: dict[str, Any] = {"type": ["string", "number", "boolean", "null"]}
MATCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": 'Each argument named: a JSON value (equal exactly), {"oneOf": [values]} '
    'or {"prefix": "text"}.',
    "minProperties": 1,
    "maxProperties": MAX_MATCH_ENTRIES,
    "propertyNames": {"pattern": _ARGUMENT.pattern.join("^$")},
    "additionalProperties": {
        "anyOf": [
            _EXACT_SCHEMA,
            {
                "type": "object",
                "properties": {
                    "oneOf": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": MAX_ONE_OF,
                        "items": _EXACT_SCHEMA,
                    }
                },
                "required": ["oneOf"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {
                    "prefix": {"type": "string", "minLength": 1, "maxLength": MAX_PREFIX}
                },
                "required": ["prefix"],
                "additionalProperties": False,
            },
        ]
    },
}
"""The match as JSON Schema states it (its values' size as JSON, ``MAX_GRANT_VALUE_CHARS``,
it cannot)."""


def _invalid(message: str, field: str) -> PydanticCustomError:
    return PydanticCustomError("invalid_request", message, {"field": field})


def canonical(value: Any) -> bytes:
    """``value``'s canonical JSON (RFC 8785, as the action digest): two values are equal
    as JSON when these bytes are. ``ValueError`` for what JSON cannot hold."""
    import rfc8785  # lazily: only approvals need it

    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError) as exc:
        raise ValueError(f"not plain JSON: {exc}") from None


def _exact(value: Any, field: str) -> bytes:
    if isinstance(value, (dict, list)):
        raise _invalid("an exact value is a string, number, boolean or null", field)
    try:
        text = canonical(value)
    except ValueError as exc:
        raise _invalid(str(exc), field) from None
    if len(text) > MAX_GRANT_VALUE_CHARS:
        raise _invalid(f"a value is at most {MAX_GRANT_VALUE_CHARS} characters as JSON", field)
    return text


def check_match(match: dict[str, Any]) -> None:
    """Refuses a match that is not one of the three forms (``PydanticCustomError`` naming
    ``match.<argument>``)."""
    if not match:
        raise _invalid("a grant's match names at least one argument", "match")
    if len(match) > MAX_MATCH_ENTRIES:
        raise _invalid(f"a grant's match names at most {MAX_MATCH_ENTRIES} arguments", "match")
    for name, form in match.items():
        field = f"match.{name}"
        if not _ARGUMENT.fullmatch(name):
            raise _invalid("an argument's name is 1 to 200 printable characters", "match")
        if not isinstance(form, dict):
            _exact(form, field)
            continue
        if set(form) == {"oneOf"}:
            values = form["oneOf"]
            if not isinstance(values, list) or not 1 <= len(values) <= MAX_ONE_OF:
                raise _invalid(f"oneOf is a list of 1 to {MAX_ONE_OF} exact values", field)
            for value in values:
                _exact(value, field)
        elif set(form) == {"prefix"}:
            prefix = form["prefix"]
            if not isinstance(prefix, str) or not 1 <= len(prefix) <= MAX_PREFIX:
                raise _invalid(f"prefix is a string of 1 to {MAX_PREFIX} characters", field)
        else:
            raise _invalid(
                'unknown match form: an object is {"oneOf": [...]} or {"prefix": "..."}', field
            )


def covers(match: dict[str, Any], arguments: dict[str, Any]) -> bool:
    """Whether ``arguments`` satisfy every entry of ``match`` (a checked one): exact JSON
    equality, one of exact values, or a string prefix. Linear in their size."""
    for name, form in match.items():
        if name not in arguments:
            return False
        value = arguments[name]
        if isinstance(form, dict) and "prefix" in form:
            if not isinstance(value, str) or not value.startswith(form["prefix"]):
                return False
            continue
        if isinstance(value, (dict, list)):
            return False  # an exact value is a scalar
        try:
            given = canonical(value)
        except ValueError:
            return False
        wanted = form["oneOf"] if isinstance(form, dict) else [form]
        if not any(canonical(each) == given for each in wanted):
            return False
    return True


class GrantCreateRequest(RequestModel):
    """``POST /approvals/grants``: approve requests about ``actionName`` whose arguments
    ``match`` covers, until ``expiresAt``, on behalf of the person ``grantedBy``."""

    action_name: str = Field(min_length=1, max_length=200)
    match: Annotated[dict[str, Any], WithJsonSchema(MATCH_SCHEMA)]
    expires_at: datetime
    """When the grant stops covering: in the future, at most the service's ``max_grant``
    from now."""
    granted_by: Annotated[str, Field(pattern=_PERSON.pattern.join("^$"))]
    """The person (``per_…``) of the account the grant decides as."""

    @model_validator(mode="after")
    def _checked(self) -> GrantCreateRequest:
        check_match(self.match)
        return self


class Grant(ResponseModel):
    """A standing approval as it is stored."""

    grant_id: str
    action_name: str
    match: dict[str, Any]
    expires_at: Timestamp
    granted_by: str
    created_at: Timestamp
    revoked_at: Timestamp | None = None


class GrantList(ResponseModel):
    """``GET /approvals/grants``: the account's live grants (not expired, not revoked), the
    oldest first."""

    grants: list[Grant]
