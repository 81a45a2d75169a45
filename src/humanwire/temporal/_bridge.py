"""The answer bridge: follows the account's outcome feed (``GET /events``) from a durable
cursor (``humanwire._durable_bridge.OutcomeFeed``) and hands each ended interaction to
the Temporal run that asked: an answer as a Signal, an approval's decision as an Update
whose id is the event's id.

Why a feed reader, not a webhook receiver: the feed is ordered and resumable, so a bridge
that was down reads what it missed (events are kept 25 hours) and needs no public URL.

Why a Signal for answers: Temporal stores it at once, even while no worker runs. Why an
Update for decisions: its validator can refuse a duplicate, late or foreign decision and
the bridge learns it; but an Update waits for a worker to run the validator, so after
``update_timeout`` the bridge sends the decision as a Signal instead (held to the same
rules in the workflow by being ignored), so a dead worker never stalls the feed.

Guarantee: at-least-once delivery to the run; the workflow applies each interaction's
end once (the first answer per interaction, the first decision per request; an Update
sent again with the same id is answered by Temporal as the first was).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import SignalWorkflowExecutionRequest
from temporalio.client import (
    Client,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.service import RPCError, RPCStatusCode

from humanwire._client import AsyncHumanWire
from humanwire._durable_bridge import Cursor, FileCursor, OutcomeFeed
from humanwire.types import OutcomeEvent
from humanwire.types.events import (
    ApprovalDecidedEvent,
    CallConversationEndedEvent,
    FormReceivedEvent,
    MessageReceivedEvent,
)

from ._wire import (
    ANSWER_SIGNAL,
    APPROVAL_SIGNAL,
    APPROVAL_UPDATE,
    ASK_ID_KEY,
    RUN_ID_KEY,
    WORKFLOW_ID_KEY,
    ApprovalDecision,
    HumanAnswer,
)

__all__ = ["AnswerBridge", "FileCursor", "answer_of", "decision_of"]

log = logging.getLogger(__name__)

_GONE = (RPCStatusCode.NOT_FOUND,)
"""The run is gone (completed by its timeout, terminated): nothing waits."""


def answer_of(event: OutcomeEvent) -> HumanAnswer:
    """The Signal's payload for an ``interaction.ended`` event of a reply, form or call."""
    text: str | None = None
    values: dict[str, str] | None = None
    result = event.result if event.responded else None
    if isinstance(result, MessageReceivedEvent):
        text = result.payload.body
    elif isinstance(result, CallConversationEndedEvent):
        text = result.payload.summary
    elif isinstance(result, FormReceivedEvent):
        values = dict(result.payload.values)
    return HumanAnswer(
        event_id=event.id,
        interaction_id=event.interaction_id,
        responded=text is not None or values is not None,
        text=text,
        values=values,
    )


def decision_of(event: OutcomeEvent, approval: ApprovalDecidedEvent) -> ApprovalDecision:
    """The Update's argument for an approval's ``interaction.ended`` event."""
    settled = approval.payload
    return ApprovalDecision(
        event_id=event.id,
        interaction_id=event.interaction_id,
        decision=settled.decision,
        ask_id=(event.metadata or {}).get(ASK_ID_KEY),
        timed_out=settled.timed_out,
        decided_by=[f"{d.approver.channel}:{d.approver.to}" for d in settled.decisions],
        action_digest=settled.action_digest,
        response=settled.response,
    )


class AnswerBridge:
    """Reads ``interaction.ended`` events and hands them to the runs whose sends carry
    the ``temporalWorkflowId`` metadata (set by ``HumanWireActivities``); other events
    are passed over. Run one per account: ``await bridge.run()``."""

    def __init__(
        self,
        humanwire: AsyncHumanWire,
        temporal: Client,
        cursor: Cursor,
        *,
        poll_wait: float = 30.0,
        retry_delay: float = 1.0,
        update_timeout: float = 30.0,
    ) -> None:
        self.temporal = temporal
        self.update_timeout = update_timeout
        self.feed = OutcomeFeed(
            humanwire, cursor, self.deliver, poll_wait=poll_wait, retry_delay=retry_delay
        )

    @property
    def cursor(self) -> Cursor:
        return self.feed.cursor

    async def start_cursor(self) -> str:
        """The saved cursor; on the first start, "now": start the bridge before the first
        ask, so no answer slips past it."""
        return await self.feed.start_cursor()

    async def deliver_once(self, wait: float | None = None) -> int:
        """Reads one page (holding up to ``wait`` seconds for it) and delivers it; returns
        how many runs took an event."""
        return await self.feed.deliver_once(wait)

    async def run(self) -> None:
        """Delivers until cancelled; a failure (service or Temporal unreachable) is
        retried from the saved cursor, losing nothing."""
        await self.feed.run()

    async def deliver(self, event: OutcomeEvent) -> bool:
        metadata = event.metadata or {}
        workflow_id = metadata.get(WORKFLOW_ID_KEY)
        if workflow_id is None:
            return False
        handle = self.temporal.get_workflow_handle(workflow_id, run_id=metadata.get(RUN_ID_KEY))
        try:
            if isinstance(event.result, ApprovalDecidedEvent):
                return await self._decide(handle, decision_of(event, event.result))
            await self._signal(handle, ANSWER_SIGNAL, answer_of(event), event.id)
        except RPCError as error:
            if error.status in _GONE:
                log.info("no run %s waits for %s", workflow_id, event.interaction_id)
                return False
            raise
        return True

    async def _decide(self, handle: WorkflowHandle[Any, Any], decision: ApprovalDecision) -> bool:
        try:
            await handle.execute_update(
                APPROVAL_UPDATE,
                decision,
                id=decision.event_id,
                rpc_timeout=timedelta(seconds=self.update_timeout),
            )
        except WorkflowUpdateFailedError as refused:
            log.info("run %s refused %s: %s", handle.id, decision.interaction_id, refused.cause)
            return False
        except WorkflowUpdateRPCTimeoutOrCancelledError:
            # No worker ran the validator in time: a Signal is stored at once.
            log.info("no worker took the decision on %s; signalling it", decision.interaction_id)
            await self._signal(handle, APPROVAL_SIGNAL, decision, decision.event_id)
        return True

    async def _signal(
        self, handle: WorkflowHandle[Any, Any], name: str, arg: Any, request_id: str
    ) -> None:
        """``handle.signal`` with the event's id as the request id, which Temporal
        dedups: a redelivered event adds nothing to the run's history. (The SDK's
        ``signal`` draws a random request id; this sends the same request with ours.)"""
        request = SignalWorkflowExecutionRequest(
            namespace=self.temporal.namespace,
            workflow_execution=WorkflowExecution(workflow_id=handle.id, run_id=handle.run_id or ""),
            signal_name=name,
            identity=self.temporal.identity,
            request_id=request_id,
        )
        request.input.payloads.extend(await self.temporal.data_converter.encode([arg]))
        await self.temporal.workflow_service.signal_workflow_execution(request, retry=True)
