"""The steps: sends through ``HumanWire``, each under an idempotency key of its workflow
and step, so a step DBOS runs again after a crash replays the first send, never a second.

The client is registered once per process (``humanwire.dbos.configure(client)``), before
``DBOS.launch()`` recovers any workflow: a recovered step sends with it too.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, ParamSpec, TypeVar, get_args

from dbos import DBOS

from humanwire._client import HumanWire
from humanwire.errors import (
    AlreadyConsumedError,
    APIConnectionError,
    APIStatusError,
    ConflictError,
    NotApprovedError,
    RateLimitError,
)
from humanwire.resources.approvals import ActionSpec, ApproverSpec
from humanwire.resources.forms import FieldSpec
from humanwire.types.approvals import OnTimeout

from ._wire import WORKFLOW_ID_KEY

__all__ = [
    "SEND_STEP_NAMES",
    "StepClient",
    "configure",
    "consume_approval_step",
    "idempotency_key",
    "place_call_step",
    "request_approval_step",
    "send_form_step",
    "send_message_step",
    "transient",
]

_MAX_KEY = 255
P = ParamSpec("P")
R = TypeVar("R")
MessageChannel = Literal["sms", "whatsapp", "slack", "email"]
FormChannel = Literal["sms", "slack", "email"]


class StepClient:
    """The one ``HumanWire`` client the steps of this process send with."""

    def __init__(self) -> None:
        self._client: HumanWire | None = None
        self._lock = threading.Lock()

    def set(self, client: HumanWire) -> None:
        with self._lock:
            self._client = client

    def get(self) -> HumanWire:
        with self._lock:
            if self._client is None:
                raise RuntimeError(
                    "humanwire.dbos.configure(HumanWire(...)) first: the steps send with it"
                )
            return self._client


STEP_CLIENT = StepClient()


def configure(client: HumanWire) -> None:
    """Registers the client the steps send with (call it before ``DBOS.launch()``)."""
    STEP_CLIENT.set(client)


def idempotency_key() -> str:
    """``dbos:<workflow id>:<step id>``: the same every time DBOS runs this step of this
    workflow (a recovery runs it again under it). Hashed past 255 characters."""
    key = f"dbos:{DBOS.workflow_id}:{DBOS.step_id}"
    if len(key) <= _MAX_KEY and key.isascii() and key.isprintable():
        return key
    return "dbos:sha256:" + hashlib.sha256(key.encode()).hexdigest()


def transient(error: BaseException) -> bool:
    """Whether DBOS runs the step again: a lost connection, a 5xx, a 429, or a 409 of the
    first attempt's send still in flight under the key. A refusal (bad number, rejected
    approval) stays a refusal: no attempt can change it."""
    if isinstance(error, APIConnectionError):
        return True
    if isinstance(error, (AlreadyConsumedError, NotApprovedError)):
        return False
    if isinstance(error, (RateLimitError, ConflictError)):
        return True
    return isinstance(error, APIStatusError) and error.status_code >= 500


def _step(name: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A humanwire step: retried on transient failures (each attempt under the same
    idempotency key, so a send whose answer was lost is answered, not repeated)."""
    return DBOS.step(
        name=name,
        retries_allowed=True,
        max_attempts=5,
        interval_seconds=1.0,
        backoff_rate=2.0,
        should_retry=transient,
    )


def _metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    workflow_id = DBOS.workflow_id
    if workflow_id is None:
        raise RuntimeError("humanwire.dbos steps run inside a DBOS workflow")
    return {**(metadata or {}), WORKFLOW_ID_KEY: workflow_id}


@_step("humanwire.send_message")
def send_message_step(
    channel: MessageChannel,
    to: str,
    message: str,
    follow_up_time: float,
    metadata: Mapping[str, str] | None = None,
    subject: str | None = None,
) -> str:
    """Sends a text (without waiting on the service); returns its interaction id."""
    client = STEP_CLIENT.get()
    common: dict[str, Any] = {
        "to": to,
        "message": message,
        "follow_up_time": follow_up_time,
        "metadata": _metadata(metadata),
        "idempotency_key": idempotency_key(),
    }
    if channel not in get_args(MessageChannel):
        raise ValueError(f"no such channel: {channel!r}")
    if channel == "email":
        common["subject"] = subject
    # The client's method of that channel's name, as the tools call it (_tool_kinds).
    sent = getattr(client.messages, channel)(**common)
    return str(sent.interaction_id)


@_step("humanwire.send_form")
def send_form_step(
    channel: FormChannel,
    to: str,
    title: str,
    fields: Sequence[FieldSpec],
    follow_up_time: float,
    message: str | None = None,
    description: str | None = None,
    metadata: Mapping[str, str] | None = None,
) -> str:
    """Sends a form's link; returns its interaction id."""
    client = STEP_CLIENT.get()
    common: dict[str, Any] = {
        "to": to,
        "title": title,
        "fields": list(fields),
        "message": message,
        "description": description,
        "follow_up_time": follow_up_time,
        "metadata": _metadata(metadata),
        "idempotency_key": idempotency_key(),
    }
    if channel not in get_args(FormChannel):
        raise ValueError(f"no such channel: {channel!r}")
    sent = getattr(client.forms, channel)(**common)
    return str(sent.interaction_id)


@_step("humanwire.place_call")
def place_call_step(
    to: str,
    prompt: str,
    language: str | None = None,
    voice: str | None = None,
    metadata: Mapping[str, str] | None = None,
) -> str:
    """Places a call (returning at once); returns its interaction id."""
    sent = STEP_CLIENT.get().calls.create(
        to=to,
        prompt=prompt,
        language=language,
        voice=voice,
        metadata=_metadata(metadata),
        idempotency_key=idempotency_key(),
    )
    return sent.interaction_id


@_step("humanwire.request_approval")
def request_approval_step(
    title: str,
    approvers: Sequence[ApproverSpec],
    follow_up_time: float,
    action: ActionSpec | None = None,
    description: str | None = None,
    quorum: int | None = None,
    on_timeout: OnTimeout | None = None,
    metadata: Mapping[str, str] | None = None,
) -> tuple[str, str | None]:
    """Asks for an approval; returns its interaction id and action digest."""
    approval = STEP_CLIENT.get().approvals.create(
        title=title,
        approvers=approvers,
        action=action,
        description=description,
        quorum=quorum,
        on_timeout=on_timeout,
        follow_up_time=follow_up_time,
        metadata=_metadata(metadata),
        idempotency_key=idempotency_key(),
    )
    return approval.interaction_id, approval.action_digest


@_step("humanwire.consume_approval")
def consume_approval_step(interaction_id: str, action_digest: str | None) -> bool:
    """Claims the approval for the action about to run: True the first time; the step
    run again after a crash is answered as its first run was (its key is the same);
    another claim raises ``AlreadyConsumedError``, an undecided or rejected request
    ``NotApprovedError``."""
    consumed = STEP_CLIENT.get().approvals.consume(
        interaction_id, action_digest=action_digest, idempotency_key=idempotency_key()
    )
    return consumed.consumed


SEND_STEP_NAMES = (
    "humanwire.send_message",
    "humanwire.send_form",
    "humanwire.place_call",
    "humanwire.request_approval",
)
"""The steps that reach a person: a recovered workflow's history shows each once."""
