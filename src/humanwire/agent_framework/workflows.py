"""People answer a Microsoft Agent Framework workflow's ``ctx.request_info(...)``: each
request a run leaves pending (``result.get_request_info_events()``) goes to a person as a
question on the approver's channel, and the reply is the request's response
(``workflow.run(responses={request_id: reply})``).

- **in the run** (:meth:`HumanRequests.arun`): ask, wait for the replies, run on, until
  the workflow asks for nothing more;
- **from a checkpoint** (:meth:`HumanRequests.resume`): a workflow with checkpoint
  storage paused in one process is run on in another, from its latest checkpoint
  (``checkpoint_id=…``), the questions sent again under the same Idempotency-Keys (made
  of the framework's request id, new for every request, and the question's digest), so
  the person is asked once. Register the request's type with
  ``register_checkpoint_type``: the framework silently writes no checkpoint for a type
  it may not decode.

A request's data is asked as its text: a ``str`` as it is, else its ``text``,
``question``, ``prompt`` or ``message`` attribute, else ``str(data)``. Only requests whose
response type is ``str`` are answered: a person's reply is text. Nobody answering in
time is the no-response text; a question that could not be sent (the service stopped, a
bad key) is ``humanwire: <reason>``, so the workflow reads why and never a made-up yes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from humanwire._pauses import RESUME_KEY, AskingPeople, action_key, ask_person, reply_text
from humanwire.approval import ApprovalRequest
from humanwire.errors import HumanWireError

if TYPE_CHECKING:
    from agent_framework import CheckpointStorage, Workflow, WorkflowRunResult

    from humanwire._client import AsyncHumanWire

__all__ = ["WORKFLOW_REQUEST_KEY", "HumanRequests", "Request", "question_text"]

WORKFLOW_REQUEST_KEY = "af_request_id"
"""A question's metadata key: the workflow request it answers."""

_TEXT_FIELDS = ("text", "question", "prompt", "message")
_REPLY_PREFIX = reply_text("")


def question_text(data: Any) -> str:
    """What a person is asked for a request's ``data``."""
    if isinstance(data, str):
        return data
    for name in _TEXT_FIELDS:
        value = getattr(data, name, None)
        if isinstance(value, str) and value:
            return value
    return str(data)


@dataclass(frozen=True)
class Request:
    """One pending ``request_info``: the framework's request id and the question."""

    request_id: str
    text: str


def _requests(events: Any) -> list[Request]:
    found = []
    for event in events:
        response_type = getattr(event, "response_type", None)
        if response_type not in (str, None):
            raise TypeError(
                f"request {event.request_id} wants a {response_type!r} response: a person's "
                "reply is text (ask with response_type=str)"
            )
        found.append(Request(str(event.request_id), question_text(event.data)))
    return found


class HumanRequests(AskingPeople):
    """Answers a workflow's ``request_info`` requests with people, through one
    :class:`~humanwire.approval.Approver` (give one, or its options: ``to``, ``channel``,
    ``follow_up_time``, ``client``); each question stays open ``window`` seconds
    (default: the approver's ``follow_up_time``, else an hour)."""

    async def arun(self, workflow: Workflow, message: Any, **options: Any) -> WorkflowRunResult:
        """``workflow.run(message)``, each request answered by waiting for the person's
        reply, until the workflow asks for nothing more."""
        result: WorkflowRunResult = await workflow.run(message, **options)
        while requests := _requests(result.get_request_info_events()):
            replies = await self._replies(requests, timeout=None)
            assert replies is not None  # waited for every reply
            result = await workflow.run(responses=replies)
        return result

    async def start(self, workflow: Workflow, message: Any, **options: Any) -> WorkflowRunResult:
        """``workflow.run(message)``; the questions of the requests it leaves pending are
        sent without waiting (the process may exit: :meth:`resume` runs it on)."""
        result: WorkflowRunResult = await workflow.run(message, **options)
        requests = _requests(result.get_request_info_events())
        if requests:
            await self._replies(requests, timeout=0)
        return result

    async def resume(
        self,
        workflow: Workflow,
        storage: CheckpointStorage,
        *,
        checkpoint_id: str | None = None,
        timeout: float | None = 0,
    ) -> WorkflowRunResult | None:
        """Run ``workflow`` on from ``checkpoint_id`` (default: the latest of its
        checkpoints in ``storage``) once every pending request has a reply (waiting at
        most ``timeout`` seconds a question; ``0``: look once; ``None``: until each
        closes). ``None`` when it has no pending request, or a question is still open."""
        if checkpoint_id is None:
            saved = await storage.list_checkpoints(workflow_name=workflow.name)
            if not saved:
                return None
            checkpoint = max(saved, key=lambda c: c.timestamp)
        else:
            checkpoint = await storage.load(checkpoint_id)
        pending = checkpoint.pending_request_info_events or {}
        requests = _requests(pending.values())
        if not requests:
            return None
        replies = await self._replies(requests, timeout=timeout)
        if replies is None:
            return None
        result: WorkflowRunResult = await workflow.run(
            checkpoint_id=checkpoint.checkpoint_id,
            checkpoint_storage=storage,
            responses=replies,
        )
        return result

    async def _replies(
        self, requests: list[Request], *, timeout: float | None
    ) -> dict[str, str] | None:
        client = await self.clients.get()
        found = await asyncio.gather(*(self._ask(client, r, timeout) for r in requests))
        if any(reply is None for reply in found):
            return None
        return {r.request_id: str(reply) for r, reply in zip(requests, found, strict=True)}

    async def _ask(
        self, client: AsyncHumanWire, request: Request, timeout: float | None
    ) -> str | None:
        metadata = {
            RESUME_KEY: "agent_framework",
            WORKFLOW_REQUEST_KEY: request.request_id[:128],
        }
        # Unique per request (the framework's id is new each time) and bound to what is
        # asked: a resume sends the same question under the same key.
        asked = ApprovalRequest("request_info", {"text": request.text})
        key = action_key("question", "agent_framework", request.request_id, request=asked)
        answer = await ask_person(
            self,
            "question",
            request.text,
            key=key,
            metadata=metadata,
            timeout=timeout,
            client=client,
        )
        if isinstance(answer, HumanWireError):
            return f"humanwire: {answer}"
        if answer is None:
            return None
        return str(answer).removeprefix(_REPLY_PREFIX)
