"""The answer of a message send held after answering 202 (``Prefer: respond-async``),
written by whoever ends the interaction.

Such a send's answer reaches its client as a ``wait.ended`` outcome. Its holder used to
write it once it heard the end: with replicas, a second transaction after the one that
ended the interaction, on the answer's path (a round trip and a WAL flush more, before the
client heard anything). The answer of a message is a function of the ended interaction
and the response template the send was made with, so the replica that ends it writes the
``wait.ended`` (and its key's stored result) in the same statement as the end, and lets
go of the hold there; the holder, told by the notice, writes nothing.

The send records what that takes in its stored request (``HELD_ANSWER``): the response
template, and the ``Idempotency-Key`` and fingerprint it runs under. Only an answer that
comes ``HELD_ANSWER_MARGIN`` seconds or more before the send's ``waitTime`` ends is
written so: nearer the end, the holder's own timer may be answering "no response" at the
same moment, and it stays the holder's to write.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from humanwire.types import MessageResponse

from .. import templates
from ..store.records import (
    IdempotencyRecord,
    InteractionOutcome,
    InteractionRecord,
    WaitEndedAnswer,
)
from ._common import _metadata, wire_json
from .context import SendContext
from .events import wait_ended_event

__all__ = ["HELD_ANSWER", "HELD_ANSWER_MARGIN", "answered_message", "held_answer", "wait_ended"]

HELD_ANSWER = "_heldAnswer"
"""The stored request's key for what a respond-async message send's answer needs."""
HELD_ANSWER_MARGIN = 1.0
"""Seconds before the end of the send's ``waitTime`` past which its holder writes it."""
HELD_STATUS = 200
"""The HTTP status a message send answers with."""


def held_answer(context: SendContext, response_template: str | None) -> dict[str, Any]:
    """The request entry (``HELD_ANSWER``) of a message send made with ``context``: empty
    unless it asked to be answered 202."""
    if context.accept is None:
        return {}
    spec: dict[str, Any] = {"template": response_template}
    if context.run is not None:
        spec["key"] = context.run.key
        spec["fingerprint"] = context.run.fingerprint
    return {HELD_ANSWER: spec}


def answered_message(
    interaction_id: str, response_template: str | None, answered: InteractionRecord
) -> MessageResponse:
    """What a held message send answers once ``answered`` (the ended interaction with its
    reply) ends it."""
    assert answered.result is not None
    reply = str(answered.result["payload"]["body"])
    return MessageResponse(
        interaction_id=interaction_id,
        status="ended",
        responded=True,
        response=templates.response_text(response_template, reply),
        reply=reply,
        delivery_status=answered.delivery_status,
        metadata=_metadata(answered),
    )


def wait_ended(
    record: InteractionRecord,
    event: dict[str, Any],
    outcome: InteractionOutcome | None,
    now: float,
) -> WaitEndedAnswer | None:
    """The ``wait.ended`` of ``record`` if ``event`` (its reply, at ``now``) ends it while a
    respond-async send may hold it; None when its holder is to write it."""
    spec = record.request.get(HELD_ANSWER)
    if (
        not isinstance(spec, dict)
        or record.kind != "message"
        or outcome is not None
        or record.wait_deadline is None
        or now > record.wait_deadline - HELD_ANSWER_MARGIN
        or not isinstance(event.get("payload"), dict)
        or "body" not in event["payload"]
    ):
        return None
    template = spec.get("template")
    ended = dataclasses.replace(record, status="ended", result=event, outcome=None, ended_at=now)
    response = answered_message(
        record.id, template if isinstance(template, str) else None, ended
    ).to_wire()
    idempotency = None
    key, fingerprint = spec.get("key"), spec.get("fingerprint")
    if isinstance(key, str) and isinstance(fingerprint, str):
        idempotency = IdempotencyRecord(
            account_id=record.account_id,
            key=key,
            fingerprint=fingerprint,
            status_code=HELD_STATUS,
            body=wire_json(response),  # as the HTTP layer encodes the send's answer
            created_at=now,
        )
    return WaitEndedAnswer(wait_ended_event(record.id, HELD_STATUS, response), idempotency)
