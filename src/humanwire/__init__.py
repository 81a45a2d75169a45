"""humanwire: let AI agents reach humans and wait for the answer.

``HumanWire`` (blocking) and ``AsyncHumanWire`` (asyncio) send texts over sms, whatsapp
and slack, forms, and voice calls, and wait for the human. A human who does not answer
in time is not an error: the no-response text comes back as a normal result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._client import AsyncHumanWire, HumanWire
from .errors import (
    AccountSuspendedError,
    APIConnectionError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    CallTimeoutError,
    ConflictError,
    GoneError,
    HumanWireError,
    InternalServerError,
    InvalidRequestError,
    InvalidSignatureError,
    InvalidToNumberError,
    NotFoundError,
    PayloadTooLargeError,
    ProviderError,
    RateLimitError,
    UnknownEventError,
    WebhookVerificationError,
)
from .types import (
    AvailableNumber,
    CallConversationEndedEvent,
    CallResponse,
    ChannelCard,
    Event,
    FieldOption,
    FormField,
    FormReceivedEvent,
    FormResponse,
    InteractionStatus,
    MessageReceivedEvent,
    MessageResponse,
    ReservedNumber,
    SandboxDelivery,
    ValidationRule,
    Webhook,
)

if TYPE_CHECKING:
    __version__: str


def __getattr__(name: str) -> Any:
    # ``__version__`` is read from the installed distribution on first use, so that
    # ``import humanwire`` does not pay for ``importlib.metadata`` (about 30 ms).
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("humanwire")
        except PackageNotFoundError:  # running from a source tree that was never installed
            value = "0.0.0"
        globals()["__version__"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "APIConnectionError",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "AccountSuspendedError",
    "AsyncHumanWire",
    "AuthenticationError",
    "AvailableNumber",
    "BadRequestError",
    "CallConversationEndedEvent",
    "CallResponse",
    "CallTimeoutError",
    "ChannelCard",
    "ConflictError",
    "Event",
    "FieldOption",
    "FormField",
    "FormReceivedEvent",
    "FormResponse",
    "GoneError",
    "HumanWire",
    "HumanWireError",
    "InteractionStatus",
    "InternalServerError",
    "InvalidRequestError",
    "InvalidSignatureError",
    "InvalidToNumberError",
    "MessageReceivedEvent",
    "MessageResponse",
    "NotFoundError",
    "PayloadTooLargeError",
    "ProviderError",
    "RateLimitError",
    "ReservedNumber",
    "SandboxDelivery",
    "UnknownEventError",
    "ValidationRule",
    "Webhook",
    "WebhookVerificationError",
    "__version__",
]
