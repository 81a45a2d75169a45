"""Errors the engine raises; the HTTP layer turns each into docs/design.md's error body."""

from __future__ import annotations


class ServiceError(Exception):
    status = 400
    code = "invalid_request"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class InvalidRequest(ServiceError):
    status, code = 400, "invalid_request"


class FormInvalid(InvalidRequest):
    """A form submission failed its rules: ``field`` is the first failing field id,
    ``errors`` maps every failing field id to the message shown under it."""

    def __init__(self, errors: dict[str, str]) -> None:
        field, message = next(iter(errors.items()))
        super().__init__(f"{field}: {message}", field=field)
        self.errors = errors


class InvalidToNumber(ServiceError):
    status, code = 400, "invalid_to_number"

    def __init__(self, message: str = "invalid to number", *, field: str | None = "to") -> None:
        super().__init__(message, field=field)


class Unauthorized(ServiceError):
    status, code = 401, "unauthorized"


class AccountSuspended(ServiceError):
    status, code = 403, "account_suspended"


class LiveChannel(ServiceError):
    """The sandbox or the inbox's human side answering a channel a real provider carries:
    only a real answer over that provider may (``sandbox_live_channels`` allows it)."""

    status, code = 403, "live_channel"


class NotFound(ServiceError):
    status, code = 404, "not_found"


class Conflict(ServiceError):
    status, code = 409, "conflict"


class AlreadyConsumed(Conflict):
    """An approval's action was consumed before (``POST /approvals/{id}/consume``)."""

    code = "already_consumed"


class NotApproved(Conflict):
    """An approval that is rejected or still pending cannot be consumed."""

    code = "not_approved"


class Gone(ServiceError):
    status, code = 410, "gone"


class PayloadTooLarge(ServiceError):
    status, code = 413, "payload_too_large"


class RateLimited(ServiceError):
    status, code = 429, "rate_limited"

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ProviderError(ServiceError):
    """The provider (Twilio, Slack) failed or refused: nothing was sent; retry with the
    same ``Idempotency-Key`` after ``Retry-After``."""

    status, code = 502, "provider_error"

    def __init__(self, message: str, *, retry_after: float = 5.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class CallTimeout(ServiceError):
    status, code = 504, "timeout"


class ServiceUnavailable(ServiceError):
    """The service is stopping: a held request is answered with this instead of being cut
    off, so the client retries (same ``Idempotency-Key``) and re-attaches after the
    restart. Nothing was ended or delivered because of it."""

    status, code = 503, "unavailable"

    def __init__(
        self, message: str = "the service is restarting; retry", *, retry_after: float = 1.0
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
