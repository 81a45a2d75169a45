"""Request bodies: the size limit (for every route, pages included) and JSON parsing
into the wire models."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError
from pydantic_core import from_json
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import InvalidRequest, PayloadTooLarge
from .errors import error_response, service_error_from_validation

__all__ = ["BodyLimitMiddleware", "parse_json_body"]

T = TypeVar("T")


def _too_large(limit: int) -> str:
    return f"request body is larger than {limit} bytes"


class BodyLimitMiddleware:
    """Refuses a declared ``Content-Length`` over the limit before anything is read, and
    counts the bytes actually streamed (chunked bodies declare no length): past the
    limit ``receive`` raises ``PayloadTooLarge``, which the app turns into a 413."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_body_bytes
        declared = [v for k, v in scope["headers"] if k == b"content-length"]
        if declared:
            try:
                length = int(declared[0])
            except ValueError:
                length = -1
            if length < 0 or len(declared) > 1:
                response = error_response(400, "invalid_request", "invalid Content-Length")
                await response(scope, receive, send)
                return
            if length > limit:
                response = error_response(413, "payload_too_large", _too_large(limit))
                await response(scope, receive, send)
                return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise PayloadTooLarge(_too_large(limit))
            return message

        await self.app(scope, limited_receive, send)


def _is_json(content_type: str | None) -> bool:
    if content_type is None:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def _nul_at(value: Any, path: str = "") -> str | None:
    """The path (``fields[0].label``) of the first string, or object key, holding a NUL."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            inner = f"{path}.{key}" if path else str(key)
            if "\x00" in key:
                return path or inner
            found = _nul_at(item, inner)
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _nul_at(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def parse_json_body(raw: bytes, content_type: str | None, adapter: TypeAdapter[T]) -> T:
    """The body validated by its wire model, or the ``ServiceError`` that says why not:
    wrong content type, empty, not JSON, not an object, or failing a rule of the model."""
    if not raw.strip():
        raise InvalidRequest("a JSON object body is required")
    if not _is_json(content_type):
        raise InvalidRequest("Content-Type must be application/json")
    try:
        # pydantic's parser has a nesting limit; the stdlib one would hit RecursionError.
        data: Any = from_json(raw)
    except ValueError as exc:
        raise InvalidRequest(f"body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidRequest("body must be a JSON object")
    if b"\\u0000" in raw:  # rare: only then walk the body
        field = _nul_at(data)
        if field is not None:
            # No channel carries a NUL, and PostgreSQL's text cannot store one.
            raise InvalidRequest(f"{field} must not contain the NUL character", field=field)
    try:
        return adapter.validate_json(raw)
    except ValidationError as exc:
        raise service_error_from_validation(exc) from None
