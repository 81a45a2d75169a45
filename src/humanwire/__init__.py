"""humanwire: let AI agents reach humans and wait for the answer.

``HumanWire`` (blocking) and ``AsyncHumanWire`` (asyncio) send texts over sms, whatsapp
and slack, forms, and voice calls, and wait for the human. A human who does not answer
in time is not an error: the no-response text comes back as a normal result.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

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

try:
    __version__ = version("humanwire")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

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
