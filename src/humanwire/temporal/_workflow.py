"""The workflow side: ``await ask(...)`` (and ``ask_form``, ``call``, ``request_approval``,
``consume``) inside a ``@workflow.defn``.

Each send is an activity (retried by Temporal, sent once by its idempotency key); the wait
is ``workflow.wait_condition`` with a timeout: a durable server timer, so the deadline
holds across worker restarts. An answer arrives as the ``humanwire.answer`` Signal; an
approval's decision as the ``humanwire.approval`` Update, whose validator refuses a
duplicate, late or foreign decision (or, when no worker took the Update in time, as the
``humanwire.approval_signal`` Signal, held to the same rules by being ignored).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from ._wire import (
    ANSWER_SIGNAL,
    APPROVAL_SIGNAL,
    APPROVAL_UPDATE,
    ASK_ID_KEY,
    CONSUME_APPROVAL_ACTIVITY,
    PLACE_CALL_ACTIVITY,
    REQUEST_APPROVAL_ACTIVITY,
    SEND_FORM_ACTIVITY,
    SEND_SMS_ACTIVITY,
    ApprovalAsk,
    ApprovalDecision,
    ApprovalResult,
    CallAsk,
    FormAsk,
    HumanAnswer,
    SentApproval,
    SentAsk,
    SmsAsk,
)

with workflow.unsafe.imports_passed_through():
    from humanwire.types.messages import DEFAULT_NO_RESPONSE_TEMPLATE

__all__ = [
    "MAX_LISTEN",
    "NO_RESPONSE",
    "ask",
    "ask_form",
    "call",
    "consume",
    "request_approval",
]

NO_RESPONSE = DEFAULT_NO_RESPONSE_TEMPLATE
"""What ``ask`` returns when nobody answered in time, as every humanwire tool does."""
MAX_LISTEN = 60000.0
"""The longest the service listens for a reply (its ``followUpTime`` bound, seconds)."""
_STATE_ATTRIBUTE = "_humanwire_state"


@dataclass
class _RunState:
    """What one run has received; kept on the workflow instance (replayed like it)."""

    answers: dict[str, HumanAnswer] = field(default_factory=dict)
    """By interaction id: the first end wins."""
    asked: set[str] = field(default_factory=set)
    """Approval asks (``ASK_ID_KEY``) this run made."""
    closed: set[str] = field(default_factory=set)
    """Approval asks whose wait ended without a decision: a decision now is late."""
    decisions: dict[str, ApprovalDecision] = field(default_factory=dict)
    """By ask id: the one decision each ask takes."""
    ask_of: dict[str, str] = field(default_factory=dict)
    """Ask id by interaction id (filled when the request's activity returns)."""

    def refusal(self, decision: ApprovalDecision) -> ApplicationError | None:
        """Why ``decision`` may not be applied (None: it may)."""
        ask_id = decision.ask_id
        if ask_id is None or ask_id not in self.asked:
            return ApplicationError(
                f"no approval of this run is {decision.interaction_id}",
                type="ForeignDecision",
                non_retryable=True,
            )
        taken = self.decisions.get(ask_id)
        if taken is not None:
            return ApplicationError(
                f"{decision.interaction_id} was decided already (event {taken.event_id})",
                type="DuplicateDecision",
                non_retryable=True,
            )
        if ask_id in self.closed:
            return ApplicationError(
                f"the wait for {decision.interaction_id} ended before this decision",
                type="LateDecision",
                non_retryable=True,
            )
        return None


def _state() -> _RunState:
    """This run's state; the handlers are set on first use (Signals that came earlier
    are buffered by Temporal and handed to them then; an Update cannot come earlier, as
    it answers a request this run sends after setting them)."""
    instance = workflow.instance()
    state: _RunState | None = getattr(instance, _STATE_ATTRIBUTE, None)
    if state is not None:
        return state
    state = _RunState()
    setattr(instance, _STATE_ATTRIBUTE, state)
    received = state

    def receive(answer: HumanAnswer) -> None:
        # First delivery wins: a redelivered event (same id) or a second end changes nothing.
        received.answers.setdefault(answer.interaction_id, answer)

    def validate(decision: ApprovalDecision) -> None:
        refusal = received.refusal(decision)
        if refusal is not None:
            raise refusal

    def decide(decision: ApprovalDecision) -> str:
        assert decision.ask_id is not None  # the validator passed
        received.decisions[decision.ask_id] = decision
        return f"accepted {decision.decision}"

    def decide_by_signal(decision: ApprovalDecision) -> None:
        # A Signal cannot be refused: what the validator would refuse is ignored.
        refusal = received.refusal(decision)
        if refusal is not None:
            workflow.logger.info("approval decision ignored: %s", refusal.message)
        elif decision.ask_id is not None:
            received.decisions[decision.ask_id] = decision

    workflow.set_signal_handler(ANSWER_SIGNAL, receive)
    workflow.set_update_handler(APPROVAL_UPDATE, decide, validator=validate)
    workflow.set_signal_handler(APPROVAL_SIGNAL, decide_by_signal)
    return state


def _listen(timeout: timedelta) -> float:
    seconds = timeout.total_seconds()
    if seconds <= 0:
        raise ValueError("timeout must be positive")
    return float(min(MAX_LISTEN, max(1, math.ceil(seconds))))


async def _answer(interaction_id: str, timeout: timedelta) -> HumanAnswer | None:
    """The interaction's end, or None when ``timeout`` passes first."""
    answers = _state().answers
    try:
        await workflow.wait_condition(
            lambda: interaction_id in answers, timeout=timeout, timeout_summary="humanwire answer"
        )
    except asyncio.TimeoutError:
        return None
    return answers[interaction_id]


async def ask(
    *,
    to: str,
    message: str,
    timeout: timedelta,
    metadata: Mapping[str, str] | None = None,
    send_timeout: timedelta = timedelta(seconds=60),
) -> str:
    """Text ``message`` to ``to`` (E.164) and wait up to ``timeout`` for the reply.

    Returns the reply's text, or ``NO_RESPONSE`` when the timeout passes or the service
    stops listening first (it listens at most ``MAX_LISTEN`` seconds) — never raises
    for silence. Call it from workflow code only."""
    _state()
    sent = await workflow.execute_activity(
        SEND_SMS_ACTIVITY,
        SmsAsk(
            to=to, message=message, follow_up_time=_listen(timeout), metadata=dict(metadata or {})
        ),
        start_to_close_timeout=send_timeout,
        result_type=SentAsk,
    )
    answer = await _answer(sent.interaction_id, timeout)
    if answer is None or not answer.responded or answer.text is None:
        return NO_RESPONSE
    return answer.text


async def ask_form(
    *,
    to: str,
    title: str,
    fields: Sequence[Mapping[str, Any]],
    timeout: timedelta,
    channel: str = "sms",
    message: str | None = None,
    description: str | None = None,
    metadata: Mapping[str, str] | None = None,
    send_timeout: timedelta = timedelta(seconds=60),
) -> dict[str, str] | None:
    """Send a form's link to ``to`` by ``channel`` (``sms``, ``whatsapp``, ``slack``,
    ``email``) and wait up to ``timeout`` for it to be submitted.

    Returns the submitted values (field id → text), or None when nobody submitted in
    time (the timeout, or the service's ``MAX_LISTEN``) — never raises for silence."""
    _state()
    sent = await workflow.execute_activity(
        SEND_FORM_ACTIVITY,
        FormAsk(
            channel=channel,
            to=to,
            title=title,
            fields=[dict(item) for item in fields],
            follow_up_time=_listen(timeout),
            message=message,
            description=description,
            metadata=dict(metadata or {}),
        ),
        start_to_close_timeout=send_timeout,
        result_type=SentAsk,
    )
    answer = await _answer(sent.interaction_id, timeout)
    if answer is None or not answer.responded or answer.values is None:
        return None
    return answer.values


async def call(
    *,
    to: str,
    prompt: str,
    timeout: timedelta,
    language: str | None = None,
    metadata: Mapping[str, str] | None = None,
    send_timeout: timedelta = timedelta(seconds=60),
) -> str:
    """Call ``to`` with a voice agent driven by ``prompt`` and wait up to ``timeout`` for
    the call to end. Returns the call's summary, or ``NO_RESPONSE`` when nobody picked up
    or the timeout passed first."""
    _state()
    placed = await workflow.execute_activity(
        PLACE_CALL_ACTIVITY,
        CallAsk(to=to, prompt=prompt, language=language, metadata=dict(metadata or {})),
        start_to_close_timeout=send_timeout,
        result_type=SentAsk,
    )
    answer = await _answer(placed.interaction_id, timeout)
    if answer is None or not answer.responded or answer.text is None:
        return NO_RESPONSE
    return answer.text


async def request_approval(
    *,
    title: str,
    approvers: Sequence[Mapping[str, str]],
    timeout: timedelta,
    action: Mapping[str, Any] | None = None,
    description: str | None = None,
    quorum: int = 1,
    on_timeout: str = "reject",
    metadata: Mapping[str, str] | None = None,
    send_timeout: timedelta = timedelta(seconds=60),
) -> ApprovalResult:
    """Ask ``approvers`` (``[{"channel": "sms", "to": "+1202…"}]``) to approve ``action``
    and wait up to ``timeout`` for the decision (``quorum`` approvals settle it).

    The decision comes in as the ``humanwire.approval`` Update; its validator refuses a
    second decision, one after this wait ended, and one for a request this run did not
    make. At the timeout the result is ``approved`` False, ``decision`` None and
    ``timed_out`` True — never an exception. Use it once with ``consume`` (or
    ``HumanWireActivities.claim`` inside the gated activity)."""
    state = _state()
    ask_id = str(workflow.uuid4())
    state.asked.add(ask_id)
    sent = await workflow.execute_activity(
        REQUEST_APPROVAL_ACTIVITY,
        ApprovalAsk(
            title=title,
            approvers=[dict(approver) for approver in approvers],
            follow_up_time=_listen(timeout),
            action=None if action is None else dict(action),
            description=description,
            quorum=quorum,
            on_timeout=on_timeout,
            metadata={**(metadata or {}), ASK_ID_KEY: ask_id},
        ),
        start_to_close_timeout=send_timeout,
        result_type=SentApproval,
    )
    state.ask_of[sent.interaction_id] = ask_id
    try:
        await workflow.wait_condition(
            lambda: ask_id in state.decisions, timeout=timeout, timeout_summary="humanwire approval"
        )
    except asyncio.TimeoutError:
        state.closed.add(ask_id)
        return ApprovalResult(
            interaction_id=sent.interaction_id,
            approved=False,
            decision=None,
            timed_out=True,
            action_digest=sent.action_digest,
        )
    decided = state.decisions[ask_id]
    return ApprovalResult(
        interaction_id=sent.interaction_id,
        approved=decided.decision == "approved",
        decision=decided.decision,
        timed_out=decided.timed_out,
        action_digest=decided.action_digest or sent.action_digest,
        decided_by=list(decided.decided_by),
        response=decided.response,
    )


async def consume(approval: ApprovalResult, *, timeout: timedelta = timedelta(seconds=60)) -> bool:
    """Use the approval once, as an activity of its own (its retries replay the first
    use). Raises ``ActivityError`` whose cause is an ``ApplicationError`` of type
    ``AlreadyConsumedError`` when another activity or run used it, ``NotApprovedError``
    when it is not approved."""
    consumed: bool = await workflow.execute_activity(
        CONSUME_APPROVAL_ACTIVITY, approval, start_to_close_timeout=timeout, result_type=bool
    )
    return consumed
