"""The workflow side: ``humanwire.dbos.ask(...)`` and friends inside a ``@DBOS.workflow()``,
and their async twins (``ask_async`` ...) inside an ``async def`` workflow.

Each runs its send step (recorded by DBOS: a recovered workflow does not send again),
then waits with ``DBOS.recv(topic, timeout_seconds=...)``, a durable wait: the deadline
is stored, so a recovered workflow waits only what is left of it. The answer arrives as
the message the answer bridge sends (``AnswerBridge``), one topic per interaction.
At the timeout, or when the service ended the interaction unanswered, each returns the
no-response text (or a decision of None): silence is never an exception.

Each helper is written once, as a flow (a generator, as ``humanwire._http`` writes a
request): it yields ``Step`` (run this humanwire step) and ``Receive`` (``DBOS.recv`` this
topic) and reads their results. ``_run`` drives a flow with the blocking steps and
``DBOS.recv``; ``_run_async`` with the async steps and ``DBOS.recv_async``.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar, cast

from dbos import DBOS

from humanwire.resources.approvals import ActionSpec, ApproverSpec
from humanwire.resources.forms import FieldSpec
from humanwire.types.approvals import OnTimeout
from humanwire.types.messages import DEFAULT_NO_RESPONSE_TEMPLATE

from ._steps import (
    FormChannel,
    MessageChannel,
    consume_approval_async_step,
    consume_approval_step,
    place_call_async_step,
    place_call_step,
    request_approval_async_step,
    request_approval_step,
    send_form_async_step,
    send_form_step,
    send_message_async_step,
    send_message_step,
)
from ._version import check_version
from ._wire import ApprovalDecision, topic_of

__all__ = [
    "APPROVAL_GRACE",
    "MAX_LISTEN",
    "NO_RESPONSE",
    "approval",
    "approval_async",
    "ask",
    "ask_async",
    "call",
    "call_async",
    "consume",
    "consume_async",
    "form",
    "form_async",
]

T = TypeVar("T")

NO_RESPONSE = DEFAULT_NO_RESPONSE_TEMPLATE
"""What a wait returns when nobody answered in time, as every humanwire tool does."""
MAX_LISTEN = 60000.0
"""The longest the service listens for a reply (its ``followUpTime`` bound, seconds)."""
APPROVAL_GRACE = 60.0
"""Seconds an approval wait allows past its timeout for the service's ``on_timeout``
decision to arrive."""


def _seconds(timeout: timedelta | float) -> float:
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    if not seconds > 0:
        raise ValueError("timeout must be positive")
    return seconds


def _listen(seconds: float) -> float:
    """How long the service listens: the wait, within its bounds (1 to 60000 s)."""
    return float(min(MAX_LISTEN, max(1, math.ceil(seconds))))


@dataclass(frozen=True)
class Step:
    """Run the humanwire step ``name`` with ``args``; the driver answers with its result."""

    name: str
    args: tuple[Any, ...]


@dataclass(frozen=True)
class Receive:
    """``DBOS.recv(topic, timeout_seconds=seconds)``; the driver answers with the message."""

    topic: str
    seconds: float


WaitFlow = Generator[Step | Receive, Any, T]

_STEPS: dict[str, Callable[..., Any]] = {
    "message": send_message_step,
    "form": send_form_step,
    "call": place_call_step,
    "approval": request_approval_step,
    "consume": consume_approval_step,
}
_ASYNC_STEPS: dict[str, Callable[..., Awaitable[Any]]] = {
    "message": send_message_async_step,
    "form": send_form_async_step,
    "call": place_call_async_step,
    "approval": request_approval_async_step,
    "consume": consume_approval_async_step,
}


def _run(flow: WaitFlow[T], *, waits: bool = True) -> T:
    """Drives ``flow`` in a blocking workflow (one that ``waits`` checks the version)."""
    if waits:
        check_version()
    result: Any = None
    while True:
        try:
            action = flow.send(result)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        if isinstance(action, Step):
            result = _STEPS[action.name](*action.args)
        else:
            result = DBOS.recv(action.topic, timeout_seconds=action.seconds)


async def _run_async(flow: WaitFlow[T], *, waits: bool = True) -> T:
    """Drives ``flow`` in an ``async def`` workflow."""
    if waits:
        check_version()
    result: Any = None
    while True:
        try:
            action = flow.send(result)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        if isinstance(action, Step):
            result = await _ASYNC_STEPS[action.name](*action.args)
        else:
            result = await DBOS.recv_async(action.topic, timeout_seconds=action.seconds)


def _receive(interaction_id: str, seconds: float) -> WaitFlow[dict[str, Any] | None]:
    """The interaction's end, or None at the timeout (or when it ended unanswered)."""
    message = yield Receive(topic_of(interaction_id), seconds)
    if not isinstance(message, dict) or not message.get("responded"):
        return None
    return cast("dict[str, Any]", message)


def _payload(message: dict[str, Any] | None, event_type: str) -> dict[str, Any] | None:
    if message is None or message.get("eventType") != event_type:
        return None
    payload = message.get("payload")
    return payload if isinstance(payload, dict) else None


# -- the flows, written once -----------------------------------------------------------------


def _ask(
    to: str,
    message: str,
    timeout: timedelta | float,
    channel: MessageChannel,
    subject: str | None,
    metadata: Mapping[str, str] | None,
) -> WaitFlow[str]:
    seconds = _seconds(timeout)
    interaction_id = yield Step(
        "message", (channel, to, message, _listen(seconds), dict(metadata or {}), subject)
    )
    payload = _payload((yield from _receive(interaction_id, seconds)), "message.received")
    body = None if payload is None else payload.get("body")
    return body if isinstance(body, str) else NO_RESPONSE


def _form(
    to: str,
    title: str,
    fields: Sequence[FieldSpec],
    timeout: timedelta | float,
    channel: FormChannel,
    message: str | None,
    description: str | None,
    metadata: Mapping[str, str] | None,
) -> WaitFlow[dict[str, str] | str]:
    seconds = _seconds(timeout)
    args = (
        channel,
        to,
        title,
        [_plain(field) for field in fields],
        _listen(seconds),
        message,
        description,
        dict(metadata or {}),
    )
    interaction_id = yield Step("form", args)
    payload = _payload((yield from _receive(interaction_id, seconds)), "form.received")
    values = None if payload is None else payload.get("values")
    return dict(values) if isinstance(values, dict) else NO_RESPONSE


def _call(
    to: str,
    prompt: str,
    timeout: timedelta | float,
    language: str | None,
    voice: str | None,
    metadata: Mapping[str, str] | None,
) -> WaitFlow[str]:
    seconds = _seconds(timeout)
    interaction_id = yield Step("call", (to, prompt, language, voice, dict(metadata or {})))
    payload = _payload((yield from _receive(interaction_id, seconds)), "call.conversation.ended")
    summary = None if payload is None else payload.get("summary")
    return summary if isinstance(summary, str) else NO_RESPONSE


def _approval(
    title: str,
    approvers: Sequence[ApproverSpec],
    timeout: timedelta | float,
    action: ActionSpec | None,
    description: str | None,
    quorum: int | None,
    on_timeout: OnTimeout | None,
    metadata: Mapping[str, str] | None,
) -> WaitFlow[ApprovalDecision]:
    seconds = _seconds(timeout)
    args = (
        title,
        [_plain(approver) for approver in approvers],
        _listen(seconds),
        _plain(action) if action is not None else None,
        description,
        quorum,
        on_timeout,
        dict(metadata or {}),
    )
    interaction_id, digest = yield Step("approval", args)
    # The service decides at the end of its window (``on_timeout``, reject by default):
    # the wait allows the decision time to arrive, so it is that decision, not silence.
    grace = APPROVAL_GRACE if seconds <= MAX_LISTEN else 0.0
    message = yield Receive(topic_of(interaction_id), seconds + grace)
    payload = _payload(message if isinstance(message, dict) else None, "approval.decided")
    if payload is None:
        return ApprovalDecision(interaction_id, None, NO_RESPONSE, digest)
    decision = payload.get("decision")
    text = payload.get("response")
    return ApprovalDecision(
        interaction_id,
        decision if decision in ("approved", "rejected") else None,
        text if isinstance(text, str) else NO_RESPONSE,
        digest,
        timed_out=payload.get("timedOut") is True,
    )


def _consume(decision: ApprovalDecision) -> WaitFlow[bool]:
    consumed = yield Step("consume", (decision.interaction_id, decision.action_digest))
    return bool(consumed)


# -- blocking workflows ------------------------------------------------------------------------


def ask(
    *,
    to: str,
    message: str,
    timeout: timedelta | float,
    channel: MessageChannel = "sms",
    subject: str | None = None,
    metadata: Mapping[str, str] | None = None,
) -> str:
    """Text ``message`` to ``to`` over ``channel`` and wait up to ``timeout`` (seconds or
    a timedelta) for the reply. Returns the reply's text, or ``NO_RESPONSE``; never raises
    for silence. Call it from workflow code only."""
    return _run(_ask(to, message, timeout, channel, subject, metadata))


def form(
    *,
    to: str,
    title: str,
    fields: Sequence[FieldSpec],
    timeout: timedelta | float,
    channel: FormChannel = "sms",
    message: str | None = None,
    description: str | None = None,
    metadata: Mapping[str, str] | None = None,
) -> dict[str, str] | str:
    """Send a form's link and wait up to ``timeout`` for its submission. Returns the
    submitted values (field name to value), or the ``NO_RESPONSE`` text."""
    return _run(_form(to, title, fields, timeout, channel, message, description, metadata))


def call(
    *,
    to: str,
    prompt: str,
    timeout: timedelta | float,
    language: str | None = None,
    voice: str | None = None,
    metadata: Mapping[str, str] | None = None,
) -> str:
    """Place a call driven by ``prompt`` and wait up to ``timeout`` for it to end.
    Returns the conversation's summary, or ``NO_RESPONSE`` (missed, or still going)."""
    return _run(_call(to, prompt, timeout, language, voice, metadata))


def approval(
    *,
    title: str,
    approvers: Sequence[ApproverSpec],
    timeout: timedelta | float,
    action: ActionSpec | None = None,
    description: str | None = None,
    quorum: int | None = None,
    on_timeout: OnTimeout | None = None,
    metadata: Mapping[str, str] | None = None,
) -> ApprovalDecision:
    """Ask ``approvers`` to approve and wait up to ``timeout`` for the decision. Returns
    the decision (``.approved``). Undecided at the timeout, ``on_timeout`` decides
    (``timed_out`` true; reject by default; ``"none"``: decision None). When no decision
    came at all (``APPROVAL_GRACE`` past the timeout), a decision of None with the
    ``NO_RESPONSE`` text. Pass it to ``consume`` right before the action runs."""
    return _run(
        _approval(title, approvers, timeout, action, description, quorum, on_timeout, metadata)
    )


def consume(decision: ApprovalDecision) -> bool:
    """Claim the approved action once, right before it runs (a step: recorded, and
    under its own idempotency key, so recovery never claims twice). True when claimed;
    raises ``NotApprovedError`` unless approved, ``AlreadyConsumedError`` if another
    run claimed it."""
    return _run(_consume(decision), waits=False)


# -- async workflows ---------------------------------------------------------------------------


async def ask_async(
    *,
    to: str,
    message: str,
    timeout: timedelta | float,
    channel: MessageChannel = "sms",
    subject: str | None = None,
    metadata: Mapping[str, str] | None = None,
) -> str:
    """``ask`` in an ``async def`` workflow: async steps, ``DBOS.recv_async``."""
    return await _run_async(_ask(to, message, timeout, channel, subject, metadata))


async def form_async(
    *,
    to: str,
    title: str,
    fields: Sequence[FieldSpec],
    timeout: timedelta | float,
    channel: FormChannel = "sms",
    message: str | None = None,
    description: str | None = None,
    metadata: Mapping[str, str] | None = None,
) -> dict[str, str] | str:
    """``form`` in an ``async def`` workflow."""
    return await _run_async(
        _form(to, title, fields, timeout, channel, message, description, metadata)
    )


async def call_async(
    *,
    to: str,
    prompt: str,
    timeout: timedelta | float,
    language: str | None = None,
    voice: str | None = None,
    metadata: Mapping[str, str] | None = None,
) -> str:
    """``call`` in an ``async def`` workflow."""
    return await _run_async(_call(to, prompt, timeout, language, voice, metadata))


async def approval_async(
    *,
    title: str,
    approvers: Sequence[ApproverSpec],
    timeout: timedelta | float,
    action: ActionSpec | None = None,
    description: str | None = None,
    quorum: int | None = None,
    on_timeout: OnTimeout | None = None,
    metadata: Mapping[str, str] | None = None,
) -> ApprovalDecision:
    """``approval`` in an ``async def`` workflow."""
    return await _run_async(
        _approval(title, approvers, timeout, action, description, quorum, on_timeout, metadata)
    )


async def consume_async(decision: ApprovalDecision) -> bool:
    """``consume`` in an ``async def`` workflow."""
    return await _run_async(_consume(decision), waits=False)


def _plain(value: Any) -> Any:
    """A model given where a dict may be: its wire form (plain data pickles anywhere)."""
    to_wire = getattr(value, "to_wire", None)
    return to_wire() if callable(to_wire) else value
