"""People answer Microsoft Agent Framework's approval requests: a tool built with
``approval_mode="always_require"`` stops the agent's run with a
``function_approval_request`` (``response.user_input_requests``); :class:`HumanApprovals`
sends it to a person as an approval request (``POST /approvals``) and runs the agent on
with the person's ``function_approval_response``:

- **in the run** (:meth:`HumanApprovals.arun`): send, wait for the decisions, run on,
  until the run asks for nothing more;
- **paused** (:meth:`HumanApprovals.start`): send without waiting and return; the session
  (``session.to_dict()``, in the ``store`` given) holds the pause, and the process may
  exit. Later, in any process with the same agent, :meth:`HumanApprovals.resume` (a
  session), :meth:`HumanApprovals.resume_from_webhook` (the ``approval.decided``
  delivery) or :meth:`HumanApprovals.resume_expired` (a scheduler) runs it on.

The pause is the session: its ``state["humanwire"]`` names each request's interaction,
so a resume reads the decisions it was not delivered from the service (and consumes each
approval there before its call runs: a forged delivery approves nothing). Each send's
Idempotency-Key is made of the session id, the approval request's id (the framework's, new
for every request) and the digest of the call's action.

**Runs once.** An approval is consumed on the service, bound to the call's action, right
before the run goes on; a pause whose approval was consumed already (a copy of the
session resumed before) is not run on at all. A store's pause is claimed atomically, so
of two deliveries one resumes it.

**Fails closed.** Rejected, timed out, or not requested at all (the service stopped, a
bad key): the call is answered ``approved=False``, so it never runs, and the model reads
why (with the person's comment) in the same message.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from humanwire._pauses import (
    RESUME_KEY,
    Answer,
    AskingPeople,
    AwaitedAnswer,
    FilePlainRecordStore,
    PauseResumer,
    SavedRecord,
    action_key,
    ask_person,
    metadata_value,
    read_decision,
    request_approval,
    resume_answered,
    resume_expired,
    resume_from_webhook,
    resume_once,
    settle_approval,
)
from humanwire.approval import ApprovalDecision, ApprovalRequest, Approver
from humanwire.errors import HumanWireError
from humanwire.types import Event

if TYPE_CHECKING:
    from agent_framework import Agent, AgentResponse, AgentSession, Content

    from humanwire._client import AsyncHumanWire

__all__ = [
    "REQUEST_KEY",
    "RESUME_AGENT_FRAMEWORK",
    "SESSION_KEY",
    "STATE_KEY",
    "HumanApprovals",
    "PendingRequest",
    "SessionStore",
]

RESUME_AGENT_FRAMEWORK = "agent_framework"
"""A send's ``metadata[humanwire_resume]``: tells this adapter's deliveries from other
adapters' (each leaves the others' alone)."""
SESSION_KEY = "af_session_id"
REQUEST_KEY = "af_approval_id"
"""A send's metadata keys: the session a resume runs on, the approval request it answers."""
STATE_KEY = "humanwire"
"""The key of ``session.state`` where a paused session names its requests' interactions."""


@dataclass(frozen=True)
class PendingRequest:
    """One approval request a paused session waits for: the framework's request id, the
    call (tool name, arguments, call id) and the humanwire interaction asked."""

    request_id: str
    tool_name: str
    arguments: dict[str, Any]
    call_id: str
    interaction_id: str = ""
    error: str = ""
    """Why its approval request could not be sent (the call is refused on resume)."""
    kind: str = "approval"

    @property
    def request(self) -> ApprovalRequest:
        """The call as an approval request: what its approval is bound to."""
        return ApprovalRequest(self.tool_name, self.arguments)

    def to_dict(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "tool_name": self.tool_name,
            "arguments": self.arguments,
            "call_id": self.call_id,
            "interaction_id": self.interaction_id,
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PendingRequest:
        return cls(
            str(data["request_id"]),
            str(data["tool_name"]),
            dict(data.get("arguments") or {}),
            str(data.get("call_id") or ""),
            str(data.get("interaction_id") or ""),
            str(data.get("error") or ""),
        )

    @classmethod
    def of(cls, content: Content) -> PendingRequest:
        """The request a ``function_approval_request`` content makes."""
        call = content.function_call
        arguments = call.parse_arguments() if call is not None else None
        return cls(
            str(content.id),
            str(call.name if call is not None else "tool"),
            # In key order: a resume sends the same request under the same key.
            dict(sorted((arguments or {}).items())),
            str(call.call_id if call is not None else ""),
        )


class SessionStore(FilePlainRecordStore):
    """Paused sessions as JSON files (``session.to_dict()``), one per session id, in
    ``directory``: claimed atomically on resume, so a session resumes once."""

    def claim(self, key: str) -> dict[str, Any] | None:
        return self.claim_record(key)


def pending_of(session: AgentSession) -> dict[str, PendingRequest]:
    """The requests ``session`` waits for (by request id), as a pause recorded them."""
    state = session.state.get(STATE_KEY) or {}
    return {
        key: PendingRequest.from_dict(value) for key, value in (state.get("pending") or {}).items()
    }


def approval_requests(session: AgentSession, ids: Sequence[str]) -> list[Content]:
    """The ``function_approval_request`` contents of ``ids``: from the session's history,
    else from the framework's own record of pending requests (kept in the session's state
    whatever holds the history)."""
    from agent_framework import Content

    messages = (session.state.get("in_memory") or {}).get("messages") or []
    found = {
        content.id: content
        for message in messages
        for content in getattr(message, "contents", [])
        if content.type == "function_approval_request"
    }
    for item in (session.state.get("tool_approval") or {}).get("pending_approval_requests", []):
        content = Content.from_dict(item) if isinstance(item, Mapping) else item
        found.setdefault(content.id, content)
    return [found[key] for key in ids if key in found]


class HumanApprovals(AskingPeople):
    """Answers Microsoft Agent Framework's approval requests with people, through one
    :class:`~humanwire.approval.Approver` (give one, or its options: ``to``, ``channel``,
    ``follow_up_time``, ``on_timeout``, ``client``). Requests stay open ``window``
    seconds (default: the approver's ``follow_up_time``, else an hour). ``store`` (a
    directory or a :class:`SessionStore`) keeps paused sessions for
    :meth:`resume_from_webhook` and :meth:`resume_expired`.

    ::

        humans = HumanApprovals(to="+14155550123")
        response = await humans.arun(agent, "Refund order 1042")   # waits in the run
    """

    def __init__(
        self,
        approver: Approver | None = None,
        *,
        window: float | None = None,
        store: SessionStore | str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(approver, window=window, **options)
        self.store = (
            store if isinstance(store, SessionStore) or store is None else SessionStore(store)
        )

    # -- in the run -----------------------------------------------------------------------
    async def arun(
        self, agent: Agent[Any], input: Any, *, session: AgentSession | None = None, **options: Any
    ) -> AgentResponse[Any]:
        """``agent.run(input)``, each approval request answered by waiting for the
        person, until the run asks for nothing more (other keyword arguments go to
        ``agent.run``)."""
        session = session if session is not None else agent.create_session()
        response: AgentResponse[Any] = await agent.run(input, session=session, **options)
        while requests := _approval_requests_of(response):
            asked = [(content, PendingRequest.of(content)) for content in requests]
            client = await self.clients.get()
            found = await asyncio.gather(
                *(self._ask(client, session, pending, timeout=None) for _, pending in asked)
            )
            answers: dict[str, Answer | HumanWireError] = {
                pending.request_id: answer
                for (_, pending), answer in zip(asked, found, strict=True)
                if answer is not None
            }
            message = await self._answer(
                client, [c for c, _ in asked], [p for _, p in asked], answers
            )
            if message is None:  # an approval used before: this run went on elsewhere
                return response
            response = await agent.run(message, session=session, **options)
        return response

    # -- paused ---------------------------------------------------------------------------
    async def start(
        self, agent: Agent[Any], input: Any, *, session: AgentSession, **options: Any
    ) -> AgentResponse[Any]:
        """``agent.run(input, session=session)``; when it asks for approval, send each
        request without waiting, record them in ``session.state`` and save the session
        in the store (if any), and return the response. A pause whose sends all failed
        is run on at once, its calls refused."""
        response: AgentResponse[Any] = await agent.run(input, session=session, **options)
        return await self._pause(agent, session, response, options)

    async def resume(
        self,
        agent: Agent[Any],
        session: AgentSession | Mapping[str, Any],
        *,
        timeout: float | None = 0,
    ) -> AgentResponse[Any] | None:
        """Run the paused ``session`` (or its ``to_dict()``) on once every request is
        decided (waiting at most ``timeout`` seconds a request; ``0``: look once;
        ``None``: until each closes). ``None`` when it waits for nothing, a decision is
        still open, or its approvals were used already (resumed before). A ``store``'s
        copy is claimed first, so a session resumes once."""
        session = _session(session)
        stored = self.store.load(session.session_id) if self.store is not None else None
        if stored is not None:
            # The decisions first, then the claim: a session still waiting stays stored.
            saved = SavedRecord(session.session_id, stored)
            return await resume_answered(self._resumer(agent), saved, timeout=timeout)
        return await self._resume(agent, session, None, timeout)

    async def resume_from_webhook(
        self,
        agent: Agent[Any],
        body: bytes | str | Mapping[str, Any] | Event,
        headers: Mapping[str, str] | None = None,
        *,
        secret: str | None = None,
    ) -> AgentResponse[Any] | None:
        """Run on the stored session an ``approval.decided`` delivery answers (named in
        its metadata); the other decisions are read from the service. ``None`` for
        another adapter's delivery, a session not stored (or resumed already), or one
        with a decision still open. With ``secret`` the signature is verified first."""
        return await resume_from_webhook(self._resumer(agent), body, headers, secret=secret)

    async def resume_expired(self, agent: Agent[Any]) -> list[AgentResponse[Any]]:
        """Run on every stored session whose requests are all decided or closed (a
        webhook missed, a window that closed unanswered), looking once at each."""
        return await resume_expired(self._resumer(agent))

    # -- the steps ------------------------------------------------------------------------
    def _resumer(self, agent: Agent[Any]) -> PauseResumer[SavedRecord, AgentResponse[Any]]:
        store = self.store
        if store is None:
            raise TypeError("give HumanApprovals a store= to resume stored sessions")

        async def resume(
            saved: SavedRecord, answers: dict[str, Answer]
        ) -> AgentResponse[Any] | None:
            return await resume_once(
                store,
                saved.key,
                lambda record: self._resume(agent, _session(record), answers, 0),
                expected=saved.record,
            )

        return PauseResumer(
            framework=RESUME_AGENT_FRAMEWORK,
            pending=lambda saved: {
                key: AwaitedAnswer("approval", call.interaction_id)
                for key, call in pending_of(_session(saved.record)).items()
                if call.interaction_id  # one that could not be sent waits for nothing
            },
            resume=resume,
            client=self.clients.get,
            load=SavedRecord.loader(store.load),
            keys=store.keys,
            pause_key=SESSION_KEY,
            call_key=REQUEST_KEY,
        )

    async def _resume(
        self,
        agent: Agent[Any],
        session: AgentSession,
        known: Mapping[str, Answer] | None,
        timeout: float | None,
    ) -> AgentResponse[Any] | None:
        pending = pending_of(session)
        if not pending:
            return None
        client = await self.clients.get()
        answers: dict[str, Answer | HumanWireError] = dict(known or {})
        for key, call in pending.items():
            if call.error:
                answers[key] = HumanWireError(call.error)
            elif key not in answers:
                decision = await read_decision(client, call.interaction_id, timeout=timeout)
                if decision is None:
                    return None  # still open: its own decision resumes the session
                answers[key] = decision
        requests = approval_requests(session, list(pending))
        message = await self._answer(client, requests, list(pending.values()), answers)
        if message is None:
            return None
        session.state.pop(STATE_KEY, None)
        response = await agent.run(message, session=session)
        return await self._pause(agent, session, response, {})

    async def _pause(
        self,
        agent: Agent[Any],
        session: AgentSession,
        response: AgentResponse[Any],
        options: Mapping[str, Any],
    ) -> AgentResponse[Any]:
        """Send the requests ``response`` makes without waiting and record them; a pause
        none of whose requests went out is answered (refused) and run on at once."""
        while requests := _approval_requests_of(response):
            client = await self.clients.get()
            asked = [(content, PendingRequest.of(content)) for content in requests]
            sent = await asyncio.gather(
                *(self._send(client, session, pending) for _, pending in asked)
            )
            failed = {p.request_id: e for p, e in sent if isinstance(e, HumanWireError)}
            if len(failed) < len(asked):
                # Every request, the ones that could not be sent with why: the framework
                # waits for a response to each, and a resume refuses those.
                recorded = [
                    p if e is None else PendingRequest(**{**p.to_dict(), "error": str(e)})
                    for p, e in sent
                ]
                session.state[STATE_KEY] = {
                    "pending": {p.request_id: p.to_dict() for p in recorded}
                }
                if self.store is not None:
                    self.store.save(session.session_id, session.to_dict())
                return response
            message = await self._answer(
                client, [c for c, _ in asked], [p for _, p in asked], dict(failed)
            )
            assert message is not None  # nothing approved: nothing consumed
            response = await agent.run(message, session=session, **options)
        return response

    def _key_and_metadata(
        self, session: AgentSession, pending: PendingRequest
    ) -> tuple[str, dict[str, str]]:
        session_id = str(session.session_id)
        metadata = {
            RESUME_KEY: RESUME_AGENT_FRAMEWORK,
            SESSION_KEY: metadata_value("session id", session_id),
            REQUEST_KEY: pending.request_id[:128],
        }
        # Unique per run (the framework's request id is new for every request, and the
        # session's) and bound to the action: a model reusing a call id is asked afresh.
        key = action_key(
            "approval", "agent_framework", session_id, pending.request_id, request=pending.request
        )
        return key, metadata

    async def _send(
        self, client: AsyncHumanWire, session: AgentSession, pending: PendingRequest
    ) -> tuple[PendingRequest, HumanWireError | None]:
        key, metadata = self._key_and_metadata(session, pending)
        try:
            approval = await request_approval(
                self, pending.request, key=key, metadata=metadata, client=client
            )
        except HumanWireError as exc:
            return pending, exc
        return (
            PendingRequest(
                pending.request_id,
                pending.tool_name,
                pending.arguments,
                pending.call_id,
                approval.interaction_id,
            ),
            None,
        )

    async def _ask(
        self,
        client: AsyncHumanWire,
        session: AgentSession,
        pending: PendingRequest,
        *,
        timeout: float | None,
    ) -> Answer | HumanWireError | None:
        key, metadata = self._key_and_metadata(session, pending)
        return await ask_person(
            self,
            "approval",
            pending.request,
            key=key,
            metadata=metadata,
            timeout=timeout,
            client=client,
        )

    async def _answer(
        self,
        client: AsyncHumanWire,
        requests: Sequence[Content],
        pending: Sequence[PendingRequest],
        answers: Mapping[str, Answer | HumanWireError],
    ) -> Any:
        """The user message answering ``requests``: approved (consumed for the call as
        asked, right before it runs) or refused, with a note the model reads for each
        refusal; ``None`` when an approval was used already (this pause ran before)."""
        from agent_framework import Content, Message

        by_id = {call.request_id: call for call in pending}
        contents: list[Content] = []
        notes: list[str] = []
        for content in requests:
            call = by_id[str(content.id)]
            answer = answers.get(call.request_id)
            decision = answer if not isinstance(answer, str) else None
            used, refusal = await settle_approval(client, decision, call.request)
            if (
                isinstance(answer, ApprovalDecision)
                and answer.approved
                and used is not None
                and used.decision == "consumed"
            ):
                return None
            approved = used is not None and used.approved
            if not approved:
                notes.append(refusal)
            contents.append(content.to_function_approval_response(approved=approved))
        contents.extend(Content.from_text(note) for note in notes)
        return Message(role="user", contents=contents)


def _approval_requests_of(response: AgentResponse[Any]) -> list[Content]:
    return [c for c in response.user_input_requests if c.type == "function_approval_request"]


def _session(value: AgentSession | Mapping[str, Any]) -> AgentSession:
    from agent_framework import AgentSession

    if isinstance(value, AgentSession):
        return value
    return AgentSession.from_dict(dict(value))
