"""SMS through Telnyx's Messaging API (``POST /v2/messages``), and what comes back on
``/providers/telnyx/messages``: inbound texts (``message.received``) and delivery
reports (``message.sent``, ``message.finalized``) of the messages sent with that
``webhook_url``.

Sends go out from the shared number (``telnyx.sms_from``) or the account's reserved
number; every message names the webhook, whose reports become the interaction's
``deliveryStatus``. Inbound texts enter the inbound port's ``receive_text`` (matched by number
pair as on Twilio; the message id de-duplicates Telnyx's retries).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from humanwire.types import DeliveryStatus

from ...telemetry import redact_numbers
from ..base import Outbound, ProviderFailure, RecipientUnreachable, Sent
from ..provider_routes import Malformed
from .rest import TelnyxAPIError, TelnyxREST

if TYPE_CHECKING:
    from ...config import TelnyxConfig
    from ..port import InboundPort

__all__ = [
    "UNREACHABLE_CODES",
    "TelnyxEvent",
    "delivery_status",
    "message_event",
    "parse_event",
    "refusal",
    "send_message",
]

logger = logging.getLogger("humanwire.telnyx")

UNREACHABLE_CODES = frozenset({"40001", "40300", "40310"})
"""Telnyx error codes that mean the recipient cannot be reached (not routable, opted out
with STOP, an invalid ``to``): 400 ``invalid_to_number``. ``10002`` / ``10016`` (an
invalid or non-E.164 number) count when Telnyx points at ``/to``. Any other refusal is the
operator's to fix: 502."""
_NUMBER_CODES = frozenset({"10002", "10016"})

# Telnyx's per-recipient statuses → the wire's deliveryStatus (others are ignored).
_STATUS: dict[str, DeliveryStatus] = {
    "queued": "queued",
    "sending": "sent",
    "sent": "sent",
    "delivery_unconfirmed": "sent",
    "delivered": "delivered",
    "read": "read",
    "expired": "undelivered",
    "delivery_failed": "undelivered",
    "sending_failed": "failed",
}


def delivery_status(telnyx_status: str | None) -> DeliveryStatus | None:
    return _STATUS.get((telnyx_status or "").lower())


def refusal(exc: TelnyxAPIError, what: str = "message") -> Exception:
    """The engine's view of a Telnyx refusal at send time."""
    if exc.code in UNREACHABLE_CODES or (exc.code in _NUMBER_CODES and exc.pointer == "/to"):
        return RecipientUnreachable(f"invalid to number (Telnyx {exc.code}: {exc.message})")
    if exc.status == 0:
        return ProviderFailure(f"Telnyx could not take the {what}: {exc.message}")
    logger.warning("Telnyx refused a %s: %s", what, redact_numbers(str(exc)))
    retry_after = exc.retry_after if exc.retry_after is not None else 5.0
    return ProviderFailure(
        f"Telnyx refused the {what} ({exc.code or exc.status}: {exc.message})",
        retry_after=retry_after,
    )


async def send_message(
    rest: TelnyxREST, config: TelnyxConfig, item: Outbound, webhook_url: str
) -> Sent:
    body: dict[str, Any] = {
        "from": item.from_addr or "",
        "to": item.to_addr,
        "text": item.text,
        "webhook_url": webhook_url,
    }
    if config.messaging_profile_id:
        body["messaging_profile_id"] = config.messaging_profile_id
    try:
        created = await rest.send_message(body, account=item.account_id)
    except TelnyxAPIError as exc:
        raise refusal(exc) from None
    ref = str(created.get("id") or "")
    if not ref:
        raise ProviderFailure("Telnyx answered without a message id")
    recipients = created.get("to")
    first = recipients[0] if isinstance(recipients, list) and recipients else {}
    status = delivery_status(first.get("status") if isinstance(first, dict) else None)
    return Sent(ref=ref, status=status or "queued")


# -- what Telnyx posts --------------------------------------------------------------------
@dataclass(frozen=True)
class TelnyxEvent:
    """A verified messaging webhook: ``data.event_type``, ``data.id`` and the fields of
    ``data.payload`` the service reads (checked by ``parse_event``)."""

    event_type: str
    event_id: str
    message_id: str
    from_number: str
    to_numbers: tuple[tuple[str, str], ...]
    """``(phone_number, status)`` of each recipient."""
    text: str
    media_urls: tuple[str, ...]


def _text(value: Any, field: str, *, required: bool = False) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise Malformed(f"{field} must be a string", field=field)
    return value


def _object(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise Malformed(f"{field} must be an object", field=field)
    return value


def _list(value: Any, field: str) -> Sequence[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise Malformed(f"{field} must be an array", field=field)
    return value


def parse_event(document: Any) -> TelnyxEvent:
    """Telnyx's ``{"data": {"event_type", "id", "payload": {...}}}``, or ``Malformed``
    naming the culprit; only the message events' payloads are read."""
    data = _object(_object(document, "body").get("data"), "data")
    event_type = _text(data.get("event_type"), "data.event_type", required=True)
    event_id = _text(data.get("id"), "data.id")
    if event_type not in ("message.received", "message.sent", "message.finalized"):
        return TelnyxEvent(event_type, event_id, "", "", (), "", ())
    payload = _object(data.get("payload"), "data.payload")
    message_id = _text(payload.get("id"), "data.payload.id", required=True)
    sender = payload.get("from")
    from_number = ""
    if sender is not None:
        from_number = _text(
            _object(sender, "data.payload.from").get("phone_number"),
            "data.payload.from.phone_number",
        )
    recipients: list[tuple[str, str]] = []
    for index, entry in enumerate(_list(payload.get("to"), "data.payload.to")):
        where = f"data.payload.to[{index}]"
        recipient = _object(entry, where)
        recipients.append(
            (
                _text(recipient.get("phone_number"), f"{where}.phone_number"),
                _text(recipient.get("status"), f"{where}.status"),
            )
        )
    media: list[str] = []
    for index, entry in enumerate(_list(payload.get("media"), "data.payload.media")):
        url = _text(_object(entry, f"data.payload.media[{index}]").get("url"), "url")
        if url:
            media.append(url)
    text = _text(payload.get("text"), "data.payload.text")
    return TelnyxEvent(
        event_type, event_id, message_id, from_number, tuple(recipients), text, tuple(media[:10])
    )


async def message_event(inbound: InboundPort, event: TelnyxEvent) -> str:
    """An inbound text or a delivery report; returns what became of it for the log."""
    from ..port import InboundText

    if event.event_type in ("message.sent", "message.finalized"):
        statuses = [delivery_status(status) for _number, status in event.to_numbers]
        known = [status for status in statuses if status is not None]
        if event.message_id and known:
            await inbound.delivery_status(event.message_id, known[0])
            return f"status {known[0]}"
        return "status ignored"
    if event.event_type != "message.received":
        return f"{event.event_type} ignored"
    receiver = event.to_numbers[0][0] if event.to_numbers else ""
    stored = await inbound.receive_text(
        InboundText(
            channel="sms",
            from_addr=event.from_number,
            to_addr=receiver,
            body=event.text,
            media_urls=event.media_urls,
            ref=event.message_id or None,
        )
    )
    if stored is None:
        return "duplicate or unrouted"
    return "matched" if stored.interaction_id else "unsolicited"
