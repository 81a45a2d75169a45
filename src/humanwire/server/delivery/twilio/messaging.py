"""SMS and WhatsApp through Twilio's Messages API, and what comes back on the
``/providers/twilio/messages`` and ``/message-status`` routes.

Sends: ``From`` is the shared number (``twilio.sms_from`` / ``twilio.whatsapp_from``) or
the account's reserved number; every message asks for status callbacks, which become
the interaction's ``deliveryStatus``. WhatsApp outside the 24-hour window (no message
from that person to that sender in the last 24 hours) goes out as the configured Content
template of the specification's shared-account text (``notification``, ``request``,
``form``) with its variables; inside it, the plain text goes.

Inbound: ``whatsapp:`` addresses are WhatsApp, others SMS; the text enters the inbound
port's ``receive_text`` (matched by number pair as on the sandbox; ``MessageSid`` de-duplicates
Twilio's retries), media URLs included.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from humanwire.types import DeliveryStatus, Medium

from ...telemetry import redact_numbers
from ..base import Outbound, ProviderFailure, RecipientUnreachable, Sent
from .rest import TwilioAPIError, TwilioREST

if TYPE_CHECKING:
    from ...config import TwilioConfig
    from ..port import InboundPort, ProviderState

__all__ = [
    "UNREACHABLE_CODES",
    "delivery_status",
    "inbound_text",
    "refusal",
    "send_message",
]

logger = logging.getLogger("humanwire.twilio")

WHATSAPP = "whatsapp:"
WINDOW_SECONDS = 24 * 3600.0
WINDOW_SCOPE = "twilio-whatsapp-window"

UNREACHABLE_CODES = frozenset(
    {
        21211,  # invalid 'To' phone number
        21214,  # 'To' phone number cannot be reached (calls)
        21215,  # geo permission for the destination not enabled (calls)
        21216,  # the number is blocked (calls)
        21217,  # phone number does not appear to be valid (calls)
        21219,  # 'To' not verified (trial account, calls)
        21401,  # invalid phone number (calls)
        21408,  # permission to send to this region not enabled
        21421,  # phone number is invalid
        21608,  # 'To' not verified (trial account, messages)
        21610,  # the recipient replied STOP
        21612,  # the 'To' cannot be reached from this 'From'
        21614,  # 'To' is not a mobile number
        63003,  # WhatsApp: the channel could not find the 'To' address
    }
)
"""Twilio error codes that mean the recipient cannot be reached: 400
``invalid_to_number``. Any other refusal is the operator's to fix: 502."""

# Twilio's message statuses → the wire's deliveryStatus (others are ignored).
_STATUS: dict[str, DeliveryStatus] = {
    "accepted": "queued",
    "scheduled": "queued",
    "queued": "queued",
    "sending": "sent",
    "sent": "sent",
    "delivered": "delivered",
    "read": "read",
    "undelivered": "undelivered",
    "failed": "failed",
    "canceled": "failed",
}


def delivery_status(twilio_status: str | None) -> DeliveryStatus | None:
    return _STATUS.get((twilio_status or "").lower())


def refusal(exc: TwilioAPIError, what: str = "message") -> Exception:
    """The engine's view of a Twilio refusal at send time."""
    if exc.code in UNREACHABLE_CODES:
        return RecipientUnreachable(f"invalid to number (Twilio {exc.code}: {exc.message})")
    if exc.status == 0:
        return ProviderFailure(f"Twilio could not take the {what}: {exc.message}")
    # Twilio's message may quote the recipient's number: masked in the log.
    logger.warning("Twilio refused a %s: %s", what, redact_numbers(str(exc)))
    retry_after = exc.retry_after if exc.retry_after is not None else 5.0
    return ProviderFailure(
        f"Twilio refused the {what} ({exc.code or exc.status}: {exc.message})",
        retry_after=retry_after,
    )


def _window_key(human: str, sender: str) -> str:
    return f"{human}|{sender}"


async def send_message(
    rest: TwilioREST,
    config: TwilioConfig,
    state: ProviderState,
    item: Outbound,
    status_url: str,
) -> Sent:
    to, sender = item.to_addr, item.from_addr or ""
    params: list[tuple[str, str]] = []
    if item.channel == "whatsapp":
        params += [("To", WHATSAPP + to), ("From", WHATSAPP + sender)]
        content = await _template(config, state, item, to, sender)
        if content is not None:
            sid, variables = content
            params += [("ContentSid", sid), ("ContentVariables", json.dumps(variables))]
        else:
            params.append(("Body", item.text))
    else:
        params += [("To", to), ("From", sender), ("Body", item.text)]
    params.append(("StatusCallback", status_url))
    try:
        created = await rest.create_message(params, account=item.account_id)
    except TwilioAPIError as exc:
        raise refusal(exc) from None
    sid = str(created.get("sid") or "")
    if not sid:
        raise ProviderFailure("Twilio answered without a message sid")
    return Sent(ref=sid, status=delivery_status(created.get("status")) or "queued")


async def _template(
    config: TwilioConfig, state: ProviderState, item: Outbound, to: str, sender: str
) -> tuple[str, Mapping[str, str]] | None:
    """The Content template to send instead of the text, or None (inside the window,
    or no template applies). A form from the account's own number always names its
    template; the shared templates apply outside the 24-hour window only."""
    template = item.template
    if template is None:
        return None
    if template.content_sid is not None:
        return template.content_sid, template.variables
    window = await state.get_provider_state(WINDOW_SCOPE, _window_key(to, sender))
    if window is not None and float(window.get("at", 0)) + WINDOW_SECONDS > time.time():
        return None  # the person wrote in the last 24 hours: free text is allowed
    sid = config.whatsapp_templates.get(template.name or "")
    if not sid:
        logger.warning(
            "no twilio.whatsapp_templates.%s configured: sending plain text outside "
            "WhatsApp's 24-hour window (Twilio will refuse it for a new conversation)",
            template.name,
        )
        return None
    return sid, template.variables


async def inbound_text(inbound: InboundPort, params: Mapping[str, str]) -> str:
    """An inbound SMS or WhatsApp message Twilio posted; returns what became of it
    (``matched``, ``unsolicited``, ``duplicate or unrouted``) for the log."""
    from ..port import InboundText

    sender = params.get("From", "")
    receiver = params.get("To", "")
    channel: Medium = "whatsapp" if sender.startswith(WHATSAPP) else "sms"
    human = sender.removeprefix(WHATSAPP)
    number = receiver.removeprefix(WHATSAPP)
    try:
        count = int(params.get("NumMedia", "0") or 0)
    except ValueError:
        count = 0
    media = tuple(
        params[f"MediaUrl{i}"] for i in range(min(count, 10)) if params.get(f"MediaUrl{i}")
    )
    if channel == "whatsapp" and human and number:
        await inbound.state.put_provider_state(
            WINDOW_SCOPE, _window_key(human, number), {"at": time.time()}, time.time()
        )
    stored = await inbound.receive_text(
        InboundText(
            channel=channel,
            from_addr=human,
            to_addr=number,
            body=params.get("Body", ""),
            media_urls=media,
            ref=params.get("MessageSid") or params.get("SmsSid") or None,
        )
    )
    if stored is None:
        return "duplicate or unrouted"
    return "matched" if stored.interaction_id else "unsolicited"


async def status_callback(inbound: InboundPort, params: Mapping[str, Any]) -> None:
    sid = str(params.get("MessageSid") or params.get("SmsSid") or "")
    status = delivery_status(str(params.get("MessageStatus") or params.get("SmsStatus") or ""))
    if sid and status is not None:
        await inbound.delivery_status(sid, status)
