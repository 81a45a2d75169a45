"""The exceptions humanwire raises.

A human who does not answer is never an error: the no-response text comes back as a
normal result. These are failures of the request itself::

    HumanWireError
    ├── APIConnectionError              the service could not be reached
    │   └── APITimeoutError             no answer within the (derived) timeout
    ├── APIResponseValidationError      a 2xx body that is not what the interface says
    ├── APIStatusError                  the service answered with an error status
    │   ├── BadRequestError             400
    │   │   ├── InvalidRequestError     400 invalid_request (also raised client-side)
    │   │   └── InvalidToNumberError    400 invalid_to_number (also raised client-side)
    │   ├── AuthenticationError         401 unauthorized
    │   ├── AccountSuspendedError       403 account_suspended
    │   ├── LiveChannelError            403 live_channel (the sandbox on a real provider's channel)
    │   ├── NotFoundError               404 not_found
    │   ├── ConflictError               409 conflict
    │   │   ├── AlreadyConsumedError    409 already_consumed (an approval used once already)
    │   │   └── NotApprovedError        409 not_approved (consumed while rejected or pending)
    │   ├── GoneError                   410 gone
    │   ├── PayloadTooLargeError        413 payload_too_large
    │   ├── RateLimitError              429 rate_limited (``retry_after``)
    │   ├── CallTimeoutError            504 timeout (``/phone/call`` over five minutes)
    │   └── InternalServerError         any other 5xx
    │       └── ProviderError           502 provider_error (Twilio / Slack failed; nothing sent)
    └── WebhookVerificationError        a webhook delivery that cannot be trusted or read
        ├── InvalidSignatureError       signature missing, wrong, or outside the tolerance
        └── UnknownEventError           an ``eventType`` this version does not know

Arguments are validated with the wire models before anything is sent; a failure raises
``InvalidRequestError`` / ``InvalidToNumberError`` with status 400 and ``response`` None,
exactly as the service would have answered.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any

import httpx
from pydantic import ValidationError

from humanwire.types import ErrorBody, ErrorDetail, detail_from_validation_error

__all__ = [
    "APIConnectionError",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "AccountSuspendedError",
    "AlreadyConsumedError",
    "AuthenticationError",
    "BadRequestError",
    "CallTimeoutError",
    "ConflictError",
    "GoneError",
    "HumanWireError",
    "InternalServerError",
    "InvalidRequestError",
    "InvalidSignatureError",
    "InvalidToNumberError",
    "LiveChannelError",
    "NotApprovedError",
    "NotFoundError",
    "PayloadTooLargeError",
    "ProviderError",
    "RateLimitError",
    "UnknownEventError",
    "WebhookVerificationError",
    "error_from_response",
    "error_from_validation",
]


class HumanWireError(Exception):
    """Base of every humanwire exception."""


class APIConnectionError(HumanWireError):
    def __init__(self, message: str = "could not reach the service", *, request: Any = None):
        super().__init__(message)
        self.request: httpx.Request | None = request


class APITimeoutError(APIConnectionError):
    def __init__(self, message: str = "the request timed out", *, request: Any = None):
        super().__init__(message, request=request)


class APIResponseValidationError(HumanWireError):
    """The service answered 2xx with a body the wire models do not accept."""

    def __init__(self, message: str, *, response: httpx.Response, body: object = None):
        super().__init__(message)
        self.response = response
        self.status_code = response.status_code
        self.body = body


class APIStatusError(HumanWireError):
    """The service answered with an error status and docs/design.md's error body."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int,
        code: str | None = None,
        field: str | None = None,
        response: httpx.Response | None = None,
        body: object = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.code = code
        self.field = field
        self.response = response
        self.body = body

    def __str__(self) -> str:
        where = f" (field {self.field})" if self.field else ""
        return f"{self.status_code} {self.code or 'error'}: {self.message}{where}"


class BadRequestError(APIStatusError):
    pass


class InvalidRequestError(BadRequestError):
    pass


class InvalidToNumberError(BadRequestError):
    pass


class AuthenticationError(APIStatusError):
    pass


class AccountSuspendedError(APIStatusError):
    pass


class LiveChannelError(APIStatusError):
    """The sandbox (``client.sandbox``) answering on a channel a real provider carries:
    only the real person's answer over it counts."""


class NotFoundError(APIStatusError):
    pass


class ConflictError(APIStatusError):
    pass


class AlreadyConsumedError(ConflictError):
    """``POST /approvals/{id}/consume``: the approval was consumed before, so its action
    already ran (or is running) elsewhere: do not run it again."""


class NotApprovedError(ConflictError):
    """``POST /approvals/{id}/consume`` on a request that is rejected or still pending:
    the action must not run."""


class GoneError(APIStatusError):
    pass


class PayloadTooLargeError(APIStatusError):
    pass


class RateLimitError(APIStatusError):
    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any):
        super().__init__(message, **kwargs)
        self.retry_after = retry_after
        """Seconds the service asked to wait (``Retry-After``), when it said."""


class CallTimeoutError(APIStatusError):
    """``/phone/call`` exceeded five minutes. A pending call is never retried."""


class InternalServerError(APIStatusError):
    pass


class ProviderError(InternalServerError):
    """The service's provider (Twilio, Slack) failed or refused; nothing was sent. The
    client retries it with the same ``Idempotency-Key`` after ``Retry-After``."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any):
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class WebhookVerificationError(HumanWireError):
    pass


class InvalidSignatureError(WebhookVerificationError):
    pass


class UnknownEventError(WebhookVerificationError):
    pass


_BY_STATUS: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: AccountSuspendedError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    413: PayloadTooLargeError,
    429: RateLimitError,
}


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: a number, or an HTTP date."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds)


def _error_class(status_code: int, code: str | None) -> type[APIStatusError]:
    if status_code == 400 and code == "invalid_request":
        return InvalidRequestError
    if status_code == 400 and code == "invalid_to_number":
        return InvalidToNumberError
    if status_code == 403 and code == "live_channel":
        return LiveChannelError
    if status_code == 409 and code == "already_consumed":
        return AlreadyConsumedError
    if status_code == 409 and code == "not_approved":
        return NotApprovedError
    if status_code == 504 and code == "timeout":
        return CallTimeoutError
    if status_code == 502 and code == "provider_error":
        return ProviderError
    if status_code in _BY_STATUS:
        return _BY_STATUS[status_code]
    if status_code >= 500:
        return InternalServerError
    return APIStatusError


def error_from_response(response: httpx.Response) -> APIStatusError:
    """The typed error of a non-2xx response (the body is already read)."""
    body: object
    try:
        body = response.json()
    except ValueError:
        body = response.text
    detail: ErrorDetail | None
    try:
        detail = ErrorBody.model_validate(body).error
    except ValidationError:
        detail = None
    if detail is not None:
        code, message, field = detail.code, detail.message, detail.field
    else:
        code, field = None, None
        message = (body if isinstance(body, str) and body else None) or response.reason_phrase
    cls = _error_class(response.status_code, code)
    kwargs: dict[str, Any] = {
        "status_code": response.status_code,
        "code": code,
        "field": field,
        "response": response,
        "body": body,
    }
    if cls is RateLimitError or cls is ProviderError:
        kwargs["retry_after"] = parse_retry_after(response.headers.get("Retry-After"))
    return cls(message, **kwargs)


def error_from_validation(exc: ValidationError) -> BadRequestError:
    """What the service would have answered to arguments the wire models refuse."""
    detail = detail_from_validation_error(exc)
    cls = InvalidToNumberError if detail.code == "invalid_to_number" else InvalidRequestError
    body = ErrorBody(error=detail).model_dump(mode="json")
    return cls(
        detail.message,
        status_code=400,
        code=detail.code,
        field=detail.field,
        response=None,
        body=body,
    )


def invalid_request(message: str, *, field: str | None = None) -> InvalidRequestError:
    """A client-side ``invalid_request`` for arguments no wire model covers."""
    body = {"error": {"code": "invalid_request", "message": message, "field": field}}
    return InvalidRequestError(
        message, status_code=400, code="invalid_request", field=field, response=None, body=body
    )
