"""The workflow side: ``await ask(...)`` inside a ``@workflow.defn``.

The send is an activity (retried by Temporal, sent once by its idempotency key); the wait
is ``workflow.wait_condition`` with a timeout: a durable server timer, so the deadline
holds across worker restarts. The answer arrives as the ``humanwire.answer`` Signal
(``AnswerBridge``); the first one for the interaction wins, a redelivery is ignored.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from datetime import timedelta

from temporalio import workflow

from ._wire import ANSWER_SIGNAL, SEND_SMS_ACTIVITY, HumanAnswer, SentAsk, SmsAsk

with workflow.unsafe.imports_passed_through():
    from humanwire.types.messages import DEFAULT_NO_RESPONSE_TEMPLATE

__all__ = ["MAX_LISTEN", "NO_RESPONSE", "ask"]

NO_RESPONSE = DEFAULT_NO_RESPONSE_TEMPLATE
"""What ``ask`` returns when nobody answered in time, as every humanwire tool does."""
MAX_LISTEN = 60000.0
"""The longest the service listens for a reply (its ``followUpTime`` bound, seconds)."""
_ANSWERS_ATTRIBUTE = "_humanwire_answers"


def _answers() -> dict[str, HumanAnswer]:
    """This run's answers by interaction id; the Signal handler is set on first use
    (Signals that came earlier are buffered by Temporal and handed to it then)."""
    instance = workflow.instance()
    answers: dict[str, HumanAnswer] | None = getattr(instance, _ANSWERS_ATTRIBUTE, None)
    if answers is None:
        answers = {}
        setattr(instance, _ANSWERS_ATTRIBUTE, answers)
        received = answers

        def receive(answer: HumanAnswer) -> None:
            # First delivery wins: a redelivered event (same id) or a second end changes nothing.
            received.setdefault(answer.interaction_id, answer)

        workflow.set_signal_handler(ANSWER_SIGNAL, receive)
    return answers


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
    answers = _answers()
    seconds = timeout.total_seconds()
    if seconds <= 0:
        raise ValueError("timeout must be positive")
    listen = float(min(MAX_LISTEN, max(1, math.ceil(seconds))))
    sent = await workflow.execute_activity(
        SEND_SMS_ACTIVITY,
        SmsAsk(to=to, message=message, follow_up_time=listen, metadata=dict(metadata or {})),
        start_to_close_timeout=send_timeout,
        result_type=SentAsk,
    )
    try:
        await workflow.wait_condition(
            lambda: sent.interaction_id in answers,
            timeout=timeout,
            timeout_summary="humanwire answer",
        )
    except asyncio.TimeoutError:
        return NO_RESPONSE
    answer = answers[sent.interaction_id]
    if not answer.responded or answer.text is None:
        return NO_RESPONSE
    return answer.text
