"""The activities: sends through ``AsyncHumanWire``, each under an idempotency key of its
workflow run and activity, so a retried activity replays the first send, never a second."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from humanwire._client import AsyncHumanWire
from humanwire.errors import (
    AlreadyConsumedError,
    APIStatusError,
    ConflictError,
    NotApprovedError,
    RateLimitError,
)
from humanwire.types import FormResponse

from ._wire import (
    CONSUME_APPROVAL_ACTIVITY,
    PLACE_CALL_ACTIVITY,
    REQUEST_APPROVAL_ACTIVITY,
    RUN_ID_KEY,
    SEND_FORM_ACTIVITY,
    SEND_SMS_ACTIVITY,
    WORKFLOW_ID_KEY,
    ApprovalAsk,
    ApprovalResult,
    CallAsk,
    FormAsk,
    SentApproval,
    SentAsk,
    SmsAsk,
)

__all__ = ["HumanWireActivities", "idempotency_key"]

_MAX_KEY = 255
T = TypeVar("T")


def idempotency_key(info: activity.Info, purpose: str = "") -> str:
    """``temporal:<workflow id>:<run id>:<activity id>``: the same for every attempt of one
    activity; a new run (reset, continue-as-new) sends anew. ``purpose`` tells apart two
    requests of one activity (``:consume``). Hashed past 255 characters."""
    key = f"temporal:{info.workflow_id}:{info.workflow_run_id}:{info.activity_id}"
    if purpose:
        key += f":{purpose}"
    if len(key) <= _MAX_KEY and key.isascii() and key.isprintable():
        return key
    return "temporal:sha256:" + hashlib.sha256(key.encode()).hexdigest()


def _run_metadata(metadata: dict[str, str]) -> dict[str, str]:
    """The ask's metadata and the run's ids, by which the bridge finds the run."""
    info = activity.info()
    found = {**metadata}
    if info.workflow_id:
        found[WORKFLOW_ID_KEY] = info.workflow_id
    if info.workflow_run_id:
        found[RUN_ID_KEY] = info.workflow_run_id
    return found


async def _refusals_final(send: Awaitable[T]) -> T:
    """A refusal (bad number, bad metadata) stays a refusal: no retry can change it, so
    it fails the activity for good; 409 (the first attempt's send still in flight under
    the key), 429 and 5xx are retried by Temporal."""
    try:
        return await send
    except APIStatusError as error:
        if 400 <= error.status_code < 500 and not isinstance(
            error, (RateLimitError, ConflictError)
        ):
            raise ApplicationError(
                str(error), type=type(error).__name__, non_retryable=True
            ) from error
        raise


class HumanWireActivities:
    """The activities a worker registers: ``Worker(..., activities=acts.all())``."""

    def __init__(self, client: AsyncHumanWire) -> None:
        self.client = client

    def all(self) -> list[Callable[..., Any]]:
        return [
            self.send_sms,
            self.send_form,
            self.place_call,
            self.request_approval,
            self.consume_approval,
        ]

    @activity.defn(name=SEND_SMS_ACTIVITY)
    async def send_sms(self, ask: SmsAsk) -> SentAsk:
        sent = await _refusals_final(
            self.client.messages.sms(
                to=ask.to,
                message=ask.message,
                follow_up_time=ask.follow_up_time,
                metadata=_run_metadata(ask.metadata),
                idempotency_key=idempotency_key(activity.info()),
            )
        )
        return SentAsk(interaction_id=sent.interaction_id)

    @activity.defn(name=SEND_FORM_ACTIVITY)
    async def send_form(self, ask: FormAsk) -> SentAsk:
        forms = self.client.forms
        senders: dict[str, Callable[..., Awaitable[FormResponse]]] = {
            "sms": forms.sms,
            "whatsapp": forms.whatsapp,
            "slack": forms.slack,
            "email": forms.email,
        }
        common: dict[str, Any] = {
            "to": ask.to,
            "title": ask.title,
            "fields": ask.fields,
            "message": ask.message,
            "description": ask.description,
            "follow_up_time": ask.follow_up_time,
            "metadata": _run_metadata(ask.metadata),
            "idempotency_key": idempotency_key(activity.info()),
        }
        send = senders.get(ask.channel)
        if send is None:
            raise ApplicationError(
                f"no form channel {ask.channel!r}", type="ValueError", non_retryable=True
            )
        # WhatsApp forms take no message: leave out what the ask does not set.
        sent = await _refusals_final(send(**{k: v for k, v in common.items() if v is not None}))
        return SentAsk(interaction_id=sent.interaction_id)

    @activity.defn(name=PLACE_CALL_ACTIVITY)
    async def place_call(self, ask: CallAsk) -> SentAsk:
        options: dict[str, Any] = {} if ask.language is None else {"language": ask.language}
        placed = await _refusals_final(
            self.client.calls.create(
                to=ask.to,
                prompt=ask.prompt,
                metadata=_run_metadata(ask.metadata),
                idempotency_key=idempotency_key(activity.info()),
                **options,
            )
        )
        return SentAsk(interaction_id=placed.interaction_id)

    @activity.defn(name=REQUEST_APPROVAL_ACTIVITY)
    async def request_approval(self, ask: ApprovalAsk) -> SentApproval:
        requested = await _refusals_final(
            self.client.approvals.create(
                title=ask.title,
                approvers=ask.approvers,
                action=ask.action,
                description=ask.description,
                quorum=ask.quorum,
                follow_up_time=ask.follow_up_time,
                on_timeout=ask.on_timeout,  # type: ignore[arg-type]
                metadata=_run_metadata(ask.metadata),
                idempotency_key=idempotency_key(activity.info()),
            )
        )
        return SentApproval(
            interaction_id=requested.interaction_id, action_digest=requested.action_digest
        )

    @activity.defn(name=CONSUME_APPROVAL_ACTIVITY)
    async def consume_approval(self, approval: ApprovalResult) -> bool:
        """The approval's one use, as a step of its own (``humanwire.temporal.consume``)."""
        return await self.claim(approval)

    async def claim(self, approval: ApprovalResult) -> bool:
        """Uses the approval once, from inside the activity that runs the gated action:
        call it first thing there. Keyed by that activity, so its retries are answered as
        the first attempt was (True again, one ``approval.consumed`` in the audit log),
        while any other activity or run is refused: a non-retryable
        ``ApplicationError`` of type ``AlreadyConsumedError`` (or ``NotApprovedError``
        for a rejected or undecided request)."""
        try:
            consumed = await _refusals_final(
                self.client.approvals.consume(
                    approval.interaction_id,
                    action_digest=approval.action_digest,
                    idempotency_key=idempotency_key(activity.info(), "consume"),
                )
            )
        except (AlreadyConsumedError, NotApprovedError) as error:
            raise ApplicationError(
                str(error), type=type(error).__name__, non_retryable=True
            ) from error
        return consumed.consumed
