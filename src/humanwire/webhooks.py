"""Receiving webhook deliveries: signatures and events.

Every delivery is a POST of ``{"eventType", "payload"}`` carrying

- ``Humanwire-Event-Id``: unique per event, for de-duplication (order is not guaranteed,
  and a delivery may be retried);
- ``Humanwire-Signature``: ``t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">``,
  keyed with the registration's ``secret`` (shown once, by ``webhooks.create``).

In a receiver::

    event = parse_event(raw_body, signature=headers[SIGNATURE_HEADER], secret=SECRET)

Verify the raw bytes as received: re-serialized JSON would not match the signature.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time

from pydantic import ValidationError

from .errors import InvalidSignatureError, UnknownEventError, WebhookVerificationError
from .types import EVENT_TYPES, Event, event_adapter

__all__ = [
    "DEFAULT_TOLERANCE",
    "EVENT_ID_HEADER",
    "SIGNATURE_HEADER",
    "parse_event",
    "sign",
    "verify",
]

SIGNATURE_HEADER = "Humanwire-Signature"
EVENT_ID_HEADER = "Humanwire-Event-Id"
DEFAULT_TOLERANCE = 300.0
"""Seconds a signature's timestamp may differ from now: limits replays of old deliveries."""


def _digest(secret: str, body: bytes, timestamp: int) -> str:
    signed = f"{timestamp}.".encode() + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """The ``Humanwire-Signature`` header value for ``body`` sent at ``timestamp``."""
    return f"t={timestamp},v1={_digest(secret, body, timestamp)}"


def _parse_header(signature_header: str) -> tuple[int, list[str]]:
    timestamp: int | None = None
    signatures: list[str] = []
    for part in signature_header.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            continue
        if key == "t":
            try:
                timestamp = int(value)
            except ValueError:
                raise InvalidSignatureError(
                    f"{SIGNATURE_HEADER} has a timestamp that is not a whole number"
                ) from None
        elif key == "v1":
            signatures.append(value)
    if timestamp is None:
        raise InvalidSignatureError(f"{SIGNATURE_HEADER} has no timestamp (t=)")
    if not signatures:
        raise InvalidSignatureError(f"{SIGNATURE_HEADER} has no v1 signature")
    return timestamp, signatures


def verify(
    body: bytes,
    signature_header: str,
    secret: str,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    now: float | None = None,
) -> None:
    """Raise ``InvalidSignatureError`` unless ``body`` was signed with ``secret`` within
    ``tolerance`` seconds of ``now``. Several ``v1`` entries are allowed (secret rotation):
    one match is enough. Comparison is constant-time."""
    if not secret:
        raise InvalidSignatureError("no webhook secret to verify with")
    if not signature_header:
        raise InvalidSignatureError(f"missing {SIGNATURE_HEADER} header")
    timestamp, signatures = _parse_header(signature_header)
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise InvalidSignatureError(
            f"{SIGNATURE_HEADER} timestamp is {abs(current - timestamp):.0f} s away from now "
            f"(tolerance {tolerance:g} s)"
        )
    expected = _digest(secret, body, timestamp)
    # Check every entry, so timing does not reveal which one matched.
    matched = False
    for candidate in signatures:
        matched |= hmac.compare_digest(expected.encode(), candidate.encode())
    if not matched:
        raise InvalidSignatureError("webhook signature does not match the body")


def parse_event(
    body: bytes | str,
    *,
    signature: str | None = None,
    secret: str | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> Event:
    """The typed event of a delivery. With ``secret`` the signature is verified first
    (and required). A ``signature`` without a ``secret`` is refused rather than silently
    left unchecked."""
    raw = body.encode() if isinstance(body, str) else body
    if secret is not None:
        verify(raw, signature or "", secret, tolerance=tolerance)
    elif signature is not None:
        raise InvalidSignatureError("a signature was given but no secret to verify it with")
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise WebhookVerificationError(f"webhook body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise WebhookVerificationError("webhook body is not a JSON object")
    event_type = data.get("eventType")
    if event_type not in EVENT_TYPES:
        raise UnknownEventError(
            f"unknown webhook eventType {event_type!r}; this version of humanwire knows "
            f"{', '.join(EVENT_TYPES)}"
        )
    try:
        return event_adapter.validate_python(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"][1:])
        raise WebhookVerificationError(
            f"malformed {event_type} event: {where}: {first['msg']}"
        ) from None
