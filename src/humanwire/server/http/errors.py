"""Every error the HTTP layer sends, in one place: docs/design.md's body
``{"error": {"code", "message", "field"}}`` with the status of its code."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from humanwire.types import ErrorBody, ErrorDetail, detail_from_validation_error

from ..errors import (
    InvalidRequest,
    InvalidToNumber,
    ProviderError,
    RateLimited,
    ServiceError,
    ServiceUnavailable,
    Unauthorized,
)
from ..store.commits import StoreUnavailable
from ..telemetry import current_request

__all__ = [
    "error_response",
    "exception_handlers",
    "service_error_from_validation",
    "service_error_response",
    "store_unavailable_response",
]

logger = logging.getLogger("humanwire.server")

# Starlette raises HTTPException for the routing errors; these are their codes.
_HTTP_CODES: Mapping[int, str] = {
    400: "invalid_request",
    401: "unauthorized",
    403: "account_suspended",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    410: "gone",
    413: "payload_too_large",
    429: "rate_limited",
    503: "unavailable",
}


def error_response(
    status: int,
    code: str,
    message: str,
    field: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    body = ErrorBody(error=ErrorDetail(code=code, message=message, field=field))
    # ``field`` stays in the body as null: clients read it without a key check.
    return JSONResponse(body.model_dump(mode="json", by_alias=True), status, headers=headers)


def service_error_response(exc: ServiceError) -> Response:
    headers: dict[str, str] = {}
    if isinstance(exc, Unauthorized):
        headers["WWW-Authenticate"] = 'Bearer realm="humanwire"'
    if isinstance(exc, (RateLimited, ServiceUnavailable, ProviderError)):
        headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after)))
    if isinstance(exc, ServiceUnavailable):
        # The service is stopping: the client's retry must open a new connection.
        headers["Connection"] = "close"
    return error_response(exc.status, exc.code, exc.message, exc.field, headers)


def store_unavailable_response(retry_after: float) -> Response:
    """503 for a request the database could not store (its disk full, the connection
    lost mid-commit): not done, not delivered; the client retries under its
    ``Idempotency-Key``. The reason is logged and shown by ``/readyz``, not here."""
    return error_response(
        503,
        "unavailable",
        "the database cannot store this request right now; retry with the same Idempotency-Key",
        headers={"Retry-After": str(max(1, math.ceil(retry_after)))},
    )


def service_error_from_validation(exc: ValidationError) -> ServiceError:
    """A body that failed its wire model, as the engine's error type for the same rule."""
    detail = detail_from_validation_error(exc)
    if detail.code == "invalid_to_number":
        return InvalidToNumber(detail.message, field=detail.field)
    return InvalidRequest(detail.message, field=detail.field)


async def _on_service_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ServiceError)
    return service_error_response(exc)


async def _on_store_unavailable(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StoreUnavailable)
    return store_unavailable_response(request.app.state.config.unavailable_retry_after)


async def _on_http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    status = exc.status_code
    if status == 404:
        message = f"no such endpoint: {request.method} {request.url.path}"
    elif status == 405:
        message = f"method {request.method} is not allowed on {request.url.path}"
    else:
        message = exc.detail
    code = _HTTP_CODES.get(status, "internal_error" if status >= 500 else "invalid_request")
    return error_response(status, code, message, None, exc.headers)


async def _on_client_disconnect(request: Request, exc: Exception) -> Response:
    # The client went away (or was closed at its body timeout) before its body was in:
    # nothing failed here, and the answer reaches nobody.
    route = getattr(request.scope.get("route"), "path", None) or request.url.path[:200]
    logger.debug("the client closed before its body was in: %s %s", request.method, route)
    return error_response(400, "invalid_request", "the connection closed before the body was in")


async def _on_unexpected(request: Request, exc: Exception) -> Response:
    # The route's template, not the path: form and reply links carry their token in it.
    route = getattr(request.scope.get("route"), "path", None) or request.url.path[:200]
    ctx = current_request()
    logger.error(
        "internal error on %s %s (request %s)",
        request.method,
        route,
        ctx.request_id if ctx is not None else "-",
        exc_info=exc,
    )
    return error_response(500, "internal_error", "internal error; the request was logged")


def exception_handlers() -> dict[Any, Any]:
    """For ``Starlette(exception_handlers=...)``. ``Exception`` lands in the outermost
    middleware, so even a failure in a middleware answers with the error body. A pydantic
    ``ValidationError`` is not mapped here: request bodies are validated (and mapped)
    before the engine runs, so one escaping a handler is a bug of ours, a 500."""
    return {
        ServiceError: _on_service_error,
        StoreUnavailable: _on_store_unavailable,
        HTTPException: _on_http_exception,
        ClientDisconnect: _on_client_disconnect,
        Exception: _on_unexpected,
    }
