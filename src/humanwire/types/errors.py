"""The error body every failed request carries."""

from __future__ import annotations

from typing import Literal

from pydantic import ValidationError

from ._base import ResponseModel

__all__ = ["ErrorBody", "ErrorCode", "ErrorDetail", "detail_from_validation_error", "field_path"]

ErrorCode = Literal[
    "invalid_request",
    "invalid_to_number",
    "unauthorized",
    "account_suspended",
    "not_found",
    "method_not_allowed",
    "gone",
    "conflict",
    "already_consumed",
    "not_approved",
    "payload_too_large",
    "rate_limited",
    "timeout",
    "internal_error",
    "unavailable",
    "provider_error",
]


class ErrorDetail(ResponseModel):
    code: str
    message: str
    field: str | None = None


class ErrorBody(ResponseModel):
    """``{"error": {"code", "message", "field"}}``"""

    error: ErrorDetail


# Location parts that name a union branch, not a property of the body.
_UNION_TAGS = frozenset({"shared", "own_number"})


def field_path(loc: tuple[int | str, ...], extra: str | None = None) -> str | None:
    """``("fields", 2, "validations", 0, "pattern")`` → ``fields[2].validations[0].pattern``."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in _UNION_TAGS:
            continue
        else:
            path += f".{part}" if path else str(part)
    if extra:
        path = f"{path}.{extra}" if path else extra
    return path or None


def detail_from_validation_error(exc: ValidationError) -> ErrorDetail:
    """The first error of a pydantic ``ValidationError`` as docs/design.md's error detail.

    Recipients that are malformed or unroutable become ``invalid_to_number``; every other
    rule ``invalid_request``, with ``field`` naming the offending path.
    """
    first = exc.errors(include_url=False)[0]
    ctx = first.get("ctx") or {}
    extra = ctx.get("field") if isinstance(ctx.get("field"), str) else None
    field = field_path(tuple(first["loc"]), extra)
    if first["type"] == "invalid_to_number":
        return ErrorDetail(code="invalid_to_number", message="invalid to number", field=field)
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = f"unknown property {field!r}"
    elif first["type"] == "missing":
        message = f"{field} is required"
    elif field and not message.startswith(field.split(".")[-1].split("[")[0]):
        message = f"{field}: {message}"
    return ErrorDetail(code="invalid_request", message=message, field=field)
