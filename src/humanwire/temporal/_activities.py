"""The activities: sends through ``AsyncHumanWire``, each under an idempotency key of its
workflow run and activity, so a retried activity replays the first send, never a second."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from humanwire._client import AsyncHumanWire
from humanwire.errors import APIStatusError, ConflictError, RateLimitError

from ._wire import RUN_ID_KEY, SEND_SMS_ACTIVITY, WORKFLOW_ID_KEY, SentAsk, SmsAsk

__all__ = ["HumanWireActivities", "idempotency_key"]

_MAX_KEY = 255


def idempotency_key(info: activity.Info) -> str:
    """``temporal:<workflow id>:<run id>:<activity id>``: the same for every attempt of one
    activity; a new run (reset, continue-as-new) sends anew. Hashed past 255 characters."""
    key = f"temporal:{info.workflow_id}:{info.workflow_run_id}:{info.activity_id}"
    if len(key) <= _MAX_KEY and key.isascii() and key.isprintable():
        return key
    return "temporal:sha256:" + hashlib.sha256(key.encode()).hexdigest()


class HumanWireActivities:
    """The activities a worker registers: ``Worker(..., activities=acts.all())``."""

    def __init__(self, client: AsyncHumanWire) -> None:
        self.client = client

    def all(self) -> list[Callable[..., Any]]:
        return [self.send_sms]

    @activity.defn(name=SEND_SMS_ACTIVITY)
    async def send_sms(self, ask: SmsAsk) -> SentAsk:
        info = activity.info()
        metadata: dict[str, str] = {**ask.metadata}
        if info.workflow_id:
            metadata[WORKFLOW_ID_KEY] = info.workflow_id
        if info.workflow_run_id:
            metadata[RUN_ID_KEY] = info.workflow_run_id
        try:
            sent = await self.client.messages.sms(
                to=ask.to,
                message=ask.message,
                follow_up_time=ask.follow_up_time,
                metadata=metadata,
                idempotency_key=idempotency_key(info),
            )
        except APIStatusError as error:
            # A refusal (bad number, bad metadata) stays a refusal: no retry can change it;
            # 409 (the first attempt's send still in flight under the key) and 429 pass.
            if 400 <= error.status_code < 500 and not isinstance(
                error, (RateLimitError, ConflictError)
            ):
                raise ApplicationError(
                    str(error), type=type(error).__name__, non_retryable=True
                ) from error
            raise
        return SentAsk(interaction_id=sent.interaction_id)
