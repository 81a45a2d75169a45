"""humanwire: let AI agents reach humans and wait for the answer.

``HumanWire`` (blocking) and ``AsyncHumanWire`` (asyncio) send texts over sms, whatsapp
and slack, forms, and voice calls, and wait for the human. A human who does not answer
in time is not an error: the no-response text comes back as a normal result.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._client import AsyncHumanWire, HumanWire
    from .errors import (
        AccountSuspendedError,
        AlreadyConsumedError,
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
        LiveChannelError,
        NotApprovedError,
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
    from .types.approvals import Approval, AuditEntry

    __version__: str

# The public names are loaded on first use (PEP 562, as pydantic does): ``import humanwire``
# alone defines no pydantic model, so a program that imports a submodule (the pytest plugin,
# ``humanwire.webhooks``, the CLI) pays only for what it uses. Static type checkers read
# the imports above.
_LAZY: dict[str, str] = {
    "AsyncHumanWire": "_client",
    "HumanWire": "_client",
    "AccountSuspendedError": "errors",
    "APIConnectionError": "errors",
    "APIResponseValidationError": "errors",
    "APIStatusError": "errors",
    "APITimeoutError": "errors",
    "AuthenticationError": "errors",
    "BadRequestError": "errors",
    "CallTimeoutError": "errors",
    "AlreadyConsumedError": "errors",
    "ConflictError": "errors",
    "GoneError": "errors",
    "NotApprovedError": "errors",
    "Approval": "types.approvals",
    "AuditEntry": "types.approvals",
    "HumanWireError": "errors",
    "InternalServerError": "errors",
    "InvalidRequestError": "errors",
    "InvalidSignatureError": "errors",
    "InvalidToNumberError": "errors",
    "LiveChannelError": "errors",
    "NotFoundError": "errors",
    "PayloadTooLargeError": "errors",
    "ProviderError": "errors",
    "RateLimitError": "errors",
    "UnknownEventError": "errors",
    "WebhookVerificationError": "errors",
    "AvailableNumber": "types",
    "CallConversationEndedEvent": "types",
    "CallResponse": "types",
    "ChannelCard": "types",
    "Event": "types",
    "FieldOption": "types",
    "FormField": "types",
    "FormReceivedEvent": "types",
    "FormResponse": "types",
    "InteractionStatus": "types",
    "MessageReceivedEvent": "types",
    "MessageResponse": "types",
    "ReservedNumber": "types",
    "SandboxDelivery": "types",
    "ValidationRule": "types",
    "Webhook": "types",
}

# Submodules ``import humanwire`` has always loaded, so ``humanwire.types.X`` keeps working
# without importing ``humanwire.types`` first.
_SUBMODULES = frozenset({"_client", "_constants", "_http", "errors", "resources", "types"})


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
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(import_module(f".{module}", __name__), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBMODULES})


__all__ = [
    "APIConnectionError",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "AccountSuspendedError",
    "AlreadyConsumedError",
    "Approval",
    "AsyncHumanWire",
    "AuditEntry",
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
    "LiveChannelError",
    "MessageReceivedEvent",
    "MessageResponse",
    "NotApprovedError",
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
