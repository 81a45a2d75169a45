"""The steps: sends through ``HumanWire``, each under an idempotency key of its workflow
and step, so a step DBOS runs again after a crash replays the first send, never a second.
Each step is written once (what it sends, ``_*_call``) and declared twice: a blocking
step for ``def`` workflows, an async one (``<name>_async``, the same key) for ``async def``
ones.

The client is registered once per process (``humanwire.dbos.configure(client)``), before
``DBOS.launch()`` recovers any workflow: a recovered step sends with it too. The async
steps send with an ``AsyncHumanWire`` twin of it (``to_async``), one per event loop: DBOS
runs a recovered async workflow on a loop of its own, and an httpx async client belongs
to the loop it was first used on.

The deploy guard (is the application version pinned?) is ``_version``'s.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, ParamSpec, TypeVar, get_args

from dbos import DBOS

from humanwire._client import AsyncHumanWire, HumanWire
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
    "consume_approval_async_step",
    "consume_approval_step",
    "idempotency_key",
    "place_call_async_step",
    "place_call_step",
    "request_approval_async_step",
    "request_approval_step",
    "send_form_async_step",
    "send_form_step",
    "send_message_async_step",
    "send_message_step",
    "transient",
]

_MAX_KEY = 255
P = ParamSpec("P")
R = TypeVar("R")
MessageChannel = Literal["sms", "whatsapp", "slack", "email"]
FormChannel = Literal["sms", "slack", "email"]


class StepClient:
    """The one ``HumanWire`` client the steps of this process send with, its async twins
    (one per event loop), and whether an unpinned application version is refused."""

    def __init__(self) -> None:
        self._client: HumanWire | None = None
        self._twins: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncHumanWire] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        self.require_pinned_version = False

    def set(self, client: HumanWire, *, require_pinned_version: bool = False) -> None:
        with self._lock:
            self._client = client
            self._twins = weakref.WeakKeyDictionary()
            self.require_pinned_version = require_pinned_version

    def get(self) -> HumanWire:
        with self._lock:
            if self._client is None:
                raise RuntimeError(
                    "humanwire.dbos.configure(HumanWire(...)) first: the steps send with it"
                )
            return self._client

    def get_async(self) -> AsyncHumanWire:
        """The async twin of the client for the running event loop."""
        client = self.get()
        loop = asyncio.get_running_loop()
        with self._lock:
            twin = self._twins.get(loop)
            if twin is None:
                twin = self._twins[loop] = client.to_async()
            return twin


STEP_CLIENT = StepClient()


def configure(client: HumanWire, *, require_pinned_version: bool = False) -> None:
    """Registers the client the steps send with (call it before ``DBOS.launch()``).

    A wait begun with DBOS's computed application version is stranded by the next code
    edit: each helper warns (``UnpinnedVersionWarning``) when the version is not pinned,
    or, with ``require_pinned_version``, refuses (``UnpinnedVersionError``) before it
    sends anything."""
    STEP_CLIENT.set(client, require_pinned_version=require_pinned_version)


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


def _async_step(name: str) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """The async twin of ``_step`` (its name ends ``_async``: DBOS registers steps by
    name), with the same retries and key, for async workflows."""
    return DBOS.step(
        name=name,
        retries_allowed=True,
        max_attempts=5,
        interval_seconds=1.0,
        backoff_rate=2.0,
        should_retry=transient,
    )


# What each step sends, written once: (resource, method, keyword arguments).
Call = tuple[str, str, dict[str, Any]]


def _message_call(
    channel: str,
    to: str,
    message: str,
    follow_up_time: float,
    metadata: Mapping[str, str] | None,
    subject: str | None,
) -> Call:
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
    return "messages", channel, common


def _form_call(
    channel: str,
    to: str,
    title: str,
    fields: Sequence[FieldSpec],
    follow_up_time: float,
    message: str | None,
    description: str | None,
    metadata: Mapping[str, str] | None,
) -> Call:
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
    return "forms", channel, common


def _call_call(
    to: str,
    prompt: str,
    language: str | None,
    voice: str | None,
    metadata: Mapping[str, str] | None,
) -> Call:
    arguments = {
        "to": to,
        "prompt": prompt,
        "language": language,
        "voice": voice,
        "metadata": _metadata(metadata),
        "idempotency_key": idempotency_key(),
    }
    return "calls", "create", arguments


def _approval_call(
    title: str,
    approvers: Sequence[ApproverSpec],
    follow_up_time: float,
    action: ActionSpec | None,
    description: str | None,
    quorum: int | None,
    on_timeout: OnTimeout | None,
    metadata: Mapping[str, str] | None,
) -> Call:
    arguments = {
        "title": title,
        "approvers": approvers,
        "action": action,
        "description": description,
        "quorum": quorum,
        "on_timeout": on_timeout,
        "follow_up_time": follow_up_time,
        "metadata": _metadata(metadata),
        "idempotency_key": idempotency_key(),
    }
    return "approvals", "create", arguments


def _consume_call(interaction_id: str, action_digest: str | None) -> Call:
    arguments = {"action_digest": action_digest, "idempotency_key": idempotency_key()}
    return "approvals", "consume", {"interaction_id": interaction_id, **arguments}


def _send(call: Call) -> Any:
    resource, method, arguments = call
    return getattr(getattr(STEP_CLIENT.get(), resource), method)(**arguments)


async def _send_async(call: Call) -> Any:
    resource, method, arguments = call
    return await getattr(getattr(STEP_CLIENT.get_async(), resource), method)(**arguments)


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
    sent = _send(_message_call(channel, to, message, follow_up_time, metadata, subject))
    return str(sent.interaction_id)


@_async_step("humanwire.send_message_async")
async def send_message_async_step(
    channel: MessageChannel,
    to: str,
    message: str,
    follow_up_time: float,
    metadata: Mapping[str, str] | None = None,
    subject: str | None = None,
) -> str:
    call = _message_call(channel, to, message, follow_up_time, metadata, subject)
    return str((await _send_async(call)).interaction_id)


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
    call = _form_call(channel, to, title, fields, follow_up_time, message, description, metadata)
    return str(_send(call).interaction_id)


@_async_step("humanwire.send_form_async")
async def send_form_async_step(
    channel: FormChannel,
    to: str,
    title: str,
    fields: Sequence[FieldSpec],
    follow_up_time: float,
    message: str | None = None,
    description: str | None = None,
    metadata: Mapping[str, str] | None = None,
) -> str:
    call = _form_call(channel, to, title, fields, follow_up_time, message, description, metadata)
    return str((await _send_async(call)).interaction_id)


@_step("humanwire.place_call")
def place_call_step(
    to: str,
    prompt: str,
    language: str | None = None,
    voice: str | None = None,
    metadata: Mapping[str, str] | None = None,
) -> str:
    """Places a call (returning at once); returns its interaction id."""
    return str(_send(_call_call(to, prompt, language, voice, metadata)).interaction_id)


@_async_step("humanwire.place_call_async")
async def place_call_async_step(
    to: str,
    prompt: str,
    language: str | None = None,
    voice: str | None = None,
    metadata: Mapping[str, str] | None = None,
) -> str:
    call = _call_call(to, prompt, language, voice, metadata)
    return str((await _send_async(call)).interaction_id)


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
    approval = _send(
        _approval_call(
            title, approvers, follow_up_time, action, description, quorum, on_timeout, metadata
        )
    )
    return approval.interaction_id, approval.action_digest


@_async_step("humanwire.request_approval_async")
async def request_approval_async_step(
    title: str,
    approvers: Sequence[ApproverSpec],
    follow_up_time: float,
    action: ActionSpec | None = None,
    description: str | None = None,
    quorum: int | None = None,
    on_timeout: OnTimeout | None = None,
    metadata: Mapping[str, str] | None = None,
) -> tuple[str, str | None]:
    approval = await _send_async(
        _approval_call(
            title, approvers, follow_up_time, action, description, quorum, on_timeout, metadata
        )
    )
    return approval.interaction_id, approval.action_digest


@_step("humanwire.consume_approval")
def consume_approval_step(interaction_id: str, action_digest: str | None) -> bool:
    """Claims the approval for the action about to run: True the first time; the step
    run again after a crash is answered as its first run was (its key is the same);
    another claim raises ``AlreadyConsumedError``, an undecided or rejected request
    ``NotApprovedError``."""
    return bool(_send(_consume_call(interaction_id, action_digest)).consumed)


@_async_step("humanwire.consume_approval_async")
async def consume_approval_async_step(interaction_id: str, action_digest: str | None) -> bool:
    return bool((await _send_async(_consume_call(interaction_id, action_digest))).consumed)


SEND_STEP_NAMES = (
    "humanwire.send_message",
    "humanwire.send_form",
    "humanwire.place_call",
    "humanwire.request_approval",
    "humanwire.send_message_async",
    "humanwire.send_form_async",
    "humanwire.place_call_async",
    "humanwire.request_approval_async",
)
"""The steps that reach a person: a recovered workflow's history shows each once."""
