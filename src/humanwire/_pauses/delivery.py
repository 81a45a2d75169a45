"""Webhook deliveries: the event one carries, verified (:func:`parse_delivery`), and
whether it answers one of an adapter's pauses (:func:`delivery_for`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from humanwire.types import ApprovalDecidedEvent, Event, FormReceivedEvent, MessageReceivedEvent
from humanwire.webhooks import SIGNATURE_HEADER, parse_event

from .keys import RESUME_KEY


def plain_json(value: Any) -> Any:
    """A value ``json`` cannot write, as its wire form: an event dumped without
    ``mode="json"`` holds datetimes (an approval's decisions), written as ISO 8601."""
    isoformat = getattr(value, "isoformat", None)
    if callable(isoformat):
        return isoformat()
    raise TypeError(f"not JSON: {type(value).__name__}")


def parse_delivery(
    body: bytes | str | Mapping[str, Any] | Event,
    headers: Mapping[str, str] | None = None,
    *,
    secret: str | None = None,
) -> Event:
    """The event a webhook delivery carries. With ``secret`` the ``Humanwire-Signature``
    header is verified against the raw body first, and a delivery that cannot be trusted
    raises ``WebhookVerificationError``. An event or a mapping (already parsed JSON) is
    taken as given, without a secret only."""
    if not isinstance(body, (bytes, str)):
        if secret is not None:
            raise TypeError("verifying a signature needs the raw body (bytes or str)")
        if not isinstance(body, Mapping):
            return body
        body = json.dumps(dict(body), default=plain_json)
    signature = None
    if secret is not None:
        lowered = {key.lower(): value for key, value in (headers or {}).items()}
        signature = lowered.get(SIGNATURE_HEADER.lower(), "")
    return parse_event(body, signature=signature, secret=secret)


@dataclass(frozen=True)
class Delivery:
    """An answer a webhook brings to one of an adapter's pauses: the event, and the keys
    its send carried (``metadata``)."""

    event: ApprovalDecidedEvent | FormReceivedEvent | MessageReceivedEvent
    metadata: dict[str, str]

    @property
    def interaction_id(self) -> str:
        return self.event.payload.interaction_id or ""


def delivery_for(
    framework: str,
    body: bytes | str | Mapping[str, Any] | Event,
    headers: Mapping[str, str] | None = None,
    *,
    secret: str | None = None,
    questions: bool = False,
    unmarked: bool = False,
) -> Delivery | None:
    """The delivery (:func:`parse_delivery`, verified with ``secret``) when it answers a
    pause of ``framework`` (its ``metadata[humanwire_resume]``): an ``approval.decided``
    (or the ``form.received`` of a pause older than approval requests), or with
    ``questions`` a ``message.received`` too; ``None`` for any other event and for
    another adapter's sends. With ``unmarked`` a send without the key counts as
    ``framework``'s too (LlamaIndex reads its older pauses so)."""
    event = parse_delivery(body, headers, secret=secret)
    if isinstance(event, MessageReceivedEvent) and not questions:
        return None
    if not isinstance(event, (ApprovalDecidedEvent, FormReceivedEvent, MessageReceivedEvent)):
        return None
    metadata = dict(event.payload.metadata or {})
    marked = metadata.get(RESUME_KEY)
    if marked != framework and not (unmarked and marked is None):
        return None
    return Delivery(event, metadata)
