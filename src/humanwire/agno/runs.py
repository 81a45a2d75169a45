"""People answer Agno's own pauses: ``requires_confirmation`` (an approval request,
``POST /approvals``), ``requires_user_input`` (a question per missing field) and
``external_execution`` (a question whose reply is the tool's result).

An Agno run that reaches such a tool stops with ``is_paused`` and its
``active_requirements``; Agno keeps the run in its db (``SqliteDb``, ``PostgresDb``).
:class:`HumanRuns` sends what each requirement needs to a person, resolves the
requirements with their answers and calls ``continue_run``:

- **in the run** (:meth:`HumanRuns.arun`, :meth:`HumanRuns.run_sync`): send, wait for
  the answers, continue, until the run finishes;
- **paused** (:meth:`HumanRuns.start`): send without waiting and return the paused run;
  the process may exit. Later, in any process with the same agent and db,
  :meth:`HumanRuns.resume_from_webhook` (the ``approval.decided`` / ``message.received``
  delivery) or :meth:`HumanRuns.resume` (waits on the service) continues it.

Nothing but Agno's db holds a pause: every send's Idempotency-Key derives from the run,
the tool call and the call's action (its digest), so a resume asks the service again
with the same key and gets the same interaction back, and its answer.

**Runs once.** An approval is consumed on the service, bound to the call's action,
right before ``continue_run`` runs it; an approval consumed already rejects the call
("was not run again"). A run that is no longer paused is not continued (Agno would
pause it again). So a second resume, in any process, runs nothing.

**Fails closed.** A question or approval that cannot be sent (service stopped, bad key)
rejects its call with the reason, which the model reads; a required input nobody gave in
time rejects its call too. An unanswered external execution is the no-response text.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from humanwire._pauses import (
    RESUME_KEY,
    AnswerKind,
    AskingPeople,
    action_key,
    ask_person,
    delivery_for,
    metadata_value,
    reply_text,
    unrequested_text,
    use_approval,
)
from humanwire.approval import ApprovalDecision, ApprovalRequest, format_arguments
from humanwire.errors import HumanWireError
from humanwire.types import DEFAULT_NO_RESPONSE_TEMPLATE, Event

if TYPE_CHECKING:
    from agno.agent import Agent
    from agno.run.agent import RunOutput
    from agno.run.requirement import RunRequirement

    from humanwire._client import AsyncHumanWire

__all__ = [
    "CALL_KEY",
    "RESUME_AGNO",
    "RUN_KEY",
    "SESSION_KEY",
    "HumanRuns",
    "Question",
    "questions_of",
]

RESUME_AGNO = "agno"
"""A send's ``metadata[humanwire_resume]``: tells this adapter's deliveries from other
adapters' (each leaves the others' alone)."""
RUN_KEY = "agno_run_id"
SESSION_KEY = "agno_session_id"
CALL_KEY = "agno_tool_call_id"
"""A send's metadata keys: the Agno run and session a resume continues, the tool call."""


@dataclass(frozen=True)
class Question:
    """What one requirement asks a person: an approval of the call, or a question (an
    external execution's result, or one missing input ``field``)."""

    kind: AnswerKind
    tool_name: str
    arguments: dict[str, Any]
    call_id: str
    text: str = ""
    field: str | None = None

    @property
    def request(self) -> ApprovalRequest:
        """The call as an approval request: what its approval is bound to."""
        return ApprovalRequest(self.tool_name, self.arguments)


def questions_of(requirement: RunRequirement) -> list[Question]:
    """What ``requirement`` asks (a ``ValueError`` for user feedback: Agno's choices are
    not a person's free answer here)."""
    execution = requirement.tool_execution
    name = str(execution.tool_name or "tool") if execution else "tool"
    # In key order: a db may give them back in another (PostgreSQL's JSONB does), and a
    # resume must send the same request under the same Idempotency-Key.
    arguments = dict(sorted((execution.tool_args or {}).items())) if execution else {}
    call_id = str(execution.tool_call_id or "") if execution else ""
    if requirement.needs_confirmation:
        return [Question("approval", name, arguments, call_id)]
    if requirement.needs_external_execution:
        text = f"An AI agent asks you to answer for {name}:\n{format_arguments(arguments)}"
        return [Question("question", name, arguments, call_id, text)]
    if requirement.needs_user_input:
        return [
            Question(
                "question",
                name,
                arguments,
                call_id,
                f"An AI agent needs {item.name} for {name}"
                + (f" ({item.description})" if item.description else "")
                + f":\n{format_arguments(arguments)}",
                item.name,
            )
            for item in requirement.user_input_schema or []
            if item.value is None
        ]
    if requirement.needs_user_feedback:
        raise ValueError(
            f"{name} waits for user feedback: humanwire answers confirmations, "
            "user input and external execution"
        )
    return []


_REPLY_PREFIX = reply_text("")


def _refuse(requirement: RunRequirement, note: str) -> None:
    """Reject a call Agno has no rejection for (required input nobody gave): as a
    refused confirmation, so the model reads ``note`` and the tool never runs."""
    execution = requirement.tool_execution
    if execution is None:
        return
    for item in requirement.user_input_schema or []:
        if item.value is None:
            item.value = ""
    execution.requires_user_input = False
    execution.requires_confirmation = True
    execution.confirmed = None
    requirement.confirmation = None
    requirement.reject(note=note)


async def _continue(agent: Agent, run: RunOutput, requirements: list[RunRequirement]) -> RunOutput:
    """``continue_run`` with the resolved ``requirements``: by the run's id from the
    agent's db (the requirements are applied to the stored run), or, for an agent without
    a db, the run itself (its requirements share its tool executions)."""
    if agent.db is None:
        return await agent.acontinue_run(run, requirements=requirements, session_id=run.session_id)
    return await agent.acontinue_run(
        run_id=run.run_id, requirements=requirements, session_id=run.session_id
    )


class HumanRuns(AskingPeople):
    """Answers Agno runs' pauses with people, through one
    :class:`~humanwire.approval.Approver` (give one, or its options: ``to``, ``channel``,
    ``follow_up_time``, ``on_timeout``, ``client``). Approvals go out as approval
    requests, questions as messages on the approver's channel; both stay open ``window``
    seconds (default: the approver's ``follow_up_time``, else an hour).

    ::

        humans = HumanRuns(to="+14155550123")
        result = await humans.arun(agent, "Refund order 1042")   # waits in the run
    """

    # -- driving a run ------------------------------------------------------------------
    async def arun(self, agent: Agent, input: Any, **run_options: Any) -> RunOutput:
        """``agent.arun(input)``, each pause answered by waiting for the people, until the
        run finishes (other keyword arguments go to ``agent.arun``)."""
        result = await agent.arun(input, **run_options)
        driven = await self._drive(agent, result, timeout=None)
        assert driven is not None  # waited for every answer
        return driven

    def run_sync(self, agent: Agent, input: Any, **run_options: Any) -> RunOutput:
        """:meth:`arun` from sync code, on an event loop of its own: give the approver a
        ``HumanWire`` or no client (an ``AsyncHumanWire`` belongs to its caller's loop)."""
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, self.arun(agent, input, **run_options)).result()

    async def start(self, agent: Agent, input: Any, **run_options: Any) -> RunOutput:
        """``agent.arun(input)``; when it pauses, send what it waits for without waiting
        and return the paused run (``run_id``, ``session_id``: a resume needs both, and
        the agent's db). A pause whose sends all failed is continued at once (its calls
        rejected)."""
        result = await agent.arun(input, **run_options)
        driven = await self._drive(agent, result, timeout=0)
        return driven if driven is not None else result

    # -- resuming -----------------------------------------------------------------------
    async def resume(
        self, agent: Agent, run_id: str, session_id: str, *, timeout: float | None = None
    ) -> RunOutput | None:
        """Continue the paused run ``run_id`` of ``session_id`` from the agent's db once
        every requirement is answered (waiting at most ``timeout`` seconds an answer;
        ``0``: look once; ``None``: until each closes). ``None`` when the run is not
        paused (finished, resumed already) or an answer is still open."""
        stored = await agent.aget_run_output(run_id=run_id, session_id=session_id)
        if stored is None or not stored.is_paused:
            return None  # Agno would pause a finished run again: never continue one
        return await self._drive(agent, stored, timeout=timeout)

    async def resume_from_webhook(
        self,
        agent: Agent,
        body: bytes | str | Mapping[str, Any] | Event,
        headers: Mapping[str, str] | None = None,
        *,
        secret: str | None = None,
    ) -> RunOutput | None:
        """Continue the run a delivery answers (``approval.decided``,
        ``message.received``), read from the event's metadata; the answers themselves are
        read from the service. ``None`` for another adapter's delivery, a run with an
        answer still open (that answer resumes it) or one no longer paused. With
        ``secret`` the signature is verified first."""
        delivery = delivery_for(RESUME_AGNO, body, headers, secret=secret, questions=True)
        if delivery is None:
            return None
        run_id, session_id = delivery.metadata.get(RUN_KEY), delivery.metadata.get(SESSION_KEY)
        if not run_id or not session_id:
            return None
        return await self.resume(agent, run_id, session_id, timeout=0)

    # -- one pause after another ----------------------------------------------------------
    async def _drive(
        self, agent: Agent, result: RunOutput, *, timeout: float | None
    ) -> RunOutput | None:
        """Answer and continue ``result`` while it pauses; ``None`` when its first pause
        is not answered yet (the sends are out)."""
        first = True
        while result.is_paused:
            # One reference: each access of active_requirements builds new objects.
            requirements = list(result.active_requirements or [])
            answered = await self._answer(result, requirements, timeout)
            if not answered:
                return None if first else result
            first = False
            result = await _continue(agent, result, requirements)
        return result

    async def _answer(
        self, run: RunOutput, requirements: list[RunRequirement], timeout: float | None
    ) -> bool:
        """Send each requirement's questions (again: same keys, same interactions) and
        resolve every requirement with its answers; ``False`` while one is still open."""
        client = await self.clients.get()
        asked = [(r, questions_of(r)) for r in requirements]
        found = await asyncio.gather(
            *(self._ask(client, run, question, timeout) for _, qs in asked for question in qs)
        )
        if any(answer is None for answer in found):
            return False
        answers = iter(found)
        for requirement, questions in asked:
            await self._resolve(client, requirement, [(q, next(answers)) for q in questions])
        return True

    async def _ask(
        self, client: AsyncHumanWire, run: RunOutput, question: Question, timeout: float | None
    ) -> ApprovalDecision | str | HumanWireError | None:
        """Send ``question`` (idempotently) and read its answer: a decision, a reply, the
        error that kept it from being sent, or ``None`` while open."""
        run_id, session_id = str(run.run_id or ""), str(run.session_id or "")
        metadata = {
            RESUME_KEY: RESUME_AGNO,
            RUN_KEY: metadata_value("run id", run_id),
            SESSION_KEY: metadata_value("session id", session_id),
            CALL_KEY: question.call_id[:128],
        }
        field = [question.field] if question.field else []
        key = action_key(
            question.kind, "agno", run_id, question.call_id, *field, request=question.request
        )
        subject = question.request if question.kind == "approval" else question.text
        return await ask_person(
            self, question.kind, subject, key=key, metadata=metadata, timeout=timeout, client=client
        )

    async def _resolve(
        self,
        client: AsyncHumanWire,
        requirement: RunRequirement,
        answers: list[tuple[Question, ApprovalDecision | str | HumanWireError | None]],
    ) -> None:
        values: dict[str, str] = {}
        for question, answer in answers:
            name = question.tool_name
            if isinstance(answer, HumanWireError):
                if requirement.needs_external_execution:
                    requirement.set_external_execution_result(f"humanwire: {answer}")
                else:
                    _refuse(requirement, unrequested_text(name, answer))
                return
            if isinstance(answer, ApprovalDecision):
                # Consumed for this call as asked, right before continue_run runs it:
                # a second resume finds it used and does not run it again.
                used, refusal = await use_approval(client, answer, question.request)
                if used is not None and used.approved:
                    requirement.confirm()  # type: ignore[no-untyped-call]
                else:
                    requirement.reject(note=refusal)
                return
            if requirement.needs_external_execution:
                requirement.set_external_execution_result(str(answer))
                return
            if answer == DEFAULT_NO_RESPONSE_TEMPLATE:
                _refuse(requirement, f"{name} was not run: {DEFAULT_NO_RESPONSE_TEMPLATE}")
                return
            values[str(question.field)] = str(answer).removeprefix(_REPLY_PREFIX)
        if values:
            requirement.provide_user_input(values)
